// Where a SQLite store's checkpoints run: only inside the commit that crosses `wal_autocheckpoint` pages (SQLite's
// own, every 4,000 pages: what the store did before), or also from a thread while the writes pause
// (src/store/checkpointer.ts, what the store does now). Each side is a database made by the store's migrations,
// written as a call writes it: a lookup, the intent (an insert), the settlement (an update), two commits a call, in
// the store's WAL mode with synchronous=NORMAL. Calls come in bursts with a pause after each, as an agent's do
// (the model's turn between them); the sides take turns, burst by burst. The figure is the median of the bursts'
// time per call, beside the CPU of this thread per call.

import { Database } from "bun:sqlite"
import { mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Checkpointer } from "../src/store/checkpointer"
import { SqliteStore } from "../src/store/sqlite-store"
import { cleanup, duration, main, median, megabytes, progress, ratio, type Report } from "./measure"

const ROUNDS = 60
const CALLS_PER_BLOCK = 250
/** The pause after each burst: long enough for the thread to find the log quiet (two looks, 100 ms apart). */
const PAUSE_MS = 300
/** SQLite's own checkpoints, as the store sets them. */
const AUTOCHECKPOINT_PAGES = 4_000
const SETTLEMENT = JSON.stringify({
  tool: "echo",
  callID: "call",
  status: "success",
  content: [{ type: "text", text: "hello" }],
  structured: "hello",
  outputs: [],
})

interface Side {
  readonly label: string
  readonly path: string
  readonly db: Database
  readonly call: () => void
  readonly close: () => Promise<void>
  readonly wall: Array<number>
  readonly cpu: Array<number>
  largestLog: number
}

const side = (label: string, directory: string, thread: boolean): Side => {
  const path = join(directory, `${label.replace(/\W+/g, "_")}.db`)
  const db = new Database(path, { create: true, strict: true })
  db.exec("PRAGMA busy_timeout = 5000")
  db.exec("PRAGMA journal_mode = WAL")
  db.exec("PRAGMA synchronous = NORMAL")
  db.exec("PRAGMA journal_size_limit = 16777216")
  db.exec("PRAGMA mmap_size = 268435456")
  for (const step of SqliteStore.MIGRATIONS) db.exec(step)
  db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
  const detach = thread ? Checkpointer.attach(path, 0) : undefined
  const select = db.query(
    "SELECT state, tool, agent, owner, reason, settlement, lease_until FROM settlements WHERE session_id = ? AND call_id = ? AND location = ?",
  )
  const insert = db.query(
    "INSERT INTO settlements (location, session_id, call_id, tool, agent, state, owner, lease_until, started_at, message_id, input, input_bytes) " +
      "VALUES (?1, ?2, ?3, 'echo', 'build', 'started', 'host:1:2', ?4, ?5, 'msg_bench', '{\"text\":\"hello\"}', 16) ON CONFLICT DO NOTHING",
  )
  const settle = db.query(
    "UPDATE settlements SET state = 'settled', settlement = ?1, settled_at = ?2 " +
      "WHERE session_id = ?3 AND call_id = ?4 AND location = ?5 AND state = 'started'",
  )
  let next = 0
  return {
    label,
    path,
    db,
    call: () => {
      const id = `call_${next++}`
      select.get("ses_bench", id, "/work/location")
      insert.run("/work/location", "ses_bench", id, Date.now() + 5_000, Date.now())
      settle.run(SETTLEMENT, Date.now(), "ses_bench", id, "/work/location")
    },
    // The thread's connection first (as the store does), so it is gone before the directory is removed.
    close: async () => {
      await detach?.()
      db.close()
    },
    wall: [],
    cpu: [],
    largestLog: 0,
  }
}

const measure = async (): Promise<Report> => {
  const directory = mkdtempSync(join(tmpdir(), "core-bench-checkpoints-"))
  const sides = [side("SQLite's own checkpoints", directory, false), side("with the checkpoint thread", directory, true)]
  try {
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 10 === 0) progress(`checkpoints: round ${round + 1}/${ROUNDS}`)
      for (const one of round % 2 === 0 ? sides : [...sides].reverse()) {
        const started = performance.now()
        const cpu = process.cpuUsage()
        for (let index = 0; index < CALLS_PER_BLOCK; index++) one.call()
        const used = process.cpuUsage(cpu)
        one.wall.push((performance.now() - started) / CALLS_PER_BLOCK)
        one.cpu.push((used.user + used.system) / 1000 / CALLS_PER_BLOCK)
        one.largestLog = Math.max(one.largestLog, statSync(`${one.path}-wal`).size)
        // The pause after a burst; the other side's burst waits until it is over.
        await Bun.sleep(PAUSE_MS)
      }
    }
    const [commit, thread] = sides as [Side, Side]
    const status = Checkpointer.status(thread.path)
    return {
      name: "checkpoints: where a SQLite store's checkpoints run",
      about:
        `A call's writes (a lookup, the intent, the settlement: two commits) on a store made by core's migrations, WAL ` +
        `with synchronous=NORMAL, checkpointed in the commit crossing ${AUTOCHECKPOINT_PAGES.toLocaleString("en")} pages ` +
        `(SQLite's own), or also by src/store/checkpointer.ts's thread while the writes pause; ${ROUNDS} bursts of ` +
        `${CALLS_PER_BLOCK.toLocaleString("en")} calls per side, each followed by a ${PAUSE_MS} ms pause, alternating.`,
      tables: [
        {
          title: "per call (median of blocks)",
          columns: ["side", "wall", "CPU of this thread", "largest log"],
          rows: sides.map((one) => [one.label, duration(median(one.wall)), duration(median(one.cpu)), megabytes(one.largestLog)]),
        },
        {
          title: "with the thread over SQLite's own",
          columns: ["measure", "ratio"],
          rows: [
            ["wall per call", ratio(median(thread.wall) / median(commit.wall))],
            ["CPU of this thread per call", ratio(median(thread.cpu) / median(commit.cpu))],
          ],
        },
      ],
      targets: [],
      notes: [
        `the thread made ${status?.checkpoints ?? 0} checkpoints${status?.failure === undefined ? "" : `, then stopped: ${status.failure}`}`,
        "written without a pause, the log is checkpointed by SQLite's own in the commit either way: no difference then",
      ],
    }
  } finally {
    for (const one of sides) await one.close()
    cleanup([directory])
  }
}

if (import.meta.main) await main(measure)
