import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { existsSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Layer, Scope } from "effect"
import type { Settlement } from "../../src/contract/settlement"
import { Checkpointer } from "../../src/store/checkpointer"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

/** A WAL-mode database with one table, opened as the store opens its own (SQLite's own checkpoints at 4,000 pages). */
const walDatabase = (path: string) => {
  const db = new Database(path, { create: true, strict: true })
  db.exec("PRAGMA busy_timeout = 5000")
  db.exec("PRAGMA journal_mode = WAL")
  db.exec("PRAGMA synchronous = NORMAL")
  db.exec("PRAGMA wal_autocheckpoint = 4000")
  db.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
  return db
}

/** Frames in the log not yet copied into the database, as another connection's passive checkpoint finds them. */
const framesLeft = (db: Database) => {
  const done = db.query("PRAGMA wal_checkpoint(PASSIVE)").get() as { busy: number; log: number; checkpointed: number }
  return done.log - done.checkpointed
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

/** The thread has checkpointed the whole log it last found: every frame copied. */
const copiedAll = (path: string) => () => {
  const last = Checkpointer.status(path)?.last
  return last !== undefined && last.log > 0 && last.copied === last.log
}

describe("Checkpointer", () => {
  test("once a store's writes pause, its thread checkpoints the log, and every record stays", async () => {
    const path = join(tempDir(), "core.db")
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(SqliteStore.layer(path), scope))
    const store = Effect.runSync(Effect.service(Store.Service).pipe(Effect.provide(context)))
    try {
      // The thread starts a moment after the store opens (a one-call command never starts it).
      expect(Checkpointer.status(path)).toEqual({ thread: false, checkpoints: 0 })
      expect(await until(() => Checkpointer.status(path)?.thread === true)).toBe(true)
      for (let index = 0; index < 300; index++) {
        const key = { location: "/p", sessionID: "s", toolCallID: `c${index}` }
        expect(await Effect.runPromise(store.begin(key, "echo", "build"))).toBe(true)
        expect(await Effect.runPromise(store.settle(key, settled(`c${index}`), { state: "owned" }))).toBe(true)
      }
      // 600 commits of a few pages each: short of SQLite's own checkpoint, so only the thread copies them.
      expect(await until(copiedAll(path))).toBe(true)
      const last = await Effect.runPromise(store.lookup({ location: "/p", sessionID: "s", toolCallID: "c299" }))
      expect(last?.state).toBe("settled")
      expect(Checkpointer.status(path)?.failure).toBeUndefined()
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The last connection gone: the thread's closed first, so the store's own, closing last, checkpointed the log
    // and removed it, as SQLite does.
    expect(Checkpointer.status(path)).toBeUndefined()
    expect(existsSync(`${path}-wal`)).toBe(false)
  })

  test("a process that closes its store and exits at once leaves no log for the next start to read", async () => {
    const directory = tempDir()
    const path = join(directory, "core.db")
    const script = join(directory, "close-and-exit.ts")
    const source = (module: string) => JSON.stringify(join(import.meta.dir, "../../src/store", module))
    await Bun.write(
      script,
      `import { Effect, Exit, Layer, Scope } from "effect"
import { Checkpointer } from ${source("checkpointer")}
import { SqliteStore } from ${source("sqlite-store")}
import { Store } from ${source("store")}
const path = ${JSON.stringify(path)}
const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(SqliteStore.layer(path, { compactBytes: 0 }), scope))
const store = Effect.runSync(Effect.service(Store.Service).pipe(Effect.provide(context)))
while (Checkpointer.status(path)?.thread !== true) await Bun.sleep(10)
for (let index = 0; index < 50; index++) {
  const key = { location: "/p", sessionID: "s", toolCallID: "c" + index }
  await Effect.runPromise(store.begin(key, "echo", "build"))
  await Effect.runPromise(store.settle(key, { tool: "echo", callID: "c" + index, status: "success", content: [], outputs: [] }, { state: "owned" }))
}
await Effect.runPromise(Scope.close(scope, Exit.void))
process.exit(0)
`,
    )
    const child = Bun.spawn([process.execPath, script], { cwd: join(import.meta.dir, "../.."), stdout: "pipe", stderr: "pipe" })
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
    expect(stderr).toBe("")
    expect(code).toBe(0)
    // Compacted into SQLite after every record, so the log had frames; the process's last connection checkpointed
    // them and removed it before the exit.
    expect(existsSync(`${path}-wal`)).toBe(false)
    const db = new Database(path, { readonly: true })
    try {
      expect((db.query("SELECT count(*) AS n FROM settlements WHERE state = 'settled'").get() as { n: number }).n).toBe(50)
    } finally {
      db.close()
    }
  }, 30_000)

  test("the next commit after the thread's checkpoint starts the log again, so it stays small", async () => {
    const path = join(tempDir(), "bursts.db")
    const db = walDatabase(path)
    const detach = Checkpointer.attach(path, 0)
    const insert = db.query("INSERT INTO rows (body) VALUES (?)")
    const body = "x".repeat(2_000)
    try {
      // Bursts of writes with pauses between, as an agent's calls come: 30 bursts of ~2.4 MB of log each would
      // take the log past SQLite's own checkpoint (16 MiB) several times over, were it never started again.
      let largest = 0
      for (let burst = 0; burst < 30; burst++) {
        const before = Checkpointer.status(path)?.checkpoints ?? 0
        for (let index = 0; index < 600; index++) insert.run(body)
        largest = Math.max(largest, statSync(`${path}-wal`).size)
        expect(await until(() => (Checkpointer.status(path)?.checkpoints ?? 0) > before && copiedAll(path)())).toBe(true)
      }
      expect(largest).toBeLessThan(8 * 1024 * 1024)
      expect(framesLeft(db)).toBe(0)
      expect((db.query("SELECT count(*) AS n FROM rows").get() as { n: number }).n).toBe(30 * 600)
    } finally {
      await detach()
      db.close()
    }
  }, 120_000)

  test("a log written without a pause is left to SQLite's own checkpoint, and stays bounded", async () => {
    const path = join(tempDir(), "busy.db")
    const db = walDatabase(path)
    const detach = Checkpointer.attach(path, 0)
    const insert = db.query("INSERT INTO rows (body) VALUES (?)")
    const body = "x".repeat(2_000)
    let largest = 0
    let rows = 0
    try {
      // ~2 KB a row, one commit each, with no pause, until 160 MiB are written.
      while (rows * body.length < 160 * 1024 * 1024) {
        for (let index = 0; index < 200; index++) insert.run(body)
        rows += 200
        largest = Math.max(largest, statSync(`${path}-wal`).size)
        // Lets the thread's reports in (the checkpoints themselves never wait for this thread).
        await Bun.sleep(0)
      }
      expect(largest).toBeLessThan(24 * 1024 * 1024)
      expect((db.query("SELECT count(*) AS n FROM rows").get() as { n: number }).n).toBe(rows)
      expect(Checkpointer.status(path)?.failure).toBeUndefined()
    } finally {
      await detach()
      db.close()
    }
  }, 120_000)

  test("a thread that cannot open the store stops and says why; SQLite's own checkpoints go on", async () => {
    const path = join(tempDir(), "gone.db")
    const db = walDatabase(path)
    // The store's file is gone when the thread opens it (moved aside, a broken disk).
    const detach = Checkpointer.attach(path, 0)
    rmSync(path)
    try {
      expect(await until(() => Checkpointer.status(path)?.failure !== undefined)).toBe(true)
      expect(Checkpointer.status(path)?.thread).toBe(false)
    } finally {
      await detach()
      db.close()
    }
    expect(Checkpointer.status(path)).toBeUndefined()
  })
})
