import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Rule } from "../../src/permission/rule"
import { inChild } from "../support/in-child"

describe("Rule", () => {
  test("wildcards match over the whole string: * any run, ? one character", () => {
    expect(Rule.matches("*", "anything at all")).toBe(true)
    expect(Rule.matches("git *", "git status")).toBe(true)
    expect(Rule.matches("git", "git status")).toBe(false)
    expect(Rule.matches("src/*.ts", "src/a.ts")).toBe(true)
    expect(Rule.matches("src/*.ts", "lib/src/a.ts")).toBe(false)
    expect(Rule.matches("file?.txt", "file1.txt")).toBe(true)
    expect(Rule.matches("file?.txt", "file10.txt")).toBe(false)
    expect(Rule.matches("a.b", "axb")).toBe(false)
    expect(Rule.matches("(x)+[y]", "(x)+[y]")).toBe(true)
  })

  test('a trailing " *" also matches the bare command', () => {
    expect(Rule.matches("ls *", "ls")).toBe(true)
    expect(Rule.matches("ls *", "ls -la")).toBe(true)
    expect(Rule.matches("ls *", "lsof")).toBe(false)
  })

  // A model chooses the resource: a pattern of several wildcards must not backtrack over it. A regular expression of
  // `*a*a*a*b` over 200,000 characters runs for years, and no test timeout stops synchronous code: the cases run in
  // a child process, killed if it has not answered in 20 s.
  test("several wildcards against a long hostile resource decide at once, and rightly", async () => {
    expect(
      await inChild(`
        import { Rule } from ${JSON.stringify(join(import.meta.dir, "../../src/permission/rule.ts"))}
        const many = "a".repeat(200_000)
        const forced = "git " + "--force ".repeat(20_000) + "push"
        const rules = [
          { action: "bash", resource: "*", effect: "allow" },
          { action: "bash", resource: "*a*a*a*a*b", effect: "deny" },
        ]
        console.log(JSON.stringify([
          Rule.matches("*a*a*a*b", many),
          Rule.matches("*a*a*a*b", many + "b"),
          Rule.matches("*?*?*?*x", many),
          Rule.matches("*a*?*a*", many),
          Rule.matches("git * --force *", forced),
          Rule.matches("git * --force * --tags", forced),
          Rule.matches("rm -rf * *", "rm -rf " + " ".repeat(100_000) + "\\n"),
          Rule.evaluate(rules, "bash", many),
          Rule.evaluate(rules, "bash", many + "b"),
        ]))
        `),
    ).toEqual([false, true, false, true, true, false, true, "allow", "deny"])
  }, 30_000)

  test("backslashes are normalised to slashes on both sides", () => {
    expect(Rule.matches("C:\\work\\*", "C:/work/a.ts")).toBe(true)
    expect(Rule.matches("C:/work/*", "C:\\work\\a.ts")).toBe(true)
  })

  test("the last matching rule wins and no match means ask", () => {
    const rules: Rule.Ruleset = [
      { action: "*", resource: "*", effect: "allow" },
      { action: "bash", resource: "*", effect: "ask" },
      { action: "bash", resource: "git status", effect: "allow" },
      { action: "bash", resource: "rm *", effect: "deny" },
    ]
    expect(Rule.evaluate(rules, "read", "a.ts")).toBe("allow")
    expect(Rule.evaluate(rules, "bash", "git status")).toBe("allow")
    expect(Rule.evaluate(rules, "bash", "git push")).toBe("ask")
    expect(Rule.evaluate(rules, "bash", "rm -rf /")).toBe("deny")
    expect(Rule.evaluate([], "read", "a.ts")).toBe("ask")
  })

  test("edit, write and apply_patch share the edit action", () => {
    expect(["edit", "write", "apply_patch", "read"].map(Rule.actionOf)).toEqual(["edit", "edit", "edit", "read"])
    // Names that happen to be Object.prototype members are ordinary actions.
    expect(["toString", "constructor", "valueOf"].map(Rule.actionOf)).toEqual(["toString", "constructor", "valueOf"])
  })

  test("an action is wholly denied only when its last rule denies every resource", () => {
    expect(Rule.isWhollyDenied([{ action: "edit", resource: "*", effect: "deny" }], "edit")).toBe(true)
    expect(Rule.isWhollyDenied([{ action: "*", resource: "*", effect: "deny" }], "edit")).toBe(true)
    expect(Rule.isWhollyDenied([{ action: "edit", resource: "src/*", effect: "deny" }], "edit")).toBe(false)
    expect(
      Rule.isWhollyDenied(
        [
          { action: "edit", resource: "*", effect: "deny" },
          { action: "edit", resource: "docs/*", effect: "allow" },
        ],
        "edit",
      ),
    ).toBe(false)
    expect(Rule.isWhollyDenied([], "edit")).toBe(false)
  })

  test("a later narrower allow keeps an action visible; a later blanket deny hides everything", () => {
    const visible: Rule.Ruleset = [
      { action: "*", resource: "*", effect: "deny" },
      { action: "question", resource: "private", effect: "allow" },
    ]
    expect(Rule.isWhollyDenied(visible, "question")).toBe(false)
    expect(Rule.isWhollyDenied(visible, "bash")).toBe(true)
    const hidden: Rule.Ruleset = [
      { action: "question", resource: "private", effect: "allow" },
      { action: "*", resource: "*", effect: "deny" },
    ]
    expect(Rule.isWhollyDenied(hidden, "question")).toBe(true)
    expect(Rule.isWhollyDenied(hidden, "bash")).toBe(true)
  })
})

describe("Rule.denier", () => {
  const rules: Rule.Ruleset = [
    { action: "*", resource: "*", effect: "allow" },
    { action: "read", resource: "*.env", effect: "deny" },
    { action: "read", resource: "public.env", effect: "allow" },
  ]

  test("denies what the last matching rule of the action denies, and nothing a later rule allows", () => {
    const denies = Rule.denier(rules, "read")!
    expect(denies("app.env")).toBe(true)
    expect(denies("sub/app.env")).toBe(true)
    expect(denies("public.env")).toBe(false)
    expect(denies("notes.txt")).toBe(false)
  })

  test("is undefined when no rule could deny the action, so nothing need be tested", () => {
    expect(Rule.denier(rules, "edit")).toBeUndefined()
    expect(Rule.denier([{ action: "*", resource: "*", effect: "allow" }], "read")).toBeUndefined()
    // A rule of every action that denies counts for this one.
    expect(Rule.denier([{ action: "*", resource: "secret/*", effect: "deny" }], "read")!("secret/x")).toBe(true)
  })
})
