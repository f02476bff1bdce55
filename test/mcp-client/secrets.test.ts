// What core says from or of an MCP server shows none of what core.json gave it (Secrets): each value of its env and
// headers of six characters or more, a header's credentials without their scheme, Basic credentials decoded, each
// as written, JSON-escaped, percent-encoded and in base64.

import { describe, expect, test } from "bun:test"
import { Secrets } from "../../src/mcp-client/secrets"

const shown = (server: Parameters<typeof Secrets.spellingsOf>[0], text: string) => Secrets.redact(text, Secrets.spellingsOf(server))

describe("Secrets", () => {
  test("an env value of six characters or more is redacted in every spelling; shorter ones are settings", () => {
    const token = 'tok_"q/+=&_1'
    const text = [token, JSON.stringify(token).slice(1, -1), encodeURIComponent(token), Buffer.from(token).toString("base64"), "debug", "12345"].join(" | ")
    expect(shown({ env: { TOKEN: token, LEVEL: "debug", PORT: "12345" } }, text)).toBe(
      "[redacted] | [redacted] | [redacted] | [redacted] | debug | 12345",
    )
  })

  test("a header's value, its credentials after the scheme and Basic credentials decoded are redacted", () => {
    const basic = Buffer.from("alice:hunter2-pass").toString("base64")
    const server = { headers: { Authorization: "Bearer sk-live-1234", "X-Api-Key": "key-987654", Proxy: `Basic ${basic}`, Accept: "json" } }
    expect(shown(server, "sent Bearer sk-live-1234; then sk-live-1234 alone")).toBe("sent [redacted]; then [redacted] alone")
    expect(shown(server, "x-api-key key-987654 refused")).toBe("x-api-key [redacted] refused")
    expect(shown(server, `Basic ${basic} is alice:hunter2-pass, password hunter2-pass`)).toBe("[redacted] is [redacted], password [redacted]")
    // The scheme alone and a short value are left as they are.
    expect(shown(server, "Bearer json")).toBe("Bearer json")
  })

  // Hosted MCP endpoints often carry their key in the URL: its path, its query, or its user and password.
  test("a URL's user and password, query values and long path segments are redacted; short segments are names", () => {
    const server = { url: "https://bob:pa%24%24word@mcp.example.com/servers/github/k-3f9a8b7c6d5e4f30?api_key=QUERYSECRET99&v=1" }
    expect(shown(server, "GET /servers/github/k-3f9a8b7c6d5e4f30?api_key=QUERYSECRET99 as bob with pa$$word")).toBe(
      "GET /servers/github/[redacted]?api_key=[redacted] as bob with [redacted]",
    )
    expect(shown({ url: "not a url" }, "not a url at all")).toBe("not a url at all")
  })

  test("a server given nothing has nothing redacted", () => {
    expect(Secrets.spellingsOf({})).toEqual([])
    expect(shown({}, "anything at all")).toBe("anything at all")
  })
})
