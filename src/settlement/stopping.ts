export * as Stopping from "./stopping"

// What a call did while it was being cancelled, for its `cancelled` settlement to say (a cancel that ends a
// command's processes names them). The settler gives each call's execution a fresh list in its fiber's context,
// never in the tool's Context (DESIGN §2 law 3); a producer interrupted mid-run (the shell) adds a line as it ends
// what the call started; the settler reads the list only for a call it settles as cancelled.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** The notes of the call running in this fiber; undefined outside a settlement (nothing then records them). */
export const Notes = Context.Reference<Array<string> | undefined>("core/Stopping", { defaultValue: () => undefined })

/** Adds `note` to the running call's notes, if a settlement is listening. */
export const note = (text: string): Effect.Effect<void> =>
  Effect.map(Notes, (notes) => {
    notes?.push(text)
  })
