// An S3-compatible server for the tests and benchmarks: s3rver (npm, a devDependency) in a process of its own on
// 127.0.0.1, one per caller, with a bucket made at start and its data in a temporary directory. A server of one's
// own can be stopped to see what core does when its object store is down, without touching another test's.
// s3rver takes the keys `S3RVER` / `S3RVER` and refuses any other (InvalidAccessKeyId).

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "../..")
const BIN = join(ROOT, "node_modules/s3rver/bin/s3rver.js")
export const BUCKET = "core-test"
export const ACCESS_KEY = "S3RVER"
const START_TIMEOUT_MS = 20_000

export interface S3Server {
  readonly endpoint: string
  readonly bucket: string
  /** `s3://bucket/prefix`, as CORE_OUTPUTS_URL takes it. */
  readonly url: (prefix?: string) => string
  /** The standard variables that reach this server with its keys. */
  readonly env: Readonly<Record<string, string>>
  /** Ends the server (its data stays until `remove`). */
  readonly stop: () => Promise<void>
  /** Ends the server and removes its data. */
  readonly remove: () => Promise<void>
}

const freePort = async (): Promise<number> => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** Starts an S3 server with an empty bucket, answering once it serves requests. */
export const startS3 = async (): Promise<S3Server> => {
  const data = mkdtempSync(join(tmpdir(), "core-s3-"))
  const port = await freePort()
  const child = Bun.spawn(
    [process.execPath, BIN, "-d", data, "-a", "127.0.0.1", "-p", String(port), "--silent", "--configure-bucket", BUCKET],
    { stdin: "ignore", stdout: "ignore", stderr: "pipe" },
  )
  const endpoint = `http://127.0.0.1:${port}`
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    try {
      // Any answer (s3rver lists buckets only with a signature) means it serves.
      await fetch(endpoint)
      break
    } catch {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill()
        const stderr = await new Response(child.stderr).text()
        rmSync(data, { recursive: true, force: true })
        throw new Error(`s3rver did not start on ${endpoint} (is it installed? npm install): ${stderr}`)
      }
      await Bun.sleep(50)
    }
  }
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill()
      await child.exited
    }
  }
  return {
    endpoint,
    bucket: BUCKET,
    url: (prefix = "") => `s3://${BUCKET}${prefix === "" ? "" : `/${prefix}`}`,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: ACCESS_KEY,
      AWS_SECRET_ACCESS_KEY: ACCESS_KEY,
    },
    stop,
    remove: async () => {
      await stop()
      rmSync(data, { recursive: true, force: true })
    },
  }
}
