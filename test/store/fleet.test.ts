// Core across machines, through the compiled binary: two core processes that share only the store (the same
// CORE_STORE_URL, separate data directories, as two hosts would), or only a data directory (SQLite on a shared
// volume). A call raced by both runs once and both answer its settlement; a call whose host is killed mid-call is
// answered `interrupted` by the other once its lease lapses and never runs again; a call still running on one host
// is waited for by the other, never reported interrupted.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Host } from "../../src/host/host"
import { Approvals } from "../../src/store/approvals"
import { PostgresStore } from "../../src/store/postgres-store"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { binary, run } from "../support/binary"
import { freshDatabase } from "../support/postgres"
import { world as worldOf } from "../support/hosts"
import { tempDir } from "../support/temp"

const LEASE_MS = "1500"

const world = () => worldOf({ CORE_LEASE_MS: LEASE_MS })

/** `core exec bash` of `command` as session S1, call C1. */
const execArgs = (location: string, command: string) => [
  "exec",
  "bash",
  "--input",
  JSON.stringify({ command }),
  "--location",
  location,
  "--session",
  "S1",
  "--call",
  "C1",
]

const exec = (env: Record<string, string>, location: string, command: string) =>
  run(execArgs(location, command), { env }).then((result) => ({
    ...result,
    settlement: result.stdout === "" ? undefined : JSON.parse(result.stdout),
  }))

/**
 * Starts `core exec` without waiting for it; with `host`, under that host name (in a UTS namespace of its own), so
 * it is another machine as far as core can tell.
 */
const start = async (env: Record<string, string>, location: string, command: string, host?: string) =>
  Bun.spawn([...(host === undefined ? [] : asHost(host)), await binary(), ...execArgs(location, command)], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  })

const asHost = (name: string) => ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name]

const waitFor = async (condition: () => boolean) => {
  for (let attempt = 0; attempt < 600 && !condition(); attempt++) await Bun.sleep(50)
  expect(condition()).toBe(true)
}

const runs = (location: string) => readFileSync(join(location, "ran.txt"), "utf8").split("\n").filter((line) => line !== "")

for (const via of ["postgres", "pgbouncer"] as const) {
  describe(`two hosts sharing a Postgres store (${via})`, () => {
    const url = async () => {
      const urls = await freshDatabase()
      return via === "postgres" ? urls.postgres : urls.pgbouncer
    }

    test("racing one (session, call): it runs once and both answer the same settlement", async () => {
      const { location, host } = world()
      const shared = { CORE_STORE_URL: await url() }
      const command = "echo ran >> ran.txt; sleep 1; echo done"
      const [a, b] = await Promise.all([
        exec(host("a", shared), location, command),
        exec(host("b", shared), location, command),
      ])
      expect(a.code).toBe(0)
      expect(b.code).toBe(0)
      expect(a.settlement).toMatchObject({ tool: "bash", callID: "C1", status: "success" })
      expect(a.settlement).toEqual(b.settlement)
      expect(runs(location)).toEqual(["ran"])
      // And again, from a third host: the same settlement, nothing runs.
      const again = await exec(host("c", shared), location, command)
      expect(again.settlement).toEqual(a.settlement)
      expect(runs(location)).toEqual(["ran"])
    }, 120_000)

    test("kill -9 of the host running the call: the other answers interrupted once the lease lapses, and it never runs again", async () => {
      const { location, host } = world()
      const shared = { CORE_STORE_URL: await url() }
      const command = "echo ran >> ran.txt; sleep 20; echo done-A"
      const a = await start(host("a", shared), location, command)
      await waitFor(() => existsSync(join(location, "ran.txt")))
      a.kill(9)
      await a.exited
      const b = await exec(host("b", shared), location, command)
      expect(b.code).toBe(1)
      expect(b.settlement).toMatchObject({ tool: "bash", callID: "C1", status: "error", error: { kind: "interrupted" } })
      expect(b.settlement.error.message).toContain("may or may not have taken effect")
      // Another host cannot tell a host that stopped from one cut off from the store: the message says either may be.
      expect(b.settlement.error.message).toContain("its core stopped, or could not reach its store, while it ran")
      const again = await exec(host("c", shared), location, command)
      expect(again.settlement).toEqual(b.settlement)
      expect(runs(location)).toEqual(["ran"])
    }, 120_000)
  })
}

// The store of record is core's: with its credentials a command could save approvals of its own ("always" for any
// project, by anyone) or delete a settlement so a recorded call runs again. A command sees none of them, in its own
// environment or in core's (/proc/<core>/environ, through its parent).
describe("a command on a host with a store of record", () => {
  test("sees neither the store's URL nor PGPASSWORD, in its environment or in core's", async () => {
    const { location, host } = world()
    const url = new URL((await freshDatabase()).postgres)
    const password = "pw-of-the-store-7c1e"
    const env = host("a", { CORE_STORE_URL: url.toString(), PGPASSWORD: password })
    // A script's reads are not checked as a command line's are: it reads every environment it can see.
    writeFileSync(join(location, "look.sh"), 'env; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null; echo "[$CORE_STORE_URL][$PGPASSWORD]"\n')
    const result = await exec(env, location, "sh look.sh")
    expect(result.code).toBe(0)
    const stdout: string = result.settlement.structured.stdout
    expect(stdout).toContain("[][]\n")
    // The store's database is this test's own (the test's own variables, which name the server, pass through).
    expect(stdout).not.toContain(url.pathname.slice(1))
    expect(stdout).not.toContain(password)
    expect(stdout).not.toContain("CORE_STORE_URL")
  }, 60_000)
})

describe("a host whose store cannot be reached", () => {
  test("fails operationally, naming the store without its password; nothing runs", async () => {
    const { location, host } = world()
    const result = await exec(host("a", { CORE_STORE_URL: "postgres://core:hunter2@127.0.0.1:1/core" }), location, "echo ran >> ran.txt")
    expect(result.code).toBe(3)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("Could not open the store at postgres://core:***@127.0.0.1:1/core")
    expect(result.stderr).not.toContain("hunter2")
    expect(existsSync(join(location, "ran.txt"))).toBe(false)
  }, 60_000)
})

describe("two hosts sharing a data directory (SQLite)", () => {
  test("a call running on host A is waited for by host B, never reported interrupted", async () => {
    const { location, host } = world()
    const shared = { CORE_DATA_DIR: join(tempDir(), "shared-data") }
    const command = "echo ran >> ran.txt; sleep 4; echo done-A"
    const a = await start(host("a", shared), location, command, "host-a")
    await waitFor(() => existsSync(join(location, "ran.txt")))
    // Host A recorded the call under its own name: host B cannot check its processes.
    const recorded = await Effect.runPromise(
      Effect.flatMap(Store.Service, (store) =>
        store.lookup({ location: realpathSync(location), sessionID: "S1", toolCallID: "C1" }),
      ).pipe(Effect.provide(SqliteStore.layer(join(shared.CORE_DATA_DIR, "core.db")))),
    )
    expect(recorded).toMatchObject({ state: "started", owner: expect.stringMatching(/^host-a:/) })
    const b = await start(host("b", shared), location, command, "host-b")
    const [bOut, bCode, aOut, aCode] = await Promise.all([
      new Response(b.stdout).text(),
      b.exited,
      new Response(a.stdout).text(),
      a.exited,
    ])
    expect(aCode).toBe(0)
    expect(bCode).toBe(0)
    expect(JSON.parse(aOut)).toMatchObject({ status: "success" })
    expect(bOut).toContain("done-A")
    expect(JSON.parse(bOut)).toEqual(JSON.parse(aOut))
    expect(runs(location)).toEqual(["ran"])
  }, 120_000)

  test("kill -9 of host A mid-call: host B answers interrupted once the lease lapses, and it never runs again", async () => {
    const { location, host } = world()
    const shared = { CORE_DATA_DIR: join(tempDir(), "shared-data") }
    const command = "echo ran >> ran.txt; sleep 20; echo done-A"
    const a = await start(host("a", shared), location, command, "host-a")
    await waitFor(() => existsSync(join(location, "ran.txt")))
    // The core process itself (unshare execs it): its command is left running, as after a crash.
    a.kill(9)
    await a.exited
    const b = await exec(host("b", shared), location, command)
    expect(b.settlement).toMatchObject({ status: "error", error: { kind: "interrupted" } })
    expect(runs(location)).toEqual(["ran"])
  }, 120_000)
})

describe("approvals for a team (Postgres)", () => {
  /** A checkout of github.com/acme/shop at a fresh path, as on another machine. */
  const checkout = (remote: string) => {
    const root = join(tempDir(), "shop")
    mkdirSync(join(root, ".git"), { recursive: true })
    writeFileSync(join(root, ".git", "config"), `[remote "origin"]\n\turl = ${remote}\n`)
    return root
  }

  test("an approval for a Location known by its path alone holds on the host that saved it, never on another at the same path", async () => {
    const { location, host } = world()
    const { pgbouncer } = await freshDatabase()
    // No repository: the project is `path:<its real path>`, which another machine may have too (a container's
    // /workspace) for another project altogether.
    const saveOn = (env: Record<string, string>) =>
      Effect.runPromise(
        Effect.gen(function* () {
          yield* (yield* Approvals.Service).save(realpathSync(location), "bash", ["rm *"])
        }).pipe(Effect.provide(Host.approvalsLayer(Host.environment(env))), Effect.scoped),
      )
    const a = host("a", { CORE_STORE_URL: pgbouncer })
    const b = host("b", { CORE_STORE_URL: pgbouncer })
    await saveOn(a)
    const listedOnA = await run(["permissions", "--location", location], { env: a })
    expect(listedOnA.stdout).toContain("bash  rm *")
    const listedOnB = await run(["permissions", "--location", location], { env: b })
    expect(listedOnB.stdout).not.toContain("rm *")
    // Nor in the fleet's store, where every host would find it.
    const shared = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Approvals.Service).list(realpathSync(location))
      }).pipe(Effect.provide(PostgresStore.approvalsLayer(pgbouncer))),
    )
    expect(shared).toEqual([])
    // A repository whose remote is a local path: each machine's own repository at that path.
    const mirrored = join(location, "mirrored")
    mkdirSync(join(mirrored, ".git"), { recursive: true })
    writeFileSync(join(mirrored, ".git", "config"), '[remote "origin"]\n\turl = /srv/git/shop.git\n')
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* (yield* Approvals.Service).save(realpathSync(mirrored), "bash", ["make deploy"])
      }).pipe(Effect.provide(Host.approvalsLayer(Host.environment(a))), Effect.scoped),
    )
    expect((await run(["permissions", "--location", mirrored], { env: a })).stdout).toContain("bash  make deploy")
    expect((await run(["permissions", "--location", mirrored], { env: b })).stdout).not.toContain("make deploy")
  }, 120_000)

  test("an approval saved on host A is listed on host B for its own checkout, with who approved it; B's reset clears it for both", async () => {
    const { host } = world()
    const { pgbouncer } = await freshDatabase()
    const onA = checkout("git@github.com:acme/shop.git")
    const onB = checkout("https://github.com/acme/shop")
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* (yield* Approvals.Service).save(onA, "bash", ["npm test"])
      }).pipe(Effect.provide(PostgresStore.approvalsLayer(pgbouncer, { approvedBy: "alice@host-a" }))),
    )
    const b = host("b", { CORE_STORE_URL: pgbouncer })
    const listed = await run(["permissions", "--location", onB], { env: b })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/^bash {2}npm test {2}\(\d{4}-\d\d-\d\dT[\d:.]+Z, by alice@host-a\)\n$/)
    const reset = await run(["permissions", "reset", "--location", onB], { env: b })
    expect(reset.stdout).toContain("Removed 1 saved approval")
    const after = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Approvals.Service).list(onA)
      }).pipe(Effect.provide(PostgresStore.approvalsLayer(pgbouncer))),
    )
    expect(after).toEqual([])
  }, 120_000)
})
