export * as Todos from "./todos"

// Each session's todo list, keyed by (Location, sessionID): the whole list as `todowrite` last wrote it, replaced
// as a whole on every write. Locations sharing a data directory never see each other's lists. The interface and an
// in-memory layer live here; the durable layer shares the settlement store's database (its table is the `todos`
// migration step of ./sqlite). Validating a list is the writer's business (see ../builtin/todo).

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Store } from "./store"
import { SqliteStore } from "./sqlite-store"

export const Status = Schema.Literals(["pending", "in_progress", "completed", "cancelled"])
export type Status = typeof Status.Type

export const Priority = Schema.Literals(["high", "medium", "low"])
export type Priority = typeof Priority.Type

export const Item = Schema.Struct({
  content: Schema.String.annotate({ description: "What to do, briefly" }),
  status: Status,
  priority: Priority,
}).annotate({ identifier: "Todo" })
export type Item = typeof Item.Type

export interface Key {
  /** The Location's real directory: the same session id in another Location is another list. */
  readonly location: string
  readonly sessionID: string
}

export interface Interface {
  /** The session's list; empty when it never wrote one. */
  readonly read: (key: Key) => Effect.Effect<ReadonlyArray<Item>, Store.StoreError>
  /** Replaces the session's list with `items`. */
  readonly write: (key: Key, items: ReadonlyArray<Item>) => Effect.Effect<void, Store.StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Todos") {}

export const decodeItems = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Array(Item)))

const keyOf = (key: Key) => JSON.stringify([key.location, key.sessionID])

/** Lists in memory for the life of the value (kept as JSON, so a caller mutating what it got back changes nothing). */
export const memory = (): Interface => {
  const lists = new Map<string, string>()
  return {
    read: (key) => Effect.sync(() => {
      const json = lists.get(keyOf(key))
      return json === undefined ? [] : decodeItems(json)
    }),
    write: (key, items) => Effect.sync(() => void lists.set(keyOf(key), JSON.stringify(items))),
  }
}

export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => Service.of(memory()))

/** The durable lists in the store at `path` (usually `<data dir>/core.db`). */
export const layer = (path: string): Layer.Layer<Service, Store.StoreError> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const { statements, attempt } = yield* SqliteStore.acquire(path, (db) => ({
        select: db.query<{ todos: string }, [string, string]>("SELECT todos FROM todos WHERE location = ? AND session_id = ?"),
        upsert: db.query<unknown, [string, string, string, number]>(
          "INSERT INTO todos (location, session_id, todos, updated_at) VALUES (?, ?, ?, ?) " +
            "ON CONFLICT (location, session_id) DO UPDATE SET todos = excluded.todos, updated_at = excluded.updated_at",
        ),
      }))
      return Service.of({
        read: (key) =>
          attempt("lookup", () => {
            const row = statements.select.get(key.location, key.sessionID)
            return row === null ? [] : decodeItems(row.todos)
          }),
        write: (key, items) =>
          attempt("write", () => {
            statements.upsert.run(key.location, key.sessionID, JSON.stringify(items), Date.now())
          }),
      })
    }),
  )
