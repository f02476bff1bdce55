export * as Stopping from "./stopping"

// What a call did while it was being cancelled, for the settlement it gets then. The settler gives each call's
// execution a fresh record in its fiber's context, never in the tool's Context (DESIGN §2 law 3), and reads it only
// for a call whose tool ended interrupted:
// - a producer interrupted mid-run (the shell) adds a note as it ends what the call started, which the `cancelled`
//   settlement says (a cancel that ends a command's processes names them);
// - a tool whose change cannot be undone once made (a file renamed into place) makes it uninterruptibly and says it
//   `finished` with its output before it answers: a cancel that came meanwhile cannot stop it, and the call settles
//   with that output, not as cancelled (which would be untrue, and a host told so would make the change again);
// - a tool that checks permissions itself before doing anything (a built-in waiting for a person's answer) says so
//   as it is stopped there (`beforeStart`): the call settles as cancelled before it ran, nothing of it done.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** What the call running in this fiber did while it was being cancelled. */
export class Record {
  readonly notes: Array<string> = []
  /** The output of a change the tool made in full, the call's whatever ended its fiber. */
  finished: { readonly output: unknown } | undefined = undefined
  /** Whether it was stopped before it did anything (see `beforeStart`). */
  unstarted = false
}

/** The record of the call running in this fiber; undefined outside a settlement (nothing then reads it). */
export const Current = Context.Reference<Record | undefined>("core/Stopping", { defaultValue: () => undefined })

/** Adds `note` to the running call's notes, if a settlement is listening. */
export const note = (text: string): Effect.Effect<void> =>
  Effect.map(Current, (record) => {
    record?.notes.push(text)
  })

/**
 * `output`, the running call's own from now on: what a tool answers once its change is made, in the uninterruptible
 * region that made it. Should the call have been cancelled meanwhile, it still settles with this output.
 */
export const finished = <A>(output: A): Effect.Effect<A> =>
  Effect.map(Current, (record) => {
    if (record !== undefined) record.finished = { output }
    return output
  })

/**
 * `effect`, which the running call runs before it does anything (its own permission checks, which may wait for a
 * person): stopped in it, the call did nothing, and settles as cancelled before it ran.
 */
export const beforeStart = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.onInterrupt(effect, () =>
    Effect.map(Current, (record) => {
      if (record !== undefined) record.unstarted = true
    }),
  )
