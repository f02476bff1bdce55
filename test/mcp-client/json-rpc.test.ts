// The hand-written check of a server's JSON-RPC lines against the SDK's own JSONRPCMessageSchema: for every line a
// server (or an attacker posing as one) could send, both say the same, so a line the SDK would refuse is still
// counted and skipped, and none it accepts is lost.

import { describe, expect, test } from "bun:test"
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import { JsonRpc } from "../../src/mcp-client/json-rpc"

const valid: ReadonlyArray<unknown> = [
  { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } },
  { jsonrpc: "2.0", id: "a", method: "ping" },
  { jsonrpc: "2.0", id: 0, method: "x", params: { _meta: { progressToken: 7, other: [1] } } },
  { jsonrpc: "2.0", id: 2, method: "x", params: { _meta: { progressToken: "t", "io.modelcontextprotocol/related-task": { taskId: "k" } } } },
  { jsonrpc: "2.0", method: "notifications/tools/list_changed" },
  { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 0.5 } },
  { jsonrpc: "2.0", id: 1, result: {} },
  { jsonrpc: "2.0", id: "r", result: { content: [{ type: "text", text: "x" }], _meta: { anything: true } } },
  { jsonrpc: "2.0", id: 3, result: { _meta: { progressToken: -4 } } },
  { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "nope" } },
  { jsonrpc: "2.0", error: { code: -32700, message: "parse error", data: { at: 1 } } },
  { jsonrpc: "2.0", id: 9007199254740991, result: {} },
]

const invalid: ReadonlyArray<unknown> = [
  null,
  1,
  "text",
  [],
  [{ jsonrpc: "2.0", id: 1, result: {} }],
  {},
  { jsonrpc: "1.0", id: 1, result: {} },
  { jsonrpc: 2, id: 1, result: {} },
  { id: 1, result: {} },
  { jsonrpc: "2.0", id: 1 },
  { jsonrpc: "2.0", id: 1, result: {}, extra: 1 },
  { jsonrpc: "2.0", id: 1, result: [] },
  { jsonrpc: "2.0", id: 1, result: null },
  { jsonrpc: "2.0", id: 1, result: "done" },
  { jsonrpc: "2.0", result: {} },
  { jsonrpc: "2.0", id: null, result: {} },
  { jsonrpc: "2.0", id: 1.5, result: {} },
  { jsonrpc: "2.0", id: 9007199254740992, result: {} },
  { jsonrpc: "2.0", id: true, result: {} },
  { jsonrpc: "2.0", id: {}, result: {} },
  { jsonrpc: "2.0", id: 1, result: { _meta: "x" } },
  { jsonrpc: "2.0", id: 1, result: { _meta: { progressToken: 1.5 } } },
  { jsonrpc: "2.0", id: 1, result: { _meta: { progressToken: null } } },
  { jsonrpc: "2.0", id: 1, result: { _meta: { "io.modelcontextprotocol/related-task": {} } } },
  { jsonrpc: "2.0", id: 1, result: { _meta: { "io.modelcontextprotocol/related-task": "k" } } },
  { jsonrpc: "2.0", id: 1, method: 5 },
  { jsonrpc: "2.0", id: 1, method: "x", params: [] },
  { jsonrpc: "2.0", id: 1, method: "x", params: null },
  { jsonrpc: "2.0", id: 1, method: "x", params: "p" },
  { jsonrpc: "2.0", id: 1, method: "x", params: { _meta: [] } },
  { jsonrpc: "2.0", id: 1, method: "x", extra: true },
  { jsonrpc: "2.0", method: "x", result: {} },
  { jsonrpc: "2.0", id: 1, method: "x", result: {} },
  { jsonrpc: "2.0", method: "x", params: { _meta: { progressToken: false } } },
  { jsonrpc: "2.0", id: 1, error: { code: "x", message: "m" } },
  { jsonrpc: "2.0", id: 1, error: { code: 1.5, message: "m" } },
  { jsonrpc: "2.0", id: 1, error: { code: 1 } },
  { jsonrpc: "2.0", id: 1, error: "boom" },
  { jsonrpc: "2.0", id: 1, error: null },
  { jsonrpc: "2.0", id: null, error: { code: 1, message: "m" } },
  { jsonrpc: "2.0", id: 1, error: { code: 1, message: "m" }, result: {} },
  { jsonrpc: "2.0", id: 1, error: { code: 1, message: "m" }, extra: 0 },
  JSON.parse('{"jsonrpc":"2.0","id":1,"result":{},"__proto__":{}}'),
]

/** What the SDK's schema says of `value`. */
const sdk = (value: unknown) => JSONRPCMessageSchema.safeParse(value).success

describe("JsonRpc.isMessage", () => {
  test("accepts every JSON-RPC message the SDK accepts", () => {
    for (const value of valid) {
      expect({ value, sdk: sdk(value) }).toEqual({ value, sdk: true })
      expect({ value, ours: JsonRpc.isMessage(value) }).toEqual({ value, ours: true })
    }
  })

  test("refuses what the SDK refuses: other versions, extra members, ids that are not ids, malformed parts", () => {
    for (const value of invalid) {
      expect({ value, sdk: sdk(value) }).toEqual({ value, sdk: false })
      expect({ value, ours: JsonRpc.isMessage(value) }).toEqual({ value, ours: false })
    }
  })

  test("agrees with the SDK on messages made by mixing the members of valid and invalid ones", () => {
    // Every pairing of envelope members with values drawn from the cases above, deterministic.
    const members = ["jsonrpc", "id", "method", "params", "result", "error", "extra"] as const
    const values: ReadonlyArray<unknown> = [
      "2.0", "1.0", 0, 1, -1, 1.5, "x", null, true, {}, [], { _meta: { progressToken: 1 } }, { _meta: 3 },
      { code: 1, message: "m" }, { code: "1", message: "m" }, undefined,
    ]
    // mulberry32: a small generator whose low bits are as random as its high ones.
    let seed = 7
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
    const pick = () => values[Math.floor(random() * values.length)]
    let disagreements = 0
    let accepted = 0
    for (let round = 0; round < 20_000; round++) {
      const message: Record<string, unknown> = {}
      for (const member of members) {
        if (member === "jsonrpc") message.jsonrpc = random() < 0.8 ? "2.0" : pick()
        else if (random() < 0.4) message[member] = pick()
        if (message[member] === undefined) delete message[member]
      }
      const ours = JsonRpc.isMessage(message)
      if (ours) accepted++
      if (ours !== sdk(message)) disagreements++
    }
    expect(disagreements).toBe(0)
    // The mix holds messages of each verdict, not refusals alone.
    expect(accepted).toBeGreaterThan(100)
  })
})
