export * as Spans from "./spans"

// The spans of a settle, made only when a tracer that keeps spans is installed (Effect's native tracer keeps none):
// one `Settler.settle` span per call, provided to the fiber so that any span its tool makes sits under it, and one
// span per step (decode, permission, execute, bound, record), recorded once the step has ended from two clock
// readings around it (a tracer may keep them without a span object: `Own`). Spans say what happened, never with
// what: no input, no message a model reads (it may quote the input). When tracing is off nothing here runs but one
// check per call and a branch per step.

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
import { AGENT, CALL, ERROR_KIND, INPUT_BYTES, MESSAGE, OUTPUT_BYTES, REPLAYED, SESSION, SETTLE, STATUS, TOOL } from "../contract/trace-names"

/**
 * Records a step of a traced call that ran from `started` to `ended` (`performance.now()` readings), under the
 * call's settle span, with up to three attributes; `failure` when it failed (operationally: a model-visible outcome
 * is an attribute). Called once the step has ended: it wraps no effect and changes nothing in the fiber.
 */
export type Step = (
  name: string,
  started: number,
  ended: number,
  failure: Cause.Cause<unknown> | undefined,
  key1?: string,
  value1?: unknown,
  key2?: string,
  value2?: unknown,
  key3?: string,
  value3?: unknown,
) => void

/** How a call settled, as the settle span ends with it. */
export type Settled = Exit.Exit<{ readonly settlement: Settlement.Info; readonly replayed: boolean }, unknown>

/** A traced call: its settle span, where its steps go, and how the span ends (`step` and `settled` called on it). */
export interface Trace {
  readonly parent: Tracer.Span
  readonly step: Step
  /** The settle span's start as a `performance.now()` reading. */
  readonly originMs: number
  /** Ends the settle span now, with how the call settled. */
  readonly settled: (exit: Settled) => void
}

/** What a settle span says of its call. */
export interface Called {
  readonly name: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly agent: string
  readonly assistantMessageID: string
}

/**
 * A tracer's own settle spans (core's OTLP exporter has them), placed by `performance.now()` readings on its own
 * clock, kept in step with Effect's: `begin` makes the trace of `call` (`inputBytes` of input), its settle span under
 * `above` starting at `originMs`, with the attributes a settle span has (`begin` and `end` below say which) and its
 * steps recorded without a span object each.
 */
export interface Own {
  readonly begin: (call: Called, inputBytes: number, above: Tracer.AnySpan | undefined, originMs: number) => Trace
}

/** Where a tracer keeps its `Own` settle spans. */
export const OWN: unique symbol = Symbol.for("core/Spans.own")

/** The clock every fiber has unless one is provided (a test's): the one a tracer's own clock keeps in step with. */
const DEFAULT_CLOCK = Context.get(Context.empty(), Clock.Clock)

/** A step of a record: intent (before the tool runs) or settlement. */
export const RECORD = "core.record"

const NO_ANNOTATIONS = Context.empty()
const NANOS_PER_MS = 1e6

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

/** A `performance.now()` reading when the call is traced; nothing is read otherwise. */
export const now = (trace: Trace | undefined): number => (trace === undefined ? 0 : performance.now())

/**
 * A settle span made through the tracer interface (any tracer but core's exporter), its steps made as spans under it
 * and placed from its start: times are read from a monotonic clock in milliseconds, cheaper than Effect's clock in
 * nanoseconds.
 */
class Spanned implements Trace {
  private readonly under: Option.Option<Tracer.AnySpan>
  private readonly origin: bigint
  constructor(
    private readonly tracer: Tracer.Tracer,
    readonly parent: Tracer.Span,
    readonly originMs: number,
  ) {
    this.under = Option.some(parent)
    this.origin = parent.status.startTime
  }

  private nanosAt(ms: number): bigint {
    return this.origin + BigInt(Math.round((ms - this.originMs) * NANOS_PER_MS))
  }

  step(
    name: string,
    started: number,
    ended: number,
    failure: Cause.Cause<unknown> | undefined,
    key1?: string,
    value1?: unknown,
    key2?: string,
    value2?: unknown,
    key3?: string,
    value3?: unknown,
  ): void {
    const made = this.tracer.span({
      name,
      parent: this.under,
      annotations: NO_ANNOTATIONS,
      links: [],
      startTime: this.nanosAt(started),
      kind: "internal",
      root: false,
      sampled: this.parent.sampled,
    })
    if (key1 !== undefined) made.attribute(key1, value1)
    if (key2 !== undefined) made.attribute(key2, value2)
    if (key3 !== undefined) made.attribute(key3, value3)
    made.end(this.nanosAt(ended), failure === undefined ? Exit.void : Exit.failCause(failure))
  }

  settled(exit: Settled): void {
    const { parent } = this
    if (Exit.isSuccess(exit)) {
      const { settlement, replayed } = exit.value
      parent.attribute(STATUS, settlement.status)
      if (settlement.error !== undefined) parent.attribute(ERROR_KIND, settlement.error.kind)
      parent.attribute(REPLAYED, replayed)
      parent.attribute(OUTPUT_BYTES, contentBytes(settlement.content))
    }
    // Placed from its start, as its steps are.
    parent.end(this.nanosAt(performance.now()), exit)
  }
}

/** A settle span's attributes (contract/trace-names): of its call, from its start, and of how it settled. */
export { AGENT, CALL, ERROR_KIND, INPUT_BYTES, MESSAGE, OUTPUT_BYTES, REPLAYED, SESSION, STATUS, TOOL }

/**
 * A settle's `Settler.settle` span, under `above` when given, else under the fiber's current span (a request's, or a
 * command's), with the call's ids and tool; `end` says how it settled. Made where the settle begins; outside a fiber
 * (given `above`, or as a root) its start is read from the system clock.
 */
export const begin = (call: Called, inputBytes: number, tracer: Tracer.Tracer, above?: Tracer.AnySpan): Trace => {
  const fiber = Fiber.getCurrent()
  above ??= fiber?.cache.span
  // The tracer's own settle span where the fiber's clock is Effect's own; else one made through the interface.
  const clock = fiber?.getRef(Clock.Clock)
  const own = clock === undefined || clock === DEFAULT_CLOCK ? (tracer as Partial<{ readonly [OWN]: Own }>)[OWN] : undefined
  if (own !== undefined) return own.begin(call, inputBytes, above, performance.now())
  const origin = clock === undefined ? BigInt(Date.now()) * 1_000_000n : clock.currentTimeNanosUnsafe()
  const originMs = performance.now()
  const parent = tracer.span({
    name: SETTLE,
    parent: above === undefined ? Option.none() : Option.some(above),
    annotations: NO_ANNOTATIONS,
    links: [],
    startTime: origin,
    kind: "internal",
    root: false,
    sampled: above?.sampled ?? true,
  })
  parent.attribute(TOOL, call.name)
  parent.attribute(SESSION, call.sessionID)
  parent.attribute(CALL, call.toolCallID)
  parent.attribute(AGENT, call.agent)
  parent.attribute(MESSAGE, call.assistantMessageID)
  parent.attribute(INPUT_BYTES, inputBytes)
  return new Spanned(tracer, parent, originMs)
}

/** `effect` with the settle span as the fiber's parent span: spans made inside it (a tool's own) sit under it. */
export const under = <A, E, R>(trace: Trace, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>> =>
  Effect.provideService(effect, Tracer.ParentSpan, trace.parent)

/** Ends the settle span: how the call settled. */
export const end = (trace: Trace, exit: Settled): void => trace.settled(exit)

/** The size of a settlement's model-facing parts in bytes (text in UTF-8, files as their data: URIs). */
export const contentBytes = (content: Settlement.Info["content"]): number => {
  let sum = 0
  for (const part of content) sum += part.type === "text" ? Buffer.byteLength(part.text) : part.uri.length
  return sum
}

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

/**
 * `effect` (a record step) recorded as the step `name` when the call is traced, with its one attribute; as it is
 * otherwise.
 */
export const recorded = <A, E, R>(
  trace: Trace | undefined,
  name: string,
  effect: Effect.Effect<A, E, R>,
  key: string,
  value: unknown,
): Effect.Effect<A, E, R> => {
  if (trace === undefined) return effect
  // Made where it runs: the step starts now. Recorded as it exits, with nothing to run after it (the cheapest
  // wrapping Effect has: no effect made for the outcome passed on).
  const started = performance.now()
  return Effect.onExitPrimitive(effect, (exit) => {
    trace.step(name, started, performance.now(), Exit.isSuccess(exit) ? undefined : exit.cause, key, value)
    return undefined
  })
}
