export * as Store from "./store"

// Settlement persistence keyed by (Location, sessionID, toolCallID): a durable intent before a call executes and
// the settlement once it is known (DESIGN §2 law 12). Each record keeps the tool and agent it was made for, so a
// replay asked by another can be refused; Locations sharing a data directory never see each other's records. The
// interface and an in-memory layer live here; the durable layers are ./sqlite (a data directory) and ./postgres (a
// fleet's store of record), under the same contract tests.

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
  /** The Location's real directory: the same ids in another Location are another call. */
  readonly location: string
  readonly sessionID: string
  readonly toolCallID: string
}

/**
 * Every record names the agent it was made for; `undefined` only for records kept before agents were recorded
 * (and before records had a Location: those answer in every Location sharing the store, so none runs again).
 */
export type Record = { readonly agent: string | undefined } & (
  /**
   * Begun by the process `owner` (see ./owner); `running` says whether it still runs it: its lease is live (see
   * ./lease), or, for records kept before leases, the process is alive on this host.
   */
  | { readonly state: "started"; readonly tool: string; readonly owner: string; readonly running: boolean }
  /** Begun, then failed operationally (a defect, a lost output): it ran at least in part, with no settlement. */
  | { readonly state: "failed"; readonly tool: string; readonly reason: string }
  | { readonly state: "settled"; readonly settlement: Settlement.Info }
)

/**
 * What a settlement expects to replace, so it never replaces a record it did not see: `absent` for a call that
 * never began (unknown, stale, invalid input), `owned` for the settlement of a call this store began, `abandoned`
 * for a call begun by `owner` that is no longer running, `failed` for a call that failed operationally. A new
 * record (`absent`) names the agent it is made for.
 */
export type Expected =
  | { readonly state: "absent"; readonly agent: string }
  | { readonly state: "owned" }
  | { readonly state: "abandoned"; readonly owner: string }
  | { readonly state: "failed" }

export interface Interface {
  readonly lookup: (key: Key) => Effect.Effect<Record | undefined, StoreError>
  /** Records that a call is about to execute. Answers false (and records nothing) if the call is already known. */
  readonly begin: (key: Key, tool: string, agent: string) => Effect.Effect<boolean, StoreError>
  /** Records a settlement if the call is as `expected`; answers whether it did. A settlement is final. */
  readonly settle: (key: Key, settlement: Settlement.Info, expected: Expected) => Effect.Effect<boolean, StoreError>
  /** Records that a call this store began failed operationally, with the reason (for operators, not models). */
  readonly fail: (key: Key, reason: string) => Effect.Effect<void, StoreError>
  /** Forgets at most `limit` calls recorded before `before` (epoch ms); answers how many. */
  readonly prune: (before: number, limit: number) => Effect.Effect<number, StoreError>
  /**
   * Records that a retention sweep starts at `now` (epoch ms), unless one started within `intervalMs` before;
   * answers whether this caller should sweep. Processes sharing the store sweep at most once per interval.
   */
  readonly claimSweep: (now: number, intervalMs: number) => Effect.Effect<boolean, StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Store") {}

/**
 * Whom a record was made for, if not `call`: another tool, another agent, or nobody else (`undefined`). A replay
 * is only ever for the same call; records kept before agents were recorded name no agent.
 */
export const otherThan = (record: Record, call: { readonly name: string; readonly agent: string }) => {
  const tool = record.state === "settled" ? record.settlement.tool : record.tool
  if (tool !== call.name) return "tool" as const
  if (record.agent !== undefined && record.agent !== call.agent) return "agent" as const
  return undefined
}

const keyOf = (key: Key) => JSON.stringify([key.location, key.sessionID, key.toolCallID])

/**
 * Keeps records in memory for the life of the layer: tests, benchmarks and throwaway runs. Settlements are kept
 * as JSON, like the durable store, so a caller mutating what it got back cannot change what is replayed.
 */
export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => {
  type Stored =
    | { state: "started"; tool: string; agent: string; at: number }
    | { state: "failed"; tool: string; agent: string; reason: string; at: number }
    | { state: "settled"; json: string; agent: string; at: number }
  const records = new Map<string, Stored>()
  let lastSweep: number | undefined
  const matches = (stored: Stored | undefined, expected: Expected): boolean => {
    switch (expected.state) {
      case "absent":
        return stored === undefined
      case "owned":
      case "abandoned":
        // Every call in this store was begun by this process.
        return stored?.state === "started"
      case "failed":
        return stored?.state === "failed"
    }
  }
  return Service.of({
    lookup: (key) =>
      Effect.sync((): Record | undefined => {
        const stored = records.get(keyOf(key))
        if (stored === undefined) return undefined
        const agent = stored.agent
        if (stored.state === "settled") return { state: "settled", agent, settlement: JSON.parse(stored.json) }
        if (stored.state === "failed") return { state: "failed", agent, tool: stored.tool, reason: stored.reason }
        return { state: "started", agent, tool: stored.tool, owner: Owner.current, running: true }
      }),
    begin: (key, tool, agent) =>
      Effect.sync(() => {
        if (records.has(keyOf(key))) return false
        records.set(keyOf(key), { state: "started", tool, agent, at: Date.now() })
        return true
      }),
    settle: (key, settlement, expected) =>
      Effect.sync(() => {
        const stored = records.get(keyOf(key))
        if (!matches(stored, expected)) return false
        const agent = expected.state === "absent" ? expected.agent : stored!.agent
        records.set(keyOf(key), { state: "settled", json: JSON.stringify(settlement), agent, at: Date.now() })
        return true
      }),
    fail: (key, reason) =>
      Effect.sync(() => {
        const stored = records.get(keyOf(key))
        if (stored?.state === "started") {
          records.set(keyOf(key), { state: "failed", tool: stored.tool, agent: stored.agent, reason, at: Date.now() })
        }
      }),
    prune: (before, limit) =>
      Effect.sync(() => {
        let removed = 0
        for (const [key, stored] of records) {
          if (removed >= limit) break
          if (stored.at < before && records.delete(key)) removed++
        }
        return removed
      }),
    claimSweep: (now, intervalMs) =>
      Effect.sync(() => {
        if (lastSweep !== undefined && lastSweep > now - intervalMs && lastSweep <= now) return false
        lastSweep = now
        return true
      }),
  })
})
