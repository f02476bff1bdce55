// A traced call on the immediate path (src/settlement/immediate.ts) sends the spans the fiber path sends for the same
// call: the same names, kinds, attributes, statuses and events, the same parent of each, in the same order, checked
// byte for byte (ids and times aside) as a real local OTLP receiver (Bun.serve) gets them from core's exporter. Each
// call is settled once per path on a kernel of its own (the same ids, so the same attributes), on the memory and the
// SQLite store: a success with a tool's own span, a tool failure, a defect, a tool that goes async, a denial, a call
// asked for (begun on the immediate path, handed to the fiber path), invalid input, an unknown tool, an output bounded
// into a managed output, a replay, and calls meeting plugin hooks (replacing the input and the content, with spans of
// their own; going async; denying; dying; a replay running none). Which path a call took is seen from the fiber its
// tool ran in.

import { afterAll, describe, expect, test } from "bun:test"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Fiber, Layer, ManagedRuntime, PubSub, Schema, Scope } from "effect"
import { Kernel } from "../../src/host/kernel"
import { Otlp } from "../../src/host/otlp"
import type { Agent } from "../../src/permission/agent"
import { Plugin } from "../../src/author/plugin"
import { Permission } from "../../src/permission/permission"
import { Registry } from "../../src/registry/registry"
import { Hooks } from "../../src/settlement/hooks"
import { Settler } from "../../src/settlement/settler"
import { Approvals } from "../../src/store/approvals"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"
import type { JsonSpan } from "../support/otlp"

const servers: Array<{ stop: (force?: boolean) => void }> = []
afterAll(() => {
  for (const server of servers) server.stop(true)
})

/** A local OTLP/HTTP receiver keeping every body it is sent. */
const receiver = () => {
  const bodies: Array<Uint8Array> = []
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      bodies.push(new Uint8Array(await request.arrayBuffer()))
      return new Response("{}")
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}/v1/traces`, bodies }
}

const spansOf = (bodies: ReadonlyArray<Uint8Array>): Array<JsonSpan> =>
  bodies.flatMap((body) => {
    const data = JSON.parse(new TextDecoder().decode(body)) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<JsonSpan> }> }> }
    return data.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
  })

/** Where the last tool ran: a fiber of its own (the immediate path) or the settling fiber (the fiber path). */
let ranIn: Fiber.Fiber<unknown, unknown> | undefined

const ran = <A>(value: A) => Effect.sync(() => ((ranIn = Fiber.getCurrent()), value))

const tools = {
  echo: Tool.make({
    description: "Echo text back",
    input: Schema.Struct({ text: Schema.String }),
    output: Schema.String,
    execute: (input) => ran(input.text).pipe(Effect.withSpan("echo.inner", { attributes: { "echo.length": input.text.length } })),
  }),
  fails: Tool.make({
    description: "Fails as a tool does",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.flatMap(ran(undefined), () => Effect.fail(new Tool.Failure({ message: "no such thing" }))),
  }),
  throws: Tool.make({
    description: "Throws",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () =>
      Effect.flatMap(
        ran(undefined),
        () =>
          Effect.sync((): string => {
            throw new Error("the tool broke")
          }),
      ),
  }),
  later: Tool.make({
    description: "Answers after a timer",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.flatMap(ran(undefined), () => Effect.as(Effect.sleep(2), "later")),
  }),
  big: Tool.make({
    description: "Says too much",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran(Array.from({ length: 5_000 }, (_, line) => `line ${line}`).join("\n")),
  }),
  asked: Tool.make({
    description: "Asked for, then approved",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran("approved"),
  }),
  deploy: Tool.make({
    description: "Denied by a rule",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran("deployed"),
  }),
  hooked: Tool.make({
    description: "Meets hooks that replace its input and what the model reads",
    input: Schema.Struct({ text: Schema.String }),
    output: Schema.String,
    execute: (input) => ran(input.text),
  }),
  slow: Tool.make({
    description: "Meets hooks that go async",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran("slow"),
  }),
  gated: Tool.make({
    description: "Denied by a before hook",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran("gated"),
  }),
  broken: Tool.make({
    description: "Meets a before hook that dies",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => ran("broken"),
  }),
}

/** Plugin hooks, each for its own tools (the other calls meet none); the hooked call's make spans of their own. */
const hooks: ReadonlyArray<Hooks.Entry> = [
  {
    plugin: "rewrite",
    hooks: {
      tools: ["hooked"],
      "tool.execute.before": () => Effect.succeed({ input: { text: "REPLACED" } }).pipe(Effect.withSpan("hook.before")),
      "tool.execute.after": () => Effect.succeed({ content: "rewritten" }).pipe(Effect.withSpan("hook.after")),
    },
  },
  {
    plugin: "slow",
    hooks: {
      tools: ["slow"],
      "tool.execute.before": () => Effect.sleep(2).pipe(Effect.as(undefined)),
      "tool.execute.after": () => Effect.sleep(2).pipe(Effect.as({ content: "slowly" })),
    },
  },
  { plugin: "gate", hooks: { tools: ["gated"], "tool.execute.before": () => Effect.fail(new Plugin.Denied({ message: "Not today." })) } },
  { plugin: "broken", hooks: { tools: ["broken"], "tool.execute.before": () => Effect.die(new Error("the hook broke")) } },
]

const rules: ReadonlyArray<Agent.SourcedRule> = [
  { action: "deploy", resource: "*", effect: "deny", source: { file: "core.json", path: "permission.deploy" } },
  { action: "asked", resource: "*", effect: "ask", source: { file: "core.json", path: "permission.asked" } },
]

const call = (name: string, input: unknown, toolCallID = `call_${name}`): Settler.Call => ({
  sessionID: "ses_trace",
  agent: "build",
  assistantMessageID: "msg_trace",
  toolCallID,
  name,
  input,
})

/** The calls settled, in order: each answers on the path asked, bar those the fiber path takes whatever is asked. */
const CALLS: ReadonlyArray<{ readonly call: Settler.Call; readonly immediate: boolean }> = [
  { call: call("echo", { text: "SECRET_INPUT" }), immediate: true },
  { call: call("fails", {}), immediate: true },
  { call: call("throws", {}), immediate: true },
  { call: call("later", {}), immediate: true },
  { call: call("big", {}), immediate: true },
  { call: call("deploy", {}), immediate: false },
  // Decoded on the immediate path, then handed to the fiber path for the ask: recorded by the fiber path alone.
  { call: call("asked", {}), immediate: false },
  { call: call("echo", { text: 42 }, "call_invalid"), immediate: false },
  { call: call("nothing", {}), immediate: false },
  // The first call again: answered from its record.
  { call: call("echo", { text: "SECRET_INPUT" }), immediate: false },
  { call: call("hooked", { text: "SECRET_INPUT" }), immediate: true },
  { call: call("slow", {}), immediate: true },
  { call: call("gated", {}), immediate: false },
  { call: call("broken", {}), immediate: false },
  // A recorded call meeting hooks: answered from its record, running none.
  { call: call("hooked", { text: "SECRET_INPUT" }), immediate: false },
]

/**
 * Settles CALLS on a kernel of their own on `path`, exporting as JSON to a fresh receiver; what each call settled as,
 * whether its tool ran in a fiber of its own, and the spans received once the kernel has closed.
 */
const settleAll = async (store: "memory" | "sqlite", immediately: boolean) => {
  const otlp = receiver()
  const dir = tempDir()
  const permission = Permission.layer({ project: dir, configured: { rules, agents: new Map() } }).pipe(Layer.provide(Approvals.layerMemory))
  const kernel = Kernel.layer({
    store: store === "memory" ? Store.layerMemory : SqliteStore.layer(join(dir, "core.db")),
    outputsDirectory: join(dir, "outputs"),
    permission,
  })
  const settings: Otlp.Settings = {
    url: otlp.url,
    headers: {},
    protocol: "http/json",
    compression: "none",
    serviceName: "core-test",
    exportIntervalMs: 3_600_000,
    flushMs: 2_000,
  }
  const runtime = ManagedRuntime.make(Layer.merge(kernel, Otlp.layer(settings)))
  const registration = Effect.runSync(Scope.make())
  const turn = await runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register(tools).pipe(Scope.provide(registration))
      const table = yield* Hooks.Current
      for (const entry of hooks) table!.add(entry)
      return yield* (yield* Settler.Service).materialize()
    }),
  )
  const settled: Array<{ readonly status: string; readonly error: string | undefined; readonly replayed: boolean; readonly ownFiber: boolean | undefined }> = []
  try {
    for (const { call: one } of CALLS) {
      ranIn = undefined
      const exit = await runtime.runPromise(
        Effect.gen(function* () {
          const settling = yield* Effect.fiber
          const settle = Effect.exit(turn.settle(one).pipe(Effect.provideService(Settler.Immediately, immediately)))
          if (one.name !== "asked") return { outcome: yield* settle, ownFiber: ranIn === undefined ? undefined : ranIn !== settling }
          // Approved once asked.
          const permission = yield* Permission.Service
          const events = yield* permission.subscribe
          const asking = yield* Effect.forkChild(settle)
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") throw new Error("expected an ask")
          yield* permission.reply(event.request.id, { reply: "once" })
          return { outcome: yield* Fiber.join(asking), ownFiber: undefined }
        }).pipe(Effect.scoped),
      )
      settled.push(
        Exit.isSuccess(exit.outcome)
          ? {
              status: exit.outcome.value.settlement.status,
              error: exit.outcome.value.settlement.error?.kind,
              replayed: exit.outcome.value.replayed,
              ownFiber: exit.ownFiber,
            }
          : { status: "operational", error: undefined, replayed: false, ownFiber: exit.ownFiber },
      )
    }
  } finally {
    await Effect.runPromise(Scope.close(registration, Exit.void))
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
  return { settled, spans: spansOf(otlp.bodies), text: otlp.bodies.map((body) => new TextDecoder().decode(body)).join("\n") }
}

/**
 * The spans of each call's trace as JSON, in the order received: ids as their order of appearance (a parent outside
 * the trace as "outside"), times as where they lie (within the settle span, ended after started), a stack trace as
 * its first line (the frames are the path's own).
 */
const byCall = (spans: ReadonlyArray<JsonSpan>): Array<string> => {
  const settles = spans.filter((span) => span.name === "Settler.settle")
  return settles.map((settle) => {
    const trace = spans.filter((span) => span.traceId === settle.traceId)
    const order = new Map(trace.map((span, index) => [span.spanId, index]))
    const start = BigInt(settle.startTimeUnixNano)
    const end = BigInt(settle.endTimeUnixNano)
    return JSON.stringify(
      trace.map(({ traceId: _trace, spanId, parentSpanId, startTimeUnixNano, endTimeUnixNano, events, ...rest }) => ({
        ...rest,
        id: order.get(spanId),
        parent: parentSpanId === undefined || parentSpanId === "" ? undefined : (order.get(parentSpanId) ?? "outside"),
        ordered: BigInt(endTimeUnixNano) >= BigInt(startTimeUnixNano),
        // A step's end is placed from the settle's start with sub-millisecond readings: within a millisecond of it.
        within: BigInt(startTimeUnixNano) >= start && BigInt(endTimeUnixNano) <= end + 1_000_000n,
        events: events?.map((event) => ({
          ...event,
          timeUnixNano: undefined,
          attributes: event.attributes.map((attribute) =>
            attribute.key === "exception.stacktrace" ? { key: attribute.key, value: String(Object.values(attribute.value)[0]).split("\n")[0] } : attribute,
          ),
        })),
      })),
    )
  })
}

for (const store of ["memory", "sqlite"] as const) {
  describe(`a traced call on the ${store} store`, () => {
    test("sends the same spans on the immediate path as on the fiber path: names, attributes, parents, statuses, order", async () => {
      const immediate = await settleAll(store, true)
      const fibers = await settleAll(store, false)

      // Each call settled the same on both paths, and on the path it was asked to where it applies.
      expect(immediate.settled.map(({ ownFiber: _, ...rest }) => rest)).toEqual(fibers.settled.map(({ ownFiber: _, ...rest }) => rest))
      expect(immediate.settled.map((one) => [one.status, one.error ?? null, one.replayed])).toEqual([
        ["success", null, false],
        ["error", "failure", false],
        ["operational", null, false],
        ["success", null, false],
        ["success", null, false],
        ["error", "denied", false],
        ["success", null, false],
        ["error", "invalid_input", false],
        ["error", "unknown", false],
        ["success", null, true],
        ["success", null, false],
        ["success", null, false],
        ["error", "denied", false],
        ["operational", null, false],
        ["success", null, true],
      ])
      CALLS.forEach(({ call: one, immediate: onIt }, index) => {
        const ownFiber = immediate.settled[index]!.ownFiber
        expect({ call: one.toolCallID, ownFiber }).toEqual({ call: one.toolCallID, ownFiber: onIt ? true : ownFiber })
        expect({ call: one.toolCallID, ownFiber: fibers.settled[index]!.ownFiber }).toEqual({
          call: one.toolCallID,
          ownFiber: fibers.settled[index]!.ownFiber === undefined ? undefined : false,
        })
      })

      const traced = byCall(immediate.spans)
      expect(traced).toHaveLength(CALLS.length)
      expect(traced).toEqual(byCall(fibers.spans))
      // The traces hold what the documentation says, seen once here (the other path is the same).
      const parsed = traced.map((one) => JSON.parse(one) as Array<{ name: string; parent?: number | "outside"; within: boolean; ordered: boolean }>)
      const names = (index: number) => parsed[index]!.map((span) => span.name)
      expect(names(0)).toEqual(["Settler.decode", "Settler.permission", "Settler.record", "echo.inner", "Settler.execute", "Settler.bound", "Settler.record", "Settler.settle"])
      expect(names(4)).toContain("Output.boundOversized")
      expect(names(5)).toEqual(["Settler.decode", "Settler.permission", "Settler.record", "Settler.settle"])
      expect(names(6)).toEqual(["Settler.decode", "Settler.permission", "Settler.record", "Settler.execute", "Settler.bound", "Settler.record", "Settler.settle"])
      expect(names(7)).toEqual(["Settler.decode", "Settler.record", "Settler.settle"])
      expect(names(8)).toEqual(["Settler.record", "Settler.settle"])
      expect(names(9)).toEqual(["Settler.settle"])
      // Hooks are no step of their own: a hook's own span sits under the settle span, between the steps around it.
      expect(names(10)).toEqual([
        "Settler.decode",
        "Settler.permission",
        "hook.before",
        "Settler.record",
        "Settler.execute",
        "hook.after",
        "Settler.bound",
        "Settler.record",
        "Settler.settle",
      ])
      expect(names(11)).toEqual(["Settler.decode", "Settler.permission", "Settler.record", "Settler.execute", "Settler.bound", "Settler.record", "Settler.settle"])
      expect(names(12)).toEqual(["Settler.decode", "Settler.permission", "Settler.record", "Settler.settle"])
      expect(names(13)).toEqual(["Settler.decode", "Settler.permission", "Settler.settle"])
      expect(names(14)).toEqual(["Settler.settle"])
      expect(parsed[10]!.slice(0, -1).map((span) => span.parent)).toEqual(names(10).slice(0, -1).map(() => 8))
      for (const trace of parsed) {
        const settle = trace.findIndex((span) => span.name === "Settler.settle")
        expect(trace[settle]!.parent).toBeUndefined()
        for (const span of trace) {
          expect({ name: span.name, within: span.within, ordered: span.ordered }).toEqual({ name: span.name, within: true, ordered: true })
          // Every span of a call sits under its settle span (a managed output's write under the bounding).
          if (span !== trace[settle]) expect(typeof span.parent).toBe("number")
        }
      }
      // The echo call's steps and its tool's own span all sit right under its settle span (the last ended).
      expect(parsed[0]!.slice(0, -1).map((span) => [span.name, span.parent])).toEqual(names(0).slice(0, -1).map((name) => [name, 7]))
      expect(immediate.text).not.toContain("SECRET_INPUT")
    })
  })
}
