export * as PreparingTurn from "./preparing-turn"

// A call's turn at being prepared (../shell/preparing lets a few calls be prepared at once, process-wide): ended by
// whatever the call first waits on, the tool's execute (../settlement/turn) or a person asked for permission
// (../permission/permission), so that a call waiting does not hold the next calls back. Here, on the lowest floor,
// so that each of those can end it.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** Ends the running call's turn (idempotent); undefined outside a gated call. */
export const End = Context.Reference<(() => void) | undefined>("core/Preparing", { defaultValue: () => undefined })

/** Ends the running call's turn, if it has one: it is about to wait. */
export const end: Effect.Effect<void> = Effect.map(End, (ended) => ended?.())
