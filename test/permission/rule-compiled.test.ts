import { describe, expect, test } from "bun:test"
import { Rule } from "../../src/permission/rule"
import * as Reference from "./reference"

describe("Rule.compile", () => {
  test("decides generated hostile rules and resources as Rule.find and the reference matcher do", () => {
    const rng = Reference.random(0x5eed)
    let decided = 0
    let matched = 0
    for (let set = 0; set < 400; set++) {
      const rules = Reference.rules(rng, rng.int(14))
      const compiled = Rule.compile(rules)
      for (let query = 0; query < 40; query++) {
        const action = Reference.action(rng, rules)
        const resource = Reference.resource(rng, rules)
        const expected = Reference.find(rules, action, resource)
        const found = compiled.find(action, resource)
        if (found !== expected || Rule.find(rules, action, resource) !== expected) {
          // Named in full so a failure shows the case, not only two rules.
          expect({ rules, action, resource, found: found ?? null }).toEqual({ rules, action, resource, found: expected ?? null })
        }
        decided++
        if (expected !== undefined) matched++
      }
    }
    // The cases reach rules, not only the "no match" answer.
    expect(decided).toBe(16_000)
    expect(matched).toBeGreaterThan(decided / 3)
  })

  test("the last matching rule wins, among the rules of every action pattern that matches", () => {
    const rules: Rule.Ruleset = [
      { action: "*", resource: "*", effect: "allow" },
      { action: "bash", resource: "*", effect: "ask" },
      { action: "b?sh", resource: "rm *", effect: "deny" },
      { action: "*", resource: "rm -rf /tmp/x", effect: "allow" },
      { action: "bash", resource: "git status", effect: "allow" },
    ]
    const compiled = Rule.compile(rules)
    expect(compiled.find("bash", "rm -rf /")).toBe(rules[2]!)
    expect(compiled.find("bash", "rm")).toBe(rules[2]!)
    expect(compiled.find("bash", "rm -rf /tmp/x")).toBe(rules[3]!)
    expect(compiled.find("bash", "git status")).toBe(rules[4]!)
    expect(compiled.find("bash", "git  status")).toBe(rules[1]!)
    expect(compiled.find("read", "rm -rf /")).toBe(rules[0]!)
    expect(compiled.find("Bash", "rm -rf /")).toBe(rules[0]!)
    expect(Rule.compile([]).find("read", "a")).toBeUndefined()
  })

  test("paths are matched as written: no .. resolved, no case folded, backslashes as slashes, no Unicode normalised", () => {
    const rules: Rule.Ruleset = [
      { action: "read", resource: "*", effect: "allow" },
      { action: "read", resource: "secret/*", effect: "deny" },
      { action: "read", resource: "café", effect: "deny" },
      { action: "read", resource: "?", effect: "deny" },
    ]
    const compiled = Rule.compile(rules)
    const effect = (resource: string) => compiled.find("read", resource)?.effect
    expect(effect("secret/key")).toBe("deny")
    expect(effect("secret\\key")).toBe("deny")
    expect(effect("secret/../../etc/passwd")).toBe("deny")
    expect(effect("public/../secret/key")).toBe("allow")
    expect(effect("SECRET/key")).toBe("allow")
    expect(effect("./secret/key")).toBe("allow")
    expect(effect("café")).toBe("deny")
    expect(effect("cafe\u0301")).toBe("allow")
    // `?` is one UTF-16 code unit: a lone surrogate is one, an astral character two.
    expect(effect("\ud83d")).toBe("deny")
    expect(effect("😀")).toBe("allow")
    expect(effect("\n")).toBe("deny")
  })

  test("long inputs are decided whole, their last characters included", () => {
    const rules: Rule.Ruleset = [
      { action: "*", resource: "*", effect: "allow" },
      { action: "read", resource: "*.env", effect: "deny" },
      { action: "bash", resource: "git *", effect: "ask" },
    ]
    const compiled = Rule.compile(rules)
    const long = "d/".repeat(100_000)
    expect(compiled.find("read", `${long}x.env`)).toBe(rules[1]!)
    expect(compiled.find("read", `${long}x.env `)).toBe(rules[0]!)
    expect(compiled.find("bash", `git ${"a".repeat(200_000)}`)).toBe(rules[2]!)
    expect(compiled.find("bash", `${"a".repeat(200_000)}git x`)).toBe(rules[0]!)
    const action = "x".repeat(100_000)
    expect(Rule.compile([{ action, resource: "*", effect: "deny" }]).find(action, "a")?.effect).toBe("deny")
    expect(Rule.compile([{ action, resource: "*", effect: "deny" }]).find(`${action}x`, "a")).toBeUndefined()
  })

  test("decides alike past the number of actions it keeps rules for", () => {
    const rules: Rule.Ruleset = [
      { action: "*", resource: "*", effect: "ask" },
      { action: "tool1*", resource: "*", effect: "deny" },
      { action: "tool?7", resource: "a", effect: "allow" },
    ]
    const compiled = Rule.compile(rules)
    for (let round = 0; round < 2; round++) {
      for (let index = 0; index < 2_500; index++) {
        const action = `tool${index}`
        for (const resource of ["a", "b"]) expect(compiled.find(action, resource)).toBe(Reference.find(rules, action, resource))
      }
    }
  })

  test("keeps the rules it was given: changing the array afterwards changes no decision", () => {
    const rules: Array<Rule.Rule> = [{ action: "read", resource: "*", effect: "deny" }]
    const compiled = Rule.compile(rules)
    rules.push({ action: "read", resource: "*", effect: "allow" })
    rules[0] = { action: "read", resource: "*", effect: "allow" }
    expect(compiled.find("read", "a")?.effect).toBe("deny")
    expect(compiled.rules).toEqual([{ action: "read", resource: "*", effect: "deny" }])
  })
})
