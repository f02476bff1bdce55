import { describe, expect, test } from "bun:test"
import * as Result from "effect/Result"
import { Config } from "../../src/config/config"

const FILE = "/work/site/core.json"

const parsed = (text: string, file = FILE): Config.Parsed => {
  const result = Config.parseText(file, text)
  if (Result.isFailure(result)) throw new Error(`expected ${file} to parse, got: ${result.failure.message}`)
  return result.success
}

const refusal = (text: string): Config.ConfigError => {
  const result = Config.parseText(FILE, text)
  if (Result.isSuccess(result)) throw new Error(`expected a refusal for: ${text}`)
  return result.failure
}

const lowered = (text: string, file = FILE): Config.Lowered => Config.lower(parsed(text, file))

describe("Config.parseText", () => {
  test("accepts comments and trailing commas", () => {
    const text = `{
      // everything, except
      "permission": { "*": "allow", /* shell */ "bash": "ask", },
      "output": { "maxLines": 100, },
    }`
    expect(parsed(text).content).toEqual({ permission: { "*": "allow", bash: "ask" }, output: { maxLines: 100 } })
  })

  test("accepts every documented key", () => {
    const text = JSON.stringify({
      $schema: "https://example.test/core.schema.json",
      permission: { "*": "allow", bash: { "*": "ask" } },
      agents: { plan: { description: "plans", permission: { edit: "deny" } }, "build_2-x": {} },
      output: { maxLines: 8, maxBytes: 1024, retentionDays: 0.5, maxSessionBytes: 1048576 },
      shell: { timeoutMs: 1, maxTimeoutMs: 600000, maxCaptureBytes: 1048576, inactivityTimeoutMs: 30000, maxRunning: 4 },
      editing: { readBeforeWrite: false },
    })
    expect(Result.isSuccess(Config.parseText(FILE, text))).toBe(true)
  })

  test("refuses a syntax error with its line and column", () => {
    const error = refusal('{\n  "output": {}\n  "shell": {}\n}')
    expect(error).toMatchObject({ _tag: "Config.ConfigError", file: FILE, path: "", line: 3, column: 3 })
    expect(error.message).toBe(`${FILE}:3:3: syntax error: comma expected`)
    expect(refusal('{ "output": {} ').message).toBe(`${FILE}:1:16: syntax error: close brace expected`)
  })

  test("refuses an empty file, which holds no value", () => {
    expect(refusal("// nothing here\n").message).toBe(`${FILE}:2:1: syntax error: value expected`)
  })

  test("refuses a root that is not an object", () => {
    expect(refusal("[]")).toMatchObject({ path: "", expected: "an object", found: "an array" })
    expect(refusal("[]").message).toBe(`${FILE}:1:1: the top level: expected an object, found an array`)
    expect(refusal("\n  3").message).toBe(`${FILE}:2:3: the top level: expected an object, found 3`)
  })

  test("refuses an unknown top-level key, naming the keys it knows", () => {
    const error = refusal('{ "outptu": {} }')
    expect(error).toMatchObject({ path: "outptu", found: 'unknown key "outptu"', line: 1, column: 3 })
    expect(error.message).toBe(
      `${FILE}:1:3: outptu: expected one of the keys "$schema", "permission", "agents", "output", "shell", "editing" or "mcp", found unknown key "outptu"`,
    )
  })

  test("refuses an unknown nested key and suggests the key it differs from only in case", () => {
    const error = refusal('{\n  "output": { "maxbytes": 2048 }\n}')
    expect(error).toMatchObject({ path: "output.maxbytes", line: 2, column: 15 })
    expect(error.message).toBe(
      `${FILE}:2:15: output.maxbytes: expected one of the keys "maxLines", "maxBytes", "previewBytes", "maxSessionBytes", "image" or "retentionDays", found unknown key "maxbytes" (did you mean "maxBytes"?)`,
    )
    expect(refusal('{ "agents": { "plan": { "permision": {} } } }').path).toBe("agents.plan.permision")
  })

  test("refuses a value of the wrong type, saying what was expected", () => {
    const error = refusal('{ "output": { "maxBytes": "x" } }')
    expect(error).toMatchObject({ path: "output.maxBytes", expected: "an integer of at least 1024", found: '"x"' })
    expect(error.message).toBe(`${FILE}:1:27: output.maxBytes: expected an integer of at least 1024, found "x"`)
    expect(refusal('{ "output": 5 }')).toMatchObject({ path: "output", expected: "an object", found: "5" })
    expect(refusal('{ "$schema": 4 }')).toMatchObject({ path: "$schema", expected: "a string" })
  })

  test("says which words a key takes when it gets another", () => {
    expect(refusal('{ "shell": { "sandbox": "bogus" } }').message).toBe(
      `${FILE}:1:25: shell.sandbox: expected "auto", "required" or "off", found "bogus"`,
    )
  })

  test("refuses numbers out of range or not whole", () => {
    expect(refusal('{ "output": { "maxLines": 7 } }')).toMatchObject({ expected: "an integer of at least 8", found: "7" })
    expect(refusal('{ "output": { "maxLines": 8.5 } }')).toMatchObject({ found: "8.5" })
    expect(refusal('{ "output": { "retentionDays": 0 } }')).toMatchObject({ expected: "a number greater than 0" })
    expect(refusal('{ "shell": { "inactivityTimeoutMs": 0 } }')).toMatchObject({ path: "shell.inactivityTimeoutMs" })
    expect(refusal('{ "shell": { "timeoutMs": 1e400 } }')).toMatchObject({ found: "Infinity" })
    expect(refusal('{ "output": { "maxSessionBytes": 1000 } }')).toMatchObject({ path: "output.maxSessionBytes", expected: "an integer of at least 1048576" })
    expect(refusal('{ "shell": { "maxRunning": 0 } }')).toMatchObject({ path: "shell.maxRunning", expected: "an integer of at least 1" })
    expect(refusal('{ "shell": { "maxRunning": 2.5 } }')).toMatchObject({ path: "shell.maxRunning", found: "2.5" })
  })

  // A timer cannot wait longer than 2^31 - 1 ms: a longer one fires at once. A timeout of 1e12 was accepted, and every
  // command then timed out after a millisecond, the model told it had run 1e12 ms.
  test("refuses a duration longer than a timer can wait, saying the range", () => {
    for (const key of ["shell.timeoutMs", "shell.maxTimeoutMs", "shell.inactivityTimeoutMs"]) {
      const [, name] = key.split(".")
      const error = refusal(`{ "shell": { "${name}": 2147483648 } }`)
      expect(error).toMatchObject({ path: key, found: "2147483648" })
      expect(error.expected).toContain("from 1 to 2147483647")
    }
    expect(refusal('{ "mcp": { "s": { "command": ["x"], "timeoutMs": 1e12 } } }')).toMatchObject({ path: "mcp.s.timeoutMs" })
    expect(Config.parseText(FILE, '{ "shell": { "timeoutMs": 2147483647, "maxTimeoutMs": 2147483647 } }')).toBeDefined()
  })

  test("calls out an unknown effect word at the top level of an action", () => {
    const error = refusal('{ "permission": { "bash": "alow" } }')
    expect(error).toMatchObject({ path: "permission.bash", expected: '"allow", "deny" or "ask"', found: '"alow"' })
    expect(error.message).toBe(`${FILE}:1:27: permission.bash: expected "allow", "deny" or "ask", found "alow"`)
  })

  test("calls out an unknown effect word under a resource pattern", () => {
    const error = refusal('{\n  "permission": {\n    "bash": { "*": "ask", "rm *": "alow" }\n  }\n}')
    expect(error).toMatchObject({ path: 'permission.bash["rm *"]', line: 3, column: 35 })
    expect(error.message).toBe(`${FILE}:3:35: permission.bash["rm *"]: expected "allow", "deny" or "ask", found "alow"`)
    expect(refusal('{ "agents": { "plan": { "permission": { "edit": { "*": "Deny" } } } } }').path).toBe(
      'agents.plan.permission.edit["*"]',
    )
  })

  test("says an action takes an effect word or a map of them when it gets something else", () => {
    expect(refusal('{ "permission": { "bash": true } }')).toMatchObject({
      path: "permission.bash",
      expected: '"allow", "deny", "ask" or an object mapping resource patterns to one of them',
      found: "true",
    })
  })

  test("refuses an agent name that does not start with a letter or is too long", () => {
    const error = refusal('{ "agents": { "9lives": {} } }')
    expect(error).toMatchObject({ path: 'agents["9lives"]', found: '"9lives"', line: 1, column: 15 })
    expect(error.message).toBe(
      `${FILE}:1:15: agents["9lives"]: expected an agent name (a letter, then up to 63 letters, digits, "_" or "-"), found "9lives"`,
    )
    expect(refusal(JSON.stringify({ agents: { ["a".repeat(65)]: {} } })).path).toStartWith("agents.aaaa")
    expect(Result.isSuccess(Config.parseText(FILE, JSON.stringify({ agents: { ["a".repeat(64)]: {} } })))).toBe(true)
  })

  test("refuses a key written twice in one object", () => {
    const error = refusal('{ "permission": { "bash": "ask", "bash": "deny" } }')
    expect(error).toMatchObject({ path: "permission.bash", found: '"bash" a second time', column: 34 })
  })

  test("reports the first problem in document order, not in schema order", () => {
    // The schema checks known keys before unknown ones; the file has the unknown key last.
    const error = refusal('{ "output": { "maxLines": "x", "maxbytes": 1 }, "outptu": 1 }')
    expect(error.path).toBe("output.maxLines")
    expect(refusal('{ "outptu": 1, "output": { "maxLines": "x" } }').path).toBe("outptu")
  })
})

describe("Config.lower", () => {
  test("lowers an effect word to one rule over every resource", () => {
    expect(lowered('{ "permission": { "bash": "ask" } }').rules).toEqual([
      { action: "bash", resource: "*", effect: "ask", source: { file: FILE, path: "permission.bash" } },
    ])
  })

  test("lowers resource maps to rules in the order the file writes them", () => {
    const rules = lowered('{ "permission": { "*": "allow", "bash": { "*": "ask", "git status": "allow" }, "read": "deny" } }').rules
    expect(rules).toEqual([
      { action: "*", resource: "*", effect: "allow", source: { file: FILE, path: 'permission["*"]' } },
      { action: "bash", resource: "*", effect: "ask", source: { file: FILE, path: 'permission.bash["*"]' } },
      { action: "bash", resource: "git status", effect: "allow", source: { file: FILE, path: 'permission.bash["git status"]' } },
      { action: "read", resource: "*", effect: "deny", source: { file: FILE, path: "permission.read" } },
    ])
  })

  test("keeps document order for integer-like keys, which JavaScript objects move first", () => {
    const rules = lowered('{ "permission": { "*": "deny", "7": "ask", "read": { "*": "ask", "10": "allow", "2": "deny" } } }').rules
    expect(rules.map((rule) => [rule.action, rule.resource])).toEqual([
      ["*", "*"],
      ["7", "*"],
      ["read", "*"],
      ["read", "10"],
      ["read", "2"],
    ])
  })

  test("keeps an action named __proto__ as an ordinary action", () => {
    expect(lowered('{ "permission": { "__proto__": "deny" } }').rules).toEqual([
      { action: "__proto__", resource: "*", effect: "deny", source: { file: FILE, path: "permission.__proto__" } },
    ])
  })

  test("lowers each agent's permission separately and keeps its description", () => {
    const result = lowered('{ "agents": { "plan": { "description": "plans only", "permission": { "edit": "deny" } }, "idle": {} } }')
    expect(result.rules).toEqual([])
    expect([...result.agents.keys()]).toEqual(["plan", "idle"])
    expect(result.agents.get("plan")).toEqual({
      description: "plans only",
      rules: [{ action: "edit", resource: "*", effect: "deny", source: { file: FILE, path: "agents.plan.permission.edit" } }],
    })
    expect(result.agents.get("idle")).toEqual({ rules: [] })
  })

  test("passes output and shell settings through, empty when unset", () => {
    expect(lowered('{ "output": { "maxBytes": 4096 } }')).toMatchObject({ output: { maxBytes: 4096 }, shell: {} })
  })
})

describe("Config.merge", () => {
  const HOME = "/home/me/.core/core.json"
  const home = lowered(
    `{
      "permission": { "*": "ask", "bash": { "git *": "allow" } },
      "agents": { "plan": { "description": "home plan", "permission": { "edit": "deny" } }, "review": {} },
      "output": { "maxLines": 500, "retentionDays": 3 },
      "shell": { "timeoutMs": 1000 }
    }`,
    HOME,
  )
  const location = lowered(
    `{
      "permission": { "bash": "deny" },
      "agents": { "plan": { "permission": { "edit": "ask" } }, "build": { "description": "builds" }, "review": { "description": "site review" } },
      "output": { "maxLines": 900 }
    }`,
  )

  test("puts home's rules first and the Location's after, so the Location's win", () => {
    const resolved = Config.merge(home, location)
    expect(resolved.files).toEqual([HOME, FILE])
    expect(resolved.rules.map((rule) => [rule.action, rule.resource, rule.effect, rule.source.file])).toEqual([
      ["*", "*", "ask", HOME],
      ["bash", "git *", "allow", HOME],
      ["bash", "*", "deny", FILE],
    ])
  })

  test("appends an agent's Location rules to its home rules, keeps agents from either file, prefers the Location's description", () => {
    const { agents } = Config.merge(home, location)
    expect([...agents.keys()]).toEqual(["plan", "review", "build"])
    expect(agents.get("plan")!.description).toBe("home plan")
    expect(agents.get("plan")!.rules.map((rule) => [rule.effect, rule.source.file])).toEqual([
      ["deny", HOME],
      ["ask", FILE],
    ])
    expect(agents.get("build")).toEqual({ description: "builds", rules: [] })
    expect(agents.get("review")).toEqual({ description: "site review", rules: [] })
  })

  test("takes output and shell settings per key, the Location's over home's", () => {
    const resolved = Config.merge(home, location)
    expect(resolved.output).toEqual({ maxLines: 900, retentionDays: 3 })
    expect(resolved.shell).toEqual({ timeoutMs: 1000 })
  })

  test("takes the image limits key by key too", () => {
    const resolved = Config.merge(
      lowered('{ "output": { "image": { "maxBytes": 100000, "maxDimension": 1000 } } }', HOME),
      lowered('{ "output": { "maxLines": 900, "image": { "maxDimension": 640 } } }'),
    )
    expect(resolved.output).toEqual({ maxLines: 900, image: { maxBytes: 100000, maxDimension: 640 } })
  })

  test("refuses image limits below what an image needs, naming the key", () => {
    expect(refusal('{ "output": { "image": { "maxDimension": 10 } } }')).toMatchObject({ path: "output.image.maxDimension" })
    expect(refusal('{ "output": { "image": { "maxBytes": 100 } } }').message).toContain("an integer of at least 16384")
  })

  test("works with either file or neither", () => {
    expect(Config.merge(undefined, location).files).toEqual([FILE])
    expect(Config.merge(home, undefined).rules).toHaveLength(2)
    expect(Config.merge(undefined, undefined)).toEqual({ files: [], rules: [], agents: new Map(), output: {}, shell: {}, retentionDays: {} })
  })
})

describe("Config.parseText on hostile text", () => {
  test("refuses nesting deeper than the limit as a config error at its place, deep or unclosed", () => {
    const unclosed = refusal(`{\n  "permission": ${"[".repeat(50_000)}`)
    expect(unclosed).toMatchObject({ line: 2, column: 17 + 127 })
    expect(unclosed.message).toBe(`${FILE}:2:144: syntax error: arrays and objects nested deeper than 128 levels`)
    const closed = refusal(`{ "x": ${"[".repeat(100_000)}${"]".repeat(100_000)} }`)
    expect(closed.line).toBe(1)
  })

  test("refuses a string holding a NUL character, at that string", () => {
    const error = refusal('{\n  // a comment "\\u0000" is fine\n  "permission": { "bash": { "rm\\u0000*": "deny" } }\n}')
    expect(error).toMatchObject({ line: 3, column: 29 })
    expect(error.message).toContain("a string holds a NUL character")
  })
})
