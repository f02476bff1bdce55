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
import { CallKey } from "../contract/call-key"
import { Nesting } from "../contract/nesting"
import { Settlement } from "../contract/settlement"
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
  /**
   * Settled. A store reads the settlement's JSON as it was written and decodes it (checking it against the
   * settlement schema) only when `settlement` is first read: a lookup that needs only the state, the agent or the
   * tool (see `otherThan`), or a replay that hands the JSON on as it is (see `jsonOf`), never decodes it. One the
   * store cannot decode throws a StoreError (`corrupt`) when read.
   */
  | { readonly state: "settled"; readonly settlement: Settlement.Info }
)

const decodeSettlement = Schema.decodeUnknownSync(Schema.fromJsonString(Settlement.Info))

export const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** An operation (a lookup, a write, a prune) on the store at `path` failed. */
export const failed = (path: string, operation: string, cause: unknown): StoreError =>
  new StoreError({ reason: "io", path, message: `Settlement store ${operation} failed: ${describe(cause)}` })

/**
 * What a settled record a store made was read from (its settlement's tool and JSON): a property beside the record
 * and not in it, neither enumerable nor reachable from outside this module.
 */
const RECORDED = Symbol("Store.recorded")

interface Recorded {
  readonly [RECORDED]?: { readonly tool: string; readonly json: string }
}

/** The settled record of `tool`'s settlement recorded as `json` in the store at `path` (named if it cannot be read). */
export const settled = (agent: string | undefined, tool: string, json: string, path: string): Record => {
  let decoded: Settlement.Info | undefined
  const record: Record = {
    state: "settled",
    agent,
    get settlement(): Settlement.Info {
      if (decoded !== undefined) return decoded
      try {
        return (decoded = decodeSettlement(json))
      } catch (cause) {
        throw new StoreError({
          reason: "corrupt",
          path,
          message: `A settlement recorded in ${path} is not one core can read (${describe(cause)}); it was left as it is.`,
        })
      }
    },
  }
  Object.defineProperty(record, RECORDED, { value: { tool, json } })
  return record
}

/** A settled record's settlement as JSON: as it was recorded when a store read it, without decoding it. */
export const jsonOf = (record: Record & { readonly state: "settled" }): string =>
  (record as Recorded)[RECORDED]?.json ?? JSON.stringify(record.settlement)

/** The tool a record was made for (a settled one's without decoding its settlement, when a store read it). */
const toolOf = (record: Record): string =>
  record.state === "settled" ? ((record as Recorded)[RECORDED]?.tool ?? record.settlement.tool) : record.tool

/**
 * What a settlement expects to replace, so it never replaces a record it did not see: `absent` for a call that
 * never began (unknown, stale, invalid input), `owned` for the settlement of a call this store began, `abandoned`
 * for a call begun by `owner` that is no longer running. A new record (`absent`) names the agent it is made for. A
 * call that failed operationally keeps its `failed` record (its reason): nothing settles over it.
 */
export type Expected =
  | { readonly state: "absent"; readonly agent: string; readonly details?: Details }
  | { readonly state: "owned" }
  | { readonly state: "abandoned"; readonly owner: string }

/**
 * What is recorded about a call beside its outcome, for operators (`core log`): the turn (assistant message) that
 * made it, its input as JSON cut to INPUT_MAX_BYTES (see `recordInput`), and when core received it (epoch ms).
 */
export interface Details {
  readonly messageID: string
  /** The input's JSON, whole or cut to its first INPUT_MAX_BYTES bytes (at a character boundary). */
  readonly input: string
  /** The whole input JSON's size in UTF-8 bytes: more than `input`'s when it was cut. */
  readonly inputBytes: number
  readonly startedAt: number
}

/** How much of a call's input JSON a record keeps: inputs may be large (a file written) or carry secrets. */
export const INPUT_MAX_BYTES = 8 * 1024

const encoder = new TextEncoder()

/** What a record keeps of an input nested deeper than the decode step takes (it refuses the call). */
const TOO_DEEP_INPUT = JSON.stringify(`(not kept: ${Nesting.TOO_DEEP})`)

/**
 * The input as a record keeps it: its JSON, cut to `max` bytes at a character boundary, and its whole size. One kept
 * whole is read back as JSON (`core log`): one nested deeper than Nesting.MAX_DEPTH is not kept (a few kilobytes of
 * brackets a model sends would print as gigabytes of indentation).
 */
export const recordInput = (input: unknown, max = INPUT_MAX_BYTES): { readonly input: string; readonly inputBytes: number } => {
  let json: string
  try {
    json = JSON.stringify(input) ?? "null"
  } catch {
    // Nested past what JSON.stringify's stack reaches.
    return { input: TOO_DEEP_INPUT, inputBytes: 0 }
  }
  // Fewer characters than a third of the bound are under it whatever they are (a character is at most 3 bytes).
  const bytes = json.length * 3 <= max ? undefined : Buffer.byteLength(json)
  if (bytes === undefined || bytes <= max) {
    return Nesting.tooDeep(input) ? { input: TOO_DEEP_INPUT, inputBytes: 0 } : { input: json, inputBytes: bytes ?? Buffer.byteLength(json) }
  }
  const { read } = encoder.encodeInto(json, new Uint8Array(max))
  return { input: json.slice(0, read), inputBytes: bytes }
}

/** Which recorded calls to list: a Location's own only (never another's), newest `limit` of them, oldest first. */
export interface Filter {
  readonly location: string
  readonly sessionID?: string | undefined
  /** Only calls received at or after this time (epoch ms). */
  readonly since?: number | undefined
  readonly limit: number
}

/** A recorded call as listed. Records kept before details were recorded have no message, input or start time. */
export interface Listed {
  readonly location: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly tool: string
  readonly agent: string | undefined
  readonly messageID: string | undefined
  readonly input: string | undefined
  readonly inputBytes: number | undefined
  readonly startedAt: number | undefined
  readonly settledAt: number | undefined
  readonly record: Record
}

/** A listed call's columns as the durable stores name them (a BIGINT may come back as a string). */
export interface ListedRow {
  readonly location: string
  readonly session_id: string
  readonly call_id: string
  readonly tool: string
  readonly agent: string | null
  readonly message_id: string | null
  readonly input: string | null
  readonly input_bytes: number | string | null
  readonly started_at: number | string | null
  readonly settled_at: number | string | null
}

const numberOf = (value: number | string | null): number | undefined => (value === null ? undefined : Number(value))

/** A record's columns as the durable stores keep them. */
export interface RecordRow {
  readonly state: "started" | "failed" | "settled"
  readonly tool: string
  readonly agent: string | null
  readonly owner: string | null
  readonly reason: string | null
  readonly settlement: string | null
}

/**
 * A durable store's row as a record. Whether a begun call still runs is `running(owner)`: each store reads its
 * leases its own way.
 */
export const recordOf = (row: RecordRow, running: (owner: string) => boolean, path: string): Record => {
  const agent = row.agent ?? undefined
  if (row.state === "settled" && row.settlement !== null) return settled(agent, row.tool, row.settlement, path)
  if (row.state === "failed") return { state: "failed", agent, tool: row.tool, reason: row.reason ?? "" }
  const owner = row.owner ?? ""
  return { state: "started", agent, tool: row.tool, owner, running: running(owner) }
}

/** A durable store's row as listed, with its record (which only the store can read from the row). */
export const listedOf = (row: ListedRow, record: (key: Key) => Record): Listed => {
  const key = { location: row.location, sessionID: row.session_id, toolCallID: row.call_id }
  return {
    ...key,
    tool: row.tool,
    agent: row.agent ?? undefined,
    messageID: row.message_id ?? undefined,
    input: row.input ?? undefined,
    inputBytes: numberOf(row.input_bytes),
    startedAt: numberOf(row.started_at),
    settledAt: numberOf(row.settled_at),
    record: record(key),
  }
}

/**
 * A store's record-keeping operations answered at once, for a store kept in this process's memory or files: each
 * as its Effect in `Interface` does, returning its value or throwing its StoreError (anything else it throws is a
 * defect). The settle's immediate path (settlement/immediate.ts) calls these, without a fiber per operation.
 */
export interface Now {
  readonly lookup: (key: Key) => Record | undefined
  readonly begin: (key: Key, tool: string, agent: string, details?: Details) => boolean
  readonly settle: (key: Key, settlement: Settlement.Info, expected: Expected) => boolean
  readonly fail: (key: Key, reason: string) => void
}

/**
 * `service` answering at once through `now` too. Kept out of a copy of the service (`{ ...store, begin }`, not
 * enumerable): a store wrapping another's operations answers through its own Effects, never past them.
 */
export const answering = (service: Interface, now: Now): Interface =>
  Object.defineProperty(service, "now", { value: now, enumerable: false, writable: false })

/** `now`'s operations as Effects: a StoreError thrown is the Effect's failure, anything else a defect. */
export const effectsOf = (now: Now): Pick<Interface, keyof Now> => {
  const attempt = <A>(run: () => A): Effect.Effect<A, StoreError> =>
    Effect.suspend(() => {
      try {
        return Effect.succeed(run())
      } catch (error) {
        if (error instanceof StoreError) return Effect.fail(error)
        throw error
      }
    })
  return {
    lookup: (key) => attempt(() => now.lookup(key)),
    begin: (key, tool, agent, details) => attempt(() => now.begin(key, tool, agent, details)),
    settle: (key, settlement, expected) => attempt(() => now.settle(key, settlement, expected)),
    fail: (key, reason) => attempt(() => now.fail(key, reason)),
  }
}

export interface Interface {
  /**
   * The operations below answered at once, where this store can (one in this process's memory or files); set by
   * `answering`, so a copy of the service does not carry it.
   */
  readonly now?: Now
  readonly lookup: (key: Key) => Effect.Effect<Record | undefined, StoreError>
  /** Records that a call is about to execute. Answers false (and records nothing) if the call is already known. */
  readonly begin: (key: Key, tool: string, agent: string, details?: Details) => Effect.Effect<boolean, StoreError>
  /** Records a settlement if the call is as `expected`; answers whether it did. A settlement is final. */
  readonly settle: (key: Key, settlement: Settlement.Info, expected: Expected) => Effect.Effect<boolean, StoreError>
  /** Records that a call this store began failed operationally, with the reason (for operators, not models). */
  readonly fail: (key: Key, reason: string) => Effect.Effect<void, StoreError>
  /**
   * Forgets at most `limit` records from before `before` (epoch ms): calls, then todo lists not written since
   * (stores that keep them); answers how many. Those of `location` only where it is given; otherwise those of every
   * Location that keeps no retention of its own (`retain`), which its own prune takes.
   */
  readonly prune: (before: number, limit: number, location?: string) => Effect.Effect<number, StoreError>
  /**
   * Records the retention (ms) `location`'s own core.json sets, or that it sets none (`undefined`, the operator's
   * then applies): a sweep prunes each Location by its own. Writes only what changed.
   */
  readonly retain: (location: string, retentionMs: number | undefined) => Effect.Effect<void, StoreError>
  /** The Locations that keep a retention of their own, each with it (ms). */
  readonly retentions: Effect.Effect<ReadonlyMap<string, number>, StoreError>
  /**
   * Records that a retention sweep starts at `now` (epoch ms), unless one started within `intervalMs` before;
   * answers whether this caller should sweep. Processes sharing the store sweep at most once per interval.
   */
  readonly claimSweep: (now: number, intervalMs: number) => Effect.Effect<boolean, StoreError>
  /**
   * The calls recorded in `filter.location` (records kept before calls had a Location belong to none and are not
   * listed), optionally of one session and since a time: the newest `limit`, oldest first.
   */
  readonly list: (filter: Filter) => Effect.Effect<ReadonlyArray<Listed>, StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Store") {}

/**
 * Whom a record was made for, if not `call`: another tool, another agent, or nobody else (`undefined`). A replay
 * is only ever for the same call; records kept before agents were recorded name no agent.
 */
export const otherThan = (record: Record, call: { readonly name: string; readonly agent: string }) => {
  if (toolOf(record) !== call.name) return "tool" as const
  if (record.agent !== undefined && record.agent !== call.agent) return "agent" as const
  return undefined
}

/** One string per recorded call, for maps of calls: its Location, session and call id (`CallKey`). */
/** The last key asked for and its string: a call's record is looked up, begun and settled under one Key object. */
let lastKey: Key | undefined
let lastId = ""

export const keyOf = (key: Key): string => {
  if (key !== lastKey) {
    lastId = CallKey.of(key.location, key)
    lastKey = key
  }
  return lastId
}

/**
 * Keeps records in memory for the life of the layer: tests, benchmarks and throwaway runs. Settlements are kept
 * as JSON, like the durable store, so a caller mutating what it got back cannot change what is replayed.
 */
export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => {
  type Stored = { key: Key; details: Details | undefined; settledAt: number | undefined } & (
    | { state: "started"; tool: string; agent: string; at: number }
    | { state: "failed"; tool: string; agent: string; reason: string; at: number }
    | { state: "settled"; json: string; tool: string; agent: string; at: number }
  )
  const records = new Map<string, Stored>()
  const kept = new Map<string, number>()
  let lastSweep: number | undefined
  const matches = (stored: Stored | undefined, expected: Expected): boolean => {
    switch (expected.state) {
      case "absent":
        return stored === undefined
      case "owned":
      case "abandoned":
        // Every call in this store was begun by this process.
        return stored?.state === "started"
    }
  }
  const recordOf = (stored: Stored): Record => {
    const agent = stored.agent
    if (stored.state === "settled") return settled(agent, stored.tool, stored.json, "memory")
    if (stored.state === "failed") return { state: "failed", agent, tool: stored.tool, reason: stored.reason }
    return { state: "started", agent, tool: stored.tool, owner: Owner.current, running: true }
  }
  const now: Now = {
    lookup: (key) => {
      const stored = records.get(keyOf(key))
      return stored === undefined ? undefined : recordOf(stored)
    },
    begin: (key, tool, agent, details) => {
      const id = keyOf(key)
      if (records.has(id)) return false
      records.set(id, { key, details, settledAt: undefined, state: "started", tool, agent, at: Date.now() })
      return true
    },
    settle: (key, settlement, expected) => {
      const id = keyOf(key)
      const stored = records.get(id)
      if (!matches(stored, expected)) return false
      const agent = expected.state === "absent" ? expected.agent : stored!.agent
      const details = expected.state === "absent" ? expected.details : stored!.details
      const at = Date.now()
      records.set(id, {
        key,
        details,
        settledAt: at,
        state: "settled",
        json: JSON.stringify(settlement),
        tool: settlement.tool,
        agent,
        at,
      })
      return true
    },
    fail: (key, reason) => {
      const id = keyOf(key)
      const stored = records.get(id)
      if (stored?.state === "started") {
        const at = Date.now()
        records.set(id, { ...stored, state: "failed", reason, settledAt: at, at })
      }
    },
  }
  return answering(
    Service.of({
        ...effectsOf(now),
      list: (filter) =>
        Effect.sync(() => {
          const startOf = (stored: Stored) => stored.details?.startedAt ?? stored.settledAt ?? stored.at
          const found = [...records.values()].filter(
            (stored) =>
              stored.key.location === filter.location &&
              (filter.sessionID === undefined || stored.key.sessionID === filter.sessionID) &&
              (filter.since === undefined || startOf(stored) >= filter.since),
          )
          // Stable: calls received in the same millisecond keep the order they were recorded in.
          found.sort((a, b) => startOf(a) - startOf(b))
          return found.slice(Math.max(0, found.length - filter.limit)).map(
            (stored): Listed => ({
              location: stored.key.location,
              sessionID: stored.key.sessionID,
              toolCallID: stored.key.toolCallID,
              tool: stored.tool,
              agent: stored.agent,
              messageID: stored.details?.messageID,
              input: stored.details?.input,
              inputBytes: stored.details?.inputBytes,
              startedAt: stored.details?.startedAt,
              settledAt: stored.settledAt,
              record: recordOf(stored),
            }),
          )
        }),
      prune: (before, limit, location) =>
        Effect.sync(() => {
          let removed = 0
          for (const [key, stored] of records) {
            if (removed >= limit) break
            const whose = stored.key.location
            if (location === undefined ? kept.has(whose) : whose !== location) continue
            // A call begun here is running: never forgotten (a retry would run it a second time).
            if (stored.at < before && stored.state !== "started" && records.delete(key)) removed++
          }
          return removed
        }),
      retain: (location, retentionMs) =>
        Effect.sync(() => void (retentionMs === undefined ? kept.delete(location) : kept.set(location, retentionMs))),
      retentions: Effect.sync(() => new Map(kept)),
      claimSweep: (now, intervalMs) =>
        Effect.sync(() => {
          if (lastSweep !== undefined && lastSweep > now - intervalMs && lastSweep <= now) return false
          lastSweep = now
          return true
        }),
    }),
    now,
  )
})
