// The Postgres store's own edges: migrations on start, once, whatever the number of hosts starting together;
// a schema from a newer core refused and left alone; a URL that cannot be used refused, its password never shown.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { SQL } from "bun"
import { Effect, Fiber } from "effect"
import { Settlement } from "../../src/contract/settlement"
import { PostgresStore } from "../../src/store/postgres-store"
import { Owner } from "../../src/store/owner"
import { Store } from "../../src/store/store"
import { freshDatabase } from "../support/postgres"

const open = (url: string) => Effect.runPromiseExit(Effect.void.pipe(Effect.provide(PostgresStore.layer(url))))

describe("PostgresStore migrations", () => {
  test("hosts starting together on a new database all open it, and it is migrated once", async () => {
    const { pgbouncer, postgres } = await freshDatabase()
    const script = `
      import { Effect } from "effect"
      import { PostgresStore } from ${JSON.stringify(join(import.meta.dir, "../../src/store/postgres-store.ts"))}
      await Effect.runPromise(Effect.void.pipe(Effect.provide(PostgresStore.layer(process.argv[1]))))
      console.log("opened")
    `
    const children = Array.from({ length: 6 }, (_, index) =>
      Bun.spawn([process.execPath, "-e", script, index % 2 === 0 ? pgbouncer : postgres], { stdout: "pipe", stderr: "pipe" }),
    )
    const outcomes = await Promise.all(
      children.map(async (child) => ({
        code: await child.exited,
        stdout: await new Response(child.stdout).text(),
        stderr: await new Response(child.stderr).text(),
      })),
    )
    for (const outcome of outcomes) expect(outcome).toMatchObject({ code: 0, stdout: "opened\n" })
    const sql = new SQL(postgres, { max: 1 })
    const versions = await sql`SELECT version FROM core.schema_version ORDER BY version`
    await sql.close()
    expect(versions.map((row: { version: number }) => row.version)).toEqual(
      Array.from({ length: PostgresStore.SCHEMA_VERSION }, (_, index) => index + 1),
    )
  }, 120_000)

  test("a schema written by a newer core is refused, and left as it was", async () => {
    const { postgres } = await freshDatabase()
    expect(String(await open(postgres))).toContain("Success")
    const sql = new SQL(postgres, { max: 1 })
    await sql`INSERT INTO core.schema_version (version) VALUES (${PostgresStore.SCHEMA_VERSION + 1})`
    await sql`INSERT INTO core.sweeps (name, at) VALUES ('retention', 42)`
    const refused = await open(postgres)
    expect(refused._tag === "Failure" && JSON.stringify(refused.cause)).toContain("newer_version")
    expect(String(refused)).toContain(`schema version ${PostgresStore.SCHEMA_VERSION + 1}, newer than this core understands`)
    expect(await sql`SELECT at FROM core.sweeps`).toEqual([{ at: "42" }])
    await sql.close()
  }, 60_000)
})

// A host stalled in its migration (holding its lock) held every core opening the store with no end, and the first
// SIGTERM (what timeout, systemd and Kubernetes send) did nothing: the open was not interruptible.
describe("PostgresStore opening while another host holds its migration", () => {
  test("fails once it has had no answer for an operation's time, saying why; a stop ends the wait at once", async () => {
    const { postgres } = await freshDatabase()
    const holder = new SQL(postgres, { max: 1 })
    await holder`SELECT pg_advisory_lock(${PostgresStore.MIGRATION_LOCK})`
    try {
      const timedOut = String(await Effect.runPromiseExit(Effect.void.pipe(Effect.provide(PostgresStore.layer(postgres, { operationTimeoutMs: 500 })))))
      expect(timedOut).toContain(`Could not open the store at ${PostgresStore.redact(postgres)}: it did not answer within 0.5 s`)
      expect(timedOut).toContain("another host may hold its schema migration")
      // With an operation's own time (30 s), interrupted as core's first signal interrupts it: it ends now.
      const opening = Effect.runFork(Effect.void.pipe(Effect.provide(PostgresStore.layer(postgres))))
      await Bun.sleep(300)
      const stopped = performance.now()
      await Effect.runPromise(Fiber.interrupt(opening))
      expect(performance.now() - stopped).toBeLessThan(5_000)
      // No connection of theirs is left waiting on the lock at the server (each held a slot until it was let go).
      const waiting = async () =>
        Number((await holder`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0].n)
      for (let polls = 0; polls < 60 && (await waiting()) > 0; polls++) await Bun.sleep(100)
      expect(await waiting()).toBe(0)
    } finally {
      await holder`SELECT pg_advisory_unlock(${PostgresStore.MIGRATION_LOCK})`
      await holder.close()
    }
    // Nothing was left half done: the next open migrates it.
    expect(String(await open(postgres))).toContain("Success")
  }, 60_000)
})

describe("PostgresStore URLs", () => {
  test("a URL that is not postgres:// is refused, saying what a store URL is", async () => {
    expect(String(await open("mysql://core@127.0.0.1/core"))).toContain("a store URL starts with postgres://")
  })

  // "pgbouncer=1", "TRUE" or "yes" were taken for false, and the pooler then refused the prepared statements in words
  // that did not say what to do.
  test("?pgbouncer= other than true or false is refused; a pooler refusing prepared statements says to add it", async () => {
    const { pgbouncer } = await freshDatabase()
    const bare = pgbouncer.replace("?pgbouncer=true", "")
    for (const value of ["1", "TRUE", "yes"]) {
      expect(String(await open(`${bare}?pgbouncer=${value}`))).toContain(`: ?pgbouncer=${value} is neither true nor false`)
    }
    // Without it, through pgbouncer in transaction mode: the refusal says what to add.
    expect(String(await open(bare))).toContain(
      'prepared statement "P0" already exists (a pooler in transaction mode, such as pgbouncer, cannot keep prepared statements: add ?pgbouncer=true to the store URL)',
    )
    expect(String(await open(pgbouncer))).toContain("Success")
  }, 60_000)

  test("a password given in the query is not shown either", () => {
    const shown = PostgresStore.redact("postgres://core@127.0.0.1:1/core?password=QSECRET&sslmode=require&SSLPassword=K2")
    expect(shown).not.toContain("QSECRET")
    expect(shown).not.toContain("K2")
    expect(shown).toContain("sslmode=require")
  })

  test("a store that cannot be reached is an open error naming the URL without its password", async () => {
    const exit = String(await open("postgres://core:hunter2@127.0.0.1:1/core"))
    expect(exit).toContain("Could not open the store at postgres://core:***@127.0.0.1:1/core")
    expect(exit).not.toContain("hunter2")
  }, 60_000)
})

// Hosts sharing a store need not share a clock (fleet.md): every row is stamped by the database's. A host whose
// clock runs ten days ahead computed its retention cutoff from its own and removed every record of the last three
// days, a call still running among them: retried, a settled call ran again, and a running one ran twice at once.
describe("PostgresStore retention on a host whose clock runs ahead", () => {
  test("its sweep removes nothing still within the retention on the database's clock, nor a running call", async () => {
    const { postgres } = await freshDatabase()
    const DAY = 86_400_000
    const RETENTION = 7 * DAY
    const done = { location: "/p", sessionID: "s", toolCallID: "done" }
    const running = { location: "/p", sessionID: "s", toolCallID: "running" }
    const old = { location: "/p", sessionID: "s", toolCallID: "old" }
    const success = (callID: string): Settlement.Info => ({ tool: "echo", callID, status: "success", content: [{ type: "text", text: "hi" }], structured: "hi", outputs: [] })
    const layer = PostgresStore.layer(postgres)
    await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        yield* store.settle(done, success("done"), { state: "absent", agent: "build" })
        expect(yield* store.begin(running, "echo", "build")).toBe(true)
        yield* store.settle(old, success("old"), { state: "absent", agent: "build" })
      }).pipe(Effect.provide(layer)),
    )
    // A record older than the retention on the database's clock: it goes, from whichever host sweeps.
    const sql = new SQL(postgres, { max: 1 })
    await sql`UPDATE core.settlements SET settled_at = settled_at - ${8 * DAY}, started_at = started_at - ${8 * DAY} WHERE call_id = 'old'`
    await sql.close()
    const real = Date.now
    Date.now = () => real() + 10 * DAY
    let removed: number
    try {
      removed = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          expect(yield* store.claimSweep(Date.now(), 3_600_000)).toBe(true)
          return yield* store.prune(Date.now() - RETENTION, 100)
        }).pipe(Effect.provide(layer)),
      )
    } finally {
      Date.now = real
    }
    expect(removed).toBe(1)
    await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        expect(yield* store.lookup(old)).toBeUndefined()
        expect(yield* store.lookup(done)).toMatchObject({ state: "settled" })
        expect(yield* store.lookup(running)).toMatchObject({ state: "started" })
        expect(yield* store.begin(running, "echo", "build")).toBe(false)
      }).pipe(Effect.provide(layer)),
    )
  }, 60_000)
})

// A pooler, a network path or a database that stops answering (a half-open connection) held a call, and core exec,
// for as long as it stayed so: the tool had finished, its settlement was never answered.
describe("PostgresStore on a host whose clock is off", () => {
  test("records when its calls started on the database's clock: they list in order, within --since and with their durations like any host's", async () => {
    const { postgres } = await freshDatabase()
    const settlement = (callID: string): Settlement.Info => ({ tool: "echo", callID, status: "success", content: [], structured: null, outputs: [] })
    const call = (toolCallID: string) => ({ location: "/p", sessionID: "s", toolCallID })
    /** Records the call `id` on a store of its own (a host), opened and used with the host's clock. */
    const record = (id: string) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.begin(call(id), "echo", "build", { startedAt: Date.now(), messageID: "m", input: "{}", inputBytes: 2 })
          yield* store.settle(call(id), settlement(id), { state: "owned" })
        }).pipe(Effect.provide(PostgresStore.layer(postgres)), Effect.scoped),
      )
    const real = Date.now
    await record("first")
    // A host an hour behind records the second call.
    Date.now = () => real() - 3_600_000
    try {
      await record("second")
    } finally {
      Date.now = real
    }
    await record("third")
    const listed = await Effect.runPromise(
      Effect.flatMap(Store.Service, (store) => store.list({ location: "/p", since: real() - 600_000, limit: 10 })).pipe(
        Effect.provide(PostgresStore.layer(postgres)),
        Effect.scoped,
      ),
    )
    expect(listed.map((entry) => entry.toolCallID)).toEqual(["first", "second", "third"])
    for (const entry of listed) {
      expect(entry.settledAt! - entry.startedAt!).toBeLessThan(60_000)
      expect(Math.abs(entry.startedAt! - real())).toBeLessThan(60_000)
    }
  }, 60_000)
})

/**
 * A proxy to the database at `postgres` on a port of its own, passing bytes both ways until `set` says otherwise:
 * "drop" loses what comes (a path that drops packets), "hold" keeps it and passes it on, in order, once set back to
 * "pass" (a stopped pooler's sockets keep it); "cut" ends the connection the client next sends on (a pooler or
 * server restarting under it), then passes again; "down" ends every connection as it opens or sends (a server that
 * is restarting, or a pooler refusing logins meanwhile), until set otherwise.
 */
const proxyTo = (postgres: string) => {
  const target = new URL(postgres)
  let mode: "pass" | "drop" | "hold" | "cut" | "down" = "pass"
  const held: Array<() => void> = []
  const pass = (bytes: Uint8Array, send: (copy: Buffer) => void) => {
    if (mode === "drop" || mode === "cut" || mode === "down") return
    const copy = Buffer.from(bytes)
    if (mode === "hold") held.push(() => send(copy))
    else send(copy)
  }
  const proxy = Bun.listen<{ upstream?: Promise<import("bun").Socket<unknown>> }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        if (mode === "down") {
          client.data = {}
          client.terminate()
          return
        }
        client.data = {
          upstream: Bun.connect({
            hostname: target.hostname,
            port: Number(target.port),
            socket: { data: (_, bytes) => pass(bytes, (copy) => void client.write(copy)), close: () => void client.end() },
          }),
        }
      },
      data(client, bytes) {
        if (mode === "down") {
          void client.data.upstream?.then((upstream) => upstream.terminate())
          client.terminate()
          return
        }
        if (mode === "cut") {
          mode = "pass"
          void client.data.upstream?.then((upstream) => upstream.terminate())
          client.terminate()
          return
        }
        pass(bytes, (copy) => void client.data.upstream?.then((upstream) => upstream.write(copy)))
      },
      close(client) {
        void client.data?.upstream?.then((upstream) => upstream.end())
      },
    },
  })
  const through = new URL(postgres)
  through.port = String(proxy.port)
  through.hostname = "127.0.0.1"
  const set = (next: typeof mode) => {
    mode = next
    if (next === "pass") for (const send of held.splice(0)) send()
  }
  return { url: through.toString(), set, stop: () => (set("pass"), proxy.stop(true)) }
}

describe("PostgresStore on a host whose clock is stepped while it runs", () => {
  test("a call recorded after the step is kept at its time on the database's clock", async () => {
    const { postgres } = await freshDatabase()
    const call = { location: "/p", sessionID: "s", toolCallID: "stepped" }
    const real = Date.now
    // An hour behind as the store opens, then put right (NTP, a VM resumed) while it runs.
    Date.now = () => real() - 3_600_000
    try {
      await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          Date.now = real
          yield* store.begin(call, "echo", "build", { startedAt: Date.now(), messageID: "m", input: "{}", inputBytes: 2 })
          yield* store.settle(call, { tool: "echo", callID: "stepped", status: "success", content: [], structured: null, outputs: [] }, { state: "owned" })
        }).pipe(Effect.provide(PostgresStore.layer(postgres)), Effect.scoped),
      )
    } finally {
      Date.now = real
    }
    const listed = await Effect.runPromise(
      Effect.flatMap(Store.Service, (store) => store.list({ location: "/p", since: real() - 600_000, limit: 10 })).pipe(
        Effect.provide(PostgresStore.layer(postgres)),
        Effect.scoped,
      ),
    )
    expect(listed.map((entry) => entry.toolCallID)).toEqual(["stepped"])
    expect(Math.abs(listed[0]!.startedAt! - real())).toBeLessThan(60_000)
    expect(listed[0]!.settledAt! - listed[0]!.startedAt!).toBeLessThan(60_000)
  }, 60_000)
})

describe("PostgresStore against a connection that stops answering", () => {
  test("an operation fails once it has had no answer for its time, naming the store and what it did", async () => {
    const { postgres } = await freshDatabase()
    const proxy = proxyTo(postgres)
    try {
      const key = { location: "/p", sessionID: "s", toolCallID: "stalled" }
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.lookup(key)
          proxy.set("drop")
          const started = performance.now()
          // More at once than the client has connections: each is held by a statement that will never answer.
          const exits = yield* Effect.all(Array.from({ length: 6 }, () => Effect.exit(store.lookup(key))), { concurrency: "unbounded" })
          const waited = performance.now() - started
          proxy.set("pass")
          // New statements go to a client made anew: the store answers again once the network does.
          const after = yield* Effect.exit(store.lookup(key))
          return { exits: exits.map(String), waited, after: String(after) }
        }).pipe(Effect.provide(PostgresStore.layer(proxy.url, { operationTimeoutMs: 400 })), Effect.scoped),
      )
      // Each failed within its own time, none waited on for good.
      expect(outcome.exits.some((exit) => exit.includes("no answer within 0.4 s"))).toBe(true)
      for (const exit of outcome.exits) expect(exit).toContain("Settlement store lookup failed")
      expect(outcome.waited).toBeLessThan(5_000)
      expect(outcome.after).toContain("Success")
    } finally {
      proxy.stop()
    }
  }, 60_000)
})

describe("PostgresStore against a pooler held up for longer than a lease", () => {
  test("a settlement sent before it stopped is recorded once it answers again: the call is not failed", async () => {
    const { postgres } = await freshDatabase()
    const proxy = proxyTo(postgres)
    try {
      const key = { location: "/p", sessionID: "s", toolCallID: "held" }
      const settlement: Settlement.Info = {
        tool: "echo",
        callID: "held",
        status: "success",
        content: [{ type: "text", text: "done" }],
        structured: "done",
        outputs: [],
      }
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          const begun = yield* store.begin(key, "echo", "build")
          proxy.set("hold")
          // The call runs on: its lease's renewal is sent, and goes unanswered.
          yield* Effect.sleep(300)
          const settling = yield* Effect.forkChild(Effect.exit(store.settle(key, settlement, { state: "owned" })))
          // The renewal is given up after a whole lease, and the client replaced, while the settlement waits.
          yield* Effect.sleep(1_200)
          proxy.set("pass")
          const settled = yield* Fiber.join(settling)
          return { begun, settled: String(settled), record: yield* store.lookup(key) }
        }).pipe(Effect.provide(PostgresStore.layer(proxy.url, { operationTimeoutMs: 10_000, leaseMs: 500 })), Effect.scoped),
      )
      expect(outcome.begun).toBe(true)
      expect(outcome.settled).toContain("Success")
      expect(outcome.record).toMatchObject({ state: "settled", settlement: { status: "success", structured: "done" } })
    } finally {
      proxy.stop()
    }
  }, 60_000)
})

describe("PostgresStore when the connection breaks as a call's end is sent", () => {
  test("the end is sent again on a new connection and recorded: the call is not replayed interrupted", async () => {
    const { postgres } = await freshDatabase()
    const proxy = proxyTo(postgres)
    try {
      const key = { location: "/p", sessionID: "s", toolCallID: "cut" }
      const failed = { location: "/p", sessionID: "s", toolCallID: "cut-failed" }
      const settlement: Settlement.Info = { tool: "echo", callID: "cut", status: "success", content: [], structured: "ran", outputs: [] }
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.begin(key, "echo", "build")
          yield* store.begin(failed, "echo", "build")
          proxy.set("cut")
          const settled = yield* store.settle(key, settlement, { state: "owned" })
          proxy.set("cut")
          yield* store.fail(failed, "the tool's process was lost")
          return { settled, record: yield* store.lookup(key), failed: yield* store.lookup(failed) }
        }).pipe(Effect.provide(PostgresStore.layer(proxy.url)), Effect.scoped),
      )
      expect(outcome.settled).toBe(true)
      expect(outcome.record).toMatchObject({ state: "settled", settlement: { status: "success", structured: "ran" } })
      expect(outcome.failed).toMatchObject({ state: "failed", reason: "the tool's process was lost" })
    } finally {
      proxy.stop()
    }
  }, 60_000)
})

// A restart of the server takes seconds, and pgbouncer refuses logins for its server_login_retry (15 s) after: a call's
// end was sent again only three times within 1.3 s, so the result of every call that ended meanwhile was lost (the
// call replayed interrupted). It is now sent again for as long as the operation's time lasts.
describe("PostgresStore while the server restarts as a call's end is sent", () => {
  test("the end is sent again until the server is back within the operation's time, and recorded", async () => {
    const { postgres } = await freshDatabase()
    const proxy = proxyTo(postgres)
    try {
      const key = { location: "/p", sessionID: "s", toolCallID: "restart" }
      const settlement: Settlement.Info = { tool: "echo", callID: "restart", status: "success", content: [], structured: "ran", outputs: [] }
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.begin(key, "echo", "build")
          proxy.set("down")
          setTimeout(() => proxy.set("pass"), 4_000)
          const started = performance.now()
          const settled = yield* store.settle(key, settlement, { state: "owned" })
          return { settled, waitedMs: performance.now() - started, record: yield* store.lookup(key) }
        }).pipe(Effect.provide(PostgresStore.layer(proxy.url, { operationTimeoutMs: 15_000 })), Effect.scoped),
      )
      expect(outcome.settled).toBe(true)
      expect(outcome.waitedMs).toBeGreaterThan(3_500)
      expect(outcome.record).toMatchObject({ state: "settled", settlement: { status: "success", structured: "ran" } })
    } finally {
      proxy.stop()
    }
  }, 60_000)
})

// A host waiting for a call another runs looks it up until it ends: a restart of the server failed the lookup at
// once, and `core exec` with it (exit 3), though the call ran on.
describe("PostgresStore while the server restarts as a call is looked up", () => {
  test("the lookup is made again until the server is back within the operation's time", async () => {
    const { postgres } = await freshDatabase()
    const proxy = proxyTo(postgres)
    try {
      const key = { location: "/p", sessionID: "s", toolCallID: "looked-up" }
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          yield* store.begin(key, "echo", "build")
          proxy.set("down")
          setTimeout(() => proxy.set("pass"), 3_000)
          const started = performance.now()
          const record = yield* store.lookup(key)
          return { record, waitedMs: performance.now() - started }
        }).pipe(Effect.provide(PostgresStore.layer(proxy.url, { operationTimeoutMs: 15_000 })), Effect.scoped),
      )
      expect(outcome.waitedMs).toBeGreaterThan(2_500)
      expect(outcome.record).toMatchObject({ state: "started" })
    } finally {
      proxy.stop()
    }
  }, 60_000)
})

// An intent that answered too late (here: a table lock held past the time) may still be written once the statement
// goes through: this process runs nothing for it. Left started, a waiter on this machine waited for it for as long
// as this process lived (it runs here, lease or not); it is recorded failed as soon as it goes through.
describe("PostgresStore: an intent recorded after its caller gave up", () => {
  test("runs nothing, and is recorded failed as it goes through, not left running for the life of this process", async () => {
    const { postgres } = await freshDatabase()
    const key = { location: "/p", sessionID: "s", toolCallID: "late" }
    const locker = new SQL(postgres, { max: 1 })
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const store = yield* Store.Service
        yield* store.lookup(key)
        const reserved = yield* Effect.promise(() => locker.reserve())
        yield* Effect.promise(() => reserved`BEGIN`)
        yield* Effect.promise(() => reserved`LOCK TABLE core.settlements IN ACCESS EXCLUSIVE MODE`)
        const begun = String(yield* Effect.exit(store.begin(key, "echo", "build")))
        const released = Date.now()
        yield* Effect.promise(() => reserved`COMMIT`)
        reserved.release()
        // Its statement goes through after all, once the lock is let go: the client given up on keeps its statements
        // their time to answer.
        const deadline = Date.now() + 10_000
        let found = yield* store.lookup(key)
        while ((found === undefined || found.state === "started") && Date.now() < deadline) {
          yield* Effect.sleep(20)
          found = yield* store.lookup(key)
        }
        // Nothing settles over it: a replay answers what it says.
        const settled = yield* store.settle(key, Settlement.error("echo", "late", "interrupted", "core stopped while it ran"), {
          state: "abandoned",
          owner: Owner.current,
        })
        return { begun, found, afterMs: Date.now() - released, settled, final: yield* store.lookup(key) }
      }).pipe(Effect.provide(PostgresStore.layer(postgres, { operationTimeoutMs: 300, leaseMs: 30_000 })), Effect.scoped),
    )
    await locker.close()
    expect(outcome.begun).toContain("no answer within 0.3 s")
    expect(outcome.found).toMatchObject({ state: "failed", reason: expect.stringContaining("nothing ran") })
    // Long before its 30 s lease would have lapsed.
    expect(outcome.afterMs).toBeLessThan(10_000)
    expect(outcome.settled).toBe(false)
    expect(outcome.final?.state).toBe("failed")
  }, 60_000)
})
