export * as ReadTracking from "./read-tracking"

// How the file tools use what a session has seen of a file (../store/reads): read records the version it read,
// write, edit and apply_patch record the version they wrote, and before changing a file write and edit compare
// the file with the session's record. `write` over an existing file the session never saw, and a change to a
// file that changed since the session saw it, are refused (core.json `editing.readBeforeWrite: false` turns the
// refusal off; the record is kept either way). The record is keyed by the file's real path.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { Reads } from "../store/reads"
import type { Store } from "../store/store"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Text } from "./text"

/**
 * node:fs/promises, loaded on first use: it costs milliseconds of start-up, and every core that settles in process
 * imports this module.
 */
const fsp = (): typeof import("node:fs/promises") => require("node:fs/promises")

/** Files up to this size are hashed when read; larger ones are compared by size, modification time and inode. */
export const MAX_HASH_BYTES = 16 * 1024 * 1024

/**
 * Whether write and edit refuse to change a file the session has not seen as it is (core.json
 * `editing.readBeforeWrite`); the built-ins take it when they are made.
 */
export const Required = Context.Reference<boolean>("core/ReadBeforeWrite", { defaultValue: () => true })

const hash = (bytes: Uint8Array): string => new Bun.CryptoHasher("sha256").update(bytes).digest("hex")

/** The version of content whose bytes are known, with the file's metadata. */
export const versionOf = (
  bytes: Uint8Array | undefined,
  stats: { readonly size: bigint; readonly mtimeNs: bigint; readonly ino: bigint },
): Reads.Version => ({
  hash: bytes === undefined ? undefined : hash(bytes),
  size: Number(stats.size),
  mtimeNs: stats.mtimeNs.toString(),
  ino: stats.ino.toString(),
})

/** The version of a snapshot a tool read whole. */
const ofSnapshot = (snapshot: Text.Snapshot): Reads.Version => versionOf(snapshot.bytes, snapshot)

const store = <A>(effect: Effect.Effect<A, Store.StoreError>): Effect.Effect<A> =>
  effect.pipe(Effect.catchTag("Store.StoreError", (error) => Effect.die(error)))

/** The version of the file at `path` just written with `bytes` (its metadata read now); undefined if it is gone. */
export const written = (path: string, bytes: Uint8Array): Effect.Effect<Reads.Version | undefined> =>
  Effect.promise(() =>
    fsp().stat(path, { bigint: true }).then(
      (stats) => versionOf(bytes, stats),
      () => undefined,
    ),
  )

/** Records that the call's session has seen `version` of the file at `path` (a store failure is operational). */
export const see = (
  services: Builtin.Services,
  context: Tool.Context,
  path: string,
  version: Reads.Version | undefined,
): Effect.Effect<void> =>
  services.reads === undefined || version === undefined
    ? Effect.void
    : store(services.reads.record(context.sessionID, path, version))

/**
 * Refuses a change to the file at `path` (now at `version`) that the call's session has not seen as it is:
 * `unseen` decides what a file the session never saw means (write refuses it, edit allows it, since oldString
 * must match the file as it is).
 */
const check = (
  services: Builtin.Services,
  context: Tool.Context,
  input: {
    readonly path: string
    readonly shown: string
    readonly tool: string
    readonly version: Reads.Version
    readonly unseen: "refuse" | "allow"
  },
): Effect.Effect<void, Tool.Failure> =>
  Effect.gen(function* () {
    if (services.reads === undefined || services.readBeforeWrite === false) return
    const seen = yield* store(services.reads.lookup(context.sessionID, input.path))
    if (seen === undefined) {
      if (input.unseen === "allow") return
      // One the read rules deny is never the session's to have seen: nothing of it is told, nor to read it.
      if (Builtin.readDenied(services, context.agent)?.(input.path) === true) {
        return yield* new Tool.Failure({
          message:
            `${input.shown} already exists, and the rules deny reading it, so ${input.tool} cannot replace content ` +
            `no one showed you. Nothing was changed. Ask the user to change it if it must change.`,
        })
      }
      return yield* new Tool.Failure({
        message:
          `${input.shown} already exists (${input.version.size} bytes) and has not been read in this session, so ` +
          `${input.tool} would replace content you have not seen. Nothing was changed. Read it first (read ` +
          `${input.shown}), then write it again; to change part of it, use edit.`,
      })
    }
    if (Reads.same(seen, input.version)) return
    return yield* new Tool.Failure({
      message:
        `${input.shown} changed since this session last read or wrote it (${seen.size} bytes then, ` +
        `${input.version.size} now): someone else changed it. Nothing was changed. Read it again and redo the ` +
        `change against its current content.`,
    })
  })

/**
 * Reads the file at `path` for a tool to change: its snapshot, once the file is known writable and the call's
 * session has seen it as it is (`check`; `unseen` as there).
 */
export const readToChange = (
  services: Builtin.Services,
  context: Tool.Context,
  input: { readonly path: string; readonly shown: string; readonly tool: string; readonly unseen: "refuse" | "allow" },
): Effect.Effect<Text.Snapshot, Tool.Failure> =>
  Effect.gen(function* () {
    const snapshot = yield* Text.read(input.path, input.shown)
    yield* Text.writable(input.path, input.shown, input.tool)
    yield* check(services, context, { ...input, version: ofSnapshot(snapshot) })
    return snapshot
  })
