export * as ReadSuggestions from "./read-suggestions"

// The paths `read` (./read) offers when the one asked for does not exist: alike names beside it, then the same
// name elsewhere in the Location, never a path the agent may not read.

import { readdirSync } from "node:fs"
import { basename, dirname, extname, join, relative } from "node:path"
import * as Effect from "effect/Effect"
import { Boundary } from "../permission/boundary"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { Ripgrep } from "./ripgrep"
import { Distance } from "../registry/distance"

const MAX_SUGGESTIONS = 3
/**
 * The most names of the folder compared with the missing one (in the folder's own order), each only as far as a
 * slip could take it (Distance.edits's limit): on the thread every call shares, 20,000 names of 250 characters each
 * compared in full held it for ten seconds.
 */
const MAX_COMPARED_NAMES = 10_000
/**
 * The most cells of Distance.edits's band one call's comparisons may compute (tens of milliseconds): 10,000 names of
 * 245 characters, each within a slip of the missing one until its last characters, held the thread for 1.75 s.
 */
const MAX_CELLS = 2_000_000
/** The most alike names checked against the rules, nearest first, for the three suggested. */
const MAX_CHECKED = 50
/** The most edits apart a name suggested for a slip may be. */
const MAX_SLIP = 8

/**
 * How alike an existing name is to the missing one (lower is closer), or undefined when not alike. Its comparison
 * by edits is paid from `budget` (cells of Distance.edits's band); once that is spent, names are only compared whole.
 */
const likeness = (wanted: string, name: string, budget: { cells: number }): number | undefined => {
  const a = wanted.toLowerCase()
  const b = name.toLowerCase()
  if (a === b) return 0
  const stem = (text: string) => text.slice(0, text.length - extname(text).length)
  if (stem(a) !== "" && stem(a) === stem(b)) return 1
  // A quarter of the name, at most MAX_SLIP: a long name is mistyped in a few places, not in dozens.
  const most = Math.min(MAX_SLIP, Math.max(2, Math.floor(a.length / 4)))
  if (Math.abs(a.length - b.length) <= most && (budget.cells -= a.length * (2 * most + 1)) >= 0) {
    const edits = Distance.edits(a, b, most)
    if (edits <= most) return 1 + edits
  }
  if (a.length >= 3 && (b.includes(a) || (b.length >= 3 && a.includes(b)))) return 10
  return undefined
}
/**
 * Up to three existing paths the model may have meant: alike names beside it, then the same name elsewhere. Only
 * paths inside the Location that the agent may read (or be asked about) are suggested, so a suggestion never
 * reveals the name of a path it is denied; for a missing path outside the Location there are none.
 */
export const suggestions = (services: Builtin.Services, context: Tool.Context, real: string, inside: boolean) =>
  Effect.gen(function* () {
    const directory = services.directory
    const wanted = basename(real)
    if (!inside || wanted === "") return []
    // Never a name the walking tools leave out (a credential store, core's data directory), as read refuses them.
    const kept = Builtin.hidden(services, context.agent)
    const readable = (paths: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const within = paths.filter((path) => path !== directory && Boundary.isWithin(directory, path) && !kept(path))
        if (within.length === 0) return []
        const decisions = yield* services.permission
          .explain({ agent: context.agent, action: "read", resources: within.map((path) => relative(directory, path)) })
        return within.filter((_, index) => decisions[index]?.effect !== "deny")
      })
    const parent = dirname(real)
    const budget = { cells: MAX_CELLS }
    // Listed through the folder as checked (Pinned): one swapped since for a link out of the Location (a command's
    // race) is refused rather than listed. rg's walk below is confined to the Location by the kernel.
    const beside = (yield* Effect.promise(() =>
      Pinned.within(parent, async (held) => readdirSync(held.at(""))).catch(() => [] as Array<string>),
    ))
      .slice(0, MAX_COMPARED_NAMES)
      .map((name) => ({ name, score: likeness(wanted, name, budget) }))
      .filter((entry): entry is { name: string; score: number } => entry.score !== undefined)
      .sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : 1))
      // The nearest ones only are checked against the rules (a folder of alike names made each one a check).
      .slice(0, MAX_CHECKED)
      .map((entry) => join(parent, entry.name))
    const found = (yield* readable(beside)).slice(0, MAX_SUGGESTIONS)
    if (found.length >= MAX_SUGGESTIONS) return found
    const elsewhere: Array<string> = []
    yield* Ripgrep.run({
      args: [...Ripgrep.COMMON_FLAGS, "--files", "--null", `--iglob=${Ripgrep.globEscape(wanted)}`, "--", directory],
      cwd: directory,
      root: directory,
      ...Ripgrep.records(0, (record) => {
        const { text, utf8 } = Ripgrep.decode(record)
        if (utf8 && elsewhere.length < 100) elsewhere.push(text)
      }),
    })
    // Nearest first: the longer the shared leading directories, the nearer.
    const shared = (path: string) => {
      const left = relative(directory, path).split("/")
      const right = relative(directory, real).split("/")
      let count = 0
      while (count < left.length && left[count] === right[count]) count++
      return count
    }
    const extra = elsewhere
      .filter((path) => !found.includes(path))
      .sort((a, b) => shared(b) - shared(a) || a.length - b.length || (a < b ? -1 : 1))
    return [...found, ...(yield* readable(extra))].slice(0, MAX_SUGGESTIONS)
  })

