// `core exec` end to end (DESIGN §2 laws 2, 3, 8, 12; §5; §6): the compiled binary settling calls to tool files
// in temp Locations that have no node_modules, so `@core/tool` and `effect` come from the binary itself.

import { describe, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"
import { echoTool } from "../support/tools"
import { core, exec, IMPORTS, RAN, runs, sandbox, settlementOf, start } from "./fixture"

const ECHO = echoTool({ record: "echo" })

describe("a successful call", () => {
  test("prints the settlement JSON with the string output as one text part and as structured, and exits 0", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await exec(box, "echo", { text: "hi" }, ["--call", "call_01"])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(settlementOf(result)).toEqual({
      tool: "echo",
      callID: "call_01",
      status: "success",
      content: [{ type: "text", text: "hi" }],
      structured: "hi",
      outputs: [],
    })
  })

  // The settlement is printed on a terminal as often as read by a program: a C1 control (U+009B is ESC [ to many
  // terminals) or a bidi override in an output must not drive the terminal; escaped, the JSON is the same.
  test("prints the JSON inert on a terminal: what JSON leaves raw that a terminal acts on is escaped, the JSON the same", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const text = "a\u009b2J\u202eb\u2066c\u2028d\u007f"
    const result = await exec(box, "echo", { text }, ["--call", "call_c1"])
    expect(result.code).toBe(0)
    expect(result.stdout).not.toMatch(/[\u007f-\u009f\u2028\u202e\u2066]/)
    expect(result.stdout).toContain(String.raw`"a\u009b2J\u202eb\u2066c\u2028d\u007f"`)
    expect(settlementOf(result).structured).toBe(text)
  })

  // A defect's stack holds the tool's own words, which may come from the model's input: they are indented under
  // core's line, and escaped, so a line of them cannot pass for one of core's nor drive the terminal.
  test("an operational failure's words are escaped and indented: none passes for a line of core's", async () => {
    const box = sandbox({
      "tools/die.ts": `${IMPORTS}export default Tool.make({ description: "dies", input: Schema.Struct({ s: Schema.String }), output: Schema.String, execute: ({ s }) => Effect.die(new Error(s)) })\n`,
    })
    const result = await exec(box, "die", { s: "boom\ncore: approved once (--yes): bash on \"rm -rf ~\"\u001b[8m" })
    expect(result.code).toBe(3)
    expect(result.stderr).toStartWith("core: operational failure:\n  ")
    expect(result.stderr).not.toMatch(/[\u001b]/)
    expect(result.stderr.split("\n").filter((line) => line.startsWith("core: approved"))).toEqual([])
    expect(result.stderr).toContain('\n  core: approved once (--yes): bash on "rm -rf ~"\\u001b[8m')
  })

  test("runs execute on the decoded input and reports the encoded output, projected by toModelOutput", async () => {
    const box = sandbox({
      "tools/later.ts": `${IMPORTS}
export default Tool.make({
  description: "Move a time forward by a day and a count up by one",
  input: Schema.Struct({ at: Schema.DateFromString, count: Schema.NumberFromString }),
  output: Schema.Struct({
    next: Schema.DateFromString,
    count: Schema.NumberFromString,
    seen: Schema.Array(Schema.String),
  }),
  execute: (input) =>
    Effect.succeed({
      next: new Date(input.at.getTime() + 86_400_000),
      count: input.count + 1,
      seen: [input.at instanceof Date ? "at is a Date" : "at is " + typeof input.at, "count is " + typeof input.count],
    }),
  toModelOutput: ({ input, output }) => \`next is \${typeof output.next} \${output.next}; count is \${typeof output.count} \${output.count}; input.at is \${input.at instanceof Date ? "a Date" : typeof input.at}\`,
})
`,
    })
    const result = await exec(box, "later", { at: "2024-01-02T03:04:05.000Z", count: "41" })
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("success")
    expect(settlement.content).toEqual([
      { type: "text", text: "next is string 2024-01-03T03:04:05.000Z; count is string 42; input.at is a Date" },
    ])
    expect(settlement.structured).toEqual({
      next: "2024-01-03T03:04:05.000Z",
      count: "42",
      seen: ["at is a Date", "count is number"],
    })
    expect(settlement.outputs).toEqual([])
  })

  test("a structured output without toModelOutput is structured only: no content", async () => {
    const box = sandbox({
      "tools/pair.ts": `${IMPORTS}
export default Tool.make({
  description: "Make a pair",
  input: Schema.Struct({ left: Schema.String, right: Schema.Finite }),
  output: Schema.Struct({ left: Schema.String, right: Schema.Finite }),
  execute: (input) => Effect.succeed({ left: input.left, right: input.right }),
})
`,
    })
    const settlement = settlementOf(await exec(box, "pair", { left: "a", right: 2 }))
    expect(settlement.structured).toEqual({ left: "a", right: 2 })
    expect(settlement.content).toEqual([])
  })
})

describe("the call context", () => {
  const CONTEXT = `${IMPORTS}
export default Tool.make({
  description: "Report the ids of the call's context",
  input: Schema.Struct({}),
  output: Schema.Struct({
    sessionID: Schema.String,
    agent: Schema.String,
    assistantMessageID: Schema.String,
    toolCallID: Schema.String,
    keys: Schema.Array(Schema.String),
  }),
  execute: (_, context) =>
    Effect.succeed({
      sessionID: context.sessionID,
      agent: context.agent,
      assistantMessageID: context.assistantMessageID,
      toolCallID: context.toolCallID,
      keys: Object.keys(context).sort(),
    }),
})
`

  test("carries --session, --message, --call and --agent to the tool exactly, and nothing but the ids and progress", async () => {
    const box = sandbox({ "tools/context.ts": CONTEXT })
    const ids = ["--session", "ses A/1", "--message", "msg-é", "--call", "call 7", "--agent", "plan"]
    const result = await exec(box, "context", {}, ids)
    expect(result.code).toBe(0)
    const settlement = settlementOf(result)
    expect(settlement.callID).toBe("call 7")
    expect(settlement.structured).toEqual({
      sessionID: "ses A/1",
      agent: "plan",
      assistantMessageID: "msg-é",
      toolCallID: "call 7",
      keys: ["agent", "assistantMessageID", "progress", "sessionID", "toolCallID"],
    })
  })

  test("defaults to fresh unique ids and the agent build", async () => {
    const box = sandbox({ "tools/context.ts": CONTEXT })
    const first = settlementOf(await exec(box, "context", {}))
    const second = settlementOf(await exec(box, "context", {}))
    type Ids = { sessionID: string; agent: string; assistantMessageID: string; toolCallID: string }
    const a = first.structured as Ids
    const b = second.structured as Ids
    expect(a.agent).toBe("build")
    expect(b.agent).toBe("build")
    expect(first.callID).toBe(a.toolCallID)
    expect(second.callID).toBe(b.toolCallID)
    const all = [a.sessionID, a.assistantMessageID, a.toolCallID, b.sessionID, b.assistantMessageID, b.toolCallID]
    for (const id of all) expect(id.length).toBeGreaterThan(8)
    expect(new Set(all).size).toBe(all.length)
  })
})

describe("model-visible errors", () => {
  const FRAGILE = `${IMPORTS}${RAN}
export const refuse = Tool.make({
  description: "Always refuses",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.fail(new Tool.Failure({ message: "The gate is closed. Open it first." })),
})

export const lies = Tool.make({
  description: "Promises a number, returns text",
  input: Schema.Struct({}),
  output: Schema.Struct({ total: Schema.Finite }),
  execute: () => Effect.succeed({ total: "many" } as never),
})

export const scrambled = Tool.make({
  description: "Projects into something that is not content",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("fine"),
  toModelOutput: () => [{ type: "video", frames: 3 }] as never,
})

export const plot = Tool.make({
  description: "Plot a labelled point",
  input: Schema.Struct({ label: Schema.String, point: Schema.Struct({ x: Schema.Finite, y: Schema.Finite }) }),
  output: Schema.String,
  execute: (input) => Effect.sync(() => {
    ran("plot")
    return input.label
  }),
})
`

  test("a Tool.Failure settles as an error of kind failure carrying its message, and exits 1", async () => {
    const box = sandbox({ "tools/fragile.ts": FRAGILE })
    const result = await exec(box, "fragile_refuse", {}, ["--call", "call_refuse"])
    expect(result.code).toBe(1)
    expect(settlementOf(result)).toEqual({
      tool: "fragile_refuse",
      callID: "call_refuse",
      status: "error",
      content: [{ type: "text", text: "The gate is closed. Open it first." }],
      structured: null,
      error: { kind: "failure", message: "The gate is closed. Open it first." },
      outputs: [],
    })
  })

  test("schema-invalid input settles as invalid_input naming each field path and expectation, and the tool never runs", async () => {
    const box = sandbox({ "tools/fragile.ts": FRAGILE })
    const result = await exec(box, "fragile_plot", { point: { x: "north", y: 2 } })
    expect(result.code).toBe(1)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("invalid_input")
    expect(settlement.error?.message).toContain('point.x: Expected number, got "north"')
    expect(settlement.error?.message).toContain("label: Missing key")
    expect(settlement.structured).toBeNull()
    expect(runs(box, "plot")).toBe(0)

    const valid = await exec(box, "fragile_plot", { label: "home", point: { x: 1, y: 2 } })
    expect(valid.code).toBe(0)
    expect(runs(box, "plot")).toBe(1)
  })

  test("a call to an unknown tool settles as unknown and suggests the nearest names", async () => {
    const weather = `${IMPORTS}
export default Tool.make({
  description: "Tell the weather",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("sunny"),
})
`
    const box = sandbox({ "tools/weather.ts": weather, "tools/clock.ts": weather })
    const result = await exec(box, "wether", {})
    expect(result.code).toBe(1)
    const settlement = settlementOf(result)
    expect(settlement.tool).toBe("wether")
    expect(settlement.error?.kind).toBe("unknown")
    expect(settlement.error?.message).toContain('"wether"')
    expect(settlement.error?.message).toContain("weather")
    expect(settlement.error?.message).not.toContain("clock")
  })

  test("an output that does not match the output schema settles as invalid_output, never as success", async () => {
    const box = sandbox({ "tools/fragile.ts": FRAGILE })
    const result = await exec(box, "fragile_lies", {})
    expect(result.code).toBe(1)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("invalid_output")
    expect(settlement.error?.message).toContain("total")
    expect(settlement.error?.message).toContain('Expected number, got "many"')
    expect(settlement.content).toEqual([{ type: "text", text: settlement.error!.message }])
    expect(settlement.structured).toBeNull()
  })

  test("a toModelOutput that returns parts other than text or file settles as invalid_output", async () => {
    const box = sandbox({ "tools/fragile.ts": FRAGILE })
    const result = await exec(box, "fragile_scrambled", {})
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.kind).toBe("invalid_output")
  })
})

describe("the input", () => {
  test("--input - reads the JSON object from stdin", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await core(box, ["exec", "echo", "--input", "-", "--location", box.location], {
      stdin: '{\n  "text": "from stdin ✓"\n}\n',
    })
    expect(result.code).toBe(0)
    expect(settlementOf(result).structured).toBe("from stdin ✓")
  })

  // An operational failure says what failed, then the underlying error's own words: a value's string ("[object
  // Promise]", what a tool returned) is none.
  test("an execute that returns a Promise says so in one line, with no value's string after it", async () => {
    const box = sandbox({
      "tools/promised.ts": `${IMPORTS}\nexport default Tool.make({ description: "Returns a Promise", input: Schema.Struct({}), output: Schema.String, execute: (() => Promise.resolve("hi")) as never })\n`,
    })
    const result = await exec(box, "promised", {})
    expect(result.code).toBe(3)
    expect(result.stderr).toStartWith("core: promised's execute returned a Promise, not an Effect")
    expect(result.stderr).toEndWith("when it can reject.\n")
    expect(result.stderr).not.toContain("[object Promise]")
  })

  // The author looks for the line: an execute that threw, or failed with a plain Error, said only the message.
  test("an execute that throws, or fails with an error that is not Tool.Failure, names where the error was made", async () => {
    const box = sandbox({
      "tools/throws.ts": `${IMPORTS}\nexport default Tool.make({ description: "Throws", input: Schema.Struct({}), output: Schema.String, execute: () => { throw new Error("boom") } })\n`,
      "tools/fails.ts": `${IMPORTS}\nexport default Tool.make({ description: "Fails", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.fail(new Error("plain")) as never })\n`,
    })
    for (const name of ["throws", "fails"]) {
      const result = await exec(box, name, {})
      expect(result.code).toBe(3)
      expect(result.stderr).toContain(`(at execute (${join(box.location, "tools", `${name}.ts`)}:`)
    }
  })

  test("an execute that returns a plain value says so in one line, with not the value after it", async () => {
    const box = sandbox({
      "tools/plain.ts": `${IMPORTS}\nexport default Tool.make({ description: "Returns a string", input: Schema.Struct({}), output: Schema.String, execute: (() => "hi") as never })\n`,
    })
    const result = await exec(box, "plain", {})
    expect(result.code).toBe(3)
    expect(result.stderr).toStartWith("core: plain's execute returned a plain string, not an Effect")
    expect(result.stderr).toEndWith("for a computation.\n")
  })

  test("--input - with nothing on stdin is a usage error saying so", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await core(box, ["exec", "echo", "--input", "-", "--location", box.location], { stdin: " \n" })
    expect(result.code).toBe(2)
    expect(result.stderr).toStartWith("core exec: --input - read nothing from stdin: pipe the input JSON in")
  })

  test("the Location defaults to the current directory", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await core(box, ["exec", "echo", "--input", '{"text":"here"}'], { cwd: box.location })
    expect(result.code).toBe(0)
    expect(settlementOf(result).structured).toBe("here")
  })
})

describe("a NUL character in the input", () => {
  test("is invalid_input, decided before the tool runs or anything is recorded: exit 1", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await exec(box, "echo", { text: "a\u0000b" }, ["--call", "call_nul", "--session", "ses_nul"])
    expect(result.code).toBe(1)
    expect(settlementOf(result)).toEqual({
      tool: "echo",
      callID: "call_nul",
      status: "error",
      content: [{ type: "text", text: expect.stringContaining("text holds a NUL character") }],
      structured: null,
      error: { kind: "invalid_input", message: expect.stringContaining("text holds a NUL character") },
      outputs: [],
    })
    expect(runs(box, "echo")).toBe(0)
    // Nothing was recorded: the same ids with a good input run.
    const fixed = await exec(box, "echo", { text: "ab" }, ["--call", "call_nul", "--session", "ses_nul"])
    expect(settlementOf(fixed).structured).toBe("ab")
  })

  // JSON.parse reads 1e400 as Infinity, which JSON writes back as null: a tool would be checked against one value and
  // sent another (an MCP server's integer input got null).
  test("nor does a number JSON cannot carry: invalid_input, exit 1", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await core(box, ["exec", "echo", "--input", '{"text":"a","n":1e400}', "--call", "call_inf", "--location", box.location])
    expect(result.code).toBe(1)
    expect(settlementOf(result).error).toEqual({
      kind: "invalid_input",
      message: "Invalid input for echo: n is a number beyond what JSON's numbers hold (read as Infinity), which no tool accepts; send a finite number and call it again.",
    })
    expect(runs(box, "echo")).toBe(0)
  })

  test("reaches no built-in either (grep, glob, list)", async () => {
    const box = sandbox({ "a.txt": "alpha\n" })
    for (const [name, input] of [["grep", { pattern: "al\u0000" }], ["glob", { pattern: "*\u0000" }], ["list", { path: "\u0000" }]] as const) {
      const result = await exec(box, name, input)
      expect(result.code).toBe(1)
      expect(settlementOf(result).error?.kind).toBe("invalid_input")
    }
  })
})

// JSON can carry half of a character ("\ud83d"): todowrite kept it in the session's list, and every settlement that
// showed the list after was JSON a strict reader (jq, a provider's API) refuses.
describe("half of a character in the input", () => {
  test("is invalid_input naming where, decided before the tool runs or anything is recorded: exit 1", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await exec(box, "echo", { text: "ok \ud83d" }, ["--call", "call_half", "--session", "ses_half"])
    expect(result.code).toBe(1)
    expect(settlementOf(result).error).toEqual({
      kind: "invalid_input",
      message:
        "Invalid input for echo: text holds half of a character (the UTF-16 surrogate \\ud83d at position 3, without its " +
        "other half), which no tool accepts; send whole characters and call it again.",
    })
    // The settlement is JSON any strict reader takes: whole characters only.
    expect(result.stdout.isWellFormed()).toBe(true)
    expect(runs(box, "echo")).toBe(0)
    const fixed = await exec(box, "echo", { text: "ok \ud83d\ude00" }, ["--call", "call_half", "--session", "ses_half"])
    expect(settlementOf(fixed).structured).toBe("ok \ud83d\ude00")
  })

  test("never reaches the session's todo list", async () => {
    const box = sandbox()
    const written = await exec(box, "todowrite", { todos: [{ content: "\ud83d", status: "pending" }] }, ["--session", "ses_todo"])
    expect(written.code).toBe(1)
    expect(settlementOf(written).error?.kind).toBe("invalid_input")
    const read = await exec(box, "todoread", {}, ["--session", "ses_todo"])
    expect(read.code).toBe(0)
    expect(read.stdout).not.toContain("ud83d")
  })
})

// An id is text: bytes that are not UTF-8 reach core as U+FFFD each, so `x\xff` and `x\xfe` were one call, and the
// second answered the first's settlement (another command's output) and ran nothing.
describe("an id that is not valid UTF-8", () => {
  test("is a usage error, and nothing runs", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool({ record: "echo" }) })
    for (const flag of ["--call", "--session"]) {
      const script = `exec "$0" exec echo --input '{"text":"hi"}' --location "$1" ${flag} "$(printf 'x\\377')"`
      const child = Bun.spawn(["sh", "-c", script, await binary(), box.location], {
        env: { ...process.env, ...box.env },
        stdout: "pipe",
        stderr: "pipe",
      })
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      expect({ flag, code, stdout }).toEqual({ flag, code: 2, stdout: "" })
      expect(stderr).toContain(`${flag} is not valid UTF-8`)
    }
    expect(runs(box, "echo")).toBe(0)
  })
})

// Input bytes that are not UTF-8 reached the tool as U+FFFD each: a write wrote EF BF BD where the bytes were.
describe("an input that is not valid UTF-8", () => {
  const run = async (box: ReturnType<typeof sandbox>, script: string) => {
    const child = Bun.spawn(["sh", "-c", script, await binary(), box.location], {
      env: { ...process.env, ...box.env },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
    return { code, stdout, stderr }
  }

  test("as an argument, after --input= or on stdin is a usage error, and nothing runs", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool({ record: "echo" }) })
    const bad = `"$(printf '{"text":"x\\377"}')"`
    for (const [script, says] of [
      [`exec "$0" exec echo --input ${bad} --location "$1"`, "--input is not valid UTF-8"],
      [`exec "$0" exec echo --input=${bad} --location "$1"`, "--input is not valid UTF-8"],
      [`printf '{"text":"x\\377"}' | "$0" exec echo --input - --location "$1"`, "--input - (stdin) is not valid UTF-8"],
      [`exec "$0" check echo --input ${bad} --location "$1"`, "--input is not valid UTF-8"],
    ] as const) {
      const result = await run(box, script)
      expect({ script, code: result.code, stdout: result.stdout }).toEqual({ script, code: 2, stdout: "" })
      expect(result.stderr).toContain(says)
    }
    expect(runs(box, "echo")).toBe(0)
  })

  test("U+FFFD given as UTF-8 is text like any other: the call runs on it", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool({ record: "echo" }) })
    const result = await run(box, `exec "$0" exec echo --input '{"text":"x\uFFFDy"}' --location "$1"`)
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).structured).toBe("x\uFFFDy")
    expect(runs(box, "echo")).toBe(1)
  })
})

describe("usage errors exit 2 with a message on stderr, nothing on stdout, and run nothing", () => {
  const cases: ReadonlyArray<{ readonly name: string; readonly args: (location: string) => Array<string>; readonly says: ReadonlyArray<string> }> = [
    {
      // Recorded, the call could never be named by a route: a URL path reads "." and ".." as steps.
      name: "--call or --session of . or ..",
      args: (location) => ["exec", "echo", "--input", '{"text":"hi"}', "--location", location, "--call", ".."],
      says: ['--call cannot be "..": a URL path reads it as a step'],
    },
    {
      name: "--session of .",
      args: (location) => ["exec", "echo", "--input", '{"text":"hi"}', "--location", location, "--session", "."],
      says: ['--session cannot be ".": a URL path reads it as a step'],
    },
    {
      name: "--input that is not JSON, with the line and column",
      args: (location) => ["exec", "echo", "--input", '{\n  "text": oops\n}', "--location", location],
      says: ["--input is not valid JSON", "line 2, column 11"],
    },
    {
      name: "--input nested 50,000 levels deep (unclosed), with the place it goes too deep",
      args: (location) => ["exec", "echo", "--input", `{"text":${"[".repeat(50_000)}`, "--location", location],
      says: ["--input is not valid JSON", "nested deeper than 128 levels", "line 1, column 136"],
    },
    {
      name: "--input nested too deep, even when it is closed",
      args: (location) => ["exec", "echo", "--input", `{"text":${"[".repeat(20_000)}${"]".repeat(20_000)}}`, "--location", location],
      says: ["nested deeper than 128 levels"],
    },
    {
      name: "--input that is an array",
      args: (location) => ["exec", "echo", "--input", '["hi"]', "--location", location],
      says: ["must be a JSON object", "array"],
    },
    {
      name: "--input that is a number",
      args: (location) => ["exec", "echo", "--input", "42", "--location", location],
      says: ["must be a JSON object", "number"],
    },
    {
      name: "--input that is null",
      args: (location) => ["exec", "echo", "--input", "null", "--location", location],
      says: ["must be a JSON object", "null"],
    },
    {
      name: "a missing --input",
      args: (location) => ["exec", "echo", "--location", location],
      says: ["--input JSON is required"],
    },
    {
      name: "an unknown flag",
      args: (location) => ["exec", "echo", "--input", "{}", "--frobnicate", "--location", location],
      says: ["--frobnicate"],
    },
    {
      name: "a missing NAME",
      args: (location) => ["exec", "--input", "{}", "--location", location],
      says: ["NAME is required"],
    },
    {
      name: "an unexpected extra argument",
      args: (location) => ["exec", "echo", "extra", "--input", "{}", "--location", location],
      says: ['unexpected argument "extra"'],
    },
    {
      name: "a --location that does not exist",
      args: (location) => ["exec", "echo", "--input", "{}", "--location", join(location, "missing")],
      says: ["missing", "does not exist"],
    },
    {
      name: "a --location that is a file",
      args: (location) => ["exec", "echo", "--input", "{}", "--location", join(location, "tools/echo.ts")],
      says: ["tools/echo.ts", "is not a directory"],
    },
  ]

  for (const { name, args, says } of cases) {
    test(name, async () => {
      const box = sandbox({ "tools/echo.ts": ECHO })
      const result = await core(box, args(box.location))
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("core exec")
      for (const text of says) expect(result.stderr).toContain(text)
      expect(runs(box, "echo")).toBe(0)
    })
  }

  // A script's unset variable (`--location "$DIR"`): it ran in the current directory, here a Location with the tool.
  test("an empty --location, which is never the current directory", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const result = await core(box, ["exec", "echo", "--input", '{"text":"x"}', "--location", ""], { cwd: box.location })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("The Location is an empty path")
    expect(runs(box, "echo")).toBe(0)
  })

  for (const [name, config, says] of [
    ["a core.json nested 50,000 levels deep", `{"permission":${"[".repeat(50_000)}`, "core.json:1:142: syntax error: arrays and objects nested deeper than 128 levels"],
    ["a core.json with a NUL in a string", '{"permission":{"echo":"al\u0000low"}}', "core.json:1:23: syntax error: a string holds a NUL character"],
  ] as const) {
    test(`${name}, with its position`, async () => {
      const box = sandbox({ "tools/echo.ts": ECHO, "core.json": config })
      const result = await exec(box, "echo", { text: "hi" })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(says)
      expect(runs(box, "echo")).toBe(0)
    })
  }

  // core waited in open(2) for a writer, for good; SIGTERM could not end it.
  test("a core.json that is a FIFO is a configuration error at once, not a wait", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    expect(spawnSync("mkfifo", [join(box.location, "core.json")]).status).toBe(0)
    const result = await exec(box, "echo", { text: "hi" })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("core.json: expected a readable file, found a FIFO (a named pipe)")
    expect(runs(box, "echo")).toBe(0)
  })
})

describe("defects", () => {
  const BROKEN = `${IMPORTS}${RAN}
export const throws = Tool.make({
  description: "Throws instead of failing",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => {
    ran("throws")
    throw new Error("disk on fire while throwing")
  },
})

export const dies = Tool.make({
  description: "Dies inside its effect",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () =>
    Effect.sync(() => ran("dies")).pipe(Effect.andThen(Effect.die(new Error("invariant broken while dying")))),
})
`

  for (const [tool, defect] of [
    ["throws", "disk on fire while throwing"],
    ["dies", "invariant broken while dying"],
  ] as const) {
    test(`a tool that ${tool} exits 3 with the defect on stderr, and the same call then replays as interrupted without running`, async () => {
      const box = sandbox({ "tools/broken.ts": BROKEN })
      const ids = ["--session", "ses_defect", "--call", `call_${tool}`]
      const first = await exec(box, `broken_${tool}`, {}, ids)
      expect(first.code).toBe(3)
      expect(first.stdout).toBe("")
      expect(first.stderr).toContain(defect)
      expect(runs(box, tool)).toBe(1)

      const again = await exec(box, `broken_${tool}`, {}, ids)
      expect(again.code).toBe(1)
      const settlement = settlementOf(again)
      expect(settlement.callID).toBe(`call_${tool}`)
      expect(settlement.status).toBe("error")
      expect(settlement.error?.kind).toBe("interrupted")
      expect(settlement.error?.message).toContain(`broken_${tool}`)
      expect(runs(box, tool)).toBe(1)
      // Never "settled before": it was begun and never settled, and is answered as interrupted, now and after.
      const note =
        `core: replayed: call call_${tool} of session ses_defect was started before and never settled; it is answered as ` +
        "interrupted and nothing ran now (check whether it took effect; give a new --call to run the tool again)\n"
      expect(again.stderr).toBe(note)
      const third = await exec(box, `broken_${tool}`, {}, ids)
      expect(third.stdout).toBe(again.stdout)
      expect(third.stderr).toBe(note)
    })
  }
})

describe("at most once", () => {
  test("settling the same session and call twice runs the tool once and prints the identical settlement", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const ids = ["--session", "ses_once", "--call", "call_once"]
    const first = await exec(box, "echo", { text: "first" }, ids)
    const second = await exec(box, "echo", { text: "second" }, ids)
    expect(first.code).toBe(0)
    expect(second.code).toBe(0)
    expect(second.stdout).toBe(first.stdout)
    expect(settlementOf(second).structured).toBe("first")
    expect(runs(box, "echo")).toBe(1)
  })

  test("a call is identified by session and call id together", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    await exec(box, "echo", { text: "a" }, ["--session", "ses_1", "--call", "call_1"])
    const otherCall = await exec(box, "echo", { text: "b" }, ["--session", "ses_1", "--call", "call_2"])
    const otherSession = await exec(box, "echo", { text: "c" }, ["--session", "ses_2", "--call", "call_1"])
    expect(settlementOf(otherCall).structured).toBe("b")
    expect(settlementOf(otherSession).structured).toBe("c")
    expect(runs(box, "echo")).toBe(3)
  })

  test("a second process settling a call that is still running never reports an outcome other than the recorded one", async () => {
    const box = sandbox({
      "tools/gate.ts": `${IMPORTS}${RAN}
export default Tool.make({
  description: "Waits until its standard input closes",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) =>
    Effect.gen(function* () {
      ran("gate")
      yield* context.progress({ message: "waiting for stdin" })
      yield* Effect.promise(() => Bun.stdin.text())
      return "released"
    }),
})
`,
    })
    const args = ["exec", "gate", "--input", "{}", "--location", box.location, "--session", "ses_race", "--call", "call_race"]
    const running = await start(box, args)
    await running.stderrContains("progress: waiting for stdin\n")
    const second = await start(box, args)
    second.child.stdin.end()
    // Release the first while the second is starting up: whichever order they meet the store in, the second must
    // wait for or replay the first's settlement (the waiting itself is pinned down in the settlement tests).
    running.child.stdin.end()
    const [first, meanwhile] = await Promise.all([running.finished(), second.finished()])
    const later = await core(box, args)

    expect(first.code).toBe(0)
    expect(settlementOf(first).structured).toBe("released")
    expect(runs(box, "gate")).toBe(1)
    // Whatever the second process says must be what the call is recorded as, and every replay must agree.
    expect(settlementOf(later)).toEqual(settlementOf(first))
    expect(settlementOf(meanwhile)).toEqual(settlementOf(first))
  })
})

describe("the settlement store", () => {
  test("a data directory that cannot hold the store is an operational failure: exit 3 naming the path", async () => {
    const box = sandbox({ "tools/echo.ts": ECHO })
    const blocked = join(box.data, "not-a-directory")
    writeFileSync(blocked, "")
    const result = await core(
      { ...box, env: { ...box.env, CORE_DATA_DIR: blocked } },
      ["exec", "echo", "--input", '{"text":"x"}', "--location", box.location],
    )
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(blocked)
    expect(runs(box, "echo")).toBe(0)
  })
})
