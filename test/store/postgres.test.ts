// The Postgres store's own edges: migrations on start, once, whatever the number of hosts starting together;
// a schema from a newer core refused and left alone; a URL that cannot be used refused, its password never shown.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { SQL } from "bun"
import { Effect } from "effect"
import { PostgresStore } from "../../src/store/postgres-store"
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

describe("PostgresStore URLs", () => {
  test("a URL that is not postgres:// is refused, saying what a store URL is", async () => {
    expect(String(await open("mysql://core@127.0.0.1/core"))).toContain("a store URL starts with postgres://")
  })

  test("a store that cannot be reached is an open error naming the URL without its password", async () => {
    const exit = String(await open("postgres://core:hunter2@127.0.0.1:1/core"))
    expect(exit).toContain("Could not open the store at postgres://core:***@127.0.0.1:1/core")
    expect(exit).not.toContain("hunter2")
  }, 60_000)
})
