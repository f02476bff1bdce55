export * as LogCommand from "./log-command"

// `core log`: the calls recorded in a Location (DESIGN §6, §15), newest last: a table that fits the terminal, or
// with --json the entries `GET /v1/settlements` answers. Only the Location's own calls are listed, never another's.

import { existsSync } from "node:fs"
import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Host } from "../host/host"
import { Recorded } from "../host/recorded"
import { Location } from "../location/location"
import { Store } from "../store/store"
import { Command } from "./command"

export const HELP = `Usage: core log [--session ID] [--location DIR] [--since T] [--limit N] [--json]

List the tool calls recorded in a Location, oldest first: time (UTC), tool, agent,
status, duration, call id and the start of the input. Only that Location's calls are listed.

Options:
  --session ID      only this session's calls
  --location DIR    the Location (default: the current directory)
  --since T         only calls received since T: an ISO time (2026-01-31, 2026-01-31T10:00:00Z;
                    UTC unless it gives an offset) or a duration back from now (90s, 10m, 2h, 7d)
  --limit N         at most the newest N calls (default ${Recorded.DEFAULT_LIMIT}, at most ${Recorded.MAX_LIMIT})
  --json            an array of objects: sessionID, toolCallID, tool, status, error (or, for
                    status failed, reason: what failed), agent, location, messageID, input,
                    inputTruncated, inputBytes, outputs, startedAt, settledAt, durationMs
  -h, --help        show this help

Inputs are kept up to 8 KiB of JSON (longer ones are cut, inputTruncated), in the store
under CORE_DATA_DIR (default ~/.local/share/core), for as long as managed outputs are
(output.retentionDays, default 7; a Location's core.json may set its own). See docs/operating.md.
`

const OPTIONS = {
  session: { type: "string" },
  location: { type: "string" },
  since: { type: "string" },
  limit: { type: "string" },
  json: { type: "boolean" },
} as const

/** The table's width when stdout is not a terminal. */
const DEFAULT_COLUMNS = 120
const MIN_INPUT_WIDTH = 16

const duration = (ms: number | null): string => {
  if (ms === null) return "-"
  if (ms < 1_000) return `${ms}ms`
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes}m${String(Math.floor((ms % 60_000) / 1_000)).padStart(2, "0")}s`
}

const statusOf = (entry: Recorded.Entry): string => (entry.error === undefined ? entry.status : `error:${entry.error.kind}`)

const time = (entry: Recorded.Entry): string => {
  const at = entry.startedAt ?? entry.settledAt
  return at === null ? "-" : `${at.slice(0, 10)} ${at.slice(11, 19)}`
}

/** How many terminal columns `text` takes (a CJK character or an emoji two, a combining mark none). */
const columnsOf = (text: string): number => Bun.stringWidth(text)

const graphemes = new Intl.Segmenter()

/** `text` cut to at most `width` columns, ending in "…" when cut; never inside a character or a grapheme. */
const fit = (text: string, width: number): string => {
  if (columnsOf(text) <= width) return text
  let kept = ""
  let used = 0
  for (const { segment } of graphemes.segment(text)) {
    const columns = columnsOf(segment)
    if (used + columns > width - 1) break
    kept += segment
    used += columns
  }
  return `${kept}…`
}

/** The input on one line, cut to `width` columns (every character a terminal acts on escaped). */
const shortInput = (entry: Recorded.Entry, width: number): string =>
  // JSON text (a recorded input cut short is the start of one): a line or paragraph separator in it is escaped as
  // every other character a terminal acts on, not shown as a space (`rm\u2028-rf` is no `rm -rf`).
  fit(Terminal.json(typeof entry.input === "string" && entry.inputTruncated ? entry.input : JSON.stringify(entry.input)), width)

/**
 * The most columns a tool name, agent or call id takes: a longer one is cut ("…"), so that one call's long name
 * (a model's text: kept up to CallKey.MAX_NAME characters) or id cannot widen every row of the table with it.
 * `--json` gives them whole.
 */
const MAX_CELL = 72

/**
 * A tool name or call id as its cell shows it (both come from clients): as it is when it is plain (PLAIN), else
 * quoted with every character a terminal acts on escaped, so that no cell breaks its row, forges another or drives
 * the terminal. A space would let a name show the cells of a row of its own (`read   build success ...`), and one at
 * its end hide behind the padding (`read ` shown as `read`); an empty one would shift the row.
 */
const cell = (text: string): string => fit(PLAIN.test(text) ? text : Terminal.quoted(text), MAX_CELL)

/**
 * A cell shown as it is: visible ASCII, letters and digits only. Anything else (a space of any kind, a blank that
 * is no space to Unicode such as U+2800, a joiner or variation selector that leaves `read` looking like `read`,
 * symbols and marks) is quoted, escapes and all.
 */
const PLAIN = /^[\x21-\x7e\p{L}\p{N}]+$/u

export const table = (entries: ReadonlyArray<Recorded.Entry>, columns: number): string => {
  const rows = entries.map((entry) => [
    time(entry),
    cell(entry.tool),
    entry.agent === null ? "-" : cell(entry.agent),
    statusOf(entry),
    duration(entry.durationMs),
    cell(entry.toolCallID),
  ])
  const header = ["TIME (UTC)", "TOOL", "AGENT", "STATUS", "DURATION", "CALL"]
  // Cells are laid out by the columns they take on a terminal, not by their UTF-16 length.
  const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => columnsOf(row[index]!))))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, index) => cell + " ".repeat(widths[index]! - columnsOf(cell))).join("  ")
  const used = widths.reduce((sum, width) => sum + width + 2, 0)
  const inputWidth = Math.max(MIN_INPUT_WIDTH, columns - used)
  return [
    `${line(header)}  INPUT`,
    ...rows.map((row, index) => `${line(row)}  ${shortInput(entries[index]!, inputWidth)}`),
  ].join("\n")
}

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("log", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const usage = (message: string) => new Command.UsageError({ command: "log", message })
    if (positionals.length > 0) return yield* usage(`unexpected argument "${positionals[0]}"`)
    // Only empty: a session id is whatever the host sent, spaces and all (the calls route takes " ").
    if (values.session === "") return yield* usage("--session cannot be empty")
    let since: number | undefined
    if (values.since !== undefined) {
      const parsed = Recorded.parseSince(values.since, Date.now())
      if ("problem" in parsed) return yield* usage(`--since ${parsed.problem}`)
      since = parsed.at
    }
    const limit = values.limit === undefined ? Recorded.DEFAULT_LIMIT : Number(values.limit)
    if (!/^\d+$/.test(values.limit ?? "1") || limit < 1 || limit > Recorded.MAX_LIMIT) {
      return yield* usage(`--limit must be a whole number from 1 to ${Recorded.MAX_LIMIT}, not "${values.limit}"`)
    }
    // Only the directory is needed: the calls of a Location whose core.json is broken can still be listed.
    const directory = yield* Location.check(values.location ?? ".").pipe(Effect.mapError((error) => usage(error.message)))
    const environment = Host.environment()
    // No store yet (nothing was ever recorded with this data directory): nothing to list, and nothing made for it.
    const listed =
      environment.storeUrl === undefined && !existsSync(Host.storePath(environment))
        ? []
        : yield* Effect.flatMap(Store.Service, (store) =>
            store.list({ location: directory, sessionID: values.session, since, limit }),
          ).pipe(Effect.provide(Host.storeLayer(environment)))
    const entries = listed.map(Recorded.entryOf)
    if (values.json) {
      Command.stdout(`${Terminal.pretty(entries)}\n`)
      return Command.EXIT.ok
    }
    if (entries.length === 0) {
      // Both shown inert: a directory under a root, or a session id, may hold what a terminal would act on.
      const which = values.session === undefined ? "" : ` in session ${Terminal.shown(values.session)}`
      Command.stdout(`No calls recorded in ${Terminal.shown(directory)}${which}${values.since === undefined ? "" : ` since ${values.since}`}.\n`)
      return Command.EXIT.ok
    }
    Command.stdout(`${table(entries, process.stdout.columns ?? DEFAULT_COLUMNS)}\n`)
    return Command.EXIT.ok
  })
