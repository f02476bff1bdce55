export * as ManagedOutputs from "./managed-outputs"

// Managed outputs: what a bounded settlement left out, kept under one id in a directory of the Location that made it
// (`<data dir>/outputs/<key>/`, the key a hash of the Location's directory, so a Location's tools can read its own
// outputs and no other's): the full text as `<id>`, the full structured value as `<id>.json`, media too large to
// inline as `<id>.<n>`. Each file is written atomically (temp file + rename); outputs are looked up by id and part
// wherever they are, read whole or by byte range, and swept after the retention period. With an object store
// (./object-store, `CORE_OUTPUTS_URL`) each output's files are put there too, under `<id>/` in the same layout, so
// any host can read them; the local files stay what this host's tools read, and what keeps an output when the store
// cannot be reached. It never decides what to bound.

import {
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  statfsSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs"
import { basename, dirname, join, relative, sep } from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ObjectStore } from "./object-store"

export const DEFAULT_RETENTION_DAYS = 7
/** What one session's outputs in a Location may hold, unless `output.maxSessionBytes` says otherwise. */
export const DEFAULT_MAX_SESSION_BYTES = 1024 ** 3
/**
 * Outputs are kept only while the filesystem holding them keeps this much free after them: the lesser of
 * MIN_FREE_BYTES and MIN_FREE_SHARE of its size, so that the store of settlements, and everything else on that
 * disk, always has room whatever a model makes.
 */
export const MIN_FREE_BYTES = 1024 ** 3
export const MIN_FREE_SHARE = 0.1
export const DAY_MS = 24 * 60 * 60 * 1000
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000
/** Its modification time records the last sweep. */
const SWEEP_MARKER = ".last-sweep"
const ID_PATTERN = /^out_[0-9a-z]{8,12}_[0-9a-f]{16}$/
/** The id at the start of one of its files' names. */
const ID_PREFIX = /^out_[0-9a-z]{8,12}_[0-9a-f]{16}/
/** Every file of an output: the text, the structured value (or the mark that it is the text quoted), the media parts. */
const FILE_PATTERN = /^out_[0-9a-z]{8,12}_[0-9a-f]{16}(\.json|\.string|\.[0-9]{1,4})?$/
/** A Location's directory of outputs. */
const LOCATION_PATTERN = /^[0-9a-f]{16}$/

/**
 * Where the outputs a Location makes are kept, under `directory` (the outputs directory): the only outputs its tools
 * may read without asking. Outputs kept before outputs had a Location stay in `directory` itself, readable by none.
 */
export const locationDirectory = (directory: string, location: string): string => join(directory, locationName(location))

/** The name of `location`'s directory of outputs. */
const locationName = (location: string): string => new Bun.CryptoHasher("sha256").update(location).digest("hex").slice(0, 16)

/**
 * Where the outputs one session of a Location makes are kept, inside the Location's directory: a tool reads them
 * without asking only in calls of that session (./permission checks the caller's session against this).
 */
export const sessionDirectory = (locationDirectory: string, sessionID: string): string =>
  join(locationDirectory, new Bun.CryptoHasher("sha256").update(`session\0${sessionID}`).digest("hex").slice(0, 16))

/** The directory an output of `location` (and `session`) is kept in, under the outputs directory. */
const placeOf = (directory: string, location: string | undefined, session: string | undefined): string => {
  const base = location === undefined ? directory : locationDirectory(directory, location)
  return session === undefined ? base : sessionDirectory(base, session)
}

export class RetentionError extends Schema.TaggedError<RetentionError>()("ManagedOutputs.RetentionError", {
  path: Schema.String,
  message: Schema.String,
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("ManagedOutputs.NotFound", {
  id: Schema.String,
  reason: Schema.Literals(["invalid_id", "unknown", "expired", "no_part"]),
  message: Schema.String,
}) {}

/**
 * An output that was not kept, by the bound on what outputs may take (a session's share, the disk's free space); the
 * call's result is still answered, bounded, saying so. `message` says why, to the model.
 */
export class NotKept extends Schema.TaggedError<NotKept>()("ManagedOutputs.NotKept", {
  reason: Schema.Literals(["session", "disk"]),
  message: Schema.String,
}) {}

/** The object store could not be asked (down, refusing the keys): the output may exist, but cannot be read now. */
export class Unavailable extends Schema.TaggedError<Unavailable>()("ManagedOutputs.Unavailable", {
  id: Schema.String,
  message: Schema.String,
}) {}

/** The parts of one managed output. */
export type Part = "text" | "structured"

/** What one settlement keeps: any of the full text, the full structured value, media too large to inline. */
export interface Contents {
  readonly text?: string
  /**
   * The structured value as JSON text; `"text"` when it is the very text kept (stored once); `"quoted"` when it is
   * that text as a JSON string (a string output): marked (`<id>.string`, empty) and made from the text when read.
   */
  readonly structured?: string | "text" | "quoted"
  readonly files?: ReadonlyArray<Uint8Array>
}

export interface Written {
  readonly id: string
  /** The size of the output's default part (what `open(id)` gives): its text, else its structured JSON. */
  readonly bytes: number
  /** Where each part went. */
  readonly text: string | undefined
  readonly structured: string | undefined
  readonly files: ReadonlyArray<string>
  /**
   * Set when an object store is configured and the output could not be put there: why. The output is then kept on
   * this host only (its local files), and other hosts cannot read it.
   */
  readonly unshared?: string
}

/** One part of a kept output. */
export interface Reference {
  readonly id: string
  readonly part: Part
  readonly bytes: number
  /** Its file on this host; undefined when it is read from the object store. */
  readonly path: string | undefined
  /** Its bytes: whole, or a range with `.slice(start, end)` (a ranged GET from the object store). */
  readonly content: Blob
}

export interface Interface {
  readonly directory: string
  /** Where outputs are kept, for messages: the directory, and the object store's `s3://` URL when there is one. */
  readonly where: string
  /**
   * Keeps `contents` in full under one id (a fresh one unless given, from `newID`). Fails (never silently) when
   * any of it cannot be kept: NotKept, writing nothing, when it would take the session's outputs (with a `session`)
   * past `maxSessionBytes` (DEFAULT_MAX_SESSION_BYTES unless given) or leave its disk less free than the floor (the
   * lesser of MIN_FREE_BYTES and MIN_FREE_SHARE of the disk, or Options.minFreeBytes).
   */
  readonly write: (
    contents: Contents,
    id?: string,
    location?: string,
    session?: string,
    maxSessionBytes?: number,
  ) => Effect.Effect<Written, RetentionError | NotKept>
  /**
   * Where the parts of output `id` are (or will be) kept, by the Location that makes it, or, without one, wherever
   * it is kept now; `file(n)` is the n-th media file, from 1.
   */
  readonly paths: (
    id: string,
    location?: string,
    session?: string,
  ) => {
    readonly text: string
    readonly structured: string
    /** The mark that the structured value is the text as a JSON string (a string output). */
    readonly quoted: string
    readonly file: (n: number) => string
  }
  /**
   * Finds a part of a kept output. The text part of an output that kept no text is what it did keep: its
   * structured value's JSON (what the model reads of a structured-only output), else its first media file.
   */
  readonly open: (id: string, part?: Part) => Effect.Effect<Reference, NotFound | Unavailable>
  /**
   * Brings the file `path` of an output kept by another host from the object store to this host, where the
   * Location's tools read it; `path` is one `paths` names, in the same Location and session directories as the
   * object, so it reaches nothing another Location or session kept. Answers whether a file was brought.
   */
  readonly fetch: (path: string) => Effect.Effect<boolean, Unavailable>
  /** Deletes outputs older than the retention period; answers how many were removed. */
  readonly sweep: Effect.Effect<number>
  /**
   * Sweeps unless a sweep already ran within the last hour (so short-lived processes can call it each start);
   * answers how many were removed, or undefined when no sweep was due.
   */
  readonly sweepIfDue: Effect.Effect<number | undefined>
  /** How long outputs are kept: the operator's retention, for every Location that sets none of its own. */
  readonly retentionMs: number
  /**
   * The Locations that keep a retention of their own (each with it, ms), as the store of record has them: from now
   * on their outputs are found expired, and swept, by it. Replaces what was retained before.
   */
  readonly retain: (retentions: ReadonlyMap<string, number>) => Effect.Effect<void>
}

export class Service extends Context.Service<Service, Interface>()("core/ManagedOutputs") {}

export interface Options {
  /** The outputs directory (usually `<data dir>/outputs`). */
  readonly directory: string
  readonly retentionDays?: number
  /** An object store every output is put in too, so any host sharing it can read them. */
  readonly remote?: ObjectStore.Interface
  /** The free space outputs always leave on their filesystem; the lesser of MIN_FREE_BYTES and MIN_FREE_SHARE unless given. */
  readonly minFreeBytes?: number
  /** How long a lookup in the store may take, and the base of a put's time (plus its size at 1 MB/s); PUT_BASE_MS unless given. */
  readonly putBaseMs?: number
}

/**
 * How long one file's put may take before the output is kept on this host only: a base for the round trips, plus
 * its size at 1 MB/s. A store that does not answer (a dropped connection) must not hold a call's result for ever.
 */
const PUT_BASE_MS = 30_000
const PUT_MIN_BYTES_PER_MS = 1_000

const withinTime = <A>(promise: Promise<A>, ms: number): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(ms / 1000)} s`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

const osMessage = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

export const newID = (): string =>
  `out_${Date.now().toString(36)}_${Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex")}`

/** An output's file's key in the object store: under its id, in the layout of the outputs directory. */
const keyOf = (directory: string, id: string, path: string) => `${id}/${relative(directory, path).split(sep).join("/")}`

/**
 * Writes a file of an output atomically: `fill` writes the private temporary file, which then takes `path`'s name.
 * Outputs are the user's alone: private directories, each file made private before anything is written.
 */
const atomically = async <A>(
  place: string,
  temporary: string,
  path: string,
  fill: (temporary: string) => Promise<A>,
): Promise<A> => {
  try {
    mkdirSync(place, { recursive: true, mode: 0o700 })
    closeSync(openSync(temporary, "w", 0o600))
    const result = await fill(temporary)
    renameSync(temporary, path)
    return result
  } catch (cause) {
    removeQuietly(temporary)
    throw cause
  }
}

/**
 * Keeps each part of `contents` under `base` with `keep`; answers where each went and the size of what `open(id)`
 * gives: the text, else the structured JSON, else the first media file.
 */
const keepParts = (
  id: string,
  base: string,
  contents: Contents,
  keep: (path: string, data: string | Uint8Array) => Effect.Effect<number, unknown>,
  link: (structured: string) => Effect.Effect<void, unknown>,
) =>
  Effect.gen(function* () {
    let bytes = 0
    const files: Array<string> = []
    for (const [index, data] of (contents.files ?? []).entries()) {
      const path = `${base}.${index + 1}`
      const size = yield* keep(path, data)
      if (index === 0) bytes = size
      files.push(path)
    }
    let structured: string | undefined
    if (typeof contents.structured === "string" && contents.structured !== "text" && contents.structured !== "quoted") {
      structured = `${base}.json`
      bytes = yield* keep(structured, contents.structured)
    }
    let text: string | undefined
    if (contents.text !== undefined) {
      text = base
      bytes = yield* keep(text, contents.text)
      // The structured value is this very text: one more name for the same bytes, not a second copy.
      if (contents.structured === "text") {
        structured = `${base}.json`
        yield* link(structured)
      } else if (contents.structured === "quoted") {
        structured = `${base}.string`
        yield* keep(structured, "")
      }
    }
    return { id, bytes, text, structured, files } satisfies Written
  })

/**
 * Puts the files just written in the store, streamed from them so a large output is never held whole; answers why
 * the store did not take them (having removed what it took), or undefined when it did.
 */
/**
 * The key of an output's record of what was put of it (`<id>/<id>.put`: each object's key and bytes), put once
 * every file of it is: another host reads an output only when its record is there, and a part only at the size the
 * record gives. A put cut off (the store down mid-way, a host killed) leaves objects without a record, or an object
 * shorter than the record says: never served as the output, nor one part for another.
 */
const recordKey = (id: string) => `${id}/${id}.put`

/**
 * What an output's record says was put: object key to bytes; undefined where there is no record, or none whole.
 * Rejects when the store could not be asked (down, an error of its own, no answer within `ms`): an output is not
 * called missing for a store that did not say so.
 */
const putRecord = async (store: ObjectStore.Interface, id: string, ms: number): Promise<ReadonlyMap<string, number> | undefined> => {
  let text: string
  try {
    text = await withinTime(store.content(recordKey(id)).text(), ms)
  } catch (cause) {
    if (ObjectStore.isMissing(cause)) return undefined
    throw cause
  }
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null) return undefined
    const entries = Object.entries(parsed).filter((entry): entry is [string, number] => Number.isSafeInteger(entry[1]))
    return new Map(entries)
  } catch {
    return undefined
  }
}

const putAll = async (
  remote: ObjectStore.Interface,
  id: string,
  keys: ReadonlyArray<{ readonly key: string; readonly path: string }>,
  putBaseMs: number,
): Promise<string | undefined> => {
  const put: Array<string> = []
  const record: Record<string, number> = {}
  try {
    for (const { key, path } of keys) {
      record[key] = await withinTime(remote.put(key, path), putBaseMs + (statOrUndefined(path)?.size ?? 0) / PUT_MIN_BYTES_PER_MS)
      put.push(key)
    }
    // Last: the output is there, whole, once this is.
    await withinTime(remote.putText(recordKey(id), JSON.stringify(record)), putBaseMs)
    return undefined
  } catch (cause) {
    await Promise.allSettled(put.map((key) => remote.remove(key)))
    return `could not put it in ${remote.where}: ${ObjectStore.messageOf(cause)}`
  }
}

const noPart = (id: string) =>
  new NotFound({
    id,
    reason: "no_part",
    message:
      `Managed output ${id} holds no structured value: its settlement kept the structured output inline, or it ` +
      `holds media only (print it without --structured)`,
  })

/** Where an output's part is looked up in the object store, and how long it is kept there. */
interface RemoteLookup {
  readonly store: ObjectStore.Interface
  readonly where: string
  readonly putBaseMs: number
  /** How long an object at a key is kept: by the Location its key names. */
  readonly retentionOf: (key: string) => number
}

/** Opens a part of an output in the object store (see `open`); an expired output is removed from it. */
const openRemote = Effect.fnUntraced(function* (lookup: RemoteLookup, id: string, part: Part) {
  const { store } = lookup
  const listed = yield* Effect.tryPromise({
    try: () => withinTime(Array.fromAsync(store.list(`${id}/`)), lookup.putBaseMs),
    catch: (cause) =>
      new Unavailable({
        id,
        message: `Could not look up managed output ${id} in ${store.where}: ${ObjectStore.messageOf(cause)}. ${ObjectStore.nextStep(cause)}`,
      }),
  })
  const objects = listed.filter((object) => {
    const name = object.key.slice(object.key.lastIndexOf("/") + 1)
    return name.startsWith(id) && FILE_PATTERN.test(name)
  })
  // Only what the output's record says was put, at the size it says: a put cut off is not the output, and a part
  // the record names but the store lacks is not stood in for by another.
  const record =
    objects.length === 0
      ? undefined
      : yield* Effect.tryPromise({
          try: () => putRecord(store, id, lookup.putBaseMs),
          catch: (cause) =>
            new Unavailable({
              id,
              message: `Could not read managed output ${id}'s record in ${store.where}: ${ObjectStore.messageOf(cause)}. ${ObjectStore.nextStep(cause)}`,
            }),
        })
  const notWhole = new NotFound({
    id,
    reason: "unknown",
    message: `Managed output ${id} is not whole in ${store.where}: its host is still putting it there, or could not (it is then on that host only)`,
  })
  if (objects.length > 0 && record === undefined) return yield* notWhole
  const recorded = (suffix: string) => [...(record?.keys() ?? [])].find((key) => key.endsWith(`/${id}${suffix}`))
  const wanted = part === "text" ? (recorded("") ?? recorded(".json") ?? recorded(".1")) : (recorded(".json") ?? recorded(".string"))
  if (wanted === undefined) {
    if (part === "structured" && record !== undefined && record.size > 0) return yield* noPart(id)
    return yield* new NotFound({
      id,
      reason: "unknown",
      message: `No managed output ${id} in ${lookup.where} (it may have been swept)`,
    })
  }
  const found = objects.find((object) => object.key === wanted)
  if (found === undefined || found.bytes !== record!.get(wanted)) return yield* notWhole
  // Expired by the store's clock, not this host's (one running days ahead would remove every host's outputs): asked
  // only where this host's clock says so; a store whose clock cannot be read, or that gives no time, keeps it.
  const modified = found.modifiedMs
  const retentionMs = lookup.retentionOf(found.key)
  if (modified !== undefined && Date.now() - modified > retentionMs) {
    const now = yield* Effect.promise(() => store.now().catch(() => undefined))
    if (now !== undefined && now - modified > retentionMs) {
      yield* Effect.promise(() => Promise.allSettled([...objects.map((object) => object.key), recordKey(id)].map((key) => store.remove(key))))
      return yield* new NotFound({ id, reason: "expired", message: `Managed output ${id} has expired` })
    }
  }
  if (wanted.endsWith(".string")) {
    const text = recorded("")
    const object = text === undefined ? undefined : objects.find((candidate) => candidate.key === text)
    if (object === undefined || object.bytes !== record!.get(text!)) return yield* notWhole
    return yield* quotedPart(id, store.content(object.key), object.bytes, store.where)
  }
  return { id, part, bytes: found.bytes, path: undefined, content: store.content(found.key) } satisfies Reference
})

/**
 * The structured part of a string output: its text (`bytes` of `content`) as a JSON string, made as it is read (what
 * is kept is the text alone, never a second copy of it).
 */
const quotedPart = (id: string, content: Blob, bytes: number, where: string) =>
  Effect.tryPromise({
    try: async (): Promise<Reference> => {
      const json = new Blob([JSON.stringify(await new Response(exactly(content.stream(), 0, bytes)).text())])
      return { id, part: "structured", bytes: json.size, path: undefined, content: json }
    },
    catch: (cause) => new Unavailable({ id, message: `Could not read managed output ${id} in ${where}: ${osMessage(cause)}` }),
  })

/**
 * The store's key of a file `path` may be brought to, if it is one `paths` names: `[<location>/[<session>/]]<output
 * file>` under the outputs directory (as named, or by its real path, which is what a tool's path check resolves to).
 */
const fetchable = (directory: string, path: string): { readonly name: string; readonly key: string } | undefined => {
  const within = [directory, realOrSame(directory)]
    .map((base) => relative(base, path).split(sep))
    .find((segments) => {
      const name = segments[segments.length - 1] ?? ""
      return (
        segments.length <= 3 &&
        FILE_PATTERN.test(name) &&
        segments.slice(0, -1).every((segment) => LOCATION_PATTERN.test(segment))
      )
    })
  if (within === undefined) return undefined
  const name = within[within.length - 1]!
  const id = ID_PREFIX.exec(name)![0]
  return { name, key: `${id}/${within.join("/")}` }
}

/** How long a read from the object store may go without a byte before it is given up. */
export const READ_IDLE_MS = 30_000

/**
 * `stream`, an object's bytes from byte `start`, as exactly `length` bytes: it fails when the store sends fewer (a
 * body cut short, answered as if whole), more than asked from a later byte (a Range it ignored: its first bytes may
 * be the object's), or nothing for `idleMs`; a failed or cancelled read lets the store's answer go. From the start,
 * the first `length` bytes are taken whatever the store did with a range (s3rver answers `bytes=0-0` with the whole
 * object, and a response is chunked, so nothing else holds it to its Content-Length), and the rest is not read.
 */
export const exactly = (
  stream: ReadableStream<Uint8Array>,
  start: number,
  length: number,
  idleMs: number = READ_IDLE_MS,
): ReadableStream<Uint8Array> => {
  const reader = stream.getReader()
  let left = length
  const stop = (controller: ReadableStreamDefaultController<Uint8Array>, error?: Error) => {
    reader.cancel().catch(() => {})
    if (error === undefined) controller.close()
    else controller.error(error)
  }
  return new ReadableStream<Uint8Array>(
    {
      // Reads until a byte is handed on or the read ends: an empty chunk is no answer, and with no byte handed on
      // the stream would not ask again (nor the idle deadline be armed).
      async pull(controller) {
        for (;;) {
          let read: Awaited<ReturnType<typeof reader.read>>
          try {
            read = await withinTime(reader.read(), idleMs)
          } catch (cause) {
            return stop(controller, new Error(`the output store sent ${length - left} of the ${length} bytes asked, then ${cause instanceof Error ? cause.message : String(cause)}`))
          }
          if (read.done) {
            if (left > 0) return stop(controller, new Error(`the output store answered ${length - left} of the ${length} bytes asked`))
            return stop(controller)
          }
          const chunk = read.value
          if (chunk.byteLength > left && start > 0) {
            return stop(controller, new Error(`the output store answered more than the ${length} bytes asked from byte ${start}`))
          }
          const part = chunk.byteLength > left ? chunk.subarray(0, left) : chunk
          left -= part.byteLength
          if (part.byteLength > 0) controller.enqueue(part)
          // Whole: what may follow is not the output's. A range waits for the end, so a longer answer is caught.
          if (left === 0 && start === 0) return stop(controller)
          if (part.byteLength > 0) return
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  )
}

/**
 * A kept output's part as it is read out: a file on this host as it is, an object of the store as exactly its
 * recorded bytes, arriving within READ_IDLE_MS of each other (see `exactly`).
 */
export const body = (reference: Reference): Blob | ReadableStream<Uint8Array> =>
  reference.path === undefined ? exactly(reference.content.stream(), 0, reference.bytes) : reference.content

/** Streams an object's `bytes` bytes to a file, never holding it whole (see `exactly`). */
const download = async (object: Blob, bytes: number, path: string): Promise<void> => {
  const sink = Bun.file(path).writer()
  for await (const chunk of exactly(object.stream(), 0, bytes)) {
    sink.write(chunk)
    await sink.flush()
  }
  await sink.end()
}

/**
 * Removes the outputs in `store` put longer than their retention (`retentionOf` a file's key) ago by the store's own
 * clock (a host whose clock runs ahead would otherwise remove every host's outputs); answers how many. An output's
 * record names no Location: it goes by its files' retention, learned from the listing (in no order every store
 * keeps), so a record past the operator's retention is decided once the listing is done.
 */
const sweepRemote = (store: ObjectStore.Interface, retentionOf: (key: string) => number) =>
  Effect.promise(async () => {
    let removed = 0
    const remove = async (key: string) => {
      await store.remove(key)
      removed++
    }
    try {
      const now = await store.now()
      /** A file's key for each output whose files have a retention other than the operator's (`retentionOf("")`). */
      const located = new Map<string, string>()
      const waiting: Array<{ readonly id: string; readonly key: string; readonly modifiedMs: number }> = []
      for await (const object of store.list("")) {
        // Only an output's file under its own id (`<id>/…/<id>[.part]`) and its record: nothing else under the prefix.
        const id = object.key.slice(0, object.key.indexOf("/"))
        const name = object.key.slice(object.key.lastIndexOf("/") + 1)
        const record = object.key === recordKey(id)
        // One whose time the store does not give is kept.
        if (!ID_PATTERN.test(id) || !name.startsWith(id) || !(record || FILE_PATTERN.test(name)) || object.modifiedMs === undefined) continue
        const age = now - object.modifiedMs
        if (record) {
          if (age > retentionOf("")) waiting.push({ id, key: object.key, modifiedMs: object.modifiedMs })
          continue
        }
        if (retentionOf(object.key) !== retentionOf("")) located.set(id, object.key)
        if (age > retentionOf(object.key)) await remove(object.key)
      }
      for (const { id, key, modifiedMs } of waiting) {
        if (now - modifiedMs > retentionOf(located.get(id) ?? "")) await remove(key)
      }
    } catch {
      // An unreachable store is swept at the next sweep; what is kept here is swept now all the same.
    }
    return removed
  })

/**
 * Removes the output files (and temporary files) in `directory` older than their retention (`retentionOf` the
 * directory holding them); answers how many.
 */
const sweepLocal = (directory: string, retentionOf: (place: string) => number) =>
  Effect.sync(() => {
    const now = Date.now()
    let removed = 0
    for (const place of placesOf(directory)) {
      const cutoff = now - retentionOf(place)
      let names: Array<string>
      try {
        names = readdirSync(place)
      } catch {
        continue
      }
      for (const name of names) {
        if (!FILE_PATTERN.test(name) && !name.endsWith(".tmp")) continue
        const stats = statOrUndefined(join(place, name))
        if (stats !== undefined && stats.mtimeMs < cutoff && removeQuietly(join(place, name))) removed++
      }
    }
    return removed
  })

export const layer = (options: Options): Layer.Layer<Service> =>
  Layer.sync(Service, () => {
    const directory = options.directory
    const retentionMs = (options.retentionDays ?? DEFAULT_RETENTION_DAYS) * DAY_MS
    /** The retention of each Location keeping one of its own, by the name of its directory of outputs. */
    let own = new Map<string, number>()
    /** How long the outputs of the Location whose directory is named `name` are kept (none: an older output's). */
    const retentionOfName = (name: string | undefined) => (name === undefined ? undefined : own.get(name)) ?? retentionMs
    const retentionOfPlace = (place: string) => {
      const first = relative(directory, place).split(sep)[0]
      return retentionOfName(first !== undefined && LOCATION_PATTERN.test(first) ? first : undefined)
    }
    /** An output file's retention by the Location its key names (`<id>/<location>/…`), else the operator's. */
    const retentionOfKey = (key: string) => {
      const [, first = "", ...rest] = key.split("/")
      return rest.length > 0 && LOCATION_PATTERN.test(first) ? retentionOfName(first) : retentionMs
    }
    const retain = (retentions: ReadonlyMap<string, number>) =>
      Effect.sync(() => {
        own = new Map([...retentions].map(([location, ms]) => [locationName(location), ms] as const))
      })
    const remote = options.remote
    const putBaseMs = options.putBaseMs ?? PUT_BASE_MS
    const where = remote === undefined ? directory : `${directory} and ${remote.where}`

    /** The directory holding output `id`: a Location's, or the outputs directory itself (older outputs). */
    const holding = (id: string): string => {
      for (const place of placesOf(directory)) {
        if (filesOf(place, id).length > 0) return place
      }
      return directory
    }

    const paths = (id: string, location?: string, session?: string) => {
      const base = join(location === undefined ? holding(id) : placeOf(directory, location, session), id)
      return { text: base, structured: `${base}.json`, quoted: `${base}.string`, file: (n: number) => `${base}.${n}` }
    }

    /**
     * What each session directory's outputs hold, as this process last counted them (and has written since): counted
     * afresh when it would refuse (other processes write and sweep the same directories), forgotten on a sweep.
     */
    const held = new Map<string, number>()
    /** The bytes of the writes under way, by session directory and in all: reserved as each is let through. */
    const pending = new Map<string, number>()
    let pendingAll = 0

    /**
     * Lets `bytes` more of outputs in `place` through, reserving them until `done` is called (what was written is
     * then counted), or says why they may not be kept: outputs of a session settled at once each count the others.
     */
    const reserve = (
      place: string,
      bytes: number,
      session: string | undefined,
      maxSessionBytes: number,
    ): NotKept | { readonly done: (added: number | undefined) => void } => {
      if (session !== undefined) {
        const under = pending.get(place) ?? 0
        let holding = held.get(place)
        if (holding === undefined || holding + under + bytes > maxSessionBytes) held.set(place, (holding = bytesIn(place)))
        if (holding + under + bytes > maxSessionBytes) {
          return new NotKept({
            reason: "session",
            message:
              `this session's kept outputs already hold ${sizeOf(holding + under)} of the ${sizeOf(maxSessionBytes)} one ` +
              `session may keep (output.maxSessionBytes)`,
          })
        }
      }
      const disk = freeSpace(directory, options.minFreeBytes)
      if (disk !== undefined && disk.free - pendingAll - bytes < disk.floor) {
        return new NotKept({
          reason: "disk",
          message: `the disk holding core's data directory has ${sizeOf(Math.max(0, disk.free - pendingAll))} free, and outputs always leave ${sizeOf(disk.floor)}`,
        })
      }
      pending.set(place, (pending.get(place) ?? 0) + bytes)
      pendingAll += bytes
      return {
        done: (added) => {
          const left = (pending.get(place) ?? bytes) - bytes
          if (left > 0) pending.set(place, left)
          else pending.delete(place)
          pendingAll -= bytes
          if (session !== undefined && added !== undefined) held.set(place, (held.get(place) ?? 0) + added)
        },
      }
    }

    const write = Effect.fn("ManagedOutputs.write")(function* (
      contents: Contents,
      id: string = newID(),
      location?: string,
      session?: string,
      maxSessionBytes: number = DEFAULT_MAX_SESSION_BYTES,
    ) {
      const place = placeOf(directory, location, session)
      const base = join(place, id)
      // Counted by characters (a lower bound of the bytes) and media: measuring a 100 MB text's bytes costs a pass.
      const size =
        (contents.text?.length ?? 0) +
        (typeof contents.structured === "string" && contents.structured !== "text" && contents.structured !== "quoted"
          ? contents.structured.length
          : 0) +
        (contents.files ?? []).reduce((total, file) => total + file.byteLength, 0)
      const reserved = reserve(place, size, session, maxSessionBytes)
      if (reserved instanceof NotKept) return yield* reserved
      const written: Array<string> = []
      let added = 0
      const keep = (path: string, data: string | Uint8Array) =>
        Effect.tryPromise({
          try: async () => {
            const bytes = await atomically(place, join(place, `.${basename(path)}.tmp`), path, (temporary) =>
              writeFile(temporary, data),
            )
            written.push(path)
            added += bytes
            return bytes
          },
          catch: (cause) => cause,
        })
      const link = (structured: string) =>
        Effect.try({
          try: () => {
            linkSync(base, structured)
            written.push(structured)
          },
          catch: (cause) => cause,
        })
      const kept = yield* keepParts(id, base, contents, keep, link).pipe(
        Effect.mapError((cause) => {
          for (const path of written) removeQuietly(path)
          return new RetentionError({
            path: directory,
            message: `Could not keep the full output in ${directory}: ${osMessage(cause)}`,
          })
        }),
        Effect.onExit((exit) => Effect.sync(() => reserved.done(exit._tag === "Success" ? added : undefined))),
      )
      if (remote === undefined) return kept
      // An output the store does not take stays kept here: the call's result is never lost to the store, and the
      // caller says so.
      const keys = written.map((path) => ({ key: keyOf(directory, id, path), path }))
      const unshared = yield* Effect.promise(() => putAll(remote, id, keys, putBaseMs)).pipe(
        Effect.withSpan("ManagedOutputs.put"),
      )
      return unshared === undefined ? kept : { ...kept, unshared }
    })

    const open = Effect.fn("ManagedOutputs.open")(function* (id: string, part: Part = "text") {
      if (!ID_PATTERN.test(id)) {
        return yield* new NotFound({ id, reason: "invalid_id", message: `"${id}" is not a managed output id` })
      }
      if (remote === undefined) return yield* openLocal(id, part)
      // Kept here when this host made it (or fetched it); else in the store, where every host put its outputs.
      return yield* openLocal(id, part).pipe(
        Effect.catchIf(
          (error) => error._tag === "ManagedOutputs.NotFound" && error.reason === "unknown",
          () => openRemote({ store: remote, where, putBaseMs, retentionOf: retentionOfKey }, id, part),
        ),
      )
    })

    const openLocal = Effect.fnUntraced(function* (id: string, part: Part) {
      const place = holding(id)
      const { text, structured, quoted, file } = paths(id)
      // The text part of an output that kept no text is what it did keep: its structured JSON, else its media.
      const candidates = part === "text" ? [text, structured, file(1)] : [structured, quoted]
      let found: { readonly path: string; readonly stats: NonNullable<ReturnType<typeof statOrUndefined>> } | undefined
      for (const path of candidates) {
        const stats = statOrUndefined(path)
        if (stats !== undefined) {
          found = { path, stats }
          break
        }
      }
      if (found === undefined) {
        if (part === "structured" && filesOf(place, id).length > 0) return yield* noPart(id)
        return yield* new NotFound({
          id,
          reason: "unknown",
          message: `No managed output ${id} in ${directory} (it may have been swept or kept by another data directory)`,
        })
      }
      if (Date.now() - found.stats.mtimeMs > retentionOfPlace(place)) {
        for (const name of filesOf(place, id)) removeQuietly(join(place, name))
        return yield* new NotFound({ id, reason: "expired", message: `Managed output ${id} has expired` })
      }
      if (found.path === quoted) {
        const size = statOrUndefined(text)?.size
        if (size === undefined) return yield* new NotFound({ id, reason: "unknown", message: `Managed output ${id} has lost its text in ${directory}` })
        return yield* quotedPart(id, Bun.file(text), size, where)
      }
      return { id, part, bytes: found.stats.size, path: found.path, content: Bun.file(found.path) } satisfies Reference
    })

    const fetch = Effect.fn("ManagedOutputs.fetch")(function* (path: string) {
      if (remote === undefined || statOrUndefined(path) !== undefined) return false
      const target = fetchable(directory, path)
      if (target === undefined) return false
      const place = dirname(path)
      // A name of its own, so fetches of one file at once never write into each other's.
      const temporary = join(place, `.${target.name}.${crypto.randomUUID()}.tmp`)
      const id = target.key.slice(0, target.key.indexOf("/"))
      return yield* Effect.tryPromise({
        try: async () => {
          // Only a file the output's record names, whole (see `recordKey`).
          const bytes = (await putRecord(remote, id, putBaseMs))?.get(target.key)
          if (bytes === undefined) return false
          const object = remote.content(target.key)
          await atomically(place, temporary, path, async (into) => {
            await download(object, bytes, into)
            if (statOrUndefined(into)?.size !== bytes) throw new Error(`${target.key} is not whole in ${remote.where}`)
          })
          return true
        },
        // The store could not be asked, or did not hand the file over whole: not "no such file".
        catch: (cause) =>
          new Unavailable({
            id,
            message: `Could not bring managed output ${id} from ${remote.where}: ${ObjectStore.messageOf(cause)}. ${ObjectStore.nextStep(cause)}`,
          }),
      })
    })

    const sweep = Effect.gen(function* () {
      held.clear()
      const local = yield* sweepLocal(directory, retentionOfPlace)
      return remote === undefined ? local : local + (yield* sweepRemote(remote, retentionOfKey))
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

    return Service.of({ directory, where, write, paths, open, fetch, sweep, sweepIfDue, retentionMs, retain })
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

/** Every directory that may hold outputs: `directory`, its Locations' directories, and their sessions' directories. */
const placesOf = (directory: string): Array<string> => [
  directory,
  ...locationsOf(directory).flatMap((location) => [location, ...locationsOf(location)]),
]

/** The Locations' directories of outputs in `directory` (or the sessions' in a Location's). */
const locationsOf = (directory: string): Array<string> => {
  try {
    return readdirSync(directory)
      .filter((name) => LOCATION_PATTERN.test(name))
      .map((name) => join(directory, name))
  } catch {
    return []
  }
}

/** The files of output `id` in `directory`. */
const filesOf = (directory: string, id: string): Array<string> => {
  try {
    return readdirSync(directory).filter((name) => name.startsWith(id) && FILE_PATTERN.test(name))
  } catch {
    return []
  }
}

const realOrSame = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** The bytes the output files in `place` hold (a file under two names, once). */
const bytesIn = (place: string): number => {
  let names: Array<string>
  try {
    names = readdirSync(place)
  } catch {
    return 0
  }
  const seen = new Set<number>()
  let total = 0
  for (const name of names) {
    if (!FILE_PATTERN.test(name)) continue
    const stats = statOrUndefined(join(place, name))
    if (stats === undefined || seen.has(stats.ino)) continue
    seen.add(stats.ino)
    total += stats.size
  }
  return total
}

/** The free space of the filesystem holding `directory` (or its nearest existing parent), and the floor outputs leave. */
const freeSpace = (directory: string, floor?: number): { readonly free: number; readonly floor: number } | undefined => {
  for (let at = directory; ; at = dirname(at)) {
    try {
      const stats = statfsSync(at)
      return {
        free: Number(stats.bavail) * Number(stats.bsize),
        floor: floor ?? Math.min(MIN_FREE_BYTES, MIN_FREE_SHARE * Number(stats.blocks) * Number(stats.bsize)),
      }
    } catch {
      if (dirname(at) === at) return undefined
    }
  }
}

/** A size as a person reads it: bytes, KiB, MiB or GiB, to one decimal. */
const sizeOf = (bytes: number): string => {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]}`
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
