// Protected configuration through the compiled `core exec`: the CLI's own wiring ($CORE_HOME and $CORE_DATA_DIR
// from its environment, its answerer without a terminal, --yes) refuses a model's change to core.json.

import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { core, exec, sandbox, settlementOf } from "../cli/fixture"

const RULES = '{ "permission": { "*": "allow", "bash": { "rm *": "deny" } } }\n'

describe("core exec: protected configuration", () => {
  test("write core.json and echo {} > core.json are refused without a terminal, --yes or not", async () => {
    const box = sandbox({ "core.json": RULES })
    for (const [name, input] of [
      ["write", { filePath: "core.json", content: "{}" }],
      ["bash", { command: "echo {} > core.json" }],
    ] as const) {
      for (const extra of [[], ["--yes"]]) {
        const result = await exec(box, name, input, extra)
        expect(result.code).toBe(1)
        const settlement = settlementOf(result)
        expect(settlement.status).toBe("error")
        expect(settlement.error?.message).toContain("A person must make that change")
        expect(result.stderr).toContain("only a person on a terminal may approve that")
        expect(readFileSync(join(box.location, "core.json"), "utf8")).toBe(RULES)
      }
    }
  }, 120_000)

  test("a write into $CORE_HOME is refused too; an ordinary write with --yes is not", async () => {
    const box = sandbox({ "core.json": RULES }, { "core.json": "{}\n" })
    const home = await exec(box, "write", { filePath: join(box.home, "tools", "x.ts"), content: "export {}" }, ["--yes"])
    expect(settlementOf(home).error?.message).toContain("$CORE_HOME")
    const ordinary = await exec(box, "write", { filePath: "notes.txt", content: "x" }, ["--yes"])
    expect(settlementOf(ordinary).status).toBe("success")
  }, 120_000)

  // Every relative change after any cd was refused as protected, `cd src && touch f` among them (one of the most
  // common shapes of a model's command): a literal cd is now followed, to every place the line may be in.
  test("a literal cd is followed: a change in an ordinary folder runs with --yes, one reaching core's own configuration is refused", async () => {
    const box = sandbox({ "core.json": '{ "permission": { "*": "allow" } }\n', "src/keep.txt": "k", "tools/.keep": "" })
    const run = async (command: string) => settlementOf(await exec(box, "bash", { command }, ["--yes"]))
    const ordinary = await run("cd src && touch made.txt && mkdir -p out && cd out && touch deeper.txt")
    expect(ordinary.status).toBe("success")
    expect(readFileSync(join(box.location, "src", "made.txt"), "utf8")).toBe("")
    expect(readFileSync(join(box.location, "src", "out", "deeper.txt"), "utf8")).toBe("")
    for (const [command, named] of [
      ["cd tools && touch x.ts", "tools/x.ts"],
      ["cd src && echo {} > ../core.json", "core.json"],
      ["cd src/.. && touch core.json", "core.json"],
      ["cd src; cd ../tools; touch x.ts", "tools/x.ts"],
      ["cd src && cd ../too*s && touch ../src/../tools/y.ts", "tools/y.ts"],
      // Moves the text names through a wrapper, after `--`, or past an option's value.
      ["command -- cd src && touch ../tools/c.ts", "tools/c.ts"],
      ["nice env -C src touch ../tools/n.ts", "tools/n.ts"],
      ["env -u X -C src touch ../tools/u.ts", "tools/u.ts"],
      ["env -iC src touch ../tools/i.ts", "tools/i.ts"],
    ] as const) {
      const refused = await run(command)
      expect([command, refused.status, refused.error?.message.includes(`"${named}"`), refused.error?.message.includes("A person must make that change")]).toEqual([command, "error", true, true])
    }
    // A directory the text does not name is not followed: the change is refused as one that may lead anywhere.
    for (const command of [
      'D=src; cd "$D" && touch f',
      "cd too*s && touch x.ts",
      "cd src; cd - && touch x.ts",
      // A link the line makes: the disk as checked does not hold it yet (L leads to src/deep, so ../../tools is the Location's).
      "mkdir -p src/deep && ln -s src/deep L && cd L && touch ../../tools/x.ts",
      // cdable_vars: cd T goes to $T, tools.
      "shopt -s cdable_vars; T=too; T+=ls; cd T && touch x.ts",
      // A command find runs in each folder it finds.
      "find src -maxdepth 0 -execdir touch ../tools/x.ts ;",
    ]) {
      const unnamed = await run(command)
      expect([command, unnamed.error?.message.includes("a relative path after a cd to a directory the command does not name literally")]).toEqual([command, true])
      expect(unnamed.error?.message).toContain("Do not retry it as it is.")
    }
    expect(existsSync(join(box.location, "tools", "x.ts"))).toBe(false)
    expect(readFileSync(join(box.location, "core.json"), "utf8")).toBe('{ "permission": { "*": "allow" } }\n')
  }, 120_000)

  test("core check marks the change as protected and always asked", async () => {
    const box = sandbox({ "core.json": RULES })
    const result = await core(box, ["check", "write", "--input", JSON.stringify({ filePath: "core.json", content: "{}" }), "--location", box.location])
    expect(result.code).toBe(0)
    const explained = JSON.parse(result.stdout) as { decision: string; checks: Array<{ protected?: string; alwaysAsked?: boolean }> }
    expect(explained.decision).toBe("ask")
    expect(explained.checks[0]).toMatchObject({ alwaysAsked: true })
    expect(explained.checks[0]?.protected).toContain("core.json")
  }, 120_000)
})
