export * as ManagedOutputs from "./managed"

// Managed outputs on disk: the complete output of a call whose model-facing form was bounded, kept under
// `<data dir>/outputs/<id>`, written atomically (temp file + rename), looked up by id, and swept after the
// retention period. This is the platform edge for output files; it never decides what to bound.

import { closeSync, mkdirSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

export const DEFAULT_RETENTION_DAYS = 7
const DAY_MS = 24 * 60 * 60 * 1000
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000
/** Its modification time records the last sweep. */
const SWEEP_MARKER = ".last-sweep"
const ID_PATTERN = /^out_[0-9a-z]{8,12}_[0-9a-f]{16}$/

export class RetentionError extends Schema.TaggedError<RetentionError>()("ManagedOutputs.RetentionError", {
  path: Schema.String,
  message: Schema.String,
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("ManagedOutputs.NotFound", {
  id: Schema.String,
  reason: Schema.Literals(["invalid_id", "unknown", "expired"]),
  message: Schema.String,
}) {}

export interface Reference {
  readonly id: string
  readonly bytes: number
  readonly path: string
}

export interface Interface {
  readonly directory: string
  /** Keeps `data` in full and returns where it went. Fails (never silently) when it cannot be kept. */
  readonly write: (data: string | Uint8Array) => Effect.Effect<Reference, RetentionError>
  /** Finds a kept output by id. */
  readonly open: (id: string) => Effect.Effect<Reference, NotFound>
  /** Deletes outputs older than the retention period; answers how many were removed. */
  readonly sweep: Effect.Effect<number>
  /**
   * Sweeps unless a sweep already ran within the last hour (so short-lived processes can call it each start);
   * answers how many were removed, or undefined when no sweep was due.
   */
  readonly sweepIfDue: Effect.Effect<number | undefined>
  /** How long outputs are kept. */
  readonly retentionMs: number
}

export class Service extends Context.Service<Service, Interface>()("core/ManagedOutputs") {}

export interface Options {
  /** The outputs directory (usually `<data dir>/outputs`). */
  readonly directory: string
  readonly retentionDays?: number
}

const osMessage = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const newID = (): string =>
  `out_${Date.now().toString(36)}_${Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex")}`

export const layer = (options: Options): Layer.Layer<Service> =>
  Layer.sync(Service, () => {
    const directory = options.directory
    const retentionMs = (options.retentionDays ?? DEFAULT_RETENTION_DAYS) * DAY_MS

    const write = Effect.fn("ManagedOutputs.write")(function* (data: string | Uint8Array) {
      const id = newID()
      const path = join(directory, id)
      const temporary = join(directory, `.${id}.tmp`)
      const bytes = yield* Effect.tryPromise({
        try: async () => {
          // Outputs are the user's alone: a private directory, each file made private before anything is written.
          mkdirSync(directory, { recursive: true, mode: 0o700 })
          closeSync(openSync(temporary, "w", 0o600))
          const written = await writeFile(temporary, data)
          renameSync(temporary, path)
          return written
        },
        catch: (cause) => {
          try {
            unlinkSync(temporary)
          } catch {
            // nothing was left behind
          }
          return new RetentionError({
            path: directory,
            message: `Could not keep the full output in ${directory}: ${osMessage(cause)}`,
          })
        },
      })
      return { id, bytes, path }
    })

    const open = Effect.fn("ManagedOutputs.open")(function* (id: string) {
      if (!ID_PATTERN.test(id)) {
        return yield* new NotFound({ id, reason: "invalid_id", message: `"${id}" is not a managed output id` })
      }
      const path = join(directory, id)
      const stats = statOrUndefined(path)
      if (stats === undefined) {
        return yield* new NotFound({
          id,
          reason: "unknown",
          message: `No managed output ${id} in ${directory} (it may have been swept or kept by another data directory)`,
        })
      }
      if (Date.now() - stats.mtimeMs > retentionMs) {
        removeQuietly(path)
        return yield* new NotFound({ id, reason: "expired", message: `Managed output ${id} has expired` })
      }
      return { id, bytes: stats.size, path }
    })

    const sweep = Effect.sync(() => {
      let names: Array<string>
      try {
        names = readdirSync(directory)
      } catch {
        return 0
      }
      const cutoff = Date.now() - retentionMs
      let removed = 0
      for (const name of names) {
        if (!ID_PATTERN.test(name) && !name.endsWith(".tmp")) continue
        const stats = statOrUndefined(join(directory, name))
        if (stats !== undefined && stats.mtimeMs < cutoff && removeQuietly(join(directory, name))) removed++
      }
      return removed
    }).pipe(Effect.withSpan("ManagedOutputs.sweep"))

    const sweepIfDue = Effect.suspend(() => {
      const marker = join(directory, SWEEP_MARKER)
      const last = statOrUndefined(marker)
      if (last !== undefined && Date.now() - last.mtimeMs < SWEEP_INTERVAL_MS) return Effect.succeed(undefined)
      return sweep.pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            try {
              writeFileSync(marker, "", { mode: 0o600 })
            } catch {
              // no outputs directory yet: nothing to sweep, nothing to remember
            }
          }),
        ),
      )
    })

    return Service.of({ directory, write, open, sweep, sweepIfDue, retentionMs })
  })

/** Characters encoded at a time when writing a large text, so a 100 MB output is never copied whole. */
const CHUNK_CHARS = 1 << 20

/** Writes `data` to `path`, encoding a large text chunk by chunk (never splitting a surrogate pair). */
const writeFile = async (path: string, data: string | Uint8Array): Promise<number> => {
  if (typeof data !== "string" || data.length <= CHUNK_CHARS) return Bun.write(path, data)
  const sink = Bun.file(path).writer()
  let written = 0
  for (let start = 0; start < data.length; ) {
    let end = Math.min(start + CHUNK_CHARS, data.length)
    const last = data.charCodeAt(end - 1)
    if (end < data.length && last >= 0xd800 && last <= 0xdbff) end--
    written += await sink.write(data.slice(start, end))
    await sink.flush()
    start = end
  }
  await sink.end()
  return written
}

const statOrUndefined = (path: string) => {
  try {
    const stats = statSync(path)
    return stats.isFile() ? stats : undefined
  } catch {
    return undefined
  }
}

const removeQuietly = (path: string): boolean => {
  try {
    unlinkSync(path)
    return true
  } catch {
    return false
  }
}
