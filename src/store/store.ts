export * as Store from "./store"

// Settlement persistence keyed by (sessionID, toolCallID): a durable intent before a call executes and the
// settlement once it is known (DESIGN §2 law 12). The interface and an in-memory layer live here; the durable
// bun:sqlite layer is ./sqlite. Both pass the same contract tests.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Settlement } from "../settlement/settlement"
import { Owner } from "./owner"

export class StoreError extends Schema.TaggedError<StoreError>()("Store.StoreError", {
  reason: Schema.Literals(["open", "corrupt", "newer_version", "io"]),
  path: Schema.String,
  message: Schema.String,
}) {}

export interface Key {
  readonly sessionID: string
  readonly toolCallID: string
}

export type Record =
  /** Begun by the process `owner` (see ./owner) and not settled yet. */
  | { readonly state: "started"; readonly tool: string; readonly owner: string }
  /** Begun, then failed operationally (a defect, a lost output): it ran at least in part, with no settlement. */
  | { readonly state: "failed"; readonly tool: string; readonly reason: string }
  | { readonly state: "settled"; readonly settlement: Settlement.Info }

export interface Interface {
  readonly lookup: (key: Key) => Effect.Effect<Record | undefined, StoreError>
  /** Records that a call is about to execute. Answers false (and records nothing) if the call is already known. */
  readonly begin: (key: Key, tool: string) => Effect.Effect<boolean, StoreError>
  /** Records the settlement of a call, whether or not it was begun. A settled call keeps its first settlement. */
  readonly complete: (key: Key, settlement: Settlement.Info) => Effect.Effect<void, StoreError>
  /** Records that a begun call failed operationally, with the reason. A settled call is left as it is. */
  readonly fail: (key: Key, reason: string) => Effect.Effect<void, StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Store") {}

const keyOf = (key: Key) => JSON.stringify([key.sessionID, key.toolCallID])

/** Keeps records in memory for the life of the layer: tests, benchmarks and throwaway runs. */
export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => {
  const records = new Map<string, Record>()
  return Service.of({
    lookup: (key) => Effect.sync(() => records.get(keyOf(key))),
    begin: (key, tool) =>
      Effect.sync(() => {
        if (records.has(keyOf(key))) return false
        records.set(keyOf(key), { state: "started", tool, owner: Owner.current })
        return true
      }),
    complete: (key, settlement) =>
      Effect.sync(() => {
        if (records.get(keyOf(key))?.state !== "settled") records.set(keyOf(key), { state: "settled", settlement })
      }),
    fail: (key, reason) =>
      Effect.sync(() => {
        const record = records.get(keyOf(key))
        if (record?.state === "started") records.set(keyOf(key), { state: "failed", tool: record.tool, reason })
      }),
  })
})
