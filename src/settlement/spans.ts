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

/** Where a traced call's step spans go: under its settle span, made by the installed tracer, timed by its clock. */
export interface Trace {
  readonly tracer: Tracer.Tracer
  readonly clock: Clock.Clock
  readonly parent: Tracer.Span
}

/** The installed tracer, if it keeps spans: read once per call, without a step of the fiber. */
export const keepingTracer = (): Tracer.Tracer | undefined => {
  const tracer = Fiber.getCurrent()?.getRef(Tracer.Tracer)
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

/**
 * `effect` as a step span named `name` when the call is traced; as it is otherwise. A step span is made when the
 * step ends, from its start and end times, under the settle span: it changes nothing in the fiber (a span provided
 * to the fiber, as `Effect.withSpan` does, costs several times a step of a trivial call).
 */
export const step = <A, E, R>(
  trace: Trace | undefined,
  name: string,
  effect: Effect.Effect<A, E, R>,
  options: StepOptions<A> = {},
): Effect.Effect<A, E, R> => {
  if (trace === undefined) return effect
  return Effect.suspend(() => {
    const startTime = trace.clock.currentTimeNanosUnsafe()
    return Effect.onExit(effect, (exit) =>
      Effect.sync(() => {
        const made = trace.tracer.span({
          name,
          parent: Option.some(trace.parent),
          annotations: Context.empty(),
          links: [],
          startTime,
          kind: "internal",
          root: false,
          sampled: trace.parent.sampled,
        })
        for (const [key, value] of Object.entries(options.attributes ?? {})) made.attribute(key, value)
        if (options.after !== undefined && Exit.isSuccess(exit)) {
          for (const [key, value] of Object.entries(options.after(exit.value))) made.attribute(key, value)
        }
        made.end(trace.clock.currentTimeNanosUnsafe(), exit)
      }),
    )
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
 * A settle as the `Settler.settle` span: the call's ids and tool, then how it settled. `settling` gets the trace its
 * steps' spans go under.
 */
export const settle = <E>(
  call: Called,
  inputBytes: number,
  tracer: Tracer.Tracer,
  settling: (trace: Trace) => Effect.Effect<{ readonly settlement: Settlement.Info; readonly replayed: boolean }, E>,
) =>
  Effect.useSpan(
    "Settler.settle",
    {
      attributes: {
        "core.tool": call.name,
        "core.session": call.sessionID,
        "core.call": call.toolCallID,
        "core.agent": call.agent,
        "core.message": call.assistantMessageID,
        "core.input.bytes": inputBytes,
      },
    },
    (parent) =>
      settling({ tracer, clock: Fiber.getCurrent()!.getRef(Clock.Clock), parent }).pipe(
        Effect.tap(({ settlement, replayed }) =>
          Effect.sync(() => {
            parent.attribute("core.status", settlement.status)
            if (settlement.error !== undefined) parent.attribute("core.error.kind", settlement.error.kind)
            parent.attribute("core.replayed", replayed)
            parent.attribute("core.output.bytes", contentBytes(settlement.content))
          }),
        ),
        Effect.withParentSpan(parent, { captureStackTrace: false }),
      ),
  )

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
