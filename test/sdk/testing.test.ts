// `@core/tool/testing` from source: each helper settles through the real pipeline and answers what `core exec`
// would print (the end-to-end comparison with the binary, in a `core init` workspace, is test/cli/init.test.ts).

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import {
  check,
  CheckError,
  LoadError,
  OperationalFailure,
  OptionsError,
  settle,
  settleFile,
  trace,
  traceFile,
} from "../../src/sdk/testing"
import { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"
import { echo as makeEcho } from "../support/tools"

const echo = makeEcho()

const countdown = Tool.make({
  description: "Count down, reporting each step",
  input: Schema.Struct({ from: Schema.Int }),
  output: Schema.Array(Schema.Int),
  execute: (input, context) =>
    Effect.gen(function* () {
      const steps: Array<number> = []
      for (let n = input.from; n > 0; n--) {
        yield* context.progress({ message: `at ${n}`, metadata: { n } })
        steps.push(n)
      }
      return steps
    }),
  toModelOutput: ({ output: steps }) => steps.join(" "),
})

/** A Location whose tools/ holds `files`; answers the folder. */
const tools = (files: Record<string, string>): string => {
  const location = tempDir("core-testing-loc-")
  mkdirSync(join(location, "tools"))
  for (const [name, source] of Object.entries(files)) writeFileSync(join(location, "tools", name), source)
  return location
}

const IMPORTS = `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\n`

describe("settle", () => {
  test("answers the settlement JSON of core exec: the string output as one text part and as structured", async () => {
    const settlement = await settle(echo, { text: "hi" }, { name: "echo", toolCallID: "call_1" })
    expect(settlement).toEqual({
      tool: "echo",
      callID: "call_1",
      status: "success",
      content: [{ type: "text", text: "hi" }],
      structured: "hi",
      outputs: [],
    })
  })

  test("registers the tool as \"tool\" unless named, and hands the context exactly the ids given", async () => {
    const ids = Tool.make({
      description: "Report the call's ids",
      input: Schema.Struct({}),
      output: Schema.Struct({
        session: Schema.String,
        agent: Schema.String,
        message: Schema.String,
        call: Schema.String,
      }),
      execute: (_, context) =>
        Effect.succeed({
          session: context.sessionID,
          agent: context.agent,
          message: context.assistantMessageID,
          call: context.toolCallID,
        }),
    })
    const settlement = await settle(ids, {}, {
      sessionID: "ses_a",
      assistantMessageID: "msg_b",
      toolCallID: "call_c",
      agent: "plan",
    })
    expect(settlement.tool).toBe("tool")
    expect(settlement.structured).toEqual({ session: "ses_a", agent: "plan", message: "msg_b", call: "call_c" })
  })

  test("reports input that does not match the schema as invalid_input, without running the tool", async () => {
    let ran = false
    const watched = Tool.make({
      description: "Notes that it ran",
      input: Schema.Struct({ text: Schema.String }),
      output: Schema.String,
      execute: () => Effect.sync(() => ((ran = true), "ran")),
    })
    const settlement = await settle(watched, { text: 42 }, { name: "watched" })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("invalid_input")
    expect(settlement.error?.message).toContain("text: Expected string, got 42")
    expect(ran).toBe(false)
  })

  test("reports Tool.Failure as a model-visible failure and an output off its schema as invalid_output", async () => {
    const failing = Tool.make({
      description: "Always fails",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () => Effect.fail(new Tool.Failure({ message: "No network here; try again later." })),
    })
    expect((await settle(failing, {})).error).toEqual({ kind: "failure", message: "No network here; try again later." })
    const lying = Tool.make({
      description: "Claims a number",
      input: Schema.Struct({}),
      output: Schema.Finite,
      execute: () => Effect.succeed("three" as unknown as number),
    })
    expect((await settle(lying, {})).error?.kind).toBe("invalid_output")
  })

  test("rejects with OperationalFailure for a defect, carrying the tool's own error: never a result", async () => {
    const broken = Tool.make({
      description: "Throws",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () => Effect.sync(() => JSON.parse("{") as string),
    })
    const error = await settle(broken, {}, { name: "broken" }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(error).toBeInstanceOf(OperationalFailure)
    expect((error as OperationalFailure).message).toContain("broken ended in an operational failure")
    expect((error as OperationalFailure).message).toContain("`core exec` exits 3")
    expect((error as OperationalFailure).cause).toBeInstanceOf(SyntaxError)
  })

  test("bounds output over the limits into a preview and keeps the full text, which trace answers", async () => {
    const text = Array.from({ length: 500 }, (_, index) => `line ${index + 1}`).join("\n")
    const result = await trace(echo, { text }, { name: "echo", limits: { maxLines: 20, maxBytes: 4096 } })
    const { settlement } = result
    expect(settlement.status).toBe("success")
    expect(settlement.outputs).toHaveLength(1)
    const [reference] = settlement.outputs
    // The text, once: the string output's structured value is that text.
    expect(reference!.bytes).toBe(Buffer.byteLength(text))
    const preview = (settlement.content[0] as { text: string }).text
    expect(preview.split("\n")[1]).toBe("line 1")
    expect(preview).toContain(reference!.id)
    expect(preview).toEndWith("line 500")
    expect(preview.split("\n").length).toBeLessThanOrEqual(20)
    expect(result.outputs).toEqual({ [reference!.id]: text })
    // The managed output lived in a temp directory of this call, removed once it settled.
    const kept = /kept in (\S+): read/.exec(preview)?.[1]
    expect(kept).toBeDefined()
    expect(existsSync(kept!)).toBe(false)
  })

  test("trace answers the progress updates in order, and onProgress sees each as it comes", async () => {
    const seen: Array<string> = []
    const result = await trace(countdown, { from: 3 }, { onProgress: (update) => seen.push(update.message) })
    expect(result.settlement.content).toEqual([{ type: "text", text: "3 2 1" }])
    expect(result.progress).toEqual([
      { message: "at 3", metadata: { n: 3 } },
      { message: "at 2", metadata: { n: 2 } },
      { message: "at 1", metadata: { n: 1 } },
    ])
    expect(seen).toEqual(["at 3", "at 2", "at 1"])
  })

  test("refuses an unknown agent and a missing location the way core exec refuses its options", async () => {
    const nobody = settle(echo, { text: "x" }, { agent: "nobody" })
    await expect(nobody).rejects.toBeInstanceOf(OptionsError)
    await expect(nobody).rejects.toThrow('unknown agent "nobody"; known agents: build, plan')
    const nowhere = settle(echo, { text: "x" }, { location: join(tempDir(), "missing") })
    await expect(nowhere).rejects.toThrow("does not exist")
  })
})

describe("permissions", () => {
  const deny = { rules: [{ action: "echo", resource: "*", effect: "deny" as const }] }
  const ask = [{ action: "echo", resource: "*", effect: "ask" as const }]

  test("allow everything by default, as core's defaults do", async () => {
    expect((await settle(echo, { text: "x" }, { name: "echo" })).status).toBe("success")
  })

  test("a denying rule settles as denied, naming the rule", async () => {
    const settlement = await settle(echo, { text: "x" }, { name: "echo", permission: deny })
    expect(settlement.error?.kind).toBe("denied")
    expect(settlement.error?.message).toContain('Denied: echo on "*" is forbidden for the build agent')
    expect(settlement.error?.message).toContain("@core/tool/testing, permission.rules[0]")
  })

  test("an ask is declined without a reply, as core exec does without a terminal", async () => {
    const result = await trace(echo, { text: "x" }, { name: "echo", permission: { rules: ask } })
    expect(result.settlement.status).toBe("declined")
    expect(result.asks).toEqual([{ action: "echo", resources: ["*"] }])
  })

  test("an ask is answered by the reply: once or always runs the call; a reject with a message fails it", async () => {
    for (const reply of ["once", "always"] as const) {
      const settlement = await settle(echo, { text: "x" }, { name: "echo", permission: { rules: ask, reply } })
      expect(settlement.status).toBe("success")
    }
    const rejected = await settle(echo, { text: "x" }, {
      name: "echo",
      permission: { rules: ask, reply: { reject: "Not on Fridays." } },
    })
    expect(rejected.error).toEqual({ kind: "failure", message: "Not on Fridays." })
    const declined = await settle(echo, { text: "x" }, {
      name: "echo",
      permission: { rules: ask, reply: { reject: undefined } },
    })
    expect(declined.status).toBe("declined")
  })
})

describe("check", () => {
  test("answers the definition a model is offered under the name", () => {
    const definition = check(echo, "echo")
    expect(definition.name).toBe("echo")
    expect(definition.description).toBe("Echo text back")
    expect(definition.inputSchema).toMatchObject({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
      additionalProperties: false,
    })
    expect(definition.outputSchema).toEqual({ type: "string" })
  })

  test("throws CheckError for a name registration refuses, and for a value not made by Tool.make", () => {
    expect(() => check(echo, "9lives")).toThrow('Invalid tool name: "9lives" must start with a letter')
    expect(() => check(echo, "has space")).toThrow(CheckError)
    expect(() => check(echo, "x".repeat(65))).toThrow("the limit is 64")
    expect(() => check({ ...echo } as Tool.Any, "copy")).toThrow('"copy" is not a tool made by Tool.make')
  })

  test("settle refuses the same names before running anything", async () => {
    await expect(settle(echo, { text: "x" }, { name: "bad name" })).rejects.toBeInstanceOf(CheckError)
  })
})

describe("settleFile", () => {
  test("names the file's tools as core does: the default after the file, others <file>_<export>", async () => {
    const location = tools({
      "git.ts": `${IMPORTS}
const make = (what: string) =>
  Tool.make({ description: what, input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(what) })
export default make("default")
export const status = make("status")
`,
    })
    const file = join(location, "tools", "git.ts")
    expect((await settleFile(file, "git", {})).structured).toBe("default")
    expect((await settleFile(file, "git_status", {})).structured).toBe("status")
    const unknown = await settleFile(file, "status", {})
    expect(unknown.error?.kind).toBe("unknown")
    expect(unknown.error?.message).toContain("git_status")
  })

  test("traceFile answers progress too, for a file outside any node_modules", async () => {
    const location = tools({
      "slow.ts": `${IMPORTS}
export default Tool.make({
  description: "Reports progress",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) => context.progress({ message: "halfway" }).pipe(Effect.as("done")),
})
`,
    })
    const result = await traceFile(join(location, "tools", "slow.ts"), "slow", {})
    expect(result.settlement.structured).toBe("done")
    expect(result.progress).toEqual([{ message: "halfway" }])
  })

  test("throws LoadError for a file core would report instead of loading", async () => {
    const location = tools({
      "none.ts": `export const answer = 42\n`,
      "throws.ts": `${IMPORTS}throw new Error("no config")\n`,
      "9lives.ts": `${IMPORTS}
export default Tool.make({
  description: "Misnamed",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(""),
})
`,
    })
    const file = (name: string) => join(location, "tools", name)
    await expect(settleFile(file("none.ts"), "none", {})).rejects.toThrow("exports no tool")
    await expect(settleFile(file("throws.ts"), "throws", {})).rejects.toThrow("failed to load at line 3, column 11: no config")
    await expect(settleFile(file("9lives.ts"), "9lives", {})).rejects.toBeInstanceOf(LoadError)
    await expect(settleFile(file("9lives.ts"), "9lives", {})).rejects.toThrow("must start with a letter")
  })

  test("a LoadError says what core tools says: the syntax error's line and column, the install hint", async () => {
    const location = tools({
      "broken.ts": `${IMPORTS}\nexport default Tool.make({\n  description: "x",,\n})\n`,
      "needs.ts": `${IMPORTS}import pad from "left-pad-not-installed"\nexport default pad\n`,
    })
    const failure = async (name: string): Promise<LoadError> => {
      const error = await settleFile(join(location, "tools", `${name}.ts`), name, {}).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(error).toBeInstanceOf(LoadError)
      return error as LoadError
    }
    const broken = await failure("broken")
    expect(broken.file).toBe(join(location, "tools", "broken.ts"))
    expect(broken.position).toEqual({ line: IMPORTS.split("\n").length + 2, column: 20 })
    expect(broken.message).toContain(`syntax error at line ${broken.position?.line}, column 20: `)
    const needs = await failure("needs")
    expect(needs.message).toContain("npm install left-pad-not-installed")
    expect(needs.position).toBeUndefined()
  })
})

describe("projection", () => {
  test("toModelOutput gets the decoded input and the encoded output, as the spec gives them", async () => {
    const shift = Tool.make({
      description: "Add days to a date",
      input: Schema.Struct({ days: Schema.NumberFromString }),
      output: Schema.Struct({ date: Schema.Date }),
      execute: (input) => Effect.succeed({ date: new Date(Date.UTC(2024, 0, 1 + input.days)) }),
      toModelOutput: ({ input, output }) => `${input.days} days later: ${output.date.toISOString().slice(0, 10)}`,
    })
    const settlement = await settle(shift, { days: "2" })
    expect(settlement.content).toEqual([{ type: "text", text: "2 days later: 2024-01-03" }])
    expect(settlement.structured).toEqual({ date: "2024-01-03T00:00:00.000Z" })
  })

  test("without toModelOutput an object output is structured only: no content", async () => {
    const pair = Tool.make({
      description: "A pair",
      input: Schema.Struct({}),
      output: Schema.Struct({ a: Schema.Finite, b: Schema.String }),
      execute: () => Effect.succeed({ a: 1, b: "two" }),
    })
    const settlement = await settle(pair, {})
    expect(settlement).toMatchObject({ status: "success", content: [], structured: { a: 1, b: "two" }, outputs: [] })
  })

  test("a structured value the bound had to drop is null in the settlement and whole in trace.structured", async () => {
    const rows = Tool.make({
      description: "Rows",
      input: Schema.Struct({ n: Schema.Finite }),
      output: Schema.Struct({ rows: Schema.Array(Schema.Finite) }),
      execute: (input) => Effect.succeed({ rows: Array.from({ length: input.n }, (_, i) => i) }),
      toModelOutput: ({ input }) => `${input.n} rows`,
    })
    const result = await trace(rows, { n: 3_000 }, { limits: { maxBytes: 2_048 } })
    expect(result.settlement.content).toEqual([{ type: "text", text: "3000 rows" }])
    expect(result.settlement.structured).toBeNull()
    const [kept] = result.settlement.outputs
    expect(result.structured[kept!.id]).toEqual({ rows: Array.from({ length: 3_000 }, (_, i) => i) })
  })
})

describe("execute must return an Effect", () => {
  const made = (execute: () => unknown) =>
    Tool.make({
      description: "A slip",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: execute as () => Effect.Effect<string>,
    })

  const failureOf = async (tool: Tool.Any) => {
    const error = await settle(tool, {}, { name: "slip" }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(error).toBeInstanceOf(OperationalFailure)
    return (error as OperationalFailure).message
  }

  test("a Promise is an operational failure that says to use Effect.promise or Effect.tryPromise", async () => {
    const message = await failureOf(made(async () => "hi"))
    expect(message).toContain("slip's execute returned a Promise, not an Effect")
    expect(message).toContain("Effect.promise(() => work(input))")
    expect(message).toContain("Effect.tryPromise")
  })

  test("a plain value is an operational failure that says to use Effect.succeed", async () => {
    const message = await failureOf(made(() => "hi"))
    expect(message).toContain("returned a plain string, not an Effect")
    expect(message).toContain("Effect.succeed(value)")
  })

  test("a synchronous throw is an operational failure that says to return an Effect", async () => {
    const message = await failureOf(
      made(() => {
        throw new Error("boom")
      }),
    )
    expect(message).toContain("slip's execute threw before returning an Effect: boom")
    expect(message).toContain("Effect.try")
  })

  test("a rejected Promise left behind does not end the process", async () => {
    const message = await failureOf(made(() => Promise.reject(new Error("later"))))
    expect(message).toContain("returned a Promise")
    // A rejection nobody handled is reported once the microtasks have run: one macrotask later, it would have been.
    await new Promise((resolve) => setImmediate(resolve))
  })
})

describe("signal", () => {
  const ask = [{ action: "guarded", resource: "*", effect: "ask" as const }]

  test("aborting while the call waits for a permission reply settles it cancelled, recorded, and it never runs", async () => {
    let ran = false
    const guarded = Tool.make({
      description: "Runs only when approved",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () =>
        Effect.sync(() => {
          ran = true
          return "ran"
        }),
    })
    const controller = new AbortController()
    const result = await trace(guarded, {}, {
      name: "guarded",
      signal: controller.signal,
      permission: {
        rules: ask,
        // A person who never answers; the call is cancelled while it waits.
        reply: () => {
          controller.abort()
          return new Promise(() => {})
        },
      },
    })
    expect(result.settlement).toMatchObject({ tool: "guarded", status: "cancelled", content: [{ type: "text" }] })
    expect(result.asks).toEqual([{ action: "guarded", resources: ["*"] }])
    expect(ran).toBe(false)
  })

  test("aborting a running call interrupts it and settles it cancelled", async () => {
    let interrupted = false
    const controller = new AbortController()
    const waits = Tool.make({
      description: "Waits until cancelled",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () =>
        Effect.sync(() => controller.abort()).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted = true
            }),
          ),
        ),
    })
    const settlement = await settle(waits, {}, { signal: controller.signal })
    expect(settlement.status).toBe("cancelled")
    expect(interrupted).toBe(true)
  })
})

describe("runner outcomes the model reads", () => {
  test("a declined call says what was not granted, why nobody answered, and that retrying unchanged will not help", async () => {
    const settlement = await settle(echo, { text: "x" }, {
      name: "echo",
      permission: { rules: [{ action: "echo", resource: "*", effect: "ask" }] },
    })
    expect(settlement.status).toBe("declined")
    const text = (settlement.content[0] as { text: string }).text
    expect(text).toStartWith('echo did not run: permission for echo on "*" needs a person\'s approval, and nobody was there')
    expect(text).toContain("Calling it again unchanged is declined the same way")
    expect(text).toContain("ask the user to approve it")
    expect(text).not.toContain("core.json")
    expect(text.length).toBeLessThan(300)
  })

  test("a call a person declined says so, and not to call it again unchanged", async () => {
    const settlement = await settle(echo, { text: "x" }, {
      name: "echo",
      permission: { rules: [{ action: "echo", resource: "*", effect: "ask" }], reply: { reject: "" } },
    })
    expect(settlement.status).toBe("declined")
    const text = (settlement.content[0] as { text: string }).text
    expect(text).toBe('echo did not run: a person declined permission for echo on "*". Do not call it again unchanged; ask the user what they want.')
  })
})
