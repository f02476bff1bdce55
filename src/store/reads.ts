export * as Reads from "./reads"

// What each session has seen of each file, keyed by (sessionID, real path): the version of the file (content
// hash, size, modification time, inode) when the session last read or wrote it. The built-in file tools record
// it and compare against it, so a model is told when it would overwrite a file it never read or edit one that
// changed since it read it. The interface and an in-memory layer live here; the durable layer shares the
// settlement store's database (its table is the `reads` migration step of ./sqlite).

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Store } from "./store"
import { SqliteStore } from "./sqlite-store"

/** A version of a file's content. */
export interface Version {
  /** SHA-256 of the bytes, hex; undefined when the file was too large to hash cheaply. */
  readonly hash: string | undefined
  readonly size: number
  /** Modification time in nanoseconds since the epoch, as a decimal string (beyond a double's precision). */
  readonly mtimeNs: string
  readonly ino: string
}

export interface Interface {
  /** Remembers that `sessionID` has seen `version` of the file at `path` (a real absolute path). */
  readonly record: (sessionID: string, path: string, version: Version) => Effect.Effect<void, Store.StoreError>
  /** The version `sessionID` last saw of the file at `path`, or undefined when it never read or wrote it. */
  readonly lookup: (sessionID: string, path: string) => Effect.Effect<Version | undefined, Store.StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Reads") {}

/** Whether two versions are the same content: equal hashes, or (without both hashes) equal metadata. */
export const same = (left: Version, right: Version): boolean =>
  left.hash !== undefined && right.hash !== undefined
    ? left.hash === right.hash
    : left.size === right.size && left.mtimeNs === right.mtimeNs && left.ino === right.ino

/** An in-memory record for the life of the value: tests, benchmarks and throwaway runs. */
export const memory = (): Interface => {
  const versions = new Map<string, Version>()
  const keyOf = (sessionID: string, path: string) => JSON.stringify([sessionID, path])
  return {
    record: (sessionID, path, version) => Effect.sync(() => void versions.set(keyOf(sessionID, path), version)),
    lookup: (sessionID, path) => Effect.sync(() => versions.get(keyOf(sessionID, path))),
  }
}

export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => Service.of(memory()))

type Row = { hash: string | null; size: number; mtime_ns: string; ino: string }

/** The durable record in the store at `path` (usually `<data dir>/core.db`). */
export const layer = (path: string): Layer.Layer<Service, Store.StoreError> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const { statements, attempt } = yield* SqliteStore.acquire(path, (db) => ({
        select: db.query<Row, [string, string]>("SELECT hash, size, mtime_ns, ino FROM reads WHERE session_id = ? AND path = ?"),
        upsert: db.query<unknown, [string, string, string | null, number, string, string, number]>(
          "INSERT INTO reads (session_id, path, hash, size, mtime_ns, ino, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?) " +
            "ON CONFLICT (session_id, path) DO UPDATE SET hash = excluded.hash, size = excluded.size, " +
            "mtime_ns = excluded.mtime_ns, ino = excluded.ino, seen_at = excluded.seen_at",
        ),
      }))
      return Service.of({
        record: (sessionID, file, version) =>
          attempt("write", () => {
            statements.upsert.run(sessionID, file, version.hash ?? null, version.size, version.mtimeNs, version.ino, Date.now())
          }),
        lookup: (sessionID, file) =>
          attempt("lookup", (): Version | undefined => {
            const row = statements.select.get(sessionID, file)
            if (row === null) return undefined
            return { hash: row.hash ?? undefined, size: row.size, mtimeNs: row.mtime_ns, ino: row.ino }
          }),
      })
    }),
  )
