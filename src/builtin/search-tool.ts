export * as SearchTool from "./search-tool"

// What the search built-ins (glob, grep, list) share around ./ripgrep: holding the checked directory open while rg
// walks it, the failures they answer alike, the newest-first order, and how each records its plan. Each tool
// keeps only what is its own: its arguments to rg and how it reads and shows what rg prints.

import { statSync } from "node:fs"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"

/** The annotations every search built-in carries: it only reads, and only the machine it runs on. */
export const ANNOTATIONS = { readOnly: true, idempotent: true, openWorld: false } as const

interface Dated {
  readonly path: string
  readonly modified: number
}

/** Newer first; equal times by path, so the order is stable. */
export const newerFirst = (a: Dated, b: Dated): number =>
  b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

/** A file's modification time; 0 for one that vanished since rg listed it. */
export const modifiedTime = (path: string | Buffer): number => {
  try {
    return statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0
  } catch {
    return 0
  }
}

/** Where a search ran, as a sentence ends with it: the Location itself is named so, never as a bare ".". */
export const where = (path: string): string => (path === "." ? "the Location (.)" : path)

/**
 * Holds the directory at `real` (a checked real path, shown to the model as `shown`) open for the scope: rg runs
 * in it through the descriptor, so a directory on its path swapped since the check cannot lead the walk elsewhere.
 * One that is gone or replaced already fails, in words that say to look again (`doing` the tool's verb).
 */
export const hold = (
  real: string,
  shown: string,
  doing: "searched" | "listed",
): Effect.Effect<Pinned.Directory, Tool.Failure, Scope.Scope> =>
  Pinned.hold(real).pipe(
    Effect.catch(() =>
      Effect.fail(
        new Tool.Failure({
          message:
            `${shown} was removed or replaced while it was being ${doing}. Check that it still exists, then ` +
            (doing === "listed" ? "list it again." : "search again."),
        }),
      ),
    ),
  )

/** Whether rg failed outright: an error, nothing found, and not only paths it could not read. */
export const failed = (outcome: Ripgrep.Outcome, found: number): boolean =>
  outcome.code === 2 && found === 0 && !Ripgrep.onlyPathProblems(outcome.problems)

/** A glob rg could not parse (`what` names the argument), with the syntax to write it in. */
export const invalidGlob = (what: string, glob: string | undefined, reason: string): Tool.Failure =>
  new Tool.Failure({
    message:
      `Invalid ${what} ${JSON.stringify(glob)}: ${reason}.\n` +
      "Glob syntax: * (any characters but /), ** (any directories), ? (one character), [abc], {a,b}.",
  })

/** The lines that end an answer rg reported problems for (`what` is the answer: "results", "listing"). */
export const problemLines = (problems: ReadonlyArray<string> | undefined, what: string): Array<string> =>
  problems === undefined ? [] : ["", `ripgrep reported problems, so the ${what} may be incomplete:`, ...problems]

/** A search built-in with the checks it makes recorded for explaining a call (Builtin.planned): `action` on its path. */
export const planned = <T extends Tool.Tool<any, any>>(services: Builtin.Services, action: string, tool: T): T =>
  Builtin.planned(tool, (input: { readonly path?: string }) =>
    Builtin.pathPlan(services, { action, path: input.path ?? ".", access: "read" }),
  )
