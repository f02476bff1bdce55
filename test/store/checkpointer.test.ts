import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { existsSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Layer, Scope } from "effect"
import { Settlement } from "../../src/contract/settlement"
import { Checkpointer } from "../../src/store/checkpointer"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

const autocheckpoint = (db: Database): number =>
  (db.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint

/** A WAL-mode database with one table, opened as the store opens its own. */
const walDatabase = (path: string) => {
  const db = new Database(path, { create: true, strict: true })
  db.exec("PRAGMA busy_timeout = 5000")
  db.exec("PRAGMA journal_mode = WAL")
  db.exec("PRAGMA synchronous = NORMAL")
  db.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
  return db
}

/** Waits (up to `ms`) until `ready` holds. */
const until = async (ready: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms
  while (!ready() && Date.now() < deadline) await Bun.sleep(20)
  return ready()
}

const settled = (callID: string): Settlement.Info => ({
  tool: "echo",
  callID,
  status: "success",
  content: [{ type: "text", text: "hi" }],
  structured: "hi",
  outputs: [],
})

describe("Checkpointer", () => {
  test("a store's checkpoints run on a thread of their own, never in a commit, and every record stays", async () => {
    const path = join(tempDir(), "core.db")
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(SqliteStore.layer(path), scope))
    const store = Effect.runSync(Effect.service(Store.Service).pipe(Effect.provide(context)))
    try {
      // The thread starts a moment after the store opens (a one-call command never starts it).
      expect(Checkpointer.status(path)).toEqual({ thread: false, fallback: false, checkpoints: 0 })
      expect(await until(() => Checkpointer.status(path)?.thread === true)).toBe(true)
      for (let index = 0; index < 300; index++) {
        const key = { location: "/p", sessionID: "s", toolCallID: `c${index}` }
        expect(await Effect.runPromise(store.begin(key, "echo", "build"))).toBe(true)
        expect(await Effect.runPromise(store.settle(key, settled(`c${index}`), { state: "owned" }))).toBe(true)
      }
      // Checkpointed by the thread once the writes stop: every frame of the log copied into the database file.
      const copiedAll = () => {
        const last = Checkpointer.status(path)?.last
        return last !== undefined && last.log > 0 && last.copied === last.log
      }
      expect(await until(copiedAll)).toBe(true)
      const last = await Effect.runPromise(store.lookup({ location: "/p", sessionID: "s", toolCallID: "c299" }))
      expect(last?.state).toBe("settled")
      expect(Checkpointer.status(path)?.fallback).toBe(false)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The last connection gone: the thread stops and the log is checkpointed and removed, as SQLite does.
    expect(Checkpointer.status(path)).toBeUndefined()
    expect(await until(() => !existsSync(`${path}-wal`))).toBe(true)
  })

  test("a connection leaves checkpoints to the thread (wal_autocheckpoint 0) and takes them back when it fails", async () => {
    const directory = tempDir()
    const path = join(directory, "core.db")
    const db = walDatabase(path)
    // The store's file is gone when the thread opens it (moved aside, a broken disk): the thread fails.
    const detach = Checkpointer.attach(path, db, 0)
    try {
      expect(autocheckpoint(db)).toBe(0)
      rmSync(path)
      expect(await until(() => Checkpointer.status(path)?.fallback === true)).toBe(true)
      expect(autocheckpoint(db)).toBe(Checkpointer.FALLBACK_PAGES)
      expect(Checkpointer.status(path)?.failure).toBeString()
      // A connection joining later gets SQLite's own checkpoints too.
      const second = new Database(":memory:")
      const leave = Checkpointer.attach(path, second, 0)
      expect(autocheckpoint(second)).toBe(Checkpointer.FALLBACK_PAGES)
      leave()
      second.close()
    } finally {
      detach()
      db.close()
    }
  })

  test("a log written without a pause is emptied once past its limit: it does not grow without bound", async () => {
    const path = join(tempDir(), "busy.db")
    const db = walDatabase(path)
    const detach = Checkpointer.attach(path, db, 0)
    const insert = db.query("INSERT INTO rows (body) VALUES (?)")
    // ~2 KB a row, one commit each, as fast as the thread lets the writer go, until 160 MiB are written: well past
    // the 32 MiB limit were the log never emptied.
    const body = "x".repeat(2_000)
    let largest = 0
    let rows = 0
    try {
      while (rows * body.length < 160 * 1024 * 1024) {
        for (let index = 0; index < 200; index++) insert.run(body)
        rows += 200
        largest = Math.max(largest, statSync(`${path}-wal`).size)
        // Lets the thread's reports in (the checkpoints themselves never wait for this thread).
        await Bun.sleep(0)
      }
      expect(largest).toBeLessThan(96 * 1024 * 1024)
      expect((db.query("SELECT count(*) AS n FROM rows").get() as { n: number }).n).toBe(rows)
    } finally {
      detach()
      db.close()
    }
  }, 120_000)
})
