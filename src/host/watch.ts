export * as Watch from "./watch"

// Watches a directory's `tools/*.ts`, `plugins/*.ts`, `core.json` and skills folders (fs.watch, the platform edge) and hands each batch of changes
// to a handler once the directory has been quiet for a moment, so an editor's burst of writes is applied once.
// Watching `tools/` is re-armed when the folder appears or goes. What a change means is the handler's business.
// A batch waits while a command of that directory runs (Guard): what a command writes there is undone when it
// ends, and must never be loaded meanwhile (a command in another core process holds back each load itself: LoadGate).

import { type FSWatcher, watch as fsWatch } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { FILE_NAME as CONFIG_FILE } from "../config/config"
import { Discovery } from "../location/discovery"
import { Guard } from "../shell/guard"

/** How long a directory must be quiet before its changes are applied. */
export const QUIET_MS = 100
/** The folders whose `*.ts` files are watched. */
const FOLDERS = ["tools", "plugins"]
/** A directory that never goes quiet still has its changes applied after this many quiet periods. */
const MAX_WAITS = 10

export interface Changes {
  /** Tool and plugin files that changed, appeared or went (absolute paths). */
  readonly files: ReadonlySet<string>
  /** Whether `core.json` changed. */
  readonly config: boolean
  /** Whether the `tools/` or `plugins/` folder appeared or went: every such file should be looked at again. */
  readonly rescan: boolean
  /** Whether anything under a skills folder changed (see `skills` of `watch`). */
  readonly skills: boolean
}

type Change =
  | { readonly _tag: "File"; readonly file: string }
  | { readonly _tag: "Config" }
  | { readonly _tag: "Rescan" }
  | { readonly _tag: "Skills" }

/**
 * Watches `directory` for the life of the Scope, running `apply` (one batch at a time) after each burst. `skills`
 * are folders of skills under it (relative, `/`-separated): each is watched with everything under it, through its
 * top folder, so it is seen appearing.
 */
export const watch = <R>(
  directory: string,
  apply: (changes: Changes) => Effect.Effect<void, never, R>,
  skills: ReadonlyArray<string> = [],
): Effect.Effect<void, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Change>()
    const offer = (change: Change) => {
      Queue.offerUnsafe(queue, change)
    }
    const watchers = new Map<string, FSWatcher | undefined>()

    const arm = (folder: string) => {
      const path = join(directory, folder)
      watchers.get(folder)?.close()
      watchers.set(
        folder,
        open(path, (name) => {
          if (name === undefined) offer({ _tag: "Rescan" })
          else if (Discovery.isToolFileName(name)) offer({ _tag: "File", file: join(path, name) })
        }),
      )
    }
    // Each skills folder's top folder (`.claude` for `.claude/skills`), watched recursively, and what under it counts.
    const tops = new Map<string, Array<string>>()
    for (const folder of skills) {
      const [top, ...rest] = folder.split("/")
      tops.set(top!, [...(tops.get(top!) ?? []), rest.join("/")])
    }
    const skillWatchers = new Map<string, FSWatcher | undefined>()
    const armSkills = (top: string) => {
      const under = tops.get(top)!
      skillWatchers.get(top)?.close()
      skillWatchers.set(
        top,
        open(join(directory, top), (name) => {
          if (name === undefined || under.some((folder) => folder === "" || name === folder || name.startsWith(`${folder}/`))) {
            offer({ _tag: "Skills" })
          }
        }, true),
      )
    }
    const root = open(directory, (name) => {
      if (name === undefined || FOLDERS.includes(name)) {
        for (const folder of FOLDERS) arm(folder)
        offer({ _tag: "Rescan" })
      } else if (name === CONFIG_FILE) offer({ _tag: "Config" })
      if (name === undefined || tops.has(name)) {
        for (const top of name === undefined ? tops.keys() : [name]) armSkills(top)
        offer({ _tag: "Skills" })
      }
    })
    for (const folder of FOLDERS) arm(folder)
    for (const top of tops.keys()) armSkills(top)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        root?.close()
        for (const watcher of watchers.values()) watcher?.close()
        for (const watcher of skillWatchers.values()) watcher?.close()
      }),
    )

    const batch = Effect.gen(function* () {
      const changes: Array<Change> = [...(yield* Queue.takeAll(queue))]
      for (let waits = 0; waits < MAX_WAITS; waits++) {
        yield* Effect.sleep(QUIET_MS)
        const more = yield* Queue.clear(queue)
        if (more.length === 0) break
        changes.push(...more)
      }
      const files = new Set<string>()
      for (const change of changes) if (change._tag === "File") files.add(change.file)
      return {
        files,
        config: changes.some((change) => change._tag === "Config"),
        rescan: changes.some((change) => change._tag === "Rescan"),
        skills: changes.some((change) => change._tag === "Skills"),
      } satisfies Changes
    })
    const settled = Effect.promise(() => Guard.idle(directory))
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Effect.tap(batch, () => settled), apply)))
  })

/**
 * An fs.watch of `path` reporting changed entry names (undefined when the platform does not say); none when the
 * path cannot be watched.
 */
const open = (path: string, onChange: (name: string | undefined) => void, recursive = false): FSWatcher | undefined => {
  try {
    const watcher = fsWatch(path, { persistent: false, recursive }, (_event, name) => onChange(name ?? undefined))
    // A watched folder that is removed ends its watcher with an error; its parent's watcher re-arms it.
    watcher.on("error", () => watcher.close())
    return watcher
  } catch {
    return undefined
  }
}
