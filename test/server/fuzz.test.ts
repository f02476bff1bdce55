// A fuzz pass against `core serve`: thousands of malformed requests (random methods, paths, headers and bodies,
// truncated JSON, wrong types, clients that leave mid-stream) and raw garbage on the socket. None may be answered
// with a 500, every refusal carries an error body, and the server stays up. The random source is seeded; a failure
// names the seed and the request.

import { describe, expect, test } from "bun:test"
import { connect } from "node:net"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { echoTool, REPEATING } from "../support/tools"
import { sandbox, serve } from "./support"

const REQUESTS = 3_000
const CONCURRENCY = 16
const RAW_CONNECTIONS = 200
const SEED = Number(process.env.CORE_FUZZ_SEED ?? Date.now() % 1_000_000)

/** mulberry32: a small seeded generator, so a failing run can be repeated. */
const generator = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ECHO = echoTool(REPEATING)

// Nothing a fuzzed call reaches may change the machine or wait for a person.
const CONFIG = JSON.stringify({ permission: { bash: "deny", edit: "deny", external_directory: "deny" } })

describe("fuzzing core serve", () => {
  test(`${REQUESTS} malformed requests and ${RAW_CONNECTIONS} garbage connections: no 500, no crash (seed ${SEED})`, async () => {
    const box = sandbox({ "tools/echo.ts": ECHO, "core.json": CONFIG, "notes.txt": "hello\n" })
    mkdirSync(join(box.location, "sub"))
    const server = await serve(box)
    const random = generator(SEED)
    const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
    const chance = (p: number) => random() < p
    const text = (max: number, alphabet = "abcXYZ019_-./%?#&=:;@ \"'{}[]\\\u00e9\u4e2d") =>
      Array.from({ length: Math.floor(random() * max) }, () => pick([...alphabet])).join("")

    const turns: Array<string> = [(await server.turn()).turnID, (await server.turn("plan")).turnID, "turn_bogus"]
    const callIDs = ["call_a", "call_b", "call_c", ""]

    const value = (depth = 0): unknown => {
      switch (Math.floor(random() * (depth > 3 ? 6 : 8))) {
        case 0:
          return null
        case 1:
          return pick([0, -1, 1e308, 3.5, Number.MAX_SAFE_INTEGER])
        case 2:
          return text(20)
        case 3:
          return chance(0.5)
        case 4:
          return ""
        case 5:
          return pick(["echo", "read", "list", "bash", "nope", "write", "grep", "glob"])
        case 6:
          return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))
        default:
          return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick(["text", "path", "times", "command", text(6)]), value(depth + 1)]))
      }
    }

    const callBody = () => {
      const body: Record<string, unknown> = {
        sessionID: chance(0.9) ? pick(["ses_f", "ses_g"]) : value(),
        assistantMessageID: chance(0.9) ? "msg_f" : value(),
        toolCallID: chance(0.9) ? `${pick(callIDs)}${Math.floor(random() * 50)}` : value(),
        name: chance(0.8) ? pick(["echo", "read", "list", "glob", "grep", "bash", "write", "nope"]) : value(),
        input: chance(0.6) ? { text: text(10), path: pick(["notes.txt", "sub", "../..", "/etc/passwd", "missing"]), pattern: "*" } : value(),
      }
      for (const key of Object.keys(body)) if (chance(0.08)) delete body[key]
      if (chance(0.05)) body.extra = value()
      return body
    }

    const body = (): string | undefined => {
      switch (Math.floor(random() * 9)) {
        case 0:
          return undefined
        case 1:
          return ""
        case 2: {
          const json = JSON.stringify(callBody())
          return json.slice(0, Math.floor(random() * json.length))
        }
        case 3:
          return JSON.stringify(value())
        case 4:
          return text(200)
        case 5:
          return JSON.stringify({ agent: value() })
        case 6:
          return JSON.stringify({ reply: pick(["once", "always", "reject", "maybe", 3]), message: value() })
        case 7:
          return "[".repeat(Math.floor(random() * 5000))
        default:
          return JSON.stringify(callBody())
      }
    }

    const path = (): string => {
      const turn = pick(turns)
      const segment = () => (chance(0.2) ? encodeURIComponent(text(12)) : pick(["ses_f", "call_a1", "x", "..", "%2e%2e", "%00", "out_x", "per_1.1"]))
      const base = pick([
        "/v1/health",
        "/v1/openapi.json",
        "/v1/turns",
        `/v1/turns/${turn}/calls`,
        `/v1/turns/${segment()}/calls`,
        `/v1/settlements/${segment()}/${segment()}`,
        `/v1/calls/${segment()}/${segment()}/cancel`,
        "/v1/permissions",
        `/v1/permissions/${segment()}/reply`,
        "/v1/events",
        `/v1/outputs/${segment()}`,
        `/${text(30, "abc/._-%")}`,
        `/v1/${segment()}`,
        "/v1/turns/",
        "//v1//turns",
        `/v1/turns/${"a".repeat(3000)}/calls`,
      ])
      return chance(0.1) ? `${base}?${text(20)}` : base
    }

    const headers = (): Record<string, string> => {
      const result: Record<string, string> = {}
      result.authorization = chance(0.85) ? `Bearer ${server.token}` : pick(["", "Bearer", `Bearer ${server.token}x`, `Basic ${server.token}`, `bearer  ${server.token}`, text(40, "abcXYZ ")])
      if (chance(0.3)) result.accept = pick(["text/event-stream", "application/json", "*/*", text(10, "abc/*")])
      if (chance(0.2)) result["content-type"] = pick(["application/json", "text/plain", "multipart/form-data; boundary=x", text(10, "abc/;=")])
      if (chance(0.15)) result["x-core-location"] = pick([box.location, join(box.location, "sub"), "relative", "/", "/etc", join(box.location, "missing"), text(20, "abc/.")])
      if (chance(0.1)) result.range = pick(["bytes=0-5", "bytes=-3", "bytes=9999999-", "bytes=a-b", "lines=1-2", "bytes=5-1"])
      if (chance(0.05)) result["content-length"] = String(Math.floor(random() * 100))
      return result
    }

    const failures: Array<string> = []
    let next = 0
    const worker = async () => {
      while (next < REQUESTS) {
        const index = next++
        const method = pick(["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
        const target = path()
        const sent = headers()
        const payload = method === "GET" || method === "HEAD" ? undefined : body()
        const describe = `#${index} ${method} ${target} ${JSON.stringify(sent)} ${payload?.slice(0, 200)}`
        let response: Response
        try {
          response = await fetch(`${server.url}${target}`, { method, headers: sent, body: payload })
        } catch (cause) {
          failures.push(`${describe}: the request failed: ${cause}`)
          continue
        }
        if (response.status >= 500) failures.push(`${describe}: answered ${response.status}: ${await response.text()}`)
        else if (response.headers.get("content-type") === "text/event-stream") await response.body?.cancel()
        else if (response.status >= 400 && method !== "HEAD") {
          const text = await response.text()
          let kind: unknown
          try {
            kind = JSON.parse(text).error.kind
          } catch {
            kind = undefined
          }
          if (typeof kind !== "string") failures.push(`${describe}: answered ${response.status} without an error body: ${text.slice(0, 200)}`)
        } else await response.arrayBuffer()
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    expect(failures.slice(0, 5)).toEqual([])

    // Garbage on the socket: bad request lines, invalid headers, truncated requests, random bytes.
    const { port } = new URL(server.url)
    const garbage = () =>
      pick([
        () => Buffer.from(Array.from({ length: 1 + Math.floor(random() * 512) }, () => Math.floor(random() * 256))),
        () => `${text(10)} /v1/turns HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
        () => `POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 100\r\n\r\n{"agent":`,
        () => `GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Bad\u0000Header: \u0001\r\n\r\n`,
        () => `POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer ${server.token}\r\n\r\nzz\r\n`,
        () => `GET ${"/a".repeat(20000)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
      ])()
    for (let index = 0; index < RAW_CONNECTIONS; index++) {
      await new Promise<void>((resolve) => {
        const socket = connect(Number(port), "127.0.0.1", () => {
          socket.end(garbage())
        })
        socket.on("data", () => {})
        socket.on("error", () => resolve())
        socket.on("close", () => resolve())
      })
    }

    const health = await fetch(`${server.url}/v1/health`)
    expect(health.status).toBe(200)
    expect((await server.turn()).turnID).toMatch(/^turn_/)
    expect(server.child.exitCode).toBeNull()
    expect(server.stderr()).not.toContain("operational failure")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })
})
