export * as Spans from "./spans"

// The spans of a settle, made only when a tracer that keeps spans is installed (Effect's native tracer keeps none):
// one `Settler.settle` span per call, provided to the fiber so that any span its tool makes sits under it, and one
// span per step (decode, permission, execute, bound, record). Spans say what happened, never with what: no input,
// no message a model reads (it may quote the input). When tracing is off nothing here runs but one check per call.

import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { Permission } from "../permission/permission"
import { Tool } from "../tool/tool"
import type { Settlement } from "../contract/settlement"

/**
 * Where a traced call's step spans go: under its settle span, made by the installed tracer. Times are read from a
 * monotonic clock in milliseconds (cheaper than Effect's clock in nanoseconds) and placed from `origin`, the settle
 * span's start in nanoseconds, read once per call.
 */
export interface Trace {
  readonly tracer: Tracer.Tracer
  readonly parent: Tracer.Span
  /** `Option.some(parent)`, made once per call. */
  readonly under: Option.Option<Tracer.AnySpan>
  readonly origin: bigint
  readonly originMs: number
}

/**
 * The installed tracer, if it keeps spans and tracing is not turned off where the call runs
 * (`Effect.withTracerEnabled(false)`): read once per call, without a step of the fiber.
 */
export const keepingTracer = (): Tracer.Tracer | undefined => {
  const fiber = Fiber.getCurrent()
  if (fiber === undefined || !fiber.cache.tracerEnabled) return undefined
  const tracer = fiber.getRef(Tracer.Tracer)
  return tracer === Tracer.nativeTracer ? undefined : tracer
}

/** Whether calls settled now are traced (what each settle checks once when tracing is off). */
export const tracing = (): boolean => keepingTracer() !== undefined

export interface StepOptions<A> {
  readonly attributes?: Readonly<Record<string, unknown>>
  /** Attributes said of the step's result. */
  readonly after?: (value: A) => Readonly<Record<string, unknown>>
}

export const RECORD_INTENT = { attributes: { "core.record": "intent" } } as const
export const RECORD_SETTLEMENT = { attributes: { "core.record": "settlement" } } as const

const NO_OPTIONS: StepOptions<unknown> = {}
const NO_ANNOTATIONS = Context.empty()
const NANOS_PER_MS = 1e6

/** The time `ms` (a `performance.now()` reading) in nanoseconds since the epoch, placed from the trace's origin. */
const nanosAt = (trace: Trace, ms: number): bigint => trace.origin + BigInt(Math.round((ms - trace.originMs) * NANOS_PER_MS))

const set = (span: Tracer.Span, attributes: Readonly<Record<string, unknown>> | undefined) => {
  if (attributes === undefined) return
  for (const key in attributes) span.attribute(key, attributes[key])
}

/**
 * `effect` as a step span named `name` when the call is traced; as it is otherwise. A step span is made when the
 * step ends, from its start and end times, under the settle span: it changes nothing in the fiber (a span provided
 * to the fiber, as `Effect.withSpan` does, costs several times a step of a trivial call).
 */
export const step = <A, E, R>(
  trace: Trace | undefined,
  name: string,
  effect: Effect.Effect<A, E, R>,
  options: StepOptions<A> = NO_OPTIONS,
): Effect.Effect<A, E, R> => {
  if (trace === undefined) return effect
  return Effect.suspend(() => {
    const started = performance.now()
    return Effect.flatMap(Effect.exit(effect), (exit) => {
      const ended = performance.now()
      const made = trace.tracer.span({
        name,
        parent: trace.under,
        annotations: NO_ANNOTATIONS,
        links: [],
        startTime: nanosAt(trace, started),
        kind: "internal",
        root: false,
        sampled: trace.parent.sampled,
      })
      set(made, options.attributes)
      if (options.after !== undefined && Exit.isSuccess(exit)) set(made, options.after(exit.value))
      made.end(nanosAt(trace, ended), exit)
      return exit
    })
  })
}

interface Called {
  readonly name: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly agent: string
  readonly assistantMessageID: string
}

/**
 * A settle as the `Settler.settle` span, under the fiber's current span (a request's, or a command's): the call's
 * ids and tool, then how it settled. The span is the fiber's parent span while the call settles, so spans its tool
 * makes sit under it; `settling` gets the trace its steps' spans go under.
 */
export const settle = <E>(
  call: Called,
  inputBytes: number,
  tracer: Tracer.Tracer,
  settling: (trace: Trace) => Effect.Effect<{ readonly settlement: Settlement.Info; readonly replayed: boolean }, E>,
) =>
  Effect.withFiber((fiber) => {
    const above = fiber.cache.span
    const origin = fiber.getRef(Clock.Clock).currentTimeNanosUnsafe()
    const originMs = performance.now()
    const parent = tracer.span({
      name: "Settler.settle",
      parent: above === undefined ? Option.none() : Option.some(above),
      annotations: NO_ANNOTATIONS,
      links: [],
      startTime: origin,
      kind: "internal",
      root: false,
      sampled: above?.sampled ?? true,
    })
    parent.attribute("core.tool", call.name)
    parent.attribute("core.session", call.sessionID)
    parent.attribute("core.call", call.toolCallID)
    parent.attribute("core.agent", call.agent)
    parent.attribute("core.message", call.assistantMessageID)
    parent.attribute("core.input.bytes", inputBytes)
    const trace: Trace = { tracer, parent, under: Option.some(parent), origin, originMs }
    return Effect.flatMap(Effect.exit(Effect.provideService(settling(trace), Tracer.ParentSpan, parent)), (exit) => {
      if (Exit.isSuccess(exit)) {
        const { settlement, replayed } = exit.value
        parent.attribute("core.status", settlement.status)
        if (settlement.error !== undefined) parent.attribute("core.error.kind", settlement.error.kind)
        parent.attribute("core.replayed", replayed)
        parent.attribute("core.output.bytes", contentBytes(settlement.content))
      }
      parent.end(nanosAt(trace, performance.now()), exit)
      return exit
    })
  })

/** The size of a settlement's model-facing parts in bytes (text in UTF-8, files as their data: URIs). */
export const contentBytes = (content: Settlement.Info["content"]): number =>
  content.reduce((sum, part) => sum + (part.type === "text" ? Buffer.byteLength(part.text) : part.uri.length), 0)

/** What the permission step decided. */
export const decisionOf = (checkedByTool: boolean, exit: Exit.Exit<unknown, unknown>): string => {
  if (checkedByTool) return "by_tool"
  if (Exit.isSuccess(exit)) return "allow"
  const error = Cause.findError(exit.cause)
  if (error._tag === "Failure") return Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "error"
  if (error.success instanceof Permission.Denied) return "deny"
  if (error.success instanceof Permission.Rejected) return "reject"
  if (error.success instanceof Permission.Declined) return "decline"
  return "error"
}

/** How a tool's execute ended. */
export const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "success"
  if (Cause.hasInterruptsOnly(exit.cause)) return "interrupted"
  const error = Cause.findError(exit.cause)
  if (error._tag === "Success" && error.success instanceof Tool.Failure) return "failure"
  return "error"
}
