// `@core/client` against the compiled binary: spawn and connect, turns and calls as JSON and as event streams,
// progress, asks answered mid-stream, cancellation through an AbortSignal (the command's processes checked in
// /proc), events, managed outputs read whole and by range, a call whose connection is cut posted again with the
// same ids (run once), and a session that materializes again after tools.changed, a stale call and an expired turn.

import { afterAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { connect, createServer, type AddressInfo } from "node:net"
import { join } from "node:path"
import { Core, CoreError, type PermissionRequest, type Progress } from "@core/client"
import { binary } from "../support/binary"
import { Latch } from "../support/latch"
import { echoTool, gateTool } from "../support/tools"
import { runs, sandbox, type Sandbox } from "../cli/fixture"
import { aliveIn } from "../shell/processes"
import { project } from "./fixture"

const opened: Array<Core> = []
afterAll(async () => {
  for (const core of opened.splice(0)) await core.close()
})

const spawn = async (box: Sandbox): Promise<Core> => {
  const core = await Core.spawn({ command: await binary(), location: box.location, env: { ...process.env, ...box.env }, stderr: "ignore" })
  opened.push(core)
  return core
}

/** An echo tool described as `description` that answers its description (or `answer`, over `input`); records its runs. */
const tool = (description: string, answer = JSON.stringify(description)) => echoTool({ description, record: "echo", answer })

/**
 * A TCP proxy in front of `core`, each connection told apart: `request` sees each chunk a host sends (before it goes
 * on, its Host header set to core's), and `cut` each chunk core answers with; where `cut` says so, the connection is
 * dropped there (the answer lost on its way back). Disposed, it stops listening.
 */
const relay = async (
  core: Core,
  hooks: { readonly request: (text: string, connection: { call: number }) => void; readonly cut: (chunk: Buffer, connection: { call: number }) => boolean },
) => {
  const target = new URL(core.url)
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    const connection = { call: 0 }
    client.on("data", (chunk: Buffer) => {
      const text = chunk.toString("latin1")
      hooks.request(text, connection)
      upstream.write(Buffer.from(text.replace(/^host: .*$/im, `host: ${target.host}`), "latin1"))
    })
    upstream.on("data", (chunk: Buffer) => {
      if (hooks.cut(chunk, connection)) {
        client.destroy()
        upstream.destroy()
        return
      }
      client.write(chunk)
    })
    client.on("close", () => upstream.destroy())
    upstream.on("close", () => client.destroy())
    client.on("error", () => undefined)
    upstream.on("error", () => undefined)
  })
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
  return {
    through: Core.connect({ url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, token: core.token }),
    [Symbol.dispose]: () => void proxy.close(),
  }
}

/** A relay that loses core's answer to the first request matching `request`, once; `state.dropped` counts it. */
const losing = async (core: Core, request: RegExp) => {
  const state = { dropped: 0 }
  const relayed = await relay(core, {
    // A connection whose request matched is numbered 1.
    request: (text, connection) => {
      if (state.dropped === 0 && request.test(text)) connection.call = 1
    },
    cut: (_, connection) => connection.call === 1 && state.dropped === 0 && ++state.dropped === 1,
  })
  return { ...relayed, state }
}

describe("@core/client", () => {
  test("spawns core serve, reads its ready line, settles a call as JSON and replays it with the same ids", async () => {
    const box = sandbox({ "tools/echo.ts": tool("Echo", "input.text") })
    const core = await spawn(box)
    expect(core.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect((await core.health()).ok).toBe(true)
    const turn = await core.materialize()
    expect(turn.definitions.map((definition) => definition.name)).toContain("echo")
    expect(turn.definitions.find((definition) => definition.name === "read")?.annotations?.readOnly).toBe(true)
    const call = { sessionID: "ses_ts", assistantMessageID: "msg_1", toolCallID: "call_1", name: "echo", input: { text: "hi" } }
    const first = await core.settle(turn.turnID, call)
    expect(first).toMatchObject({ tool: "echo", callID: "call_1", status: "success", structured: "hi" })
    expect(await core.settle(turn.turnID, call)).toEqual(first)
    expect(await core.settlement("ses_ts", "call_1")).toEqual(first)
    expect(await core.settlement("ses_ts", "call_none")).toBeUndefined()
    // "." and ".." name no call (core refuses them as ids) and no path can hold them: "/.." is read as a step up, to
    // the list of calls, which was handed back as a settlement.
    for (const [session, id] of [["ses_ts", ".."], ["ses_ts", "."], ["..", "call_1"]]) {
      expect(await core.settlement(session!, id!)).toBeUndefined()
      expect(await core.cancel(session!, id!)).toBe(false)
    }
    expect(await core.todos("..")).toEqual({ sessionID: "..", todos: [] })
    const dotted = await core.settle(turn.turnID, { ...call, toolCallID: ".." }).catch((error) => error)
    expect(dotted).toMatchObject({ status: 400, kind: "bad_request" })
    const [recorded, ...more] = await core.calls({ sessionID: "ses_ts", since: "1h", limit: 10 })
    expect(more).toEqual([])
    expect(recorded).toMatchObject({ toolCallID: "call_1", tool: "echo", status: "success", messageID: "msg_1", input: { text: "hi" } })
    expect(await core.calls({ sessionID: "ses_none" })).toEqual([])
    expect(runs(box, "echo")).toBe(1)

    // A session's todo list, as its todowrite wrote it.
    const todos = [{ content: "Ship", status: "in_progress", priority: "high" }] as const
    await core.settle(turn.turnID, { ...call, toolCallID: "call_todo", name: "todowrite", input: { todos } })
    expect(await core.todos("ses_ts")).toEqual({ sessionID: "ses_ts", todos })
    expect(await core.todos("ses_none")).toEqual({ sessionID: "ses_none", todos: [] })

    // Connecting with the ready line's URL and token reaches the same server; a wrong token is a typed refusal.
    const connected = Core.connect({ url: core.url, token: core.token })
    expect((await connected.settle(turn.turnID, call)).structured).toBe("hi")
    const refused = await Core.connect({ url: core.url, token: "wrong" }).materialize().catch((error) => error)
    expect(refused).toBeInstanceOf(CoreError)
    expect(refused).toMatchObject({ status: 401, kind: "unauthorized" })
    const unknown = await core.settle("turn_nope", call).catch((error) => error)
    expect(unknown).toMatchObject({ status: 404, kind: "not_found" })
    // A turn for a provider holds that provider's tools, and its calls that provider's tool-result block.
    const anthropic = core.session({ provider: "anthropic", watch: false })
    const prepared = await anthropic.turn()
    expect(prepared.provider).toBe("anthropic")
    expect(prepared.tools).toHaveLength(prepared.definitions.length)
    expect(prepared.tools![prepared.definitions.findIndex((definition) => definition.name === "echo")]).toMatchObject({ name: "echo" })
    const answered = await anthropic.call({ name: "echo", input: { text: "hi" }, toolCallID: "toolu_1" })
    expect(answered.result).toMatchObject({ type: "tool_result", tool_use_id: "toolu_1" })
    const badAgent = await core.materialize({ agent: "nobody" }).catch((error) => error)
    expect(badAgent).toMatchObject({ status: 400, kind: "bad_request" })
  })

  test("acts on another Location under an allowed root with at(), and one outside the roots is refused", async () => {
    const box = sandbox()
    const other = sandbox({ "tools/echo.ts": tool("Echo elsewhere") })
    const core = await Core.spawn({
      command: await binary(),
      location: box.location,
      allowRoots: [other.location],
      env: { ...process.env, ...box.env },
      stderr: "ignore",
    })
    opened.push(core)
    expect((await core.materialize()).definitions.map((definition) => definition.name)).not.toContain("echo")
    const elsewhere = core.at(other.location).session({ watch: false })
    expect((await elsewhere.call({ name: "echo", input: { text: "x" } })).structured).toBe("Echo elsewhere")
    const outside = await core.at(sandbox().location).materialize().catch((error) => error)
    expect(outside).toMatchObject({ status: 403, kind: "forbidden" })
  })

  test("a spawn whose core exits before its ready line fails, saying so", async () => {
    const box = sandbox()
    const failed = await Core.spawn({
      command: await binary(),
      location: join(box.location, "missing"),
      env: { ...process.env, ...box.env },
      stderr: "ignore",
    }).catch((error) => error)
    expect(String(failed)).toContain("exited (code 2) before it was ready")
  })

  test("streams progress, answers an ask mid-stream with onAsk, and sees the call on the events stream", async () => {
    const box = project()
    const core = await spawn(box)
    const events = await core.events()
    const turn = await core.materialize()
    const asks: Array<PermissionRequest> = []
    const progress: Array<Progress> = []
    const settlement = await core.settle(
      turn.turnID,
      { sessionID: "ses_ask", assistantMessageID: "m", toolCallID: "call_ask", name: "bash", input: { command: "echo one; echo two" } },
      {
        onAsk: (ask) => {
          asks.push(ask)
          return "once"
        },
        onProgress: (update) => progress.push(update),
      },
    )
    expect(asks).toEqual([expect.objectContaining({ action: "bash", resources: ["echo one", "echo two"], toolCallID: "call_ask" })])
    expect(progress.length).toBeGreaterThan(0)
    expect(settlement.status).toBe("success")
    expect((settlement.structured as { stdout: string }).stdout).toBe("one\ntwo\n")
    const seen: Array<string> = []
    for await (const event of events) {
      seen.push(event.event)
      if (event.event === "call.settled") {
        expect(event.data.settlement).toEqual(settlement)
        break
      }
    }
    expect(seen).toEqual(expect.arrayContaining(["call.started", "permission.asked", "permission.replied", "call.settled"]))
    events.close()

    // An ask rejected with a message fails the call with it; one left unanswered stays pending for others.
    const rejected = await core.settle(
      turn.turnID,
      { sessionID: "ses_ask", assistantMessageID: "m", toolCallID: "call_no", name: "bash", input: { command: "echo no" } },
      { onAsk: () => ({ reply: "reject", message: "not today" }) },
    )
    expect(rejected.status).toBe("error")
    expect(rejected.error?.message).toContain("not today")

    // onAsk answering undefined leaves the ask pending: anyone may answer it through the Location's asks.
    const watch = await core.events()
    const later = core.settle(
      turn.turnID,
      { sessionID: "ses_ask", assistantMessageID: "m", toolCallID: "call_later", name: "bash", input: { command: "echo later" } },
      { onAsk: () => undefined },
    )
    for await (const event of watch) if (event.event === "permission.asked") break
    watch.close()
    const [pending] = await core.permissions()
    expect(pending).toMatchObject({ toolCallID: "call_later", resources: ["echo later"] })
    await core.reply(pending!.id, "once")
    expect(((await later).structured as { stdout: string }).stdout).toBe("later\n")
    expect(await core.reply(pending!.id, "once").catch((error) => error.status)).toBe(404)

    // A host callback that throws fails the call's promise with that error; it is not taken for a lost connection.
    const broken = await core
      .settle(
        turn.turnID,
        { sessionID: "ses_ask", assistantMessageID: "m", toolCallID: "call_broken", name: "bash", input: { command: "echo progress" } },
        { onAsk: () => "once", onProgress: () => { throw new Error("host bug") } },
      )
      .then(
        () => "settled",
        (error: Error) => error.message,
      )
    expect(broken).toBe("host bug")
  })

  test("aborting the signal cancels the call on core: its processes die and it settles cancelled", async () => {
    const box = sandbox()
    const core = await spawn(box)
    const turn = await core.materialize()
    const abort = new AbortController()
    let pid = 0
    const settlement = await core.settle(
      turn.turnID,
      { sessionID: "ses_abort", assistantMessageID: "m", toolCallID: "call_abort", name: "bash", input: { command: "echo pid $$; sleep 300" } },
      {
        signal: abort.signal,
        onProgress: (update) => {
          const match = /pid (\d+)/.exec(update.message)
          if (match === null || pid !== 0) return
          pid = Number(match[1])
          abort.abort()
        },
      },
    )
    expect(settlement.status).toBe("cancelled")
    expect(pid).toBeGreaterThan(0)
    // Numbered as the command numbered it (its own PID namespace, where it has one).
    expect(aliveIn(box.location, pid)).toBe(false)
    expect((await core.settlement("ses_abort", "call_abort"))?.status).toBe("cancelled")
    // A signal aborted before the call sends nothing.
    const early = await core
      .settle(turn.turnID, { sessionID: "ses_abort", assistantMessageID: "m", toolCallID: "call_early", name: "bash", input: { command: "true" } }, { signal: AbortSignal.abort() })
      .catch((error) => error)
    expect(early.name).toBe("AbortError")
    expect(await core.settlement("ses_abort", "call_early")).toBeUndefined()
  })

  test("reads a managed output whole, by range and by suffix; a range past the end is a typed 416", async () => {
    const box = sandbox({ "core.json": '{ "output": { "maxLines": 10 } }' })
    const core = await spawn(box)
    const session = core.session()
    const settlement = await session.call({ name: "bash", input: { command: "seq 1 3000" } })
    const [ref] = settlement.outputs
    expect(ref).toBeDefined()
    const whole = await core.output(ref!.id)
    expect(whole.text).toContain("\n2999\n")
    expect(whole.size).toBe(ref!.bytes)
    const part = await core.output(ref!.id, { range: { start: 5, end: 10 } })
    expect(part).toMatchObject({ start: 5, end: 10, size: ref!.bytes, text: whole.text.slice(5, 11) })
    const tail = await core.output(ref!.id, { range: { suffix: 5 } })
    expect(tail.text).toBe(whole.text.slice(-5))
    const past = await core.output(ref!.id, { range: { start: ref!.bytes + 10 } }).catch((error) => error)
    expect(past).toMatchObject({ status: 416 })
    expect(await core.output("out_missing").catch((error) => error.status)).toBe(404)
    session.close()
  })

  test("a call whose stream is cut mid-call is posted again with the same ids: it joins the call, which runs once", async () => {
    // Reports progress, then waits at the latch.
    await using latch = Latch.open()
    const box = sandbox({ "tools/slow.ts": gateTool(latch, { record: "slow", progress: { message: "started" }, answer: "through" }) })
    const core = await spawn(box)
    // The connection of the first call dropped once its first event passed.
    let posts = 0
    let cut = 0
    using relayed = await relay(core, {
      request: (text, connection) => {
        if (!/^POST \S+\/calls /.test(text)) return
        connection.call = ++posts
        // The call posted again after the cut: now let the tool finish.
        if (connection.call === 2) latch.release()
      },
      cut: (chunk, connection) => connection.call === 1 && cut === 0 && chunk.toString("latin1").includes("event: progress") && ++cut === 1,
    })
    {
      const { through } = relayed
      const turn = await through.materialize()
      const settlement = await through.settle(
        turn.turnID,
        { sessionID: "ses_cut", assistantMessageID: "m", toolCallID: "call_cut", name: "slow", input: {} },
        { stream: true },
      )
      expect(cut).toBe(1)
      expect(posts).toBe(2)
      expect(settlement).toMatchObject({ status: "success", structured: "through" })
      expect(runs(box, "slow")).toBe(1)
    }
  })
})

// Each is sent again when its answer is lost: the second sending meets what the first did (no such call running any
// more, no such tool), which was reported as a failure of what had been done.
describe("a request that does something once, its answer lost", () => {
  test("a cancel sent again answers true, and the call settles cancelled; a host tool removed again answers true", async () => {
    await using latch = Latch.open()
    const box = sandbox({ "tools/slow.ts": gateTool(latch, { record: "slow", progress: { message: "started" }, answer: "through" }) })
    const core = await spawn(box)
    const turn = await core.materialize()
    const started = Promise.withResolvers<void>()
    const settling = core.settle(
      turn.turnID,
      { sessionID: "ses_lost", assistantMessageID: "m", toolCallID: "call_lost", name: "slow", input: {} },
      { stream: true, onProgress: () => started.resolve() },
    )
    await started.promise
    {
      using lost = await losing(core, /^POST \S+\/cancel /)
      expect(await lost.through.cancel("ses_lost", "call_lost")).toBe(true)
      expect(lost.state.dropped).toBe(1)
    }
    expect(await settling).toMatchObject({ status: "cancelled" })
    expect(await core.cancel("ses_lost", "call_lost")).toBe(false)

    await core.registerHostTools({ enable: ["question"] })
    {
      using lost = await losing(core, /^DELETE \S+\/host-tools\/question /)
      expect(await lost.through.removeHostTool("question")).toBe(true)
      expect(lost.state.dropped).toBe(1)
    }
    expect(await core.hostTools()).toEqual([])
    expect(await core.removeHostTool("question")).toBe(false)
  })
})

describe("a session", () => {
  test("materializes again after tools.changed, after a stale call, and after its turn is gone (re-posting the same call)", async () => {
    const box = sandbox({ "tools/echo.ts": tool("Echo v1") })
    const core = await spawn(box)
    let changed = Promise.withResolvers<void>()
    const session = core.session({ sessionID: "ses_live", onToolsChanged: () => changed.resolve() })
    const first = await session.turn()
    expect(first.definitions.find((definition) => definition.name === "echo")?.description).toBe("Echo v1")
    expect(await session.turn()).toBe(first)

    writeFileSync(join(box.location, "tools/echo.ts"), tool("Echo v2"))
    await changed.promise
    expect(session.isOutdated).toBe(true)
    const second = await session.turn()
    expect(second.turnID).not.toBe(first.turnID)
    expect(second.definitions.find((definition) => definition.name === "echo")?.description).toBe("Echo v2")
    expect((await session.call({ name: "echo", input: { text: "x" } })).structured).toBe("Echo v2")

    // A session that does not watch learns of the change from a stale call, and the next step is fresh.
    const blind = core.session({ watch: false })
    await blind.turn()
    changed = Promise.withResolvers<void>()
    const watching = core.session({ onToolsChanged: () => changed.resolve() })
    await watching.turn()
    writeFileSync(join(box.location, "tools/echo.ts"), tool("Echo v3"))
    await changed.promise
    const stale = await blind.call({ name: "echo", input: { text: "x" } })
    expect(stale.error?.kind).toBe("stale")
    expect(blind.isOutdated).toBe(true)
    // The model's next step gets the current definitions, and its calls settle through that turn.
    expect((await blind.definitions()).find((definition) => definition.name === "echo")?.description).toBe("Echo v3")
    expect((await blind.call({ name: "echo", input: { text: "x" } })).structured).toBe("Echo v3")

    // core.json changing drops every turn: the call is posted again, same ids, through a fresh turn.
    const before = await blind.turn()
    changed = Promise.withResolvers<void>()
    writeFileSync(join(box.location, "core.json"), '{ "output": { "maxLines": 100 } }')
    await changed.promise
    const again = await blind.call({ name: "echo", input: { text: "x" }, toolCallID: "call_after_config" })
    expect(again.structured).toBe("Echo v3")
    expect((await blind.turn()).turnID).not.toBe(before.turnID)
    expect((await core.settlement(blind.id, "call_after_config"))?.structured).toBe("Echo v3")
    for (const each of [session, blind, watching]) each.close()
  })
})
