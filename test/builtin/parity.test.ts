// check = exec: for a table of calls (bash lines, file tools on paths inside, outside, denied and asked), what
// `core check` explains (Explain.call) is exactly what a real call asks the permission service, in order; and a
// call with any denied resource asks nothing at all and settles as denied.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Explain } from "../../src/builtin/explain"
import type { Rule } from "../../src/permission/rule"
import { harness } from "../support/builtin"
import { tempDir } from "../support/temp"

const outside = realpathSync(tempDir("core-parity-outside-"))
mkdirSync(join(outside, "deep"))
writeFileSync(join(outside, "notes.txt"), "outside\n")
writeFileSync(join(outside, "secret.txt"), "secret\n")

const RULES: ReadonlyArray<Rule.Rule> = [
  { action: "bash", resource: "cat /etc/passwd", effect: "deny" },
  { action: "bash", resource: "rm *", effect: "deny" },
  { action: "bash", resource: "curl *", effect: "ask" },
  { action: "read", resource: `${outside}/secret.txt`, effect: "deny" },
  { action: "edit", resource: "locked/*", effect: "deny" },
  { action: "edit", resource: "asked/*", effect: "ask" },
  { action: "grep", resource: `${outside}/deep`, effect: "deny" },
]

const patch = (...files: ReadonlyArray<string>) =>
  ["*** Begin Patch", ...files.flatMap((file) => [`*** Add File: ${file}`, "+x"]), "*** End Patch"].join("\n")

const CALLS: ReadonlyArray<readonly [string, Record<string, unknown>, string?]> = [
  ["bash", { command: "cat /etc/passwd" }],
  ["bash", { command: "cat /etc/hostname" }],
  ["bash", { command: "echo hi && touch made" }],
  ["bash", { command: "curl example.invalid; rm -rf build" }],
  ["bash", { command: `cat ${outside}/notes.txt && curl example.invalid` }],
  ["bash", { command: "echo hi > asked/out.txt" }],
  ["bash", { command: "echo hi > locked/out.txt; curl x" }],
  ["bash", { command: `echo hi > ${outside}/out.txt` }],
  ["bash", { command: 'ls; eval "$X"' }],
  ["bash", { command: "pwd", workdir: outside }],
  ["bash", { command: "echo hi > made.txt" }, "plan"],
  ["read", { filePath: "inside.txt" }],
  ["read", { filePath: join(outside, "notes.txt") }],
  ["read", { filePath: join(outside, "secret.txt") }],
  ["write", { filePath: "asked/a.txt", content: "x" }],
  ["write", { filePath: "locked/a.txt", content: "x" }],
  ["write", { filePath: join(outside, "w.txt"), content: "x" }],
  ["write", { filePath: "a.txt", content: "x" }, "plan"],
  ["edit", { filePath: join(outside, "notes.txt"), oldString: "outside", newString: "changed" }],
  ["grep", { pattern: "x", path: outside }],
  ["grep", { pattern: "x", path: join(outside, "deep") }],
  ["grep", { pattern: "x" }],
  ["glob", { pattern: "*.txt", path: outside }],
  ["list", { path: outside }],
  ["apply_patch", { patchText: patch("asked/p.txt", join(outside, "p.txt")) }],
  ["apply_patch", { patchText: patch(join(outside, "q.txt"), "locked/q.txt") }],
]

describe("what core check lists is what a call asks", () => {
  for (const [name, input, agent] of CALLS) {
    test(`${name} ${JSON.stringify(input)}${agent === undefined ? "" : ` as ${agent}`}`, async () => {
      const box = harness({ rules: RULES, files: { "inside.txt": "x\n", "asked/.keep": "", "locked/.keep": "" } })
      const explained = await box.check(name, input, agent === undefined ? {} : { agent })
      const outcome = await box.settle(name, input, { reply: { reply: "once" }, ...(agent === undefined ? {} : { agent }) })
      expect(outcome.asks).toEqual([...Explain.asks(explained)])
      if (explained.decision === "deny") {
        expect(outcome.asks).toEqual([])
        expect(outcome.settlement.error?.kind).toBe("denied")
      } else {
        expect(outcome.settlement.error?.kind).not.toBe("denied")
      }
    })
  }

  test("the table covers allowed, asked and denied calls", async () => {
    const decisions = new Set<string>()
    for (const [name, input, agent] of CALLS) {
      const box = harness({ rules: RULES })
      decisions.add((await box.check(name, input, agent === undefined ? {} : { agent })).decision)
    }
    expect([...decisions].sort()).toEqual(["allow", "ask", "deny"])
  })
})
