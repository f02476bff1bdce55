export * as Approvals from "./approvals"

// Saved "always" approvals: per project (a Location's real path), an action and the resource patterns a person
// approved for it, with who approved it and when. The interface and an in-memory layer live here; the durable
// layers share the SQLite store (./sqlite) or the fleet's Postgres (./postgres, where a project is known by its
// identity across machines: ./project). Deciding what an approval allows is the permission service's job.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { readFileSync } from "node:fs"
import { hostname, userInfo } from "node:os"
import type { Store } from "./store"

export interface Approval {
  readonly project: string
  readonly action: string
  readonly pattern: string
  /** Epoch milliseconds. */
  readonly savedAt: number
  /** Who approved it (see `approver`); absent for approvals saved before this was recorded. */
  readonly approvedBy?: string
}

/** The name `/etc/passwd` gives the user `uid`, if it has one. */
const passwdName = (uid: number): string | undefined => {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":")
      if (name !== undefined && name !== "" && Number(id) === uid) return name
    }
  } catch {
    // No passwd file to read.
  }
  return undefined
}

/**
 * Who approves through this process: `$CORE_USER`, else the OS user at this host (`alice@build-7`): its passwd name
 * by uid (Bun's userInfo() answers `unknown` without `$USER`), else `$USER` or `$LOGNAME`, else `uid N`.
 */
export const approver = (env: Record<string, string | undefined> = process.env): string => {
  if (env.CORE_USER !== undefined && env.CORE_USER.trim() !== "") return env.CORE_USER.trim()
  const uid = process.getuid?.()
  let known = ""
  try {
    known = userInfo().username
  } catch {
    // No passwd entry (a container's arbitrary uid).
  }
  const user =
    (uid === undefined ? undefined : passwdName(uid)) ?? (known !== "" && known !== "unknown" ? known : undefined) ?? env.USER ?? env.LOGNAME ?? `uid ${uid ?? "?"}`
  return `${user}@${hostname()}`
}

/** `project` is the Location's real path; a layer shared by machines keeps it under the project's identity. */
export interface Interface {
  /** Every approval of a project, oldest first. */
  readonly list: (project: string) => Effect.Effect<ReadonlyArray<Approval>, Store.StoreError>
  /** Saves patterns for an action (saving one again keeps the first). */
  readonly save: (project: string, action: string, patterns: ReadonlyArray<string>) => Effect.Effect<void, Store.StoreError>
  /** Removes a project's approvals, of one action or all; answers how many. */
  readonly reset: (project: string, action?: string) => Effect.Effect<number, Store.StoreError>
}

export class Service extends Context.Service<Service, Interface>()("core/Approvals") {}

/**
 * Approvals kept by `shared` (a fleet's store, where a project is known by its identity across machines) but for a
 * project `machineOnly` says is known by its path alone (./project: `path:/srv/shop`), kept by `local` (this data
 * directory's store): the same path on another machine is another project, and its approvals hold on it alone.
 */
export const split = (shared: Interface, local: Interface, machineOnly: (project: string) => boolean): Interface => ({
  list: (project) => (machineOnly(project) ? local : shared).list(project),
  save: (project, action, patterns) => (machineOnly(project) ? local : shared).save(project, action, patterns),
  reset: (project, action) => (machineOnly(project) ? local : shared).reset(project, action),
})

/** Approvals kept in memory for the life of the layer. */
export const layerMemory: Layer.Layer<Service> = Layer.sync(Service, () => {
  let approvedBy: string | undefined
  const approvals: Array<Approval> = []
  return Service.of({
    list: (project) => Effect.sync(() => approvals.filter((approval) => approval.project === project)),
    save: (project, action, patterns) =>
      Effect.sync(() => {
        for (const pattern of patterns) {
          const known = approvals.some(
            (approval) => approval.project === project && approval.action === action && approval.pattern === pattern,
          )
          if (!known) approvals.push({ project, action, pattern, savedAt: Date.now(), approvedBy: (approvedBy ??= approver()) })
        }
      }),
    reset: (project, action) =>
      Effect.sync(() => {
        const before = approvals.length
        const kept = approvals.filter(
          (approval) => approval.project !== project || (action !== undefined && approval.action !== action),
        )
        approvals.splice(0, approvals.length, ...kept)
        return before - kept.length
      }),
  })
})
