// An MCP server's content blocks as core content (src/mcp-client/mcp-content.ts): what a server declares is not
// taken on trust where it reaches a data: URI and every host that reads the settlement.

import { describe, expect, test } from "bun:test"
import { McpContent } from "../../src/mcp-client/mcp-content"

describe("McpContent.part", () => {
  test("a media type that is not one (a line break and a header after it) is application/octet-stream", () => {
    for (const mimeType of ["text/html\r\nX: y", "image/png; charset=x", "", "png", "image/", "a/b/c", `image/${"x".repeat(200)}`]) {
      const image = McpContent.part({ type: "image", data: "AAAA", mimeType })
      expect([mimeType, image]).toEqual([mimeType, { type: "file", data: "AAAA", mime: "application/octet-stream" }])
      const blob = McpContent.part({ type: "resource", resource: { uri: "file:///x/y.bin", mimeType, blob: "AAAA" } })
      expect([mimeType, blob]).toEqual([mimeType, { type: "file", data: "AAAA", mime: "application/octet-stream", name: "y.bin" }])
    }
  })

  test("a media type as RFC 6838 writes one is kept", () => {
    for (const mimeType of ["image/png", "audio/wav", "image/svg+xml", "application/vnd.ms-excel", "IMAGE/JPEG"]) {
      expect(McpContent.part({ type: "image", data: "AAAA", mimeType })).toEqual({ type: "file", data: "AAAA", mime: mimeType })
    }
  })
})

describe("McpContent.wellFormed", () => {
  test("makes halves of characters U+FFFD in strings and keys, keeps a __proto__ key a key, and passes whole values as they are", () => {
    const parsed = JSON.parse('{"__proto__":{"admin":true},"x":"a\\ud800","k\\udc00":["\\ud83d\\ude00","\\ude00"]}')
    const made = McpContent.wellFormed(parsed) as Record<string, unknown>
    expect(Object.keys(made)).toEqual(["__proto__", "x", "k\uFFFD"])
    expect(Object.getPrototypeOf(made)).toBe(Object.prototype)
    expect((made as { admin?: unknown }).admin).toBeUndefined()
    expect(made.x).toBe("a\uFFFD")
    expect(made["k\uFFFD"]).toEqual(["\u{1F600}", "\uFFFD"])
    const whole = { a: ["b", { c: "\u{1F600}" }] }
    expect(McpContent.wellFormed(whole)).toBe(whole)
  })
})
