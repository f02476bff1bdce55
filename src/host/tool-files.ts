export * as ToolFiles from "./tool-files"

// The tool files of one directory (`<dir>/tools/*.ts`) registered one Scope per file, so a changed file can be
// loaded again on its own: its new registration goes in, then its old one is closed (turns that advertised the old
// one see them as stale). A file that now fails to load, or is gone, loses its registration. Loading is
// ../location/discovery's; this module only owns the per-file scopes.

import { existsSync } from "node:fs"
import { basename } from "node:path"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { Discovery } from "../location/discovery"
import type { Registry } from "../registry/registry"

/**
 * Which version of each file to import. Kept per directory across the registries that load it (a Location rebuilt
 * for a new core.json loads the module instances already in use rather than re-running every file).
 */
export class Versions {
  private readonly versions = new Map<string, string>()
  private counter = 0

  get(file: string): string | undefined {
    return this.versions.get(file)
  }

  /** A fresh version for a file that changed. */
  bump(file: string): string {
    const version = `${Date.now().toString(36)}.${++this.counter}`
    this.versions.set(file, version)
    return version
  }
}

export interface Reloaded {
  readonly file: string
  /** The names the file registered before, and registers now. */
  readonly before: ReadonlyArray<string>
  readonly after: ReadonlyArray<string>
  /** Why the file no longer loads, if it does not. */
  readonly diagnostic: Discovery.Diagnostic | undefined
}

export interface Interface {
  /** Loads every tool file of the directory; answers the load diagnostics. */
  readonly loadAll: Effect.Effect<ReadonlyArray<Discovery.Diagnostic>>
  /** Loads one file's current content again (or unloads it when it is gone). */
  readonly reload: (file: string) => Effect.Effect<Reloaded>
  /** The files that have a registration now. */
  readonly known: () => ReadonlyArray<string>
  /** The names a file registered, if it has a registration now. */
  readonly namesOf: (file: string) => ReadonlyArray<string> | undefined
}

interface Entry {
  readonly scope: Scope.Closeable
  names: ReadonlyArray<string>
}

/** Whether a reload changed anything a host should hear about. */
export const changed = (result: Reloaded): boolean =>
  result.before.length > 0 || result.after.length > 0 || result.diagnostic !== undefined

/** The tool files of `directory`, registered through `tools` in scopes under `parent`. */
export const make = (
  directory: string,
  tools: Registry.Tools,
  parent: Scope.Scope,
  versions: Versions,
  options: { readonly timeoutMs?: number } = {},
): Interface => {
  const entries = new Map<string, Entry>()

  const loadAll = Effect.gen(function* () {
    const { loaded, diagnostics } = yield* Discovery.load(directory, tools, {
      ...options,
      versionOf: (file) => versions.get(file),
      scopeOf: (file) => {
        const scope = Scope.forkUnsafe(parent)
        entries.set(file, { scope, names: [] })
        return scope
      },
    }).pipe(Scope.provide(parent))
    for (const { file, names } of loaded) entries.get(file)!.names = names
    return diagnostics
  })

  const reload = Effect.fnUntraced(function* (file: string) {
    const previous = entries.get(file)
    const before = previous?.names ?? []
    const unload = previous === undefined ? Effect.void : Scope.close(previous.scope, Exit.void)
    entries.delete(file)
    if (!isToolFile(file)) {
      yield* unload
      return { file, before, after: [], diagnostic: undefined }
    }
    const scope = Scope.forkUnsafe(parent)
    const loaded = yield* Effect.result(
      Discovery.loadFile(file, tools, { ...options, version: versions.bump(file) }).pipe(Scope.provide(scope)),
    )
    // The new registration (if any) is in before the old one goes, so the name is never briefly missing.
    yield* unload
    if (loaded._tag === "Success") {
      entries.set(file, { scope, names: loaded.success })
      return { file, before, after: loaded.success, diagnostic: undefined }
    }
    yield* Scope.close(scope, Exit.void)
    return { file, before, after: [], diagnostic: { file, message: loaded.failure.message } }
  })

  return { loadAll, reload, known: () => [...entries.keys()], namesOf: (file: string) => entries.get(file)?.names }
}

/** Whether `file` exists now and is a tool file by its name. */
const isToolFile = (file: string): boolean => Discovery.isToolFileName(basename(file)) && existsSync(file)
