// Leases, store by store: a call begun by another process is running while that process renews its lease (for as
// long as it runs), and abandoned only once the lease has lapsed after the process died (kill -9): then it is
// settled once, by one waiter, and never begins again. The other process is a real one, sharing only the store.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Settlement } from "../../src/contract/settlement"
import { Lease } from "../../src/store/lease"
import { PostgresStore } from "../../src/store/postgres-store"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { freshDatabase } from "../support/postgres"
import { tempDir } from "../support/temp"

const LEASE_MS = 600
const KEY = { location: "/p", sessionID: "s", toolCallID: "c" }

const interrupted: Settlement.Info = Settlement.error("echo", "c", "interrupted", "core stopped while it ran")

/** A store opened the same way in this process and in the child. */
type Opened = { readonly kind: "sqlite" | "postgres"; readonly target: string }

const layerOf = (opened: Opened): Layer.Layer<Store.Service, Store.StoreError> =>
  opened.kind === "sqlite"
    ? SqliteStore.layer(opened.target, { leaseMs: LEASE_MS })
    : PostgresStore.layer(opened.target, { leaseMs: LEASE_MS })

/**
 * Another process that begins KEY in the store and keeps running it until killed: in a PID namespace of its own,
 * as a process on another host would be, so only its lease can tell whether it still runs (a process on this
 * kernel and in this namespace is known gone once it has ended; see Owner.isGone).
 */
const owner = async (opened: Opened, where: "elsewhere" | "here" = "elsewhere") => {
  const unshare =
    where === "here" ? [] : ["unshare", ...(process.getuid?.() === 0 ? [] : ["--user", "--map-root-user"]), "--pid", "--fork", "--kill-child"]
  const child = Bun.spawn(
    [
      ...unshare,
      process.execPath,
      "-e",
      `
      import { Effect, Layer } from "effect"
      import { PostgresStore } from ${JSON.stringify(join(import.meta.dir, "../../src/store/postgres-store.ts"))}
      import { SqliteStore } from ${JSON.stringify(join(import.meta.dir, "../../src/store/sqlite-store.ts"))}
      import { Store } from ${JSON.stringify(join(import.meta.dir, "../../src/store/store.ts"))}
      const layer = ${JSON.stringify(opened.kind)} === "sqlite"
        ? SqliteStore.layer(${JSON.stringify(opened.target)}, { leaseMs: ${LEASE_MS} })
        : PostgresStore.layer(${JSON.stringify(opened.target)}, { leaseMs: ${LEASE_MS} })
      await Effect.runPromise(Effect.gen(function* () {
        const store = yield* Store.Service
        const begun = yield* store.begin(${JSON.stringify(KEY)}, "echo", "build")
        console.log(begun ? "begun" : "refused")
        yield* Effect.never
      }).pipe(Effect.provide(layer)))
      `,
    ],
    { stdout: "pipe", stderr: "inherit" },
  )
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value).trim()).toBe("begun")
  return child
}

const stores: ReadonlyArray<[string, () => Promise<Opened>]> = [
  ["sqlite (a data directory shared by hosts)", async () => ({ kind: "sqlite", target: join(tempDir(), "core.db") })],
  ["postgres", async () => ({ kind: "postgres", target: (await freshDatabase()).postgres })],
  ["postgres through pgbouncer", async () => ({ kind: "postgres", target: (await freshDatabase()).pgbouncer })],
]

for (const [name, open] of stores) {
  describe(`Leases (${name})`, () => {
    test("a call another process runs is running for as long as it renews its lease, however long that is", async () => {
      const opened = await open()
      const child = await owner(opened)
      try {
        await Effect.runPromise(
          Effect.gen(function* () {
            const store = yield* Store.Service
            // Five leases long: only renewal keeps it running.
            for (let check = 0; check < 10; check++) {
              const record = yield* store.lookup(KEY)
              expect(record).toMatchObject({ state: "started", tool: "echo", running: true })
              // A waiter that thought otherwise could not replace it.
              if (record?.state === "started") {
                expect(yield* store.settle(KEY, interrupted, { state: "abandoned", owner: record.owner })).toBe(false)
              }
              yield* Effect.sleep(LEASE_MS / 2)
            }
            expect(yield* store.begin(KEY, "echo", "build")).toBe(false)
          }).pipe(Effect.provide(layerOf(opened))),
        )
      } finally {
        child.kill(9)
        await child.exited
      }
    }, 60_000)

    // Stopped (SIGSTOP, a terminal's Ctrl-Z) or its event loop held up, the owner renews nothing, yet its call goes
    // on once it can: on this machine it is seen to run, and waited for however long its lease has lapsed.
    test("a call whose owner on this machine is stopped past its lease is still running, and never abandoned", async () => {
      const opened = await open()
      const child = await owner(opened, "here")
      try {
        child.kill("SIGSTOP")
        await Effect.runPromise(
          Effect.gen(function* () {
            const store = yield* Store.Service
            yield* Effect.sleep(LEASE_MS * 3)
            const record = yield* store.lookup(KEY)
            expect(record).toMatchObject({ state: "started", tool: "echo", running: true })
            const abandoned = { state: "abandoned", owner: (record as { owner: string }).owner } as const
            expect(yield* store.settle(KEY, interrupted, abandoned)).toBe(false)
            expect(yield* store.begin(KEY, "echo", "build")).toBe(false)
            // Nor does a retention sweep forget it, however old: a call begun after would run it a second time.
            expect(yield* store.prune(Date.now() + 1, 100)).toBe(0)
            expect(yield* store.lookup(KEY)).toMatchObject({ state: "started", running: true })
            // Once it has ended for good, its call is abandoned (at once: it is known gone on this machine).
            child.kill("SIGKILL")
            child.kill("SIGCONT")
            yield* Effect.promise(() => child.exited)
            expect(yield* store.lookup(KEY)).toMatchObject({ state: "started", running: false })
            expect(yield* store.settle(KEY, interrupted, abandoned)).toBe(true)
          }).pipe(Effect.provide(layerOf(opened))),
        )
      } finally {
        child.kill("SIGKILL")
        child.kill("SIGCONT")
        await child.exited
      }
    }, 60_000)

    test("after kill -9 of the owner the call is abandoned once its lease lapses: settled once, never begun again", async () => {
      const opened = await open()
      const child = await owner(opened)
      await Effect.runPromise(
        Effect.gen(function* () {
          const store = yield* Store.Service
          const first = yield* store.lookup(KEY)
          expect(first).toMatchObject({ state: "started", running: true })
          child.kill(9)
          yield* Effect.promise(() => child.exited)
          let record = yield* store.lookup(KEY)
          let polls = 0
          while (record?.state === "started" && record.running) {
            yield* Effect.sleep(50)
            record = yield* store.lookup(KEY)
            polls++
          }
          // It was waited for until the lease lapsed, not given up on at once.
          expect(polls).toBeGreaterThan(0)
          expect(record).toMatchObject({ state: "started", running: false })
          const abandoned = { state: "abandoned", owner: (record as { owner: string }).owner } as const
          expect(yield* store.begin(KEY, "echo", "build")).toBe(false)
          expect(yield* store.settle(KEY, interrupted, abandoned)).toBe(true)
          expect(yield* store.settle(KEY, interrupted, abandoned)).toBe(false)
          expect(yield* store.lookup(KEY)).toEqual({ state: "settled", agent: "build", settlement: interrupted })
        }).pipe(Effect.provide(layerOf(opened))),
      )
    }, 60_000)
  })
}

describe("Lease.durationMs", () => {
  test("is CORE_LEASE_MS when it is a whole number of milliseconds in range, else refused with the range", () => {
    expect(Lease.durationMs({})).toBe(Lease.DEFAULT_MS)
    expect(Lease.durationMs({ CORE_LEASE_MS: "1500" })).toBe(1500)
    for (const bad of ["1.5", "10", "abc", "-1", "99999999999"]) {
      expect(() => Lease.durationMs({ CORE_LEASE_MS: bad })).toThrow(/CORE_LEASE_MS must be a whole number of milliseconds from 300/)
    }
  })

  test("a store refuses to open with a bad CORE_LEASE_MS, saying so", async () => {
    const previous = process.env.CORE_LEASE_MS
    process.env.CORE_LEASE_MS = "soon"
    try {
      const exit = await Effect.runPromiseExit(
        Effect.void.pipe(Effect.provide(SqliteStore.layer(join(tempDir(), "core.db")))),
      )
      expect(String(exit)).toContain("CORE_LEASE_MS must be")
    } finally {
      if (previous === undefined) delete process.env.CORE_LEASE_MS
      else process.env.CORE_LEASE_MS = previous
    }
  })
})

describe("Lease.renewer", () => {
  test("a renewal that never answers is given up after a lease: the next interval renews again", async () => {
    const calls: Array<ReadonlyArray<string>> = []
    const errors: Array<string> = []
    const renewer = Lease.renewer<string>(
      300,
      (keys) => {
        calls.push(keys)
        return new Promise(() => {})
      },
      (cause) => errors.push(String(cause)),
    )
    renewer.add("1", "c")
    await Bun.sleep(1_000)
    renewer.close()
    expect(calls.length).toBeGreaterThanOrEqual(2)
    expect(errors[0]).toContain("a lease renewal got no answer within 300 ms")
  })
})
