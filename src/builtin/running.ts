export * as Running from "./running"

// What one session's calls run at once: bash's commands, the searches of grep, glob and list, and webfetch's fetches.
// Each holds a process (a supervisor, or rg with its hundreds of MB searching a large tree) and about 14 of core's
// descriptors, or a socket and up to 5 MiB of a page, until it ends, up to its timeout: without a bound, one session's
// calls that never end, a thousand greps of `/` or a thousand fetches of a page that never finishes would take every
// descriptor and all the memory core's host has, and every other session's calls with them. Past `shell.maxRunning`,
// a session's calls wait their turn.

import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import { Stopping } from "../settlement/stopping"
import { Preparing } from "../shell/preparing"
import type { Tool } from "../tool/tool"
import { Builtin } from "./builtin"

/**
 * Each session's running processes, process-wide (a session's calls may come through several Locations and faces),
 * by the bound its Location sets, with how many of its calls wait for a turn; an entry goes once no call of the
 * session holds or waits for a turn under it.
 */
const sessions = new Map<string, { readonly turns: Semaphore.Semaphore; calls: number; waiting: number }>()

/**
 * Runs `run` (a command, a search or a fetch) as one of the calling session's at most `limit` running ones. A call past them
 * waits its turn behind those already waiting, having first let the next call be prepared and said why in its
 * progress: the host sees it waiting, and nothing starts. Cancelled while it waits, it did nothing
 * (Stopping.beforeStart).
 */
export const inTurn =
  (context: Pick<Tool.Context, "sessionID" | "progress">, limit: number) =>
  <A, E, R>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    const key = `${limit}\0${context.sessionID}`
    const waiting = Effect.andThen(
      Preparing.done,
      context.progress({
        message:
          `Waiting to start: ${Builtin.count(limit)} commands, searches and fetches of this session are running, the most it runs at ` +
          "once (shell.maxRunning).",
      }),
    )
    return Effect.acquireUseRelease(
      Effect.sync(() => {
        const entry = sessions.get(key) ?? { turns: Semaphore.makeUnsafe(limit), calls: 0, waiting: 0 }
        entry.calls++
        sessions.set(key, entry)
        return entry
      }),
      (entry) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            if (entry.waiting > 0 || !(yield* entry.turns.takeIfAvailable(1))) {
              entry.waiting++
              yield* restore(Stopping.beforeStart(Effect.andThen(waiting, entry.turns.take(1)))).pipe(
                Effect.ensuring(Effect.sync(() => entry.waiting--)),
              )
            }
            return yield* restore(run).pipe(Effect.ensuring(entry.turns.release(1)))
          }),
        ),
      (entry) =>
        Effect.sync(() => {
          if (--entry.calls === 0) sessions.delete(key)
        }),
    )
  }
