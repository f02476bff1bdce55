export * as SearchTool from "./search-tool"

// What the search built-ins (glob, grep, list) share around ./ripgrep: holding the checked directory open while rg
// walks it, the failures they answer alike, the newest-first order, and how each records its plan. Each tool
// keeps only what is its own: its arguments to rg and how it reads and shows what rg prints.

import { dlopen, FFIType, ptr } from "bun:ffi"
import { closeSync, constants, openSync, statSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"
import { Running } from "./running"

/** The annotations every search built-in carries: it only reads, and only the machine it runs on. */
export const ANNOTATIONS = { readOnly: true, idempotent: true, openWorld: false } as const

/**
 * The longest pattern or glob a search takes, in characters: each is one of rg's arguments, which the system takes
 * up to 128 KiB (in UTF-8, up to 4 bytes a character). A longer one failed to start rg, answered as core's fault.
 */
export const MAX_PATTERN_CHARS = 16_384

/** How many globs a listing leaves out at most, each of at most MAX_IGNORE_CHARS: together they fit the system's room for arguments. */
export const MAX_IGNORES = 100
export const MAX_IGNORE_CHARS = 1_024

/** A pattern or glob given to rg, at most MAX_PATTERN_CHARS long. */
export const Pattern = Schema.String.check(Schema.isMaxLength(MAX_PATTERN_CHARS, { expected: `at most ${MAX_PATTERN_CHARS} characters` }))

interface Dated {
  readonly path: string
  readonly modified: number
}

/** Newer first; equal times by path, so the order is stable. */
export const newerFirst = (a: Dated, b: Dated): number =>
  b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

const swap = (items: Array<unknown>, a: number, b: number): void => {
  const item = items[a]
  items[a] = items[b]
  items[b] = item
}

/**
 * The `limit` newest (by `newerFirst`) of what is offered, held in a heap whose root is the oldest kept: memory stays
 * bounded by the limit however many are offered (a tree a model made may hold millions of files), and each costs
 * at most a few comparisons, in whatever order the files come.
 */
export class Newest<A extends Dated> {
  private readonly heap: Array<A> = []
  constructor(private readonly limit: number) {}

  offer(item: A): void {
    const heap = this.heap
    if (heap.length < this.limit) {
      heap.push(item)
      let at = heap.length - 1
      while (at > 0) {
        const parent = (at - 1) >> 1
        if (newerFirst(heap[at]!, heap[parent]!) <= 0) break
        swap(heap, at, parent)
        at = parent
      }
      return
    }
    // No newer than the oldest kept: left out.
    if (heap.length === 0 || newerFirst(item, heap[0]!) >= 0) return
    heap[0] = item
    let at = 0
    for (;;) {
      const left = 2 * at + 1
      if (left >= heap.length) break
      const right = left + 1
      const older = right < heap.length && newerFirst(heap[right]!, heap[left]!) > 0 ? right : left
      if (newerFirst(heap[older]!, heap[at]!) <= 0) break
      swap(heap, at, older)
      at = older
    }
  }

  /** What is kept, newest first. */
  sorted(): Array<A> {
    return [...this.heap].sort(newerFirst)
  }
}

/** A file's modification time; 0 for one that vanished since rg listed it. */
const modifiedTime = (path: string | Buffer): number => {
  try {
    return statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0
  } catch {
    return 0
  }
}

/** statx(2), from libc: undefined where it cannot be opened (then a file's time is read with statSync). */
let statx: ((directory: number, path: number, flags: number, mask: number, into: number) => number) | null | undefined
const opened = () => {
  if (statx !== undefined) return statx
  statx = null
  for (const name of ["libc.so.6", "libc.so"]) {
    try {
      const symbols = dlopen(name, {
        statx: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.u32, FFIType.ptr], returns: FFIType.i32 },
      }).symbols
      statx = (directory, path, flags, mask, into) => symbols.statx(directory, path as never, flags, mask, into as never)
      break
    } catch {
      // not this name, or no statx in it
    }
  }
  return statx
}

const STATX_MTIME = 0x40
const AT_NO_AUTOMOUNT = 0x800
/** The longest relative path looked up (PATH_MAX, with its NUL). */
const MAX_PATH_BYTES = 4096

/**
 * Modification times of the files rg printed, by the bytes it printed (`./` and the path from the directory it ran
 * in, which `directory` holds open): one statx(2) each relative to that directory, into a buffer kept for the
 * search, where statSync would look up the whole real path and make a Stats object of it (a third of the cost, and
 * the most of glob's own). Each time is the one statSync answers as `mtimeMs` (following a symlink; 0 for a file
 * that vanished since rg listed it). `absolute` is the file's real path, looked up with statSync instead where
 * statx is not to be had (or the path is not one rg printed from its directory). `close` lets the directory go.
 */
export const modifiedTimes = (directory: string) => {
  const call = opened()
  let fd = -1
  try {
    // Opened close-on-exec (as Bun opens every file), so no rg started meanwhile holds it.
    if (call !== null) fd = openSync(directory, constants.O_RDONLY | constants.O_DIRECTORY)
  } catch {
    fd = -1
  }
  const path = new Uint8Array(MAX_PATH_BYTES)
  const into = new Uint8Array(256)
  const words = new Uint32Array(into.buffer)
  const pathAddress = fd === -1 ? 0 : Number(ptr(path))
  const intoAddress = fd === -1 ? 0 : Number(ptr(into))
  return {
    of: (printed: Uint8Array, absolute: string | Buffer): number => {
      if (fd === -1 || printed[0] !== 0x2e || printed[1] !== 0x2f || printed.length - 2 >= MAX_PATH_BYTES) {
        return modifiedTime(absolute)
      }
      path.set(printed.subarray(2))
      path[printed.length - 2] = 0
      if (call!(fd, pathAddress, AT_NO_AUTOMOUNT, STATX_MTIME, intoAddress) !== 0) return 0
      if ((words[0]! & STATX_MTIME) === 0) return modifiedTime(absolute)
      // stx_mtime: seconds (signed, 64 bits) at byte 112, nanoseconds at 120; as statSync's mtimeMs makes them.
      const seconds = words[28]! + (words[29]! | 0) * 4294967296
      return seconds * 1000 + words[30]! / 1e6
    },
    close: () => {
      if (fd !== -1) closeSync(fd)
      fd = -1
    },
  }
}

/**
 * Runs rg for a call of the tool, as one of its session's running processes (./running: at most `shell.maxRunning`
 * at once, commands, searches and fetches together).
 */
export const search = (
  services: Builtin.Services,
  context: Pick<Tool.Context, "sessionID" | "progress">,
  options: Ripgrep.Options,
): Effect.Effect<Ripgrep.Outcome> => Ripgrep.run(options).pipe(Running.inTurn(context, services.shell.limits.maxRunning))

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

/** `modifiedTimes` of the files rg prints from `held`, for the scope. */
export const datedIn = (held: Pinned.Directory): Effect.Effect<ReturnType<typeof modifiedTimes>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => modifiedTimes(held.at(""))),
    (times) => Effect.sync(() => times.close()),
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
