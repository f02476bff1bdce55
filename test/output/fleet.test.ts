// Managed outputs across hosts, through the compiled binary: two core processes with separate data directories
// sharing only CORE_STORE_URL (Postgres) and CORE_OUTPUTS_URL (an S3 server), as two hosts would. A bounded output
// made on one is read back whole on the other with `core output`, and over HTTP with Range; a bad URL stops core
// at start; a store that is down keeps the call's result on the host that made it, and says so.

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { existsSync } from "node:fs"
import { join, relative } from "node:path"
import { binary, run } from "../support/binary"
import { freshDatabase } from "../support/postgres"
import { ACCESS_KEY, startS3, type S3Server } from "../support/s3"
import { S3Client } from "bun"
import { world } from "../support/hosts"
import { sandbox, serve } from "../server/support"

let server: S3Server
beforeAll(async () => {
  server = await startS3()
})
afterAll(async () => {
  await server?.remove()
})

/** The text `seq 1 N` prints. */
const seq = (n: number) => Array.from({ length: n }, (_, index) => `${index + 1}\n`).join("")


const exec = async (env: Record<string, string>, location: string, command: string, call = "C1") => {
  const result = await run(
    ["exec", "bash", "--input", JSON.stringify({ command }), "--location", location, "--session", "S1", "--call", call],
    { env },
  )
  return { ...result, settlement: result.stdout === "" ? undefined : JSON.parse(result.stdout) }
}

describe("two hosts sharing a Postgres store and an object store", () => {
  test("a bounded output made on one host is read back whole on the other, with core output, over HTTP with Range and over MCP", async () => {
    const { location, host } = world()
    const { pgbouncer } = await freshDatabase()
    const shared = { CORE_STORE_URL: pgbouncer, CORE_OUTPUTS_URL: server.url("fleet"), ...server.env }
    const a = host("a", shared)
    const b = host("b", shared)
    const made = await exec(a, location, "seq 1 100000")
    expect(made.code).toBe(0)
    expect(made.settlement.status).toBe("success")
    const id = made.settlement.outputs[0].id as string
    // What host A kept (bash's text: the command's output, then its exit code).
    const whole = (await run(["output", id], { env: a })).stdout
    expect(whole.startsWith(seq(100_000))).toBe(true)
    expect(made.settlement.outputs[0].bytes).toBe(whole.length)
    expect(made.settlement.content[0].text).not.toContain("this host only")

    const printed = await run(["output", id], { env: b })
    expect(printed.stderr).toBe("")
    expect(printed.code).toBe(0)
    expect(printed.stdout === whole).toBe(true)

    // Host B replays the call from the shared store: the same settlement, naming the same output.
    const replayed = await exec(b, location, "seq 1 100000")
    expect(replayed.settlement).toEqual(made.settlement)

    const box = sandbox({ "core.json": JSON.stringify({ permission: { "*": "allow" } }) })
    const served = await serve(box, [], { ...shared, CORE_DATA_DIR: b.CORE_DATA_DIR, CORE_HOME: b.CORE_HOME })
    const full = await served.fetch("GET", `/v1/outputs/${id}`)
    expect(full.status).toBe(200)
    expect((await full.text()) === whole).toBe(true)
    const range = await served.fetch("GET", `/v1/outputs/${id}`, { headers: { range: "bytes=0-9" } })
    expect(range.status).toBe(206)
    expect(range.headers.get("content-range")).toBe(`bytes 0-9/${whole.length}`)
    expect(await range.text()).toBe("1\n2\n3\n4\n5\n")
    // One byte: s3rver answers bytes=0-0 with the whole object, which core cuts to what it said it sends.
    const first = await served.fetch("GET", `/v1/outputs/${id}`, { headers: { range: "bytes=0-0" } })
    expect(first.headers.get("content-range")).toBe(`bytes 0-0/${whole.length}`)
    expect(await first.text()).toBe("1")
    const middle = await served.fetch("GET", `/v1/outputs/${id}`, { headers: { range: "bytes=2-3" } })
    expect(await middle.text()).toBe("2\n")
    const tail = await served.fetch("GET", `/v1/outputs/${id}`, { headers: { range: "bytes=-20" } })
    expect(tail.status).toBe(206)
    expect(await tail.text()).toBe(whole.slice(-20))
    const past = await served.fetch("GET", `/v1/outputs/${id}`, { headers: { range: `bytes=${whole.length}-` } })
    expect(past.status).toBe(416)
    const missing = await served.fetch("GET", "/v1/outputs/out_zzzzzzzz_0000000000000000")
    expect(missing.status).toBe(404)
    served.child.kill()

    // And over MCP: host B's `core mcp` answers resources/read of it.
    const transport = new StdioClientTransport({
      command: await binary(),
      args: ["mcp", "--location", location],
      env: { PATH: process.env.PATH ?? "", ...b },
      stderr: "pipe",
    })
    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(transport)
    try {
      const read = await client.readResource({ uri: `core://outputs/${id}` })
      expect((read.contents[0] as { text: string }).text === whole).toBe(true)
    } finally {
      await client.close()
    }
  }, 180_000)

  test("the read tool on another host reads this session's output by the path its preview names, and no other session's", async () => {
    const { location, host } = world()
    const shared = { CORE_OUTPUTS_URL: server.url("read"), ...server.env }
    const a = host("a", shared)
    const b = host("b", shared)
    const made = await exec(a, location, "seq 1 100000")
    const path = /filePath "([^"]+)"/.exec(made.settlement.content[0].text)![1]!
    expect(path.startsWith(a.CORE_DATA_DIR)).toBe(true)
    // Host B: the same data directory path (as containers of one image have), its own files mounted there.
    const onB = async (session: string, call: string) => {
      const args = ["exec", "read", "--input", JSON.stringify({ filePath: path, offset: 50_000, limit: 2 }), "--location", location, "--session", session, "--call", call]
      const child = Bun.spawn(
        ["unshare", "--mount", "sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"', b.CORE_DATA_DIR, a.CORE_DATA_DIR, await binary(), ...args],
        { env: { ...process.env, ...b, CORE_DATA_DIR: a.CORE_DATA_DIR }, stdout: "pipe", stderr: "pipe" },
      )
      const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
      return { code, stderr, settlement: stdout === "" ? undefined : JSON.parse(stdout) }
    }
    const read = await onB("S1", "R1")
    expect(read.stderr).not.toContain("error")
    expect(read.settlement.status).toBe("success")
    expect(read.settlement.content[0].text).toContain("50000")
    expect(read.settlement.content[0].text).toContain("50001")
    // Brought to host B's own files, where it was not before.
    expect(existsSync(join(b.CORE_DATA_DIR, relative(a.CORE_DATA_DIR, path)))).toBe(true)
    const other = await onB("S2", "R2")
    expect(other.settlement.status).toBe("error")
    expect(JSON.stringify(other.settlement)).toContain("readable only in the session that made them")
  }, 180_000)

  test("a URL that names no bucket stops core at start, saying what to give", async () => {
    const { location, host } = world()
    const env = host("a", { CORE_OUTPUTS_URL: "s3:///nothing", ...server.env })
    const made = await exec(env, location, "echo hi")
    expect(made.code).toBe(3)
    expect(made.stderr).toContain('CORE_OUTPUTS_URL "s3:///nothing" is not usable: it names no bucket')
    const printed = await run(["output", "out_zzzzzzzz_0000000000000000"], { env: { ...env, CORE_OUTPUTS_URL: "https://bucket/x" } })
    expect(printed.code).toBe(3)
    expect(printed.stderr).toContain("only s3:// URLs are supported")
  }, 120_000)

  // A put cut off (the store down mid-way, a host killed) can leave objects behind: a part cut short, a part without
  // the rest. Another host must not serve it as the output, nor one part (the structured JSON) for another (the text).
  test("an output not whole in the store is not served: a part cut short, a part gone, no record of the put", async () => {
    const { location, host } = world()
    const shared = { CORE_OUTPUTS_URL: server.url("cut"), ...server.env }
    const a = host("a", shared)
    const b = host("b", shared)
    const made = await exec(a, location, "seq 1 100000")
    expect(made.settlement.status).toBe("success")
    const id = made.settlement.outputs[0].id as string
    const whole = (await run(["output", id], { env: a })).stdout
    expect((await run(["output", id], { env: b })).stdout === whole).toBe(true)
    const s3 = new S3Client({ endpoint: server.endpoint, bucket: server.bucket, accessKeyId: ACCESS_KEY, secretAccessKey: ACCESS_KEY, region: "us-east-1" })
    const keys = ((await s3.list({ prefix: `cut/${id}/` })).contents ?? []).map((object) => object.key)
    const text = keys.find((key) => key.endsWith(`/${id}`))!
    expect(keys).toContain(`cut/${id}/${id}.put`)
    expect(keys.some((key) => key.endsWith(`/${id}.json`))).toBe(true)
    const refused = async () => {
      // A fresh host each time: nothing fetched before.
      const other = host(`b${crypto.randomUUID().slice(0, 6)}`, shared)
      const printed = await run(["output", id], { env: other })
      expect(printed.stdout).toBe("")
      expect(printed.code).toBe(1)
      expect(printed.stderr).toContain(`Managed output ${id} is not whole in ${server.url("cut")}`)
    }
    // Cut short.
    await s3.write(text, whole.slice(0, 1000))
    await refused()
    // Gone, while its structured JSON is there: not served in its stead.
    await s3.delete(text)
    await refused()
    // Put again whole, but with no record of the put (a host killed before it wrote one).
    await s3.write(text, whole)
    await s3.delete(`cut/${id}/${id}.put`)
    await refused()
  }, 120_000)

  test("a store that is down: the call's result is kept on its host and says so; the other host cannot read it yet", async () => {
    const own = await startS3()
    try {
      const { location, host } = world()
      const shared = { CORE_OUTPUTS_URL: own.url("down"), ...own.env }
      const a = host("a", shared)
      const b = host("b", shared)
      await own.stop()
      const made = await exec(a, location, "seq 1 100000")
      expect(made.code).toBe(0)
      expect(made.settlement.status).toBe("success")
      expect(made.settlement.content[0].text).toContain("this host's files only (the shared object store could not take it)")
      const id = made.settlement.outputs[0].id as string
      const here = await run(["output", id], { env: a })
      expect(here.code).toBe(0)
      expect(here.stdout.startsWith(seq(100_000))).toBe(true)
      const there = await run(["output", id], { env: b })
      expect(there.code).toBe(3)
      expect(there.stderr).toContain(`Could not look up managed output ${id} in ${own.url("down")}`)
      const unknown = await run(["output", "out_zzzzzzzz_0000000000000000"], { env: { ...b, ...server.env, CORE_OUTPUTS_URL: server.url("down") } })
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toContain("No managed output out_zzzzzzzz_0000000000000000")
    } finally {
      await own.remove()
    }
  }, 120_000)

  test("refused keys: the result is kept on its host, and the preview says it is this host's only", async () => {
    const { location, host } = world()
    const a = host("a", { CORE_OUTPUTS_URL: server.url("keys"), ...server.env, AWS_SECRET_ACCESS_KEY: "WRONG", AWS_ACCESS_KEY_ID: "WRONG" })
    const made = await exec(a, location, "seq 1 100000")
    expect(made.settlement.status).toBe("success")
    expect(made.settlement.content[0].text).toContain("this host's files only")
  }, 120_000)
})
