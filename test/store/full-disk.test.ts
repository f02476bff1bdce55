// A data directory whose disk fills up, on a small tmpfs of its own (a mount namespace per test, as root; the fleet
// tests mount the same way). Core writes its journal and the journal's generation through shared mappings: a store
// into a page that has no blocks yet needs space, and on a full disk that is a bus error, which ends the process (it
// did, for `core serve`). Every page is allocated before it is written through a mapping, so a full disk fails a
// store operation with ENOSPC (an operational failure: nothing runs unrecorded) and core goes on, and works again
// once there is room.

import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { binary } from "../support/binary"
import { world } from "../support/hosts"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")

/** `command` in a mount namespace of its own, with a tmpfs of `size` mounted at `directory` first. */
const onSmallDisk = (directory: string, size: string, command: ReadonlyArray<string>) => [
  "unshare",
  "--mount",
  "--propagation",
  "private",
  "sh",
  "-c",
  'mount -t tmpfs -o "size=$1" tmpfs "$0" && shift && exec "$@"',
  directory,
  size,
  ...command,
]

/** Runs `script` in the mount namespace of process `pid` (a full disk filled, or made room on, from outside). */
const inNamespaceOf = async (pid: number, script: string, ...args: ReadonlyArray<string>) => {
  const child = Bun.spawn(["nsenter", "--target", String(pid), "--mount", "sh", "-c", script, ...args], { stdout: "pipe", stderr: "pipe" })
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  if (code !== 0) throw new Error(`nsenter failed (${code}): ${stderr}`)
}

const FILL = 'cat /dev/zero > "$0/filler" 2>/dev/null; true'
const FREE = 'rm -f "$0/filler"'

/** What the child below prints: outcomes of its calls before the disk filled, while full, and once there is room again. */
interface Summary {
  readonly before: number
  readonly whileFull: { readonly ok: number; readonly failed: number; readonly messages: ReadonlyArray<string> }
  readonly after: { readonly ok: number; readonly failed: number }
  readonly settledBefore: number
  /** How many calls a listing made while the disk was full found (or why it failed). */
  readonly listedWhileFull: number | string
  readonly closed: boolean
}

const STORE_CHILD = (directory: string) => `
import { closeSync, openSync, rmSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Cause, Effect, Exit, Layer, Scope } from "effect"
import { SqliteStore } from ${JSON.stringify(join(ROOT, "src/store/sqlite-store"))}
import { Store } from ${JSON.stringify(join(ROOT, "src/store/store"))}

const directory = ${JSON.stringify(directory)}
const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(SqliteStore.layer(join(directory, "core.db")), scope))
const store = Effect.runSync(Effect.service(Store.Service).pipe(Effect.provide(context)))
const keyOf = (index) => ({ location: "/p", sessionID: "s", toolCallID: "c" + index })
const input = JSON.stringify({ text: "y".repeat(300) })
let next = 0
/** One call begun and settled: "ok", or the message of the store's failure. */
const call = async () => {
  const index = next++
  const key = keyOf(index)
  const details = { messageID: "m", input, inputBytes: input.length, startedAt: Date.now() }
  const settlement = { tool: "echo", callID: "c" + index, status: "success", content: [{ type: "text", text: "x".repeat(200) }], structured: null, outputs: [] }
  const exit = await Effect.runPromise(Effect.exit(store.begin(key, "echo", "build", details).pipe(
    Effect.andThen((begun) => begun ? store.settle(key, settlement, { state: "owned" }) : Effect.die("recorded already")),
  )))
  if (Exit.isSuccess(exit)) return "ok"
  const error = Cause.squash(exit.cause)
  return error instanceof Store.StoreError ? error.message : "not a StoreError: " + String(error)
}
for (let index = 0; index < 5; index++) if ((await call()) !== "ok") throw new Error("a call failed before the disk was full")
const filler = openSync(join(directory, "filler"), "w")
const block = Buffer.alloc(64 * 1024, 1)
try {
  for (;;) writeSync(filler, block)
} catch {}
try {
  for (;;) writeSync(filler, block.subarray(0, 512))
} catch {}
closeSync(filler)
// Until the journal's allocated pages are used up (it keeps working that long), then as many more.
const whileFull = { ok: 0, failed: 0, messages: [] }
for (let round = 0; round < 5000 && (whileFull.failed < 200); round++) {
  const outcome = await call()
  if (outcome === "ok") whileFull.ok++
  else {
    whileFull.failed++
    if (!whileFull.messages.includes(outcome)) whileFull.messages.push(outcome)
  }
}
// Listed while full: compacting the journal into SQLite first cannot be written; the journal's rows are laid over
// SQLite's instead, so every call recorded is listed.
const listing = await Effect.runPromise(Effect.exit(store.list({ location: "/p", limit: 10000 })))
const listedWhileFull = Exit.isSuccess(listing) ? listing.value.length : "failed: " + String(Cause.squash(listing.cause))
rmSync(join(directory, "filler"))
const after = { ok: 0, failed: 0 }
for (let index = 0; index < 50; index++) (await call()) === "ok" ? after.ok++ : after.failed++
let settledBefore = 0
for (let index = 0; index < 5; index++) {
  const record = await Effect.runPromise(store.lookup(keyOf(index)))
  if (record?.state === "settled") settledBefore++
}
await Effect.runPromise(Scope.close(scope, Exit.void))
console.log(JSON.stringify({ before: 5, whileFull, listedWhileFull, after, settledBefore, closed: true }))
`

describe("a data directory on a disk that fills up", () => {
  test("the store fails its writes with ENOSPC (no bus error), keeps what it recorded, and works again once there is room", async () => {
    const root = tempDir()
    const directory = join(root, "data")
    const script = join(root, "child.ts")
    writeFileSync(script, STORE_CHILD(directory))
    // The child's own imports (effect) resolve as the repository's do.
    symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"))
    await Bun.write(join(directory, ".keep"), "")
    const child = Bun.spawn(onSmallDisk(directory, "4m", [process.execPath, script]), { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
    const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
    expect(stderr).not.toContain("Bus error")
    expect(stderr).toBe("")
    expect(code).toBe(0)
    const summary = JSON.parse(stdout) as Summary
    // Full: the journal's allocated pages take records until they are used up; then calls fail, each as a store
    // failure saying the disk is full.
    expect(summary.whileFull.ok).toBeGreaterThan(0)
    expect(summary.whileFull.failed).toBeGreaterThan(0)
    expect(summary.whileFull.messages.length).toBeGreaterThan(0)
    for (const message of summary.whileFull.messages) expect(message).toMatch(/ENOSPC|database or disk is full/)
    // What `core log` reads: every call recorded so far, though the journal could not be compacted for it.
    expect(summary.listedWhileFull).toBe(summary.before + summary.whileFull.ok)
    // Room again: every call is recorded, and nothing recorded before was lost.
    expect(summary.after).toEqual({ ok: 50, failed: 0 })
    expect(summary.settledBefore).toBe(5)
    expect(summary.closed).toBe(true)
  }, 120_000)

  test("core exec on a disk already full says so, exits 3 and runs nothing", async () => {
    const { location, host } = world()
    const env = host("a", {})
    const exec = async (...setup: readonly [input: string, core: string, location: string]) => {
      // A call that made the store before the disk filled ($1 set), then the disk filled, then this call.
      const script = 'mount -t tmpfs -o size=1m tmpfs "$0" && if [ -n "$1" ]; then "$2" exec bash --input "$1" --location "$3" >/dev/null; fi; (cat /dev/zero > "$0/filler" 2>/dev/null; true) && shift 3 && exec "$@"'
      const input = JSON.stringify({ command: "echo full >> ran.txt" })
      const child = Bun.spawn(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, env.CORE_DATA_DIR, ...setup, await binary(), "exec", "bash", "--input", input, "--location", location],
        { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
      )
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      return { code, stdout, stderr }
    }
    // A data directory whose store was made before the disk filled: SQLite says only "disk I/O error".
    const made = await exec(JSON.stringify({ command: "echo first >> ran.txt" }), await binary(), location)
    expect(made.stdout).toBe("")
    expect(made.stderr).toMatch(/^core: Could not open the settlement store .*: disk I\/O error \(the disk holding it is full: free some space\)\n$/)
    expect(made.code).toBe(3)
    // A disk full before the store was ever made: SQLite's own words say so.
    const fresh = await exec("", "", "")
    expect(fresh.stderr).toMatch(/^core: Could not open the settlement store .*disk is full/)
    expect(fresh.code).toBe(3)
    // Neither ran its command: only the call made while there was room did.
    expect(readFileSync(join(location, "ran.txt"), "utf8")).toBe("first\n")
  }, 60_000)

  test("core serve answers the calls it cannot record as operational failures, runs none of them, and goes on", async () => {
    const { location, host } = world()
    const env = host("a", {})
    const serve = Bun.spawn(onSmallDisk(env.CORE_DATA_DIR, "4m", [await binary(), "serve", "--location", location]), {
      env: { ...process.env, ...env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    })
    const stderr = new Response(serve.stderr).text()
    try {
      const reader = serve.stdout.getReader()
      const ready = await reader.read()
      if (ready.done) throw new Error(`core serve did not start: ${await stderr}`)
      const { url, token } = JSON.parse(new TextDecoder().decode(ready.value).split("\n")[0]!) as { url: string; token: string }
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const { turnID } = (await (await fetch(`${url}/v1/turns`, { method: "POST", headers, body: "{}" })).json()) as { turnID: string }
      const call = async (id: string) => {
        const response = await fetch(`${url}/v1/turns/${turnID}/calls`, {
          method: "POST",
          headers,
          body: JSON.stringify({
            sessionID: "S",
            assistantMessageID: "m",
            toolCallID: id,
            name: "bash",
            input: { command: `echo ${id} >> ran.txt; echo ${"z".repeat(400)}` },
          }),
        })
        return { status: response.status, body: (await response.json()) as { status?: string; error?: { kind: string; message: string } } }
      }
      expect((await call("first")).body.status).toBe("success")

      await inNamespaceOf(serve.pid, FILL, env.CORE_DATA_DIR)
      const answers: Array<Awaited<ReturnType<typeof call>>> = []
      // Until the journal's allocated pages are used up, then some more.
      for (let index = 0; index < 3000 && answers.filter((answer) => answer.status !== 200).length < 10; index++) {
        answers.push(await call(`full${index}`))
      }
      const refused = answers.filter((answer) => answer.status !== 200)
      expect(refused.length).toBeGreaterThan(0)
      for (const answer of refused) {
        expect(answer.status).toBe(500)
        expect(answer.body.error?.kind).toBe("operational")
      }
      // Still serving; and a call it could not record never ran.
      expect(serve.exitCode).toBeNull()
      const ran = readFileSync(join(location, "ran.txt"), "utf8").trim().split("\n")
      expect(ran).toEqual(["first", ...answers.flatMap((answer, index) => (answer.status === 200 ? [`full${index}`] : []))])

      await inNamespaceOf(serve.pid, FREE, env.CORE_DATA_DIR)
      expect((await call("after")).body.status).toBe("success")
      expect(readFileSync(join(location, "ran.txt"), "utf8").trim().split("\n").at(-1)).toBe("after")
    } finally {
      serve.kill("SIGTERM")
      await serve.exited
    }
    const said = await stderr
    expect(said).not.toContain("Bus error")
    // What went wrong is told to the operator.
    expect(said).toMatch(/ENOSPC|disk is full/)
    expect(serve.exitCode).toBe(0)
    expect(existsSync(location)).toBe(true)
  }, 240_000)
})
