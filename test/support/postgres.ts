// Postgres and pgbouncer (transaction mode) for the tests: the URLs in CORE_TEST_POSTGRES_URL and
// CORE_TEST_PGBOUNCER_URL when set (CI sets them), else a throwaway cluster started on demand by
// scripts/services.sh from Debian's postgresql and pgbouncer, and kept for later runs (`scripts/services.sh stop`
// ends it). Without them the tests that need Postgres fail, saying how to install them: nothing is skipped.

import { SQL } from "bun"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "../..")

export interface Services {
  /** A database to connect to directly. */
  readonly postgres: string
  /** The same server through pgbouncer in transaction mode. */
  readonly pgbouncer: string
}

let services: Services | undefined
let cleaned = false
const STALE_S = 3_600

/** The Postgres and pgbouncer the tests use, started if need be. */
export const postgres = (): Services => {
  if (services !== undefined) return services
  const given = { postgres: process.env.CORE_TEST_POSTGRES_URL, pgbouncer: process.env.CORE_TEST_PGBOUNCER_URL }
  if (given.postgres && given.pgbouncer) return (services = { postgres: given.postgres, pgbouncer: given.pgbouncer })
  const started = spawnSync(join(ROOT, "scripts/services.sh"), ["start"], { encoding: "utf8" })
  if (started.status !== 0) {
    throw new Error(`These tests need Postgres and pgbouncer, which scripts/services.sh could not start:\n${started.stderr}`)
  }
  const variables = Object.fromEntries(
    readFileSync(started.stdout.trim(), "utf8")
      .split("\n")
      .filter((line) => line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  )
  return (services = { postgres: variables.CORE_TEST_POSTGRES_URL!, pgbouncer: variables.CORE_TEST_PGBOUNCER_URL! })
}

const withDatabase = (url: string, database: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/**
 * A new, empty database, as URLs: direct, and through pgbouncer (with `pgbouncer=true`, as core's store is told).
 * Each test gets its own, so tests never see each other's records.
 */
export const freshDatabase = async (): Promise<Services> => {
  const { postgres: url, pgbouncer } = postgres()
  // Named with their creation time: the first in each test process drops those left by runs over an hour ago.
  const name = `core_test_${Math.floor(Date.now() / 1000)}_${randomBytes(6).toString("hex")}`
  const admin = new SQL(url, { max: 1 })
  try {
    if (!cleaned) {
      cleaned = true
      const stale: Array<{ datname: string }> = await admin`SELECT datname FROM pg_database WHERE datname LIKE 'core\_test\_%'`
      for (const { datname } of stale) {
        const created = Number(/^core_test_(\d+)_/.exec(datname)?.[1] ?? 0)
        if (created < Date.now() / 1000 - STALE_S) await admin.unsafe(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`)
      }
    }
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.close()
  }
  return { postgres: withDatabase(url, name), pgbouncer: `${withDatabase(pgbouncer, name)}?pgbouncer=true` }
}
