// `core serve` end to end: the compiled binary on a loopback port, driven over HTTP as a host would. The ready
// line, auth, a full turn, progress and asks from a real shell command, cancellation of a process tree, replay,
// hot reload in the binary (where tool modules come through core's module plugin), shutdown and a crash.

import { describe, expect, test } from "bun:test"
import { createServer } from "node:net"
import { truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { run } from "../support/binary"
import { waitTool } from "../support/tools"
import { EventReader, IMPORTS, RAN, runs, sandbox, serve } from "./support"
import { aliveIn } from "../shell/processes"

const COUNT = `${IMPORTS}${RAN}
export default Tool.make({
  description: "Count a call",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.sync(() => { ran("count"); return "counted " + input.text }),
})
`

const version = (reply: string) => `${IMPORTS}
export default Tool.make({
  description: "Answer ${reply}",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("${reply}"),
})
`

describe("core serve", () => {
  test("prints one ready line with its loopback URL and token, uses $CORE_TOKEN, needs the token, and stops cleanly", async () => {
    const box = sandbox()
    const server = await serve(box, [], { CORE_TOKEN: "from-env" })
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(server.token).toBe("from-env")
    const health = await fetch(`${server.url}/v1/health`)
    expect(await health.json()).toEqual({ ok: true, version: expect.any(String) })
    const refused = await fetch(`${server.url}/v1/turns`, { method: "POST" })
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as any).error.kind).toBe("unauthorized")
    // Refused, the connection is closed after the answer: asking again and again without the token (each request a
    // fresh read deadline) holds no connection for good.
    const port = Number(new URL(server.url).port)
    /** What the server answers `request` on a connection of its own, and whether it closed the connection after. */
    const answeredOnce = (request: string) =>
      new Promise<string>((resolve) => {
        let answer = ""
        void Bun.connect({
          hostname: "127.0.0.1",
          port,
          socket: {
            open: (socket) => void socket.write(`${request} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`),
            data: (_, bytes) => void (answer += Buffer.from(bytes).toString()),
            close: () => resolve(answer),
            error: () => resolve(answer),
          },
        })
        setTimeout(() => resolve(`${answer}\n(still open after 3 s)`), 3_000)
      })
    const refusedOnce = await answeredOnce("GET /v1/events")
    expect(refusedOnce).toStartWith("HTTP/1.1 401")
    expect(refusedOnce).not.toContain("still open")
    // Health needs no token, and its connection is kept for the next request (the guard's deadline bounds one that
    // never passes the token: test/server/guard.test.ts).
    const anonymous = await answeredOnce("GET /v1/health")
    expect(anonymous).toStartWith("HTTP/1.1 200")
    expect(anonymous).toContain("still open")

    const events = await server.events()
    server.child.kill("SIGTERM")
    // An open event stream is ended cleanly, not cut.
    expect(await events.rest()).toEqual([])
    const { code, stdout } = await server.exited()
    expect(code).toBe(0)
    expect(stdout.split("\n").filter((line) => line !== "")).toEqual([JSON.stringify({ url: server.url, token: "from-env" })])

    const generated = await serve(box)
    expect(generated.token.length).toBeGreaterThanOrEqual(40)
    expect(generated.token).not.toBe("from-env")
    generated.child.kill("SIGINT")
    expect((await generated.exited()).code).toBe(0)
  })

  test("tells a person on stderr how to call it, with calls that work as printed", async () => {
    const box = sandbox()
    const server = await serve(box)
    const hint = await server.stderrUntil((stderr) => stderr.includes("openapi.json"), "the hint")
    expect(hint).toContain(`${server.url}/v1/health`)
    expect(hint).toContain('Authorization: Bearer $TOKEN')
    // The token itself stays on stdout: stderr often ends up in a host's logs.
    expect(hint).not.toContain(server.token)
    const body = /calls -d '(.*)'/.exec(hint)?.[1]
    expect(body).toBeDefined()
    const headers = { authorization: `Bearer ${server.token}` }
    const turn = (await (await fetch(`${server.url}/v1/turns`, { method: "POST", headers, body: "{}" })).json()) as any
    const call = await fetch(`${server.url}/v1/turns/${turn.turnID}/calls`, { method: "POST", headers, body: body! })
    expect(call.status).toBe(200)
    expect(((await call.json()) as any).status).toBe("success")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("a full turn: materialize, settle a shell command with progress streamed, read it back", async () => {
    const box = sandbox()
    const server = await serve(box)
    const { turnID, definitions } = await server.turn()
    expect(definitions.map((definition: { name: string }) => definition.name)).toContain("bash")
    const response = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: {
        sessionID: "ses_e2e",
        assistantMessageID: "msg_1",
        toolCallID: "call_shell",
        name: "bash",
        input: { command: "echo first; sleep 0.5; echo second" },
      },
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const first = await stream.until("progress")
    expect(first.data.message).toContain("first")
    const rest = await stream.rest()
    const settlement = rest.at(-1)!
    expect(settlement.event).toBe("settlement")
    expect(settlement.data).toMatchObject({ tool: "bash", callID: "call_shell", status: "success" })
    expect(settlement.data.structured.stdout).toBe("first\nsecond\n")
    expect((await server.json("GET", "/v1/settlements/ses_e2e/call_shell")).body).toEqual(settlement.data)
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("a shell command's permission ask is answered over HTTP", async () => {
    const box = sandbox({ "core.json": '{ "permission": { "bash": { "*": "ask" } } }' })
    const server = await serve(box)
    const { turnID } = await server.turn()
    const response = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: { sessionID: "ses_ask", assistantMessageID: "m", toolCallID: "call_ask", name: "bash", input: { command: "echo approved" } },
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const asked = await stream.until("permission")
    expect(asked.data).toMatchObject({ sessionID: "ses_ask", toolCallID: "call_ask", action: "bash", resources: ["echo approved"] })
    const pending = await server.json("GET", "/v1/permissions")
    expect(pending.body).toEqual([asked.data])
    expect((await server.json("POST", `/v1/permissions/${asked.data.id}/reply`, { body: { reply: "once" } })).status).toBe(200)
    const settlement = await stream.until("settlement")
    expect(settlement.data.structured.stdout).toBe("approved\n")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("cancel kills the command's whole process tree and the call settles cancelled", async () => {
    const box = sandbox()
    const server = await serve(box)
    const { turnID } = await server.turn()
    const response = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
      body: {
        sessionID: "ses_tree",
        assistantMessageID: "m",
        toolCallID: "call_tree",
        name: "bash",
        input: { command: "bash -c 'sleep 300 & echo child $!; wait' & sleep 300 & echo top $!; wait" },
      },
      headers: { accept: "text/event-stream" },
    })
    const stream = new EventReader(response)
    const pids: Array<number> = []
    while (pids.length < 2) {
      const event = await stream.until("progress")
      pids.splice(0, pids.length, ...[...String(event.data.metadata?.tail ?? event.data.message).matchAll(/(?:child|top) (\d+)/g)].map((match) => Number(match[1])))
    }
    // Numbered as the command numbered them (its own PID namespace, where it has one).
    expect(pids.every((pid) => aliveIn(box.location, pid))).toBe(true)
    expect((await server.json("POST", "/v1/calls/ses_tree/call_tree/cancel")).status).toBe(202)
    const settlement = await stream.until("settlement")
    expect(settlement.data.status).toBe("cancelled")
    expect(pids.some((pid) => aliveIn(box.location, pid))).toBe(false)
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("settling a call again replays it without running it", async () => {
    const box = sandbox({ "tools/count.ts": COUNT })
    const server = await serve(box)
    const call = { name: "count", input: { text: "x" }, sessionID: "ses_r", toolCallID: "call_r" }
    const first = await server.settle((await server.turn()).turnID, call)
    const second = await server.settle((await server.turn()).turnID, call)
    expect(second.headers.get("x-core-replayed")).toBe("true")
    expect(second.body).toEqual(first.body)
    expect(runs(box, "count")).toBe(1)
    server.child.kill("SIGTERM")
    await server.exited()
  })

  test("hot reload in the binary: a changed tool makes old turns stale, a broken one is a diagnostic", async () => {
    const box = sandbox({ "tools/hello.ts": version("v1") })
    const server = await serve(box)
    const events = await server.events()
    const old = await server.turn()
    expect((await server.settle(old.turnID, { name: "hello", input: {} })).body.structured).toBe("v1")
    writeFileSync(join(box.location, "tools/hello.ts"), version("v2"))
    await events.until("tools.changed")
    expect((await server.settle(old.turnID, { name: "hello", input: {} })).body.error.kind).toBe("stale")
    const fresh = await server.turn()
    expect((await server.settle(fresh.turnID, { name: "hello", input: {} })).body.structured).toBe("v2")

    writeFileSync(join(box.location, "tools/hello.ts"), `${IMPORTS}\nthrow new Error("boom at import")\n`)
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data.message).toContain("boom at import")
    expect((await server.turn()).definitions.map((definition: { name: string }) => definition.name)).not.toContain("hello")
    await events.close()
    server.child.kill("SIGTERM")
    const { code, stderr } = await server.exited()
    expect(code).toBe(0)
    expect(stderr).toContain("boom at import")
  })

  // SIGHUP (the serve's terminal or session gone) killed it at once: the call was left started (replayed as
  // interrupted) and a change being made half done.
  for (const signal of ["SIGTERM", "SIGHUP"] as const) {
    test(`${signal} during a call cancels it, records it cancelled and exits 0`, async () => {
      const box = sandbox()
      const server = await serve(box)
      const { turnID } = await server.turn()
      const response = await server.fetch("POST", `/v1/turns/${turnID}/calls`, {
        body: { sessionID: "ses_stop", assistantMessageID: "m", toolCallID: "call_stop", name: "bash", input: { command: "echo running $$; sleep 300" } },
        headers: { accept: "text/event-stream" },
      })
      const stream = new EventReader(response)
      const progress = await stream.until("progress")
      const pid = Number(/running (\d+)/.exec(progress.data.message)![1])
      server.child.kill(signal)
      const { code } = await server.exited()
      expect(code).toBe(0)
      expect(aliveIn(box.location, pid)).toBe(false)
      const again = await serve(box)
      expect((await again.json("GET", "/v1/settlements/ses_stop/call_stop")).body.status).toBe("cancelled")
      again.child.kill("SIGTERM")
      await again.exited()
    })
  }

  test("after kill -9 mid-call, the call is never half-recorded: it replays as interrupted and never runs again", async () => {
    const HANG = waitTool({ record: "hang", progress: { message: "running" } })
    const box = sandbox({ "tools/hang.ts": HANG })
    const server = await serve(box)
    const call = { name: "hang", input: {}, sessionID: "ses_kill", toolCallID: "call_kill" }
    const response = await server.fetch("POST", `/v1/turns/${(await server.turn()).turnID}/calls`, {
      body: { ...call, assistantMessageID: "m" },
      headers: { accept: "text/event-stream" },
    })
    await new EventReader(response).until("progress")
    server.child.kill("SIGKILL")
    await server.exited()

    const restarted = await serve(box)
    expect((await restarted.json("GET", "/v1/settlements/ses_kill/call_kill")).status).toBe(404)
    // Over SSE too, the replay says so in its headers, and runs nothing.
    const streamed = await restarted.fetch("POST", `/v1/turns/${(await restarted.turn()).turnID}/calls`, {
      body: { ...call, assistantMessageID: "m" },
      headers: { accept: "text/event-stream" },
    })
    expect(streamed.headers.get("x-core-replayed")).toBe("true")
    const events = await new EventReader(streamed).rest()
    expect(events).toEqual([{ event: "settlement", data: expect.objectContaining({ status: "error" }) }])
    expect(events[0]!.data.error.kind).toBe("interrupted")
    const replay = await restarted.settle((await restarted.turn()).turnID, call)
    expect(replay.headers.get("x-core-replayed")).toBe("true")
    expect(replay.body.error).toEqual({ kind: "interrupted", message: expect.any(String) })
    expect((await restarted.json("GET", "/v1/settlements/ses_kill/call_kill")).body.error.kind).toBe("interrupted")
    expect(runs(box, "hang")).toBe(1)
    restarted.child.kill("SIGTERM")
    expect((await restarted.exited()).code).toBe(0)
  })
})

describe("core serve behind Bun's HTTP server", () => {
  test("a body over 10 MiB gets core's 413 error body, declared or chunked, even at 200 MB; the server stays up", async () => {
    const box = sandbox()
    const server = await serve(box)
    for (const size of [13_000_000, 200_000_000]) {
      // Sparse files: the client sends the bytes without holding them.
      const path = join(box.data, `body-${size}`)
      writeFileSync(path, "")
      truncateSync(path, size)
      for (const [how, body] of [["declared", Bun.file(path)], ["chunked", Bun.file(path).stream()]] as const) {
        const answer = await server.json("POST", "/v1/turns", { body })
        expect({ size, how, status: answer.status, kind: answer.body.error?.kind }).toEqual({
          size,
          how,
          status: 413,
          kind: "payload_too_large",
        })
      }
    }
    expect((await fetch(`${server.url}/v1/health`)).status).toBe(200)
    expect((await server.turn()).turnID).toMatch(/^turn_/)
    server.child.kill("SIGTERM")
    const { code, stderr } = await server.exited()
    expect(code).toBe(0)
    expect(stderr).not.toContain("operational failure")
  })

  test("a wrong Host is a 403, HEAD /v1/health needs no token, and outputs answer exactly the ranges core decides", async () => {
    const box = sandbox({ "core.json": '{ "output": { "maxLines": 10 } }' })
    const server = await serve(box)
    const wrongHost = await fetch(`${server.url}/v1/health`, { headers: { host: "evil.example:80" } })
    expect(wrongHost.status).toBe(403)
    expect(((await wrongHost.json()) as any).error.kind).toBe("forbidden")
    const rebound = await server.fetch("POST", "/v1/turns", { body: {}, headers: { host: `localhost.evil:${new URL(server.url).port}` } })
    expect(rebound.status).toBe(403)
    const head = await fetch(`${server.url}/v1/health`, { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe("")

    const { turnID } = await server.turn()
    const settled = await server.settle(turnID, { name: "bash", input: { command: "seq 1 3000" } })
    const [ref] = settled.body.outputs
    const full = await (await server.fetch("GET", `/v1/outputs/${ref.id}`)).text()
    expect(full).toContain("\n2999\n")
    const range = (header: string) => server.fetch("GET", `/v1/outputs/${ref.id}`, { headers: { range: header } })
    // Not a range core reads (spaces inside): the whole content, once marked, rather than Bun's own reading of it.
    const spaced = await range("bytes= 1 - 2")
    expect(spaced.status).toBe(200)
    expect(spaced.headers.get("accept-ranges")).toBe("bytes")
    expect(spaced.headers.get("content-range")).toBeNull()
    expect(await spaced.text()).toBe(full)
    const several = await range("bytes=0-1,5-6")
    expect(several.status).toBe(200)
    expect(await several.text()).toBe(full)
    const part = await range("bytes=5-10")
    expect(part.status).toBe(206)
    expect(part.headers.get("accept-ranges")).toBe("bytes")
    expect(part.headers.get("content-range")).toBe(`bytes 5-10/${ref.bytes}`)
    expect(await part.text()).toBe(full.slice(5, 11))
    const emptySuffix = await range("bytes=-0")
    expect(emptySuffix.status).toBe(416)
    expect(((await emptySuffix.json()) as any).error.message).toContain("empty suffix")
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })

  test("a client that disconnects mid-stream does not stop its call: it settles and is recorded", async () => {
    const box = sandbox()
    const server = await serve(box)
    const events = await server.events()
    const gate = join(box.data, "gate")
    const abort = new AbortController()
    const response = await server.fetch("POST", `/v1/turns/${(await server.turn()).turnID}/calls`, {
      body: {
        sessionID: "ses_gone",
        assistantMessageID: "m",
        toolCallID: "call_gone",
        name: "bash",
        input: { command: `echo waiting; while [ ! -e '${gate}' ]; do sleep 0.02; done; echo through` },
      },
      headers: { accept: "text/event-stream" },
      signal: abort.signal,
    })
    const stream = new EventReader(response)
    await stream.until("progress")
    abort.abort()
    await stream.close()
    writeFileSync(gate, "")
    const settled = await events.until("call.settled", (data) => data.toolCallID === "call_gone")
    expect(settled.data.settlement.status).toBe("success")
    const recorded = await server.json("GET", "/v1/settlements/ses_gone/call_gone")
    expect(recorded.status).toBe(200)
    expect(recorded.body.structured.stdout).toBe("waiting\nthrough\n")
    await events.close()
    server.child.kill("SIGTERM")
    expect((await server.exited()).code).toBe(0)
  })
})

describe("core serve's command line", () => {
  test("--help documents the flags, and bad flags or Locations are usage errors (exit 2)", async () => {
    const box = sandbox()
    const help = await run(["serve", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toStartWith("Usage: core serve")
    for (const flag of ["--location", "--allow-root", "--host", "--port", "CORE_TOKEN"]) expect(help.stdout).toContain(flag)
    for (const args of [
      ["--port", "http"],
      ["--port", "70000"],
      ["--frob"],
      ["--location", join(box.location, "missing")],
      ["--location", box.location, "--allow-root", join(box.location, "missing")],
      // A script's unset variable: it allowed every directory under the current one, / for a service.
      ["--location", box.location, "--allow-root", ""],
      ["--location", box.location, "--allow-root="],
      ["--location", box.location, "extra"],
    ]) {
      const result = await run(["serve", ...args], { env: box.env })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("core serve")
    }
  })

  test("a CORE_TOKEN no client could send (or an empty one) is a usage error, saying why", async () => {
    const box = sandbox()
    for (const [token, why] of [["two words", "whitespace"], ["   ", "empty"], ["", "empty"], ["caf\u00e9", "non-ASCII"]] as const) {
      const result = await run(["serve", "--location", box.location], { env: { ...box.env, CORE_TOKEN: token } })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("CORE_TOKEN")
      expect(result.stderr).toContain(why)
    }
  })

  test("a port in use is an operational failure (exit 3) that says so and what to do", async () => {
    const box = sandbox()
    const blocker = createServer().listen(0, "127.0.0.1")
    await new Promise((resolve) => blocker.once("listening", resolve))
    const port = (blocker.address() as { port: number }).port
    const result = await run(["serve", "--location", box.location, "--port", String(port)], { env: box.env })
    blocker.close()
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(`127.0.0.1:${port}`)
    expect(result.stderr).toContain("the port is in use by another program (choose another with --port")
  })
})
