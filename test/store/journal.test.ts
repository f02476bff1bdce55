// The SQLite store's journal (src/store/journal.ts): records appended before SQLite has them, read by every process
// sharing the data directory. Processes racing the same calls begin each once; a process killed (kill -9) after
// recording leaves its records for the others to read and compact; a torn append is cut, a record that is not JSON
// is reported, and a compaction killed after SQLite committed is never applied twice. Processes that keep the store
// open skip looking at the journal while its generation has not moved: each still sees every record and compaction
// another makes, a compaction killed by kill -9 at each of its steps included.

import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import type { Settlement } from "../../src/contract/settlement"
import { Journal } from "../../src/store/journal"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { tempDir } from "../support/temp"

const settlement = (callID: string): Settlement.Info => ({
  tool: "echo",
  callID,
  status: "success",
  content: [{ type: "text", text: `done ${callID}` }],
  structured: null,
  outputs: [],
})

const keyOf = (toolCallID: string): Store.Key => ({ location: "/p", sessionID: "s", toolCallID })

const use = <A, E>(path: string, program: Effect.Effect<A, E, Store.Service>, options?: SqliteStore.Options) =>
  Effect.runPromise(program.pipe(Effect.provide(SqliteStore.layer(path, options))))

const STORE = JSON.stringify(join(import.meta.dir, "../../src/store/sqlite-store.ts"))
const STORE_TYPES = JSON.stringify(join(import.meta.dir, "../../src/store/store.ts"))

/** Runs `body` (with `store` in scope) in another process on the store at `path`, and what it printed. */
const child = (path: string, body: string, options = "{}") =>
  Bun.spawn(
    [
      process.execPath,
      "-e",
      `
      import { Effect } from "effect"
      import { SqliteStore } from ${STORE}
      import { Store } from ${STORE_TYPES}
      await Effect.runPromise(Effect.gen(function* () {
        const store = yield* Store.Service
        ${body}
      }).pipe(Effect.provide(SqliteStore.layer(${JSON.stringify(path)}, ${options}))))
      `,
    ],
    { stdout: "pipe", stderr: "pipe" },
  )

/** Where a journal's committed end is kept (a 32-bit little-endian word), and where its records start. */
const END_AT = 32
const RECORDS_AT = 40

/** The journal file's records (`journal`: its path) up to its committed end, as lines. */
const lines = (journal: string) => {
  const bytes = readFileSync(journal)
  expect(bytes.subarray(0, 15).toString()).toBe("core-journal 2 ")
  return bytes.subarray(RECORDS_AT, bytes.readUInt32LE(END_AT)).toString().split("\n").slice(0, -1)
}

/** The journal's records, parsed (every one must be whole JSON). */
const records = (path: string) => lines(SqliteStore.journalPath(path)).map((line) => JSON.parse(line) as Journal.Entry)

/** Writes `text` at the journal's committed end, moving the end over it only when `committed`. */
const writeAtEnd = (journal: string, text: string, committed: boolean) => {
  const bytes = readFileSync(journal)
  const end = bytes.readUInt32LE(END_AT)
  bytes.write(text, end)
  if (committed) bytes.writeUInt32LE(end + Buffer.byteLength(text), END_AT)
  writeFileSync(journal, bytes)
}

describe("SQLite store journal", () => {
  test("processes racing the same calls begin each exactly once, compacting as they go", async () => {
    const path = join(tempDir(), "core.db")
    const CALLS = 300
    const racers = [0, 1, 2].map((index) =>
      child(
        path,
        `
        let won = []
        for (let i = 0; i < ${CALLS}; i++) {
          const key = { location: "/p", sessionID: "s", toolCallID: "c" + i }
          if (yield* store.begin(key, "echo", "build")) {
            won.push(i)
            yield* store.settle(key, { tool: "echo", callID: "c" + i, status: "success", content: [], structured: ${"`${i}`"}, outputs: [] }, { state: "owned" })
          }
        }
        console.log(JSON.stringify(won))
        `,
        // One racer compacts after every record, the others by size: SQLite is filled while they append.
        index === 0 ? "{ compactBytes: 0 }" : "{ compactBytes: 4096 }",
      ),
    )
    const outputs = await Promise.all(racers.map(async (racer) => {
      const [out, err, code] = await Promise.all([new Response(racer.stdout).text(), new Response(racer.stderr).text(), racer.exited])
      expect(err).toBe("")
      expect(code).toBe(0)
      return JSON.parse(out) as Array<number>
    }))
    const won = outputs.flat().sort((a, b) => a - b)
    expect(won).toEqual(Array.from({ length: CALLS }, (_, i) => i))
    // Every call settled once, in SQLite (compacted as they went, and the last few by a store opened and closed
    // after them), by the one that began it.
    await use(path, Effect.void, { compactBytes: 0 })
    const db = new Database(path, { readonly: true })
    const rows = db.query("SELECT call_id, state, settlement FROM settlements").all() as Array<{ call_id: string; state: string; settlement: string }>
    db.close()
    expect(rows.length).toBe(CALLS)
    for (const row of rows) {
      expect(row.state).toBe("settled")
      expect(JSON.parse(row.settlement).structured).toBe(row.call_id.slice(1))
    }
  }, 120_000)

  test("kill -9 after recording: the records stay in the journal, read and listed by the next process", async () => {
    const path = join(tempDir(), "core.db")
    const killed = child(
      path,
      `
      yield* store.begin({ location: "/p", sessionID: "s", toolCallID: "done" }, "echo", "build", { messageID: "m", input: "{}", inputBytes: 2, startedAt: Date.now() })
      yield* store.settle({ location: "/p", sessionID: "s", toolCallID: "done" }, ${JSON.stringify(settlement("done"))}, { state: "owned" })
      yield* store.begin({ location: "/p", sessionID: "s", toolCallID: "running" }, "echo", "build")
      console.log("recorded")
      yield* Effect.never
      `,
    )
    const reader = killed.stdout.getReader()
    expect(new TextDecoder().decode((await reader.read()).value).trim()).toBe("recorded")
    killed.kill(9)
    await killed.exited
    // Killed before anything was compacted: SQLite has nothing yet, the journal has it all.
    const db = new Database(path, { readonly: true })
    expect(db.query("SELECT COUNT(*) AS n FROM settlements").get()).toEqual({ n: 0 })
    db.close()
    expect(records(path).map((entry) => entry.e)).toEqual(["new", "settled", "new"])

    const found = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      return {
        done: yield* store.lookup(keyOf("done")),
        running: yield* store.lookup(keyOf("running")),
        again: yield* store.begin(keyOf("done"), "echo", "build"),
        listed: (yield* store.list({ location: "/p", limit: 10 })).map((call) => [call.toolCallID, call.record.state]),
      }
    }))
    expect(found.done).toEqual({ state: "settled", agent: "build", settlement: settlement("done") })
    expect(found.running).toMatchObject({ state: "started", tool: "echo" })
    expect(found.again).toBe(false)
    expect(found.listed).toEqual([["done", "settled"], ["running", "started"]])
    // Listing compacted it: SQLite holds both now.
    const after = new Database(path, { readonly: true })
    expect(after.query("SELECT call_id, state FROM settlements ORDER BY call_id").all()).toEqual([
      { call_id: "done", state: "settled" },
      { call_id: "running", state: "started" },
    ])
    after.close()
  }, 60_000)

  test("an append killed before it moved the end (its record copied, whole or not) is never read; the next append is made over it", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      yield* store.begin(keyOf("a"), "echo", "build")
    }), { compactBytes: Number.MAX_SAFE_INTEGER })
    // Closing compacted; a record past the end, as a process killed before it moved the end leaves: a whole line
    // that would settle the call, and the start of another.
    const whole = JSON.stringify({ e: "settled", k: ["/p", "s", "a"], tool: "echo", settlement: JSON.stringify(settlement("a")), at: 1 })
    writeAtEnd(SqliteStore.journalPath(path), `${whole}\n${whole.slice(0, 40)}`, false)
    const found = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      const before = yield* store.lookup(keyOf("a"))
      const begun = yield* store.begin(keyOf("b"), "echo", "build")
      return { before, begun }
    }), { compactBytes: Number.MAX_SAFE_INTEGER })
    expect(found.before).toMatchObject({ state: "started", tool: "echo" })
    expect(found.begun).toBe(true)
    const reread = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      return [yield* store.lookup(keyOf("a")), yield* store.lookup(keyOf("b"))]
    }))
    expect(reread).toMatchObject([{ state: "started" }, { state: "started" }])
  })

  test("a compaction that fails (SQLite held by another writer) fails no call: the journal keeps the records", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.void)
    const holder = new Database(path)
    holder.exec("PRAGMA busy_timeout = 0")
    holder.exec("BEGIN IMMEDIATE")
    try {
      const found = await use(path, Effect.gen(function* () {
        const store = yield* Store.Service
        // Compacted after every record: this one's compaction waits out SQLite's busy timeout, then gives up.
        const begun = yield* store.begin(keyOf("a"), "echo", "build")
        const settled = yield* store.settle(keyOf("a"), settlement("a"), { state: "owned" })
        return { begun, settled, record: yield* store.lookup(keyOf("a")) }
      }), { compactBytes: 0 }).finally(() => holder.exec("ROLLBACK"))
      expect(found).toEqual({ begun: true, settled: true, record: { state: "settled", agent: "build", settlement: settlement("a") } })
    } finally {
      holder.close()
    }
    // Closing could not compact either: the records wait in the journal, and the next process reads them.
    expect(records(path).map((entry) => entry.e)).toEqual(["new", "settled"])
    const again = await use(path, Effect.flatMap(Store.Service, (store) => store.list({ location: "/p", limit: 5 })))
    expect(again.map((call) => [call.toolCallID, call.record.state])).toEqual([["a", "settled"]])
    const db = new Database(path, { readonly: true })
    expect(db.query("SELECT call_id, state FROM settlements").all()).toEqual([{ call_id: "a", state: "settled" }])
    db.close()
  }, 60_000)

  test("a journal left unwritten is compacted into SQLite after compactIdleMs (250 ms by default); never, given Infinity", async () => {
    const seen = async (compactIdleMs: number | undefined) => {
      const path = join(tempDir(), "core.db")
      const inSqlite = await use(
        path,
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.begin(keyOf("a"), "echo", "build")
          const before = stateInSqlite(path, "a")
          yield* Effect.sleep("800 millis")
          return [before, stateInSqlite(path, "a")]
        }),
        compactIdleMs === undefined ? {} : { compactIdleMs },
      )
      // Closed with a short journal, which is left for the next process.
      return [...inSqlite, stateInSqlite(path, "a")]
    }
    expect(await seen(undefined)).toEqual([null, "started", "started"])
    expect(await seen(2_000)).toEqual([null, null, null])
    expect(await seen(Infinity)).toEqual([null, null, null])
  })

  test("a record that is not JSON fails every operation, naming the journal; nothing is begun", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.flatMap(Store.Service, (store) => store.begin(keyOf("first"), "echo", "build")))
    const journal = SqliteStore.journalPath(path)
    writeAtEnd(journal, "not a record\n", true)
    const exit = await Effect.runPromiseExit(
      Effect.gen(function* () {
        return yield* (yield* Store.Service).begin(keyOf("a"), "echo", "build")
      }).pipe(Effect.provide(SqliteStore.layer(path))),
    )
    expect(String(exit)).toContain(`the journal ${journal} has a record that is not JSON`)
    expect(lines(journal).at(-1)).toBe("not a record")
  })

  test("a journal whose header is not core's is reported, never cut", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.void)
    const journal = SqliteStore.journalPath(path)
    writeFileSync(journal, "something else entirely, and long\n")
    const exit = await Effect.runPromiseExit(
      Effect.flatMap(Store.Service, (store) => store.lookup(keyOf("a"))).pipe(Effect.provide(SqliteStore.layer(path))),
    )
    expect(String(exit)).toContain("does not start as a journal of this core")
    expect(readFileSync(journal, "utf8")).toBe("something else entirely, and long\n")
  })
})

/**
 * A process keeping the store at `path` open, run one command at a time: `begin`, `settle` (owned), `lookup` (the
 * state, or null), `list` (compacts first), `prune` (everything: compacts, then empties SQLite).
 */
const peer = (path: string) => {
  const process_ = Bun.spawn(
    [
      process.execPath,
      "-e",
      `
      import { Effect, ManagedRuntime } from "effect"
      import { SqliteStore } from ${STORE}
      import { Store } from ${STORE_TYPES}
      const runtime = ManagedRuntime.make(SqliteStore.layer(${JSON.stringify(path)}, { compactBytes: ${Number.MAX_SAFE_INTEGER} }))
      const store = await runtime.runPromise(Effect.service(Store.Service))
      const key = (id) => ({ location: "/p", sessionID: "s", toolCallID: id })
      const settled = (id) => ({ tool: "echo", callID: id, status: "success", content: [], structured: null, outputs: [] })
      for await (const line of console) {
        const [command, id] = line.split(" ")
        const answer = await runtime.runPromise(
          command === "begin" ? store.begin(key(id), "echo", "build")
          : command === "settle" ? store.settle(key(id), settled(id), { state: "owned" })
          : command === "lookup" ? Effect.map(store.lookup(key(id)), (record) => record?.state ?? null)
          : command === "list" ? Effect.map(store.list({ location: "/p", limit: 100 }), (calls) => calls.map((call) => call.toolCallID + ":" + call.record.state))
          : command === "prune" ? store.prune(Date.now() + 1e9, 1000)
          : Effect.succeed("unknown"),
        )
        console.log(JSON.stringify(answer))
      }
      await runtime.dispose()
      `,
    ],
    { stdin: "pipe", stdout: "pipe", stderr: "pipe" },
  )
  const reader = process_.stdout.getReader()
  let buffered = ""
  const line = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error(`the peer exited: ${await new Response(process_.stderr).text()}`)
      buffered += new TextDecoder().decode(chunk.value)
    }
    const at = buffered.indexOf("\n")
    const found = buffered.slice(0, at)
    buffered = buffered.slice(at + 1)
    return found
  }
  return {
    run: async (command: string): Promise<unknown> => {
      process_.stdin.write(`${command}\n`)
      process_.stdin.flush()
      return JSON.parse(await line())
    },
    close: async () => {
      process_.stdin.end()
      const code = await process_.exited
      expect({ code, stderr: code === 0 ? "" : await new Response(process_.stderr).text() }).toEqual({ code: 0, stderr: "" })
    },
  }
}

/** The state SQLite at `path` holds for call `callID` (the journal compacted into it), or null. */
const stateInSqlite = (path: string, callID: string): string | null => {
  const db = new Database(path, { readonly: true })
  try {
    return db.query<{ state: string }, [string]>("SELECT state FROM settlements WHERE call_id = ?").get(callID)?.state ?? null
  } finally {
    db.close()
  }
}

/** The journal's generation (see Journal), high and low words. */
const generationOf = (path: string) => {
  const bytes = readFileSync(`${SqliteStore.journalPath(path)}-shm`)
  return bytes.readUInt32LE(0) * 2 ** 32 + bytes.readUInt32LE(4)
}

describe("SQLite store journal between processes that keep it open", () => {
  test("each sees the other's records, compaction and pruning at its next operation", async () => {
    const path = join(tempDir(), "core.db")
    const a = peer(path)
    const b = peer(path)
    try {
      // Both have looked once: from here each skips looking while the generation stays where it saw it.
      expect(await b.run("lookup k")).toBe(null)
      expect(await a.run("lookup k")).toBe(null)
      const before = generationOf(path)
      expect(await a.run("begin k")).toBe(true)
      expect(generationOf(path)).toBe(before + 1)
      // Reading moves nothing.
      expect(await a.run("lookup k")).toBe("started")
      expect(generationOf(path)).toBe(before + 1)
      expect(await b.run("begin k")).toBe(false)
      expect(await b.run("lookup k")).toBe("started")
      expect(await a.run("settle k")).toBe(true)
      expect(await b.run("lookup k")).toBe("settled")
      expect(await b.run("begin j")).toBe(true)
      expect(await a.run("begin j")).toBe(false)
      // a compacts: b reads SQLite's rows under the new journal.
      expect(await a.run("list")).toEqual(["k:settled", "j:started"])
      expect(await b.run("lookup k")).toBe("settled")
      expect(await b.run("settle j")).toBe(true)
      expect(await a.run("lookup j")).toBe("settled")
      // a compacts and prunes everything: neither may answer what it had read before.
      expect(await a.run("prune")).toBe(2)
      expect(await a.run("lookup k")).toBe(null)
      expect(await b.run("lookup k")).toBe(null)
      expect(await b.run("lookup j")).toBe(null)
      // b compacts (a's records, pending in the journal) and prunes: a must see it as well. (A call still running,
      // its owner alive on this machine, would be kept: m is settled first.)
      expect(await a.run("begin m")).toBe(true)
      expect(await a.run("settle m")).toBe(true)
      expect(await b.run("prune")).toBe(1)
      expect(await a.run("lookup m")).toBe(null)
      expect(await a.run("begin m")).toBe(true)
      expect(await b.run("begin m")).toBe(false)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  }, 60_000)

  test("a process compacting its own calls again and again still knows every one, and another's among them", async () => {
    const path = join(tempDir(), "core.db")
    const a = peer(path)
    const b = peer(path)
    try {
      // A new session: a's calls in it are begun without asking SQLite, across a's own compactions.
      for (const round of [1, 2, 3]) {
        expect(await a.run(`begin a${round}`)).toBe(true)
        expect(await a.run(`settle a${round}`)).toBe(true)
        expect(await a.run("list")).toEqual(Array.from({ length: round }, (_, i) => `a${i + 1}:settled`))
      }
      for (const round of [1, 2, 3]) {
        expect(await a.run(`begin a${round}`)).toBe(false)
        expect(await a.run(`lookup a${round}`)).toBe("settled")
      }
      // b records in the same session and compacts: a reads SQLite's rows again, b's among them.
      expect(await b.run("begin b1")).toBe(true)
      expect(await b.run("list")).toEqual(["a1:settled", "a2:settled", "a3:settled", "b1:started"])
      expect(await a.run("begin b1")).toBe(false)
      expect(await a.run("lookup b1")).toBe("started")
      expect(await a.run("begin a4")).toBe(true)
      expect(await a.run("list")).toEqual(["a1:settled", "a2:settled", "a3:settled", "b1:started", "a4:started"])
      expect(await a.run("begin a1")).toBe(false)
      expect(await b.run("begin a4")).toBe(false)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  }, 60_000)

  /**
   * A process that records `done` (settled) and `running` (begun), then compacts (by listing) and is killed -9 at
   * `step`; `observer` had looked before it started. Afterwards the observer and a new process agree on both calls
   * and begin neither again.
   */
  const killedCompacting = async (step: "before the SQLite commit" | "after the SQLite commit" | "journal emptied, no header yet") => {
    const path = join(tempDir(), "core.db")
    const observer = peer(path)
    let recording: Bun.Subprocess | undefined
    let recorder: number | undefined
    try {
      expect(await observer.run("lookup done")).toBe(null)
      // The observer's record and a header, compacted by it once left alone (250 ms) before the other process starts:
      // run later, its compaction could take the other's records into SQLite, leaving that one nothing to compact.
      expect(await observer.run("begin before")).toBe(true)
      expect(await observer.run("settle before")).toBe(true)
      const compactedBefore = Date.now() + 10_000
      while (stateInSqlite(path, "before") !== "settled" && Date.now() < compactedBefore) await Bun.sleep(20)
      expect(stateInSqlite(path, "before")).toBe("settled")
      const sqliteStep = step !== "journal emptied, no header yet"
      const script = `
        import { Database } from "bun:sqlite"
        import { Effect } from "effect"
        import { SqliteStore } from ${STORE}
        import { Store } from ${STORE_TYPES}
        let armed = false
        const transaction = Database.prototype.transaction
        // The compaction's transaction: killed inside it before it commits, or as it returns committed.
        Database.prototype.transaction = function (run) {
          const made = transaction.call(this, (...args) => {
            if (armed && ${JSON.stringify(step === "before the SQLite commit")}) process.kill(process.pid, "SIGKILL")
            return run(...args)
          })
          const wrapped = (...args) => made(...args)
          wrapped.deferred = made.deferred
          wrapped.exclusive = made.exclusive
          wrapped.immediate = (...args) => {
            const result = made.immediate(...args)
            if (armed && ${JSON.stringify(step === "after the SQLite commit")}) process.kill(process.pid, "SIGKILL")
            return result
          }
          return wrapped
        }
        await Effect.runPromise(Effect.gen(function* () {
          const store = yield* Store.Service
          const key = (id) => ({ location: "/p", sessionID: "s", toolCallID: id })
          yield* store.begin(key("done"), "echo", "build")
          yield* store.settle(key("done"), { tool: "echo", callID: "done", status: "success", content: [], structured: null, outputs: [] }, { state: "owned" })
          yield* store.begin(key("running"), "echo", "build")
          console.log(process.pid)
          // Compacts once told to, after the observer has read these records (never before: no idle compaction).
          yield* Effect.promise(() => console[Symbol.asyncIterator]().next())
          armed = ${JSON.stringify(sqliteStep)}
          yield* store.list({ location: "/p", limit: 10 })
          console.log("compacted")
          yield* Effect.never
        }).pipe(Effect.provide(SqliteStore.layer(${JSON.stringify(path)}, { compactBytes: ${Number.MAX_SAFE_INTEGER}, compactIdleMs: Infinity }))))
      `
      // The last step is reached by holding the compaction's truncation of the journal (strace delays its return,
      // for the journal alone: SQLite's own truncations go on), and killing the process while it is held: the
      // journal is empty and has no header yet.
      const argv = sqliteStep
        ? [process.execPath, "-e", script]
        : ["strace", "-f", "-o", "/dev/null", "-P", SqliteStore.journalPath(path), "-e", "trace=ftruncate", "-e", "inject=ftruncate:delay_exit=10000000", process.execPath, "-e", script]
      const killed = Bun.spawn(argv, { stdin: "pipe", stdout: "pipe", stderr: "pipe" })
      recording = killed
      const reader = killed.stdout.getReader()
      const first = await reader.read()
      if (first.done) throw new Error(`the recording process failed: ${await new Response(killed.stderr).text()}`)
      const pid = Number(new TextDecoder().decode(first.value).trim())
      recorder = pid
      expect(pid).toBeGreaterThan(0)
      // The observer knows the journal as it is before the compaction: only the compaction's own steps are left to see.
      expect(await observer.run("lookup done")).toBe("settled")
      expect(await observer.run("lookup running")).toBe("started")
      killed.stdin.write("go\n")
      killed.stdin.flush()
      if (!sqliteStep) {
        const journal = SqliteStore.journalPath(path)
        // A first truncation of the journal (its header written by this process) is held too, for 10 s.
        const deadline = Date.now() + 45_000
        while (statSync(journal).size !== 0 && Date.now() < deadline) await Bun.sleep(5)
        expect(statSync(journal).size).toBe(0)
        process.kill(pid, "SIGKILL")
      }
      await killed.exited
      const rest = await reader.read()
      expect(rest.done === true || !new TextDecoder().decode(rest.value).includes("compacted")).toBe(true)

      const db = new Database(path, { readonly: true })
      const inSqlite = db.query("SELECT call_id FROM settlements WHERE call_id IN ('done', 'running') ORDER BY call_id").all()
      db.close()
      expect(inSqlite).toEqual(step === "before the SQLite commit" ? [] : [{ call_id: "done" }, { call_id: "running" }])

      expect(await observer.run("lookup done")).toBe("settled")
      expect(await observer.run("lookup running")).toBe("started")
      expect(await observer.run("begin done")).toBe(false)
      expect(await observer.run("begin running")).toBe(false)
      expect(await observer.run("begin fresh")).toBe(true)
      // Appended to the journal as it is now, not to the one the observer read before the compaction.
      expect(readFileSync(SqliteStore.journalPath(path), "utf8")).toStartWith("core-journal 2 ")
      const found = await use(path, Effect.gen(function* () {
        const store = yield* Store.Service
        return [
          (yield* store.lookup(keyOf("done")))?.state,
          (yield* store.lookup(keyOf("running")))?.state,
          (yield* store.lookup(keyOf("fresh")))?.state,
          yield* store.begin(keyOf("running"), "echo", "build"),
        ]
      }))
      expect(found).toEqual(["settled", "started", "started", false])
      expect(await observer.run("lookup fresh")).toBe("started")
    } finally {
      // A check that failed before the kill leaves the recording process (and strace, which would only let go of it).
      recording?.kill("SIGKILL")
      if (recorder !== undefined) {
        try {
          process.kill(recorder, "SIGKILL")
        } catch {
          // killed as the test meant
        }
      }
      await observer.close()
    }
  }

  test("a compaction killed -9 before its SQLite commit", () => killedCompacting("before the SQLite commit"), 60_000)
  test("a compaction killed -9 after its SQLite commit", () => killedCompacting("after the SQLite commit"), 60_000)
  test("a compaction killed -9 with the journal emptied and no header yet", () => {
    // strace holds the process at the one step no hook reaches; Debian's strace package, installed when missing
    // where that may be done, as the store tests' Postgres is.
    if (Bun.which("strace") === null) Bun.spawnSync([join(import.meta.dir, "..", "..", "scripts", "services.sh"), "install"], { stderr: "inherit" })
    expect(Bun.which("strace")).not.toBeNull()
    return killedCompacting("journal emptied, no header yet")
  }, 300_000)

  test("the generation beside the journal is the user's alone: 0600, 8 bytes", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.flatMap(Store.Service, (store) => store.begin(keyOf("a"), "echo", "build")))
    const generation = `${SqliteStore.journalPath(path)}-shm`
    expect(existsSync(generation)).toBe(true)
    expect(statSync(generation).mode & 0o777).toBe(0o600)
    expect(statSync(generation).size).toBe(8)
  })
})

/**
 * An index in memory: what SQLite would hold; `dies` makes the next write end the writer after committing; `asked`
 * counts the rows and sessions the journal asked it about.
 */
const memoryIndex = () => {
  const rows = new Map<string, Journal.Row>()
  const applied = new Map<string, number>()
  const state = { dies: false, writes: 0, asked: 0 }
  const index: Journal.Index = {
    row: ([location, sessionID, toolCallID]) => {
      state.asked++
      return rows.get(`${location}/${sessionID}/${toolCallID}`)
    },
    empty: (location, sessionID) => {
      state.asked++
      return ![...rows.values()].some((row) => row.location === location && row.session_id === sessionID)
    },
    applied: (nonce) => applied.get(nonce),
    write: (written, nonce, through) => {
      for (const row of written) rows.set(`${row.location}/${row.session_id}/${row.call_id}`, row)
      applied.clear()
      applied.set(nonce, through)
      state.writes++
      if (state.dies) {
        state.dies = false
        throw new Error("killed after the commit")
      }
    },
  }
  return { index, rows, state }
}

const row = (callID: string, sessionID = "s"): Journal.Row => ({
  location: "/p",
  session_id: sessionID,
  call_id: callID,
  tool: "echo",
  agent: "build",
  state: "started",
  owner: "me",
  reason: null,
  settlement: null,
  lease_until: null,
  started_at: 1,
  settled_at: null,
  message_id: null,
  input: null,
  input_bytes: null,
})

describe("Journal compaction killed after SQLite committed", () => {
  test("the next reader skips what SQLite has, and nothing is applied twice", () => {
    const path = join(tempDir(), "core.journal")
    const { index, rows, state } = memoryIndex()
    const first = Journal.open(path, index)
    first.writing(() => {
      first.append({ e: "new", row: row("a") })
      first.append({ e: "settled", k: ["/p", "s", "a"], tool: "echo", settlement: "{}", at: 2 })
    })
    state.dies = true
    expect(() => first.writing(() => first.compact())).toThrow("killed after the commit")
    first.close()
    expect(rows.get("/p/s/a")).toMatchObject({ state: "settled", settlement: "{}" })
    // The journal still holds both records; the next process must not replay them over what SQLite has since.
    rows.set("/p/s/a", { ...rows.get("/p/s/a")!, settled_at: 99 })

    const second = Journal.open(path, index)
    second.reading(() => expect(second.row(["/p", "s", "a"])).toMatchObject({ state: "settled", settled_at: 99 }))
    second.writing(() => {
      second.append({ e: "new", row: row("b") })
      second.compact()
    })
    expect(rows.get("/p/s/a")).toMatchObject({ settled_at: 99 })
    expect(rows.get("/p/s/b")).toMatchObject({ state: "started" })
    expect(lines(path)).toEqual([])
    second.close()
  })

  test("a journal emptied but given no header (killed in between) starts again under a new nonce", () => {
    const path = join(tempDir(), "core.journal")
    writeFileSync(path, "")
    const { index, rows } = memoryIndex()
    const journal = Journal.open(path, index)
    journal.writing(() => journal.append({ e: "new", row: row("a") }))
    const other = Journal.open(path, index)
    other.reading(() => expect(other.row(["/p", "s", "a"])).toMatchObject({ state: "started" }))
    journal.writing(() => journal.compact())
    expect(rows.get("/p/s/a")).toMatchObject({ state: "started" })
    // The other sees the new nonce and reads SQLite's row.
    other.reading(() => expect(other.row(["/p", "s", "a"])).toMatchObject({ state: "started" }))
    journal.close()
    other.close()
  })

  test("appending or compacting outside a write is refused", () => {
    const journal = Journal.open(join(tempDir(), "core.journal"), memoryIndex().index)
    expect(() => journal.append({ e: "new", row: row("a") })).toThrow("outside a write")
    expect(() => journal.reading(() => journal.writing(() => undefined))).toThrow("inside a read")
    journal.close()
  })
})

describe("Journal: what it knows of SQLite", () => {
  /** Begins `callID` of `sessionID` unless a row is recorded for it, as the store does; answers whether it did. */
  const begin = (journal: Journal.Journal, callID: string, sessionID = "s") =>
    journal.writing(() => {
      if (journal.row(["/p", sessionID, callID]) !== undefined) return false
      journal.append({ e: "new", row: row(callID, sessionID) })
      return true
    })

  test("a session compacted past every cache still begins a fresh call without asking SQLite, and finds every old one", () => {
    const { index, state } = memoryIndex()
    const journal = Journal.open(join(tempDir(), "core.journal"), index, { rows: 8, ids: 1_000 })
    for (let call = 0; call < 100; call++) {
      expect(begin(journal, `c${call}`)).toBe(true)
      if (call % 10 === 9) journal.writing(() => journal.compact())
    }
    // One question: whether the new session had rows; SQLite now holds 100 of them, 8 kept as rows.
    expect(state.asked).toBe(1)
    expect(begin(journal, "c100")).toBe(true)
    expect(state.asked).toBe(1)
    // Every old call is still found (read from SQLite where no longer cached), so none is begun again.
    for (let call = 0; call < 100; call++) expect(begin(journal, `c${call}`)).toBe(false)
    expect(state.asked).toBeGreaterThan(1)
    journal.close()
  })

  test("past its limit of ids it forgets the sessions used least recently, asks SQLite about them again, and misses none", () => {
    const { index, state } = memoryIndex()
    const journal = Journal.open(join(tempDir(), "core.journal"), index, { rows: 4, ids: 10 })
    // Six calls in each of sessions a and b, compacted: 12 ids over the limit, so a (used first) is forgotten.
    for (const session of ["a", "b"]) {
      for (let call = 0; call < 6; call++) expect(begin(journal, `${session}${call}`, session)).toBe(true)
    }
    journal.writing(() => journal.compact())
    const asked = state.asked
    expect(begin(journal, "b6", "b")).toBe(true)
    expect(state.asked).toBe(asked)
    // a is asked about again: it has rows, so each of its calls is looked up, and the old ones are found.
    expect(begin(journal, "a6", "a")).toBe(true)
    expect(state.asked).toBe(asked + 2)
    for (let call = 0; call < 6; call++) {
      expect(begin(journal, `a${call}`, "a")).toBe(false)
      expect(begin(journal, `b${call}`, "b")).toBe(false)
    }
    journal.close()
  })

  test("another process's compaction makes it forget what it knew: a call the other made is found, not begun again", () => {
    const path = join(tempDir(), "core.journal")
    const { index } = memoryIndex()
    const first = Journal.open(path, index)
    const second = Journal.open(path, index)
    expect(begin(first, "a")).toBe(true)
    first.writing(() => first.compact())
    // `first` knows every id of session s in SQLite; `second` adds one and compacts it under a new nonce.
    expect(begin(second, "a")).toBe(false)
    expect(begin(second, "b")).toBe(true)
    second.writing(() => second.compact())
    expect(begin(first, "b")).toBe(false)
    expect(begin(first, "c")).toBe(true)
    first.close()
    second.close()
  })
})

describe("Journal layout", () => {
  const settledLine = (callID: string) =>
    JSON.stringify({ e: "settled", k: ["/p", "s", callID], tool: "echo", settlement: JSON.stringify(settlement(callID)), at: 2 })
  const newLine = (callID: string) => JSON.stringify({ e: "new", row: { ...row(callID), owner: "gone-host:1:1", lease_until: 1 } })

  test("a journal an older core left (one line a record, no end) is read once as the store opens, into SQLite", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.void)
    // SQLite applied the older journal through its first record (a compaction killed before it emptied it); the
    // rest: a call settled, one begun, and a torn last line, as that core left them.
    const header = "core-journal 1 0123456789abcdef\n"
    const applied = `${header}${newLine("old")}\n`
    const db = new Database(path)
    db.query("INSERT INTO journal_applied (nonce, through) VALUES (?, ?)").run("0123456789abcdef", Buffer.byteLength(applied))
    db.close()
    const journal = SqliteStore.journalPath(path)
    writeFileSync(journal, `${applied}${newLine("done")}\n${settledLine("done")}\n${newLine("begun")}\n${settledLine("begun").slice(0, 30)}`)
    const found = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      return {
        old: (yield* store.lookup(keyOf("old")))?.state,
        done: yield* store.lookup(keyOf("done")),
        begun: (yield* store.lookup(keyOf("begun")))?.state,
        again: yield* store.begin(keyOf("done"), "echo", "build"),
        fresh: yield* store.begin(keyOf("fresh"), "echo", "build"),
      }
    }), { compactBytes: Number.MAX_SAFE_INTEGER })
    // "old" was applied already (SQLite has no row of it: it is not read again); "begun" stays begun, its torn
    // settlement never a record.
    expect(found).toEqual({
      old: undefined,
      done: { state: "settled", agent: "build", settlement: settlement("done") },
      begun: "started",
      again: false,
      fresh: true,
    })
    expect(readFileSync(journal).subarray(0, 15).toString()).toBe("core-journal 2 ")
    // The older journal went into SQLite as the store opened; the call begun since is in the journal of today's
    // layout (a few records are left there as the store closes), where the next process reads it.
    const after = new Database(path, { readonly: true })
    expect(after.query("SELECT call_id, state FROM settlements ORDER BY call_id").all()).toEqual([
      { call_id: "begun", state: "started" },
      { call_id: "done", state: "settled" },
    ])
    after.close()
    expect(await use(path, Effect.flatMap(Store.Service, (store) => store.lookup(keyOf("fresh"))))).toMatchObject({ state: "started" })
  })

  test("a compaction of many rows SQLite has already (begun, now settled) changes each of them, and only them", async () => {
    const path = join(tempDir(), "core.db")
    const ids = Array.from({ length: 100 }, (_, index) => `row-${index}`)
    const sqlite = () => {
      const db = new Database(path, { readonly: true })
      try {
        return db.query("SELECT call_id, state, settlement, agent FROM settlements ORDER BY id").all() as Array<{
          call_id: string
          state: string
          settlement: string | null
          agent: string | null
        }>
      } finally {
        db.close()
      }
    }
    const options = { compactBytes: Number.MAX_SAFE_INTEGER }
    // Begun by one process (compacted as it closes: many rows at a time), settled by the next (the same rows again).
    await use(path, Effect.forEach(ids, (id) => Effect.flatMap(Store.Service, (store) => store.begin(keyOf(id), "echo", "build"))), options)
    expect(sqlite().map((row) => row.state)).toEqual(ids.map(() => "started"))
    await use(
      path,
      Effect.forEach(ids.slice(0, 99), (id) => Effect.flatMap(Store.Service, (store) => store.settle(keyOf(id), settlement(id), { state: "owned" }))),
      options,
    )
    const rows = sqlite()
    expect(rows.map((row) => row.call_id)).toEqual(ids)
    expect(rows.slice(0, 99).map((row) => [row.state, JSON.parse(row.settlement!).callID, row.agent])).toEqual(ids.slice(0, 99).map((id) => ["settled", id, "build"]))
    expect(rows[99]).toMatchObject({ call_id: "row-99", state: "started", settlement: null })
  })

  test("a process closing the store leaves a few records in the journal for the next, and compacts a longer one", async () => {
    const path = join(tempDir(), "core.db")
    const rowsInSqlite = () => {
      const db = new Database(path, { readonly: true })
      try {
        return (db.query("SELECT COUNT(*) AS n FROM settlements").get() as { n: number }).n
      } finally {
        db.close()
      }
    }
    const settleAll = (ids: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const store = yield* Store.Service
        for (const id of ids) {
          yield* store.begin(keyOf(id), "echo", "build")
          yield* store.settle(keyOf(id), settlement(id), { state: "owned" })
        }
      })
    // One call, as `core exec` makes it: SQLite is not written as the store closes.
    await use(path, settleAll(["one"]))
    expect(rowsInSqlite()).toBe(0)
    expect(statSync(SqliteStore.journalPath(path)).size).toBeGreaterThan(0)
    // The next process reads it from the journal, and cannot begin it again.
    const read = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      return { found: yield* store.lookup(keyOf("one")), again: yield* store.begin(keyOf("one"), "echo", "build") }
    }))
    expect(read).toEqual({ found: { state: "settled", agent: "build", settlement: settlement("one") }, again: false })
    // Past CLOSE_COMPACT_BYTES (none compacted as they are appended), closing compacts them all.
    const many = Array.from({ length: 1_000 }, (_, index) => `many-${index}`)
    const size = await use(
      path,
      Effect.andThen(settleAll(many), Effect.sync(() => readFileSync(SqliteStore.journalPath(path)).readUInt32LE(END_AT))),
      { compactBytes: Number.MAX_SAFE_INTEGER },
    )
    // Its records' committed end, as it closed: past the size a closing process compacts from.
    expect(size).toBeGreaterThan(SqliteStore.CLOSE_COMPACT_BYTES)
    expect(rowsInSqlite()).toBe(1_001)
    const reopened = await use(path, Effect.flatMap(Store.Service, (store) => store.lookup(keyOf("many-999"))))
    expect(reopened?.state).toBe("settled")
  })

  test("a record larger than the file grows it, read whole by another process; compaction brings it back", async () => {
    const path = join(tempDir(), "core.db")
    const journal = SqliteStore.journalPath(path)
    const other = peer(path)
    try {
      expect(await other.run("begin small")).toBe(true)
      const capacity = statSync(journal).size
      const large = { ...settlement("large"), content: [{ type: "text" as const, text: "x".repeat(3 * capacity) }] }
      await use(path, Effect.gen(function* () {
        const store = yield* Store.Service
        expect(yield* store.begin(keyOf("large"), "echo", "build")).toBe(true)
        expect(yield* store.settle(keyOf("large"), large, { state: "owned" })).toBe(true)
      }), { compactBytes: Number.MAX_SAFE_INTEGER })
      // The closing store compacted: the journal is back to its size, SQLite has the record whole.
      expect(statSync(journal).size).toBe(capacity)
      expect(await other.run("lookup large")).toBe("settled")
      expect(await other.run("begin large")).toBe(false)
      expect(await other.run("begin next")).toBe(true)
      const whole = await use(path, Effect.flatMap(Store.Service, (store) => store.lookup(keyOf("large"))))
      expect(whole).toEqual({ state: "settled", agent: "build", settlement: large })
    } finally {
      await other.close()
    }
  }, 60_000)

  test("an end past the file's size is reported, never read past", async () => {
    const path = join(tempDir(), "core.db")
    await use(path, Effect.flatMap(Store.Service, (store) => store.begin(keyOf("a"), "echo", "build")), {
      compactBytes: Number.MAX_SAFE_INTEGER,
    })
    const journal = SqliteStore.journalPath(path)
    const bytes = readFileSync(journal)
    bytes.writeUInt32LE(bytes.length + 1, END_AT)
    writeFileSync(journal, bytes)
    const exit = await Effect.runPromiseExit(
      Effect.flatMap(Store.Service, (store) => store.begin(keyOf("b"), "echo", "build")).pipe(Effect.provide(SqliteStore.layer(path))),
    )
    expect(String(exit)).toContain(`the journal ${journal} ends at byte ${bytes.length + 1}, outside its ${bytes.length} bytes`)
  })

  test("a journal that trusts its generation sees the appends of one that cannot (an NFS client of the same disk)", () => {
    const path = join(tempDir(), "core.journal")
    const { index } = memoryIndex()
    const trusting = Journal.open(path, index, { shared: true })
    // Told its filesystem shares no pages: it looks every time, and still moves the generation for those who trust it.
    const looking = Journal.open(path, index, { shared: false })
    trusting.writing(() => trusting.append({ e: "new", row: row("a") }))
    looking.writing(() => {
      expect(looking.row(["/p", "s", "a"])).toMatchObject({ state: "started" })
      looking.append({ e: "new", row: row("b") })
    })
    trusting.writing(() => {
      expect(trusting.row(["/p", "s", "b"])).toMatchObject({ state: "started" })
      trusting.append({ e: "new", row: row("c") })
    })
    looking.writing(() => looking.compact())
    trusting.reading(() => expect(trusting.row(["/p", "s", "c"])).toMatchObject({ state: "started" }))
    trusting.close()
    looking.close()
  })

  test("ids whose NUL sits in different places are two calls, before and after compaction", async () => {
    const path = join(tempDir(), "core.db")
    // Refused by every edge now (CallKey.malformed), but kept by stores of older cores: never one call's record for another's.
    const first = { location: "/p", sessionID: "s\u0000x", toolCallID: "y" }
    const second = { location: "/p", sessionID: "s", toolCallID: "x\u0000y" }
    const found = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      expect(yield* store.begin(first, "echo", "build")).toBe(true)
      expect(yield* store.settle(first, settlement("first"), { state: "owned" })).toBe(true)
      const before = yield* store.lookup(second)
      return { before, begun: yield* store.begin(second, "echo", "build") }
    }), { compactBytes: Number.MAX_SAFE_INTEGER })
    expect(found).toEqual({ before: undefined, begun: true })
    const after = await use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      return [(yield* store.lookup(first))?.state, (yield* store.lookup(second))?.state, yield* store.begin(second, "echo", "build")]
    }), { compactBytes: 0 })
    expect(after).toEqual(["settled", "started", false])
  })

  /**
   * Begins c1, c2 and c3 in another process, compacting after every record, under strace injecting `faults` into its
   * calls on the journal; that process kills itself -9 after the three. Answers what each begin answered.
   */
  const begunUnder = async (path: string, faults: ReadonlyArray<string>) => {
    if (Bun.which("strace") === null) Bun.spawnSync([join(import.meta.dir, "..", "..", "scripts", "services.sh"), "install"], { stderr: "inherit" })
    expect(Bun.which("strace")).not.toBeNull()
    const script = `
      import { Effect } from "effect"
      import { writeSync } from "node:fs"
      import { SqliteStore } from ${STORE}
      import { Store } from ${STORE_TYPES}
      await Effect.runPromise(Effect.gen(function* () {
        const store = yield* Store.Service
        for (const id of ["c1", "c2", "c3"]) {
          const exit = yield* Effect.exit(store.begin({ location: "/p", sessionID: "s", toolCallID: id }, "echo", "build"))
          writeSync(1, JSON.stringify([id, exit._tag === "Success" ? exit.value : "failed"]) + "\\n")
        }
        process.kill(process.pid, "SIGKILL")
      }).pipe(Effect.provide(SqliteStore.layer(${JSON.stringify(path)}, { compactBytes: 0 }))))
    `
    const traced = Bun.spawn(
      ["strace", "-f", "-qq", "-o", "/dev/null", "-P", SqliteStore.journalPath(path), ...faults.flatMap((fault) => ["-e", fault]), process.execPath, "-e", script],
      { stdout: "pipe", stderr: "pipe" },
    )
    const [out, err, code] = await Promise.all([new Response(traced.stdout).text(), new Response(traced.stderr).text(), traced.exited])
    // Killed -9 by itself after the three (strace exits as its tracee did), never by a bus error.
    expect({ code, err: code === 137 && !err.includes("Bus error") ? "" : err }).toEqual({ code: 137, err: "" })
    return out.trim().split("\n").map((line) => JSON.parse(line) as [string, boolean | "failed"])
  }

  /** What the next process finds of c1, c2 and c3: each one's state, and whether it could be begun again. */
  const foundAfter = (path: string) =>
    use(path, Effect.gen(function* () {
      const store = yield* Store.Service
      const found: Array<[string, string | undefined, boolean]> = []
      for (const id of ["c1", "c2", "c3"]) found.push([id, (yield* store.lookup(keyOf(id)))?.state, yield* store.begin(keyOf(id), "echo", "build")])
      return found
    }))

  test("a compaction that could not start the journal again (a full disk) loses no intent answered as recorded", async () => {
    const path = join(tempDir(), "core.db")
    // The journal's blocks cannot be had (from the second fallocate on) and its first pwrite fails: the compaction
    // after c1 cuts the journal, then cannot write its new header.
    const answers = await begunUnder(path, ["trace=pwrite64,fallocate", "inject=fallocate:error=ENOSPC:when=2+", "inject=pwrite64:error=ENOSPC:when=1"])
    expect(answers.map(([id]) => id)).toEqual(["c1", "c2", "c3"])
    expect(answers.some(([, begun]) => begun === true)).toBe(true)
    const found = await foundAfter(path)
    for (const [id, begun] of answers) {
      const [, state, again] = found.find(([other]) => other === id)!
      // Answered as recorded: there, and never begun again. Answered failed: nothing of it ran, so it may begin now.
      expect([id, begun === true ? state : "not recorded", begun === true ? again : "-"]).toEqual([id, begun === true ? "started" : "not recorded", begun === true ? false : "-"])
    }
  }, 60_000)

  test("a compaction whose journal could not be grown again keeps no mapping past the file's end: no bus error, nothing lost", async () => {
    const path = join(tempDir(), "core.db")
    // The fourth ftruncate is the first compaction's growth of the journal it has just cut to nothing.
    const answers = await begunUnder(path, ["trace=ftruncate", "inject=ftruncate:error=EIO:when=4"])
    const found = await foundAfter(path)
    for (const [id, begun] of answers) {
      if (begun !== true) continue
      expect(found.find(([other]) => other === id)).toEqual([id, "started", false])
    }
    expect(answers.filter(([, begun]) => begun === true).length).toBeGreaterThan(0)
  }, 60_000)

  test("a process that cannot open the journal's generation does not open the store, rather than change the journal unseen", async () => {
    const path = join(tempDir(), "core.db")
    // A long-lived process that trusts the generation (and skips reading the journal while it stands still).
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(SqliteStore.layer(path), scope))
    const store = Context.get(context, Store.Service)
    try {
      expect(await Effect.runPromise(store.begin(keyOf("warm"), "echo", "build"))).toBe(true)
      if (Bun.which("strace") === null) Bun.spawnSync([join(import.meta.dir, "..", "..", "scripts", "services.sh"), "install"], { stderr: "inherit" })
      const other = Bun.spawn(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-P", `${SqliteStore.journalPath(path)}-shm`, "-e", "trace=openat", "-e", "inject=openat:error=EMFILE",
          process.execPath, "-e", `
          import { Effect } from "effect"
          import { SqliteStore } from ${STORE}
          import { Store } from ${STORE_TYPES}
          const exit = await Effect.runPromiseExit(Effect.gen(function* () {
            return yield* (yield* Store.Service).begin(${JSON.stringify(keyOf("c1"))}, "echo", "build")
          }).pipe(Effect.provide(SqliteStore.layer(${JSON.stringify(path)}))))
          console.log(JSON.stringify(exit._tag === "Success" ? exit.value : String(exit.cause)))
        `],
        { stdout: "pipe", stderr: "pipe" },
      )
      const said = JSON.parse((await new Response(other.stdout).text()).trim()) as unknown
      await other.exited
      expect(String(said)).toContain("-shm) could not be opened and mapped")
      // Nothing was begun by the other: the long-lived process begins the call, once.
      expect(await Effect.runPromise(store.lookup(keyOf("c1")))).toBeUndefined()
      expect(await Effect.runPromise(store.begin(keyOf("c1"), "echo", "build"))).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 60_000)

  const WAYS = [
    ["written through their mappings", { shared: true }],
    ["its generation shared, both written with pwrite, as on a copy-on-write filesystem", { shared: true, mappedWrites: false }],
    ["written with pwrite, as on NFS", { shared: false }],
  ] as const
  for (const [way, options] of WAYS) {
    test(`two journals on one file (${way}) see each other's appends, growth and compaction`, () => {
      const path = join(tempDir(), "core.journal")
      const { index, rows } = memoryIndex()
      const first = Journal.open(path, index, options)
      const second = Journal.open(path, index, options)
      first.writing(() => first.append({ e: "new", row: row("a") }))
      second.reading(() => expect(second.row(["/p", "s", "a"])).toMatchObject({ state: "started" }))
      // A record past the file's end: the file grows under the other, which reads it whole.
      const large = "y".repeat(statSync(path).size + 1)
      second.writing(() => second.append({ e: "settled", k: ["/p", "s", "a"], tool: "echo", settlement: large, at: 3 }))
      first.reading(() => expect(first.row(["/p", "s", "a"])).toMatchObject({ state: "settled", settlement: large }))
      first.writing(() => first.compact())
      expect(rows.get("/p/s/a")).toMatchObject({ state: "settled", settlement: large })
      // Cut back by the compaction; the other finds the new journal and appends to it.
      second.writing(() => second.append({ e: "new", row: row("b") }))
      first.reading(() => expect(first.row(["/p", "s", "b"])).toMatchObject({ state: "started" }))
      expect(lines(path).map((line) => (JSON.parse(line) as Journal.Entry).e)).toEqual(["new"])
      // Copied past the end and not committed (killed in between): unread, and appended over.
      writeAtEnd(path, `${JSON.stringify({ e: "new", row: row("ghost") })}\n`, false)
      first.writing(() => first.append({ e: "new", row: row("c") }))
      for (const journal of [first, second]) {
        journal.reading(() => {
          expect(journal.row(["/p", "s", "ghost"])).toBeUndefined()
          expect(journal.row(["/p", "s", "c"])).toMatchObject({ state: "started" })
        })
      }
      expect(lines(path).map((line) => (JSON.parse(line) as Journal.Row & { row: Journal.Row }).row.call_id)).toEqual(["b", "c"])
      first.close()
      second.close()
    })
  }
})
