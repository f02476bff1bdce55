// Permissions end to end (DESIGN §6, §7): core.json rules and agents deciding what the compiled binary may run,
// refusals of invalid configuration, `core check` explaining a decision and `core permissions` managing saved
// approvals. Whether a tool ran is read from what it recorded, never inferred from the exit code alone.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, realpathSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "../support/temp"
import { Builtins } from "../../src/builtin/builtins"
import { core, exec, IMPORTS, own, runs, sandbox, settlementOf, type Sandbox } from "./fixture"
import { coreJson, realLocation, recording, saveApprovals, savedApprovals } from "./permissions-fixture"

const DEPLOY = { "tools/deploy.ts": recording("deploy") }
const TARGET = { target: "prod" }

/** The tool names `core tools --json` offers, built-ins left out. */
const offered = async (box: Sandbox, extra: ReadonlyArray<string> = []) => {
  const result = await core(box, ["tools", "--json", "--location", box.location, ...extra])
  expect(result.code).toBe(0)
  return own((JSON.parse(result.stdout) as Array<{ name: string }>).map((definition) => definition.name))
}

/** The first column of `core tools`' table, built-ins left out. */
const listed = async (box: Sandbox, extra: ReadonlyArray<string> = []) => {
  const result = await core(box, ["tools", "--location", box.location, ...extra])
  expect(result.code).toBe(0)
  return own(result.stdout.trimEnd().split("\n").map((row) => row.split(/\s+/)[0]!))
}

/** What `core check NAME` prints, after checking it exited 0 and did not run the tool. */
const explain = async (box: Sandbox, name: string, input: unknown, extra: ReadonlyArray<string> = []) => {
  const before = runs(box, name)
  const result = await core(box, ["check", name, "--input", JSON.stringify(input), "--location", box.location, ...extra])
  expect(result.code).toBe(0)
  expect(runs(box, name)).toBe(before)
  return JSON.parse(result.stdout) as { tool: string; agent: string; decision: string; checks: Array<Record<string, any>> }
}

/**
 * The explanation of a tool that checks its action as a whole: exactly one check, shown flattened as
 * `{ tool, agent, action, decision, resources, alwaysSaves? }`.
 */
const check = async (box: Sandbox, name: string, input: unknown, extra: ReadonlyArray<string> = []) => {
  const { checks, ...explained } = await explain(box, name, input, extra)
  expect(checks).toHaveLength(1)
  const [only] = checks
  expect(only!.decision).toBe(explained.decision)
  const { decision: _decision, ...rest } = only!
  return { tool: explained.tool, agent: explained.agent, ...rest, decision: explained.decision } as Record<string, any>
}

describe("a rule that denies", () => {
  test("refuses the call as a denied error naming the action, the rule and the core.json it came from; nothing runs", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "deny" } }) })
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(1)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("denied")
    const message = settlement.error!.message
    expect(message).toContain('deploy on "*" is forbidden for the build agent')
    expect(message).toContain('rule "deploy": "*" → deny')
    expect(message).toContain(`${join(realLocation(box), "core.json")}, permission.deploy`)
    expect(settlement.content).toEqual([{ type: "text", text: message }])
    expect(runs(box, "deploy")).toBe(0)
  })

  test("--yes approves asks, not denials", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "deny" } }) })
    const result = await exec(box, "deploy", TARGET, ["--yes"])
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.kind).toBe("denied")
    expect(runs(box, "deploy")).toBe(0)
  })

  test("core tools hides a wholly denied tool, in the table and in --json, and says so when nothing is left", async () => {
    const box = sandbox({
      ...DEPLOY,
      "tools/status.ts": recording("status"),
      ...coreJson({ permission: { deploy: "deny" } }),
    })
    expect(await listed(box)).toEqual(["status"])
    expect(await offered(box)).toEqual(["status"])

    const alone = sandbox({ ...DEPLOY, ...coreJson({ permission: { "*": "deny" } }) })
    const result = await core(alone, ["tools", "--location", alone.location])
    expect(result.code).toBe(0)
    const all = 1 + Builtins.NAMES.length
    expect(result.stdout).toBe(`No tools in ${realLocation(alone)} are offered to the build agent: its rules deny all ${all}.\n`)
    expect(await offered(alone)).toEqual([])
  })

  test("core tools still offers a tool denied only on some resources", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: { "prod-*": "deny" } } }) })
    expect(await offered(box)).toEqual(["deploy"])
  })
})

describe("a rule that asks", () => {
  test("is declined without a terminal: exit 4, a declined settlement, a note on stderr, and nothing runs", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "ask" } }) })
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(4)
    const settlement = settlementOf(result)
    expect(settlement.status).toBe("declined")
    expect(settlement.error).toBeUndefined()
    expect(result.stderr).toContain('declined deploy on "*": no terminal to ask; pass --yes to approve it once')
    // The model reads what was asked and that no person saw it.
    const note = (settlement.content[0] as { text: string }).text
    // The model reads what was asked, the one reason nobody saw it (naming the face), and no operator advice.
    expect(note).toBe(
      'deploy did not run: permission for deploy on "*" needs a person\'s approval, and core exec has no terminal ' +
        "to ask a person. Calling it again unchanged is declined the same way; ask the user to approve it.",
    )
    expect(note).not.toContain("core.json")
    expect(runs(box, "deploy")).toBe(0)
  })

  test("a bash line core cannot read is declined saying so: a mistake in it is the model's to fix, not a person's to approve", async () => {
    const box = sandbox()
    const result = await exec(box, "bash", { command: "echo $((1+" })
    expect(result.code).toBe(4)
    const note = (settlementOf(result).content[0] as { text: string }).text
    expect(note).toStartWith('bash did not run: permission for bash on "<unparsed> echo $((1+" needs a person\'s approval')
    expect(note).toContain("core could not read the line as bash")
    expect(note).toContain("if it holds a mistake, fix it and call again")
    // A line that reads is declined in the words above.
    const plain = await exec(box, "bash", { command: "echo ok > ../outside.txt" })
    expect((settlementOf(plain).content[0] as { text: string }).text).not.toContain("could not read the line")
  })

  test("--yes approves it once: the tool runs, stderr notes the approval, and nothing is saved", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "ask" } }) })
    const approved = await exec(box, "deploy", TARGET, ["--yes"])
    expect(approved.code).toBe(0)
    expect(settlementOf(approved).structured).toBe("deploy prod")
    expect(approved.stderr).toContain('approved once (--yes): deploy on "*"')
    expect(runs(box, "deploy")).toBe(1)

    // Once means once: the next call asks again, and no approval was saved.
    const again = await exec(box, "deploy", TARGET)
    expect(again.code).toBe(4)
    expect(runs(box, "deploy")).toBe(1)
    expect(await savedApprovals(box)).toEqual([])
  })
})

describe("agents", () => {
  const EDITING = {
    ...DEPLOY,
    "tools/edit.ts": recording("edit"),
    "tools/write.ts": recording("write"),
    "tools/apply_patch.ts": recording("apply_patch"),
  }

  test("plan may not use edit, write or apply_patch (one shared edit action), which build may", async () => {
    const box = sandbox(EDITING)
    for (const name of ["edit", "write", "apply_patch"]) {
      const result = await exec(box, name, TARGET, ["--agent", "plan"])
      expect(result.code).toBe(1)
      const settlement = settlementOf(result)
      expect(settlement.error?.kind).toBe("denied")
      expect(settlement.error?.message).toContain('edit on "*" is forbidden for the plan agent')
      expect(settlement.error?.message).toContain("core built-in agent, plan.edit")
      expect(runs(box, name)).toBe(0)
    }
    expect((await exec(box, "write", TARGET)).code).toBe(0)
    expect(runs(box, "write")).toBe(1)
  })

  test("core tools --agent plan hides the editing tools, built-in or not; build is offered them all", async () => {
    const everything = [...Builtins.NAMES, "deploy"].sort()
    const editing = ["apply_patch", "edit", "write"]
    const all = async (box: Sandbox, extra: ReadonlyArray<string>) => {
      const result = await core(box, ["tools", "--json", "--location", box.location, ...extra])
      return (JSON.parse(result.stdout) as Array<{ name: string }>).map((definition) => definition.name)
    }
    const box = sandbox(DEPLOY)
    expect(await all(box, ["--agent", "plan"])).toEqual(everything.filter((name) => !editing.includes(name)))
    expect(await all(box, [])).toEqual(everything)

    const overridden = sandbox(EDITING)
    expect(await all(overridden, ["--agent", "plan"])).toEqual(everything.filter((name) => !editing.includes(name)))
  })

  test("a configured agent is offered and may run only what its rules allow", async () => {
    const box = sandbox({
      ...DEPLOY,
      "tools/read_only.ts": recording("read_only"),
      ...coreJson({ agents: { review: { permission: { "*": "deny", read_only: "allow" } } } }),
    })
    expect(await offered(box, ["--agent", "review"])).toEqual(["read_only"])
    expect(await listed(box, ["--agent", "review"])).toEqual(["read_only"])

    const denied = await exec(box, "deploy", TARGET, ["--agent", "review"])
    expect(denied.code).toBe(1)
    expect(settlementOf(denied).error?.message).toContain('agents.review.permission["*"]')
    expect(runs(box, "deploy")).toBe(0)

    const allowed = await exec(box, "read_only", TARGET, ["--agent", "review"])
    expect(allowed.code).toBe(0)
    expect(runs(box, "read_only")).toBe(1)
  })

  test("an agent's own rules come after the top-level ones, so they may allow what those deny", async () => {
    const box = sandbox({
      ...DEPLOY,
      ...coreJson({ permission: { deploy: "deny" }, agents: { ops: { permission: { deploy: "allow" } } } }),
    })
    expect(await offered(box)).toEqual([])
    expect(await offered(box, ["--agent", "ops"])).toEqual(["deploy"])
    expect((await exec(box, "deploy", TARGET)).code).toBe(1)
    expect(runs(box, "deploy")).toBe(0)
    expect((await exec(box, "deploy", TARGET, ["--agent", "ops"])).code).toBe(0)
    expect(runs(box, "deploy")).toBe(1)
  })

  test("an unknown --agent is a usage error listing the known agents, on exec, tools and check; nothing runs", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ agents: { review: { permission: { "*": "deny" } } } }) })
    const location = ["--location", box.location]
    const input = ["--input", JSON.stringify(TARGET)]
    for (const [command, args] of [
      ["exec", ["exec", "deploy", ...input, ...location, "--yes"]],
      ["tools", ["tools", ...location]],
      ["check", ["check", "deploy", ...input, ...location]],
    ] as const) {
      const result = await core(box, [...args, "--agent", "ghost"])
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(`core ${command}: unknown agent "ghost"; known agents: build, plan, review`)
    }
    expect(runs(box, "deploy")).toBe(0)
  })
})

describe("rules across core.json files", () => {
  test("the Location's deny wins over $CORE_HOME's allow", async () => {
    const box = sandbox(
      { ...DEPLOY, ...coreJson({ permission: { deploy: "deny" } }) },
      coreJson({ permission: { deploy: "allow" } }),
    )
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.message).toContain(join(realLocation(box), "core.json"))
    expect(runs(box, "deploy")).toBe(0)
  })

  test("the Location's allow wins over $CORE_HOME's deny, and both files may hold comments and trailing commas", async () => {
    const box = sandbox(
      {
        ...DEPLOY,
        "core.json": `// This Location deploys.
{
  "permission": {
    /* later files win */
    "deploy": "allow",
  },
}
`,
      },
      { "core.json": `{ "permission": { "deploy": "deny", }, } // home\n` },
    )
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(0)
    expect(runs(box, "deploy")).toBe(1)
    const explained = await check(box, "deploy", TARGET)
    expect(explained.resources).toEqual([
      {
        resource: "*",
        decision: "allow",
        rule: { action: "deploy", resource: "*", effect: "allow", file: join(realLocation(box), "core.json"), path: "permission.deploy" },
      },
    ])
  })

  test("$CORE_HOME's rules apply where the Location sets none", async () => {
    const box = sandbox(DEPLOY, coreJson({ permission: { deploy: "deny" } }))
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.message).toContain(join(box.home, "core.json"))
    expect(runs(box, "deploy")).toBe(0)
  })

  test("within one file the later entry wins", async () => {
    const denyLast = sandbox({ ...DEPLOY, "core.json": `{ "permission": { "*": "allow", "deploy": "deny" } }` })
    expect((await check(denyLast, "deploy", TARGET)).decision).toBe("deny")
    const allowLast = sandbox({ ...DEPLOY, "core.json": `{ "permission": { "deploy": "deny", "*": "allow" } }` })
    expect((await check(allowLast, "deploy", TARGET)).decision).toBe("allow")
    const result = await exec(allowLast, "deploy", TARGET)
    expect(result.code).toBe(0)
    expect(runs(allowLast, "deploy")).toBe(1)
  })
})

describe("an invalid core.json", () => {
  const CASES: ReadonlyArray<{ problem: string; text: string; at: string; says: ReadonlyArray<string> }> = [
    {
      problem: "a syntax error",
      text: '{\n  "permission": {\n    "deploy" "allow"\n  }\n}\n',
      at: "3:14",
      says: ["syntax error: colon expected"],
    },
    {
      problem: "an unknown key",
      text: '{\n  "permision": { "deploy": "allow" }\n}\n',
      at: "2:3",
      says: ['permision: expected one of the keys "$schema", "permission", "agents", "output", "shell", "editing" or "mcp"', 'found unknown key "permision"'],
    },
    {
      problem: 'a misspelt effect "alow"',
      text: '{\n  "permission": {\n    "deploy": "alow",\n  },\n}\n',
      at: "3:15",
      says: ['permission.deploy: expected "allow", "deny" or "ask", found "alow"'],
    },
    {
      problem: "output.maxBytes of the wrong type",
      text: '{\n  "output": { "maxBytes": "2048" }\n}\n',
      at: "2:27",
      says: ['output.maxBytes: expected an integer of at least 1024, found "2048"'],
    },
  ]

  for (const { problem, text, at, says } of CASES) {
    test(`with ${problem} stops exec and tools with exit 2, the file, line:column, key and what was expected; nothing runs`, async () => {
      const box = sandbox({ ...DEPLOY, "core.json": text })
      const file = join(realLocation(box), "core.json")
      for (const [command, args] of [
        ["exec", ["exec", "deploy", "--input", JSON.stringify(TARGET), "--yes"]],
        ["tools", ["tools"]],
      ] as const) {
        const result = await core(box, [...args, "--location", box.location])
        expect(result.code).toBe(2)
        expect(result.stdout).toBe("")
        expect(result.stderr).toContain(`core ${command}: ${file}:${at}: `)
        for (const phrase of says) expect(result.stderr).toContain(phrase)
        // What to do next is the file's fixing, and core check to see the Location load: not the command's --help.
        expect(result.stderr).toContain(`Fix it, then see whether the Location loads: core check --location ${box.location}`)
        expect(result.stderr).not.toContain("--help")
      }
      expect(runs(box, "deploy")).toBe(0)
      // core check names the file once, with its line and column.
      const checked = await core(box, ["check", "--location", box.location])
      expect(checked.code).toBe(1)
      expect(checked.stderr).toContain(`core check: ${file}:${at}: `)
      expect(checked.stderr).not.toContain(`${file}: ${file}`)
    })
  }

  test("in $CORE_HOME is refused the same way, naming the home file", async () => {
    const box = sandbox(DEPLOY, { "core.json": '{ "output": { "maxLines": 2 } }' })
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(
      `${join(box.home, "core.json")}:1:27: output.maxLines: expected an integer of at least 8, found 2`,
    )
    expect(runs(box, "deploy")).toBe(0)
  })

  test("that is a directory is refused by every command that opens the Location; nothing runs", async () => {
    const box = sandbox(DEPLOY)
    mkdirSync(join(box.location, "core.json"))
    const file = join(realLocation(box), "core.json")
    const input = ["--input", JSON.stringify(TARGET)]
    for (const [command, args] of [
      ["exec", ["exec", "deploy", ...input, "--yes"]],
      ["tools", ["tools", "--json"]],
      ["check", ["check", "deploy", ...input]],
    ] as const) {
      const result = await core(box, [...args, "--location", box.location])
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(`core ${command}: ${file}: expected a readable file, found a directory`)
    }
    expect(runs(box, "deploy")).toBe(0)
    // Saved approvals need no configuration: a Location with a broken core.json can still list and reset them.
    const listed = await core(box, ["permissions", "--location", box.location])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain("No saved approvals")
  })
})

describe("output limits from core.json", () => {
  const LINE_COUNT = 10_000
  const MAX_BYTES = 2048
  const MAX_LINES = 50
  /** Numbered lines of multi-byte text, so bytes are counted in UTF-8 rather than characters. */
  const linesOf = (width: number) =>
    Array.from({ length: LINE_COUNT }, (_, index) => `${index + 1} ${"é€".repeat(width)}`).join("\n")
  const LINES = `${IMPORTS}
export default Tool.make({
  description: "Return numbered lines of a given width",
  input: Schema.Struct({ width: Schema.Finite }),
  output: Schema.String,
  execute: (input) =>
    Effect.succeed(Array.from({ length: ${LINE_COUNT} }, (_, index) => \`\${index + 1} \${"é€".repeat(input.width)}\`).join("\\n")),
})
`

  // Narrow lines meet the line limit first, wide ones the byte limit: each limit is shown to apply.
  for (const [shape, width] of [["narrow", 1], ["wide", 40]] as const) {
    test(`bound a ${LINE_COUNT}-line output of ${shape} lines within maxBytes and maxLines, with a reference to all of it`, async () => {
      const box = sandbox({ "tools/lines.ts": LINES, ...coreJson({ output: { maxBytes: MAX_BYTES, maxLines: MAX_LINES } }) })
      const full = linesOf(width)
      const result = await exec(box, "lines", { width })
      expect(result.code).toBe(0)
      const settlement = settlementOf(result)
      expect(settlement.outputs).toHaveLength(1)
      const { id, bytes } = settlement.outputs[0]!
      expect(bytes).toBe(Buffer.byteLength(full, "utf8"))

      expect(settlement.content).toHaveLength(1)
      const part = settlement.content[0]!
      if (part.type !== "text") throw new Error(`expected a text part, got ${part.type}`)
      const preview = part.text
      expect(Buffer.byteLength(preview, "utf8")).toBeLessThanOrEqual(MAX_BYTES)
      expect(preview.split("\n").length).toBeLessThanOrEqual(MAX_LINES)
      expect(preview).toContain(id)
      // The string output did not fit: structured is null, never a preview.
      expect(settlement.structured).toBeNull()
      // After the preview's summary line, the text's own first line.
      expect(part.text.split("\n")[1]).toBe(`1 ${"é€".repeat(width)}`)

      const printed = await core(box, ["output", id])
      expect(printed.code).toBe(0)
      expect(printed.stdout).toBe(full)
    })
  }
})

describe("core check", () => {
  test("check = exec: a bash line denied by a rule is denied by both, and exec asks nothing about its path first", async () => {
    const box = sandbox(coreJson({ permission: { bash: { "cat /etc/passwd": "deny" } } }))
    const explained = await explain(box, "bash", { command: "cat /etc/passwd" })
    expect(explained.decision).toBe("deny")
    // Without a terminal an ask would be declined (exit 4): a deny first is an error naming the rule (exit 1).
    const result = await exec(box, "bash", { command: "cat /etc/passwd" })
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.kind).toBe("denied")
    expect(settlementOf(result).error?.message).toContain("cat /etc/passwd")
  })

  const decisionsOf = (check: Record<string, any>) =>
    (check.resources as Array<{ resource: string; decision: string }>).map(({ resource, decision }) => ({ resource, decision }))

  test("explains a built-in per path: external_directory for the directory outside the Location, then the action", async () => {
    const box = sandbox()
    const outside = tempDir()
    const explained = await explain(box, "read", { filePath: join(outside, "notes.txt") })
    expect(explained.decision).toBe("ask")
    expect(explained.checks.map((check) => [check.action, check.decision])).toEqual([
      ["external_directory", "ask"],
      ["read", "allow"],
    ])
    expect(decisionsOf(explained.checks[0]!)).toEqual([{ resource: `${realpathSync(outside)}/*`, decision: "ask" }])
    expect(explained.checks[0]!.alwaysSaves).toEqual([`${realpathSync(outside)}/*`])

    const inside = await explain(box, "write", { filePath: "src/a.ts", content: "x" }, ["--agent", "plan"])
    expect(inside.decision).toBe("deny")
    expect(inside.checks.map((check) => [check.action, decisionsOf(check)])).toEqual([
      ["edit", [{ resource: "src/a.ts", decision: "deny" }]],
    ])
    expect(existsSync(join(box.location, "src"))).toBe(false)
  })

  test("explains a bash line per command, with what always would save, and runs nothing", async () => {
    const box = sandbox(coreJson({ permission: { bash: { "*": "ask", "git status": "allow" } } }))
    const explained = await explain(box, "bash", { command: "git status && touch made" })
    expect(explained.decision).toBe("ask")
    // The file `touch` changes meets the edit rules first (core's defaults allow it), then the commands.
    expect(explained.checks.map((check) => check.action)).toEqual(["edit", "bash"])
    expect(decisionsOf(explained.checks[0]!)).toEqual([{ resource: "made", decision: "allow" }])
    expect(decisionsOf(explained.checks[1]!)).toEqual([
      { resource: "git status", decision: "allow" },
      { resource: "touch made", decision: "ask" },
    ])
    expect(explained.checks[1]!.alwaysSaves).toEqual(["touch *"])
    expect(existsSync(join(box.location, "made"))).toBe(false)
  })

  test("explains code that cannot be known as always asked, even where every command is allowed", async () => {
    const box = sandbox()
    const explained = await explain(box, "bash", { command: 'eval "$SCRIPT"' })
    expect(explained.decision).toBe("ask")
    expect(explained.checks.map((check) => [check.action, check.decision, check.alwaysAsked])).toEqual([["bash", "ask", true]])
  })

  test("explains every file of a patch, and refuses a patch it cannot read with exit 1", async () => {
    const box = sandbox()
    const patch = ["*** Begin Patch", "*** Add File: a.txt", "+a", "*** Delete File: b.txt", "*** End Patch"].join("\n")
    const explained = await explain(box, "apply_patch", { patchText: patch })
    expect(explained.checks.map((check) => [check.action, decisionsOf(check)])).toEqual([
      ["edit", [{ resource: "a.txt", decision: "allow" }]],
      ["edit", [{ resource: "b.txt", decision: "allow" }]],
    ])
    const broken = await core(box, ["check", "apply_patch", "--input", JSON.stringify({ patchText: "nonsense" }), "--location", box.location])
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain("The patch could not be read")
  })

  test("explains a deny with the deciding rule and its file, and runs nothing", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "deny" } }) })
    expect(await check(box, "deploy", TARGET)).toEqual({
      tool: "deploy",
      agent: "build",
      action: "deploy",
      decision: "deny",
      resources: [
        {
          resource: "*",
          decision: "deny",
          rule: { action: "deploy", resource: "*", effect: "deny", file: join(realLocation(box), "core.json"), path: "permission.deploy" },
        },
      ],
    })
  })

  test("explains an ask with what an always reply would save, and neither asks nor runs", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: { "*": "ask" } } }) })
    expect(await check(box, "deploy", TARGET)).toEqual({
      tool: "deploy",
      agent: "build",
      action: "deploy",
      decision: "ask",
      resources: [
        {
          resource: "*",
          decision: "ask",
          rule: {
            action: "deploy",
            resource: "*",
            effect: "ask",
            file: join(realLocation(box), "core.json"),
            path: 'permission.deploy["*"]',
          },
        },
      ],
      alwaysSaves: ["*"],
    })
  })

  test("explains an allow by core's defaults when nothing is configured", async () => {
    const box = sandbox(DEPLOY)
    expect(await check(box, "deploy", TARGET)).toEqual({
      tool: "deploy",
      agent: "build",
      action: "deploy",
      decision: "allow",
      resources: [
        {
          resource: "*",
          decision: "allow",
          rule: { action: "*", resource: "*", effect: "allow", file: "core defaults", path: "*" },
        },
      ],
    })
  })

  test("--agent explains for that agent, under the tool's shared action", async () => {
    const box = sandbox({ "tools/write.ts": recording("write") })
    const explained = await check(box, "write", TARGET, ["--agent", "plan"])
    expect(explained).toMatchObject({ tool: "write", agent: "plan", action: "edit", decision: "deny" })
    expect(explained.resources).toEqual([
      {
        resource: "*",
        decision: "deny",
        rule: { action: "edit", resource: "*", effect: "deny", file: "core built-in agent", path: "plan.edit" },
      },
    ])
  })

  test("reports an invalid input with exit 1", async () => {
    const box = sandbox(DEPLOY)
    const result = await core(box, ["check", "deploy", "--input", '{"target": 7}', "--location", box.location])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("invalid input for deploy")
    // Worded as exec words it for the model: the key and what it expected (the value is not quoted to the host).
    expect(result.stderr).toContain("- target: Expected string")
    expect(result.stderr).not.toContain("7")
    // A misspelt key is named with the key it likely meant.
    const misspelt = await core(box, ["check", "deploy", "--input", '{"targt": "prod"}', "--location", box.location])
    expect(misspelt.code).toBe(1)
    expect(misspelt.stderr).toContain('- targt: unknown key; did you mean "target"?')
    // A NUL character, which no tool takes: refused as exec and the HTTP check refuse it, with no decision printed.
    const nul = await core(box, ["check", "deploy", "--input", '{"target": "pr\\u0000od"}', "--location", box.location])
    expect(nul.code).toBe(1)
    expect(nul.stdout).toBe("")
    expect(nul.stderr).toContain("invalid input for deploy: target holds a NUL character")
  })

  test("reports an unknown tool with exit 1 and suggestions", async () => {
    const box = sandbox(DEPLOY)
    const result = await core(box, ["check", "deploi", "--input", "{}", "--location", box.location])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain('unknown tool "deploi". Did you mean deploy?')
  })
})

describe("core permissions", () => {
  const ROW = /^(\S+)\s+(.+?)\s+\((\d{4}-\d\d-\d\dT[\d:.]+Z), by [^)]+\)$/
  /** The `[action, pattern]` of each row `core permissions` prints. */
  const rowsOf = (stdout: string) =>
    stdout.trimEnd().split("\n").map((row) => {
      const match = ROW.exec(row)
      if (match === null) throw new Error(`not an approval row: ${JSON.stringify(row)}`)
      return [match[1], match[2]]
    })

  test("says there are no saved approvals, naming the Location's real directory", async () => {
    const box = sandbox()
    const result = await core(box, ["permissions", "--location", box.location])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`No saved approvals in ${realLocation(box)}.\n`)
  })

  test("lists the Location's saved approvals (not another project's), through a symlink or the current directory", async () => {
    const box = sandbox()
    await saveApprovals(box, "deploy", ["*"])
    await saveApprovals(box, "bash", ["git status", "ls *"])
    await saveApprovals(box, "deploy", ["*"], "/elsewhere")
    const link = join(tempDir("core-link-"), "location")
    symlinkSync(box.location, link)
    for (const options of [{ args: ["--location", link] }, { args: [], cwd: box.location }]) {
      const result = await core(box, ["permissions", ...options.args], "cwd" in options ? { cwd: options.cwd } : {})
      expect(result.code).toBe(0)
      expect(rowsOf(result.stdout).sort()).toEqual([
        ["bash", "git status"],
        ["bash", "ls *"],
        ["deploy", "*"],
      ])
    }
  })

  // A saved pattern holds a path or a command the model chose: listed raw, an outside-directory grant could show
  // as a harmless one (erase the line, write another over it, conceal the rest).
  test("a saved pattern holding terminal controls is listed quoted and escaped, on its own row", async () => {
    const box = sandbox()
    const hostile = "/tmp/ext\u001b[2K\rbash    git status  (2026-01-01T00:00:00.000Z, by admin@host)\u001b[8m/*"
    await saveApprovals(box, "external_directory", [hostile])
    const result = await core(box, ["permissions", "--location", box.location])
    expect(result.code).toBe(0)
    expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
    expect(rowsOf(result.stdout)).toEqual([["external_directory", JSON.stringify(hostile)]])
  })

  test("a saved approval answers an ask: exec runs without --yes or a prompt, and check says which approval", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "ask" } }) })
    await saveApprovals(box, "deploy", ["*"])
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(runs(box, "deploy")).toBe(1)
    const explained = await check(box, "deploy", TARGET)
    expect(explained.decision).toBe("allow")
    expect(explained.resources).toEqual([
      {
        resource: "*",
        decision: "allow",
        rule: { action: "deploy", resource: "*", effect: "ask", file: join(realLocation(box), "core.json"), path: "permission.deploy" },
        approvedBy: "*",
      },
    ])
    expect(explained.alwaysSaves).toBeUndefined()
  })

  test("an approval of the edit action covers write and apply_patch too", async () => {
    const box = sandbox({ "tools/write.ts": recording("write"), ...coreJson({ permission: { edit: "ask" } }) })
    await saveApprovals(box, "edit", ["*"])
    expect((await exec(box, "write", TARGET)).code).toBe(0)
    expect(runs(box, "write")).toBe(1)
  })

  test("a saved approval never overrides a configured deny", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "deny" } }) })
    await saveApprovals(box, "deploy", ["*"])
    const result = await exec(box, "deploy", TARGET)
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.kind).toBe("denied")
    expect(runs(box, "deploy")).toBe(0)
    const explained = await check(box, "deploy", TARGET)
    expect(explained.decision).toBe("deny")
    expect(explained.resources).toEqual([expect.not.objectContaining({ approvedBy: expect.anything() })])
  })

  test("reset --action removes only that action's approvals, reset the rest, each saying how many", async () => {
    const box = sandbox({ ...DEPLOY, ...coreJson({ permission: { deploy: "ask" } }) })
    await saveApprovals(box, "deploy", ["*"])
    await saveApprovals(box, "bash", ["git status", "ls *"])
    await saveApprovals(box, "deploy", ["*"], "/elsewhere")
    const location = realLocation(box)

    const one = await core(box, ["permissions", "reset", "--action", "deploy", "--location", box.location])
    expect(one.code).toBe(0)
    expect(one.stdout).toBe(`Removed 1 saved approval for deploy in ${location}.\n`)
    expect(await savedApprovals(box)).toEqual([
      ["bash", "git status"],
      ["bash", "ls *"],
    ])
    const listed = await core(box, ["permissions", "--location", box.location])
    expect(rowsOf(listed.stdout).map(([action]) => action)).toEqual(["bash", "bash"])
    // The approval is gone: the ask is declined again.
    expect((await exec(box, "deploy", TARGET)).code).toBe(4)
    expect(runs(box, "deploy")).toBe(0)

    const rest = await core(box, ["permissions", "reset", "--location", box.location])
    expect(rest.code).toBe(0)
    expect(rest.stdout).toBe(`Removed 2 saved approvals in ${location}.\n`)
    expect((await core(box, ["permissions", "--location", box.location])).stdout).toBe(`No saved approvals in ${location}.\n`)
    // Another project's approvals are not touched.
    expect(await savedApprovals(box, "/elsewhere")).toEqual([["deploy", "*"]])
  })

  test("an unknown subcommand, or --action without reset, is a usage error that changes nothing", async () => {
    const box = sandbox()
    await saveApprovals(box, "deploy", ["*"])
    const bogus = await core(box, ["permissions", "bogus", "--location", box.location])
    expect(bogus.code).toBe(2)
    expect(bogus.stdout).toBe("")
    expect(bogus.stderr).toContain('core permissions: unknown subcommand "bogus"')
    const stray = await core(box, ["permissions", "--action", "deploy", "--location", box.location])
    expect(stray.code).toBe(2)
    expect(stray.stdout).toBe("")
    expect(stray.stderr).toContain("core permissions: --action goes with reset")
    expect(await savedApprovals(box)).toEqual([["deploy", "*"]])
  })
})
