// core.json's `mcp` entry: each server is a command core starts or a URL it reaches; a malformed entry is refused
// at its file, line and column; each configured server's tools ask by default, before any rule a file writes.

import { describe, expect, test } from "bun:test"
import * as Result from "effect/Result"
import { Rule } from "../../src/permission/rule"
import { Config } from "../../src/config/config"

const FILE = "/work/site/core.json"
const HOME = "/home/me/.config/core/core.json"

const lowered = (text: string, file = FILE): Config.Lowered => {
  const result = Config.parseText(file, text)
  if (Result.isFailure(result)) throw new Error(`expected ${file} to parse, got: ${result.failure.message}`)
  return Config.lower(result.success)
}

const refusal = (text: string): string => {
  const result = Config.parseText(FILE, text)
  if (Result.isSuccess(result)) throw new Error(`expected a refusal for: ${text}`)
  return result.failure.message
}

describe("core.json mcp", () => {
  test("accepts stdio and HTTP servers and keeps them in document order with their file", () => {
    const config = Config.merge(
      undefined,
      lowered(`{
        "mcp": {
          "zeta": { "command": ["npx", "-y", "server"], "env": { "TOKEN": "x" }, "timeoutMs": 5000 },
          "alpha": { "url": "https://example.test/mcp", "headers": { "Authorization": "Bearer t" } },
        },
      }`),
    )
    expect(config.mcp).toEqual([
      { name: "zeta", file: FILE, server: { command: ["npx", "-y", "server"], env: { TOKEN: "x" }, timeoutMs: 5000 } },
      { name: "alpha", file: FILE, server: { url: "https://example.test/mcp", headers: { Authorization: "Bearer t" } } },
    ])
  })

  test("refuses a command that is a string, with its line and column", () => {
    expect(refusal(`{\n  "mcp": {\n    "gh": { "command": "npx gh" }\n  }\n}`)).toBe(
      `${FILE}:3:24: mcp.gh.command: expected a command as an array of strings, like ["npx", "-y", "some-server"], found "npx gh"`,
    )
  })

  test("refuses an empty command, a URL that is not http(s), an unknown key and a bad timeout", () => {
    expect(refusal(`{"mcp": {"a": {"command": []}}}`)).toContain(`${FILE}:1:27: mcp.a.command: expected a command`)
    expect(refusal(`{"mcp": {"a": {"url": "ftp://x"}}}`)).toBe(
      `${FILE}:1:23: mcp.a.url: expected an http:// or https:// URL, found "ftp://x"`,
    )
    expect(refusal(`{"mcp": {"a": {"command": ["x"], "bogus": 1}}}`)).toContain(`${FILE}:1:34: mcp.a.bogus: expected one of the keys`)
    expect(refusal(`{"mcp": {"a": {"command": ["x"], "timeoutMs": 0}}}`)).toBe(
      `${FILE}:1:47: mcp.a.timeoutMs: expected an integer number of milliseconds from 1 to 2147483647 (24.8 days), found 0`,
    )
    expect(refusal(`{"mcp": {"a": {"command": ["x"], "env": {"A": 1}}}}`)).toBe(`${FILE}:1:47: mcp.a.env.A: expected a string, found 1`)
  })

  test("refuses an entry with neither or both of command and url, or with the other kind's settings", () => {
    for (const entry of [`{}`, `{"command": ["x"], "url": "http://x"}`, `{"command": ["x"], "headers": {}}`, `{"url": "http://x", "env": {}}`, `3`]) {
      expect(refusal(`{"mcp": {"a": ${entry}}}`)).toStartWith(`${FILE}:1:15: mcp.a: expected either "command"`)
    }
  })

  test("refuses a server name that could make its tools' names ambiguous or too long", () => {
    expect(refusal(`{"mcp": {"a_b": {"command": ["x"]}}}`)).toBe(
      `${FILE}:1:10: mcp.a_b: expected an MCP server name (a letter, then up to 61 letters, digits or "-"), found "a_b"`,
    )
    expect(refusal(`{"mcp": {"${"a".repeat(63)}": {"command": ["x"]}}}`)).toContain("expected an MCP server name")
  })

  test("a server the Location names replaces the home's of that name", () => {
    const home = lowered(`{"mcp": {"gh": {"command": ["old"]}, "docs": {"url": "http://docs/mcp"}}}`, HOME)
    const location = lowered(`{"mcp": {"gh": {"command": ["new"]}}}`)
    const config = Config.merge(home, location)
    expect(config.mcp?.map((entry) => [entry.name, entry.file, entry.server.command ?? entry.server.url])).toEqual([
      ["gh", FILE, ["new"]],
      ["docs", HOME, "http://docs/mcp"],
    ])
  })

  test("a server's tools ask by default where core's defaults allow, and a file's rule decides over that", () => {
    const asked = Config.merge(undefined, lowered(`{"mcp": {"gh": {"command": ["x"]}}}`))
    const rules = [{ action: "*", resource: "*", effect: "allow" as const }, ...asked.rules]
    expect(Rule.evaluate(rules, "gh_issues", "*")).toBe("ask")
    expect(Rule.evaluate(rules, "read", "*")).toBe("allow")
    expect(asked.rules[0]!.source).toEqual({ file: Config.MCP_DEFAULTS_SOURCE, path: "mcp.gh" })
    const allowed = Config.merge(undefined, lowered(`{"mcp": {"gh": {"command": ["x"]}}, "permission": {"gh_*": "allow"}}`))
    expect(Rule.evaluate(allowed.rules, "gh_issues", "*")).toBe("allow")
  })

  test("without servers, nothing is added", () => {
    const config = Config.merge(undefined, lowered(`{"permission": {"read": "deny"}}`))
    expect(config.mcp).toBeUndefined()
    expect(config.rules).toHaveLength(1)
  })
})
