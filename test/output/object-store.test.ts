// Managed outputs in an S3-compatible object store (s3rver, a real S3 server in a process of its own): what one host
// puts, another reads whole or by range; a Location's files fetched only where they belong; retention removes
// objects; bad URLs refused at start; a store that is down, refuses the keys or lacks the bucket never loses a
// call's result, and says so.

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { ObjectStore } from "../../src/output/object-store"
import { Output } from "../../src/output/output"
import { startS3, type S3Server } from "../support/s3"
import { tempDir } from "../support/temp"

let server: S3Server
beforeAll(async () => {
  server = await startS3()
})
afterAll(async () => {
  await server?.remove()
})

const storeOf = (prefix: string, env: Record<string, string> = server.env, url = server.url(prefix)) => {
  const settings = ObjectStore.settings(url, env)
  if (settings instanceof ObjectStore.ConfigError) throw settings
  return ObjectStore.make(settings)
}

/** A host: its own outputs directory, sharing the object store under `prefix`. */
const host = (prefix: string, options: { env?: Record<string, string>; url?: string; retentionDays?: number } = {}) => {
  const directory = join(tempDir(), "outputs")
  const layer = ManagedOutputs.layer({
    directory,
    remote: storeOf(prefix, options.env, options.url),
    ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }),
  })
  const run = <A, E>(program: Effect.Effect<A, E, ManagedOutputs.Service>) => Effect.runPromise(program.pipe(Effect.provide(layer)))
  const runFlip = <A, E>(program: Effect.Effect<A, E, ManagedOutputs.Service>) =>
    Effect.runPromise(program.pipe(Effect.flip, Effect.provide(layer)))
  return { directory, layer, run, runFlip }
}

const managed = ManagedOutputs.Service

/** The objects under a store's prefix but the one its clock is read off. */
const outputsIn = async (store: ObjectStore.Interface) =>
  (await Array.fromAsync(store.list(""))).filter((object) => object.key !== ObjectStore.CLOCK_KEY)

describe("ObjectStore.settings", () => {
  test("takes s3://BUCKET/PREFIX with the endpoint, region and keys of the standard AWS variables", () => {
    const settings = ObjectStore.settings("s3://my-bucket/a/b/", {
      AWS_ENDPOINT_URL: "http://generic:1",
      AWS_ENDPOINT_URL_S3: "http://s3-only:2",
      AWS_DEFAULT_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "secret",
      AWS_SESSION_TOKEN: "token",
    })
    expect(settings).toEqual({
      url: "s3://my-bucket/a/b/",
      bucket: "my-bucket",
      prefix: "a/b",
      endpoint: "http://s3-only:2",
      region: "eu-west-1",
      accessKeyId: "id",
      secretAccessKey: "secret",
      sessionToken: "token",
    })
    expect(ObjectStore.settings("s3://bucket", {})).toEqual({ url: "s3://bucket", bucket: "bucket", prefix: "" })
  })

  test("refuses a URL that names no usable bucket, saying why and what to give", () => {
    const cases: Array<[string, RegExp]> = [
      ["not a url", /not a URL/],
      ["https://bucket/prefix", /only s3:\/\//],
      ["s3://", /names no bucket/],
      ["s3:///prefix", /names no bucket/],
      ["s3://Bad_Bucket/x", /not a valid bucket name/],
      ["s3://id:secret@bucket/x", /keys do not go in the URL/],
      ["s3://bucket:9000/x", /bucket and a prefix only/],
      ["s3://bucket/x?region=eu", /bucket and a prefix only/],
      ["s3://bucket/a%2F..%2Fb", /may not contain \. or \.\./],
      // Resolved away by a URL parser before: a host kept outputs (and swept them) at the bucket's root, or in
      // another prefix.
      ["s3://bucket/teamA/..", /may not contain \. or \.\./],
      ["s3://bucket/teamA/%2e%2e/teamB", /may not contain \. or \.\./],
      ["s3://bucket/../../etc", /may not contain \. or \.\./],
      ["s3://bucket/./x", /may not contain \. or \.\./],
      ["s3://bucket/a%zz", /not valid percent-encoded/],
      // A URL parser drops a tab or a line break: `.\t.` became `..`.
      ["s3://bucket/teamA/.\t.", /control character/],
      ["s3://bucket/.\n./x", /control character/],
    ]
    for (const [url, reason] of cases) {
      const error = ObjectStore.settings(url, {})
      expect(error).toBeInstanceOf(ObjectStore.ConfigError)
      expect((error as ObjectStore.ConfigError).message).toMatch(reason)
      expect((error as ObjectStore.ConfigError).message).toContain("s3://BUCKET/PREFIX")
    }
    const endpoint = ObjectStore.settings("s3://bucket", { AWS_ENDPOINT_URL: "ftp://somewhere" })
    expect((endpoint as ObjectStore.ConfigError).message).toContain("not an http:// or https:// URL")
  })

  // The refusal printed the key it refused, into core serve's log.
  test("a key given in a URL is never shown in the refusal", () => {
    const inUrl = ObjectStore.settings("s3://AKIAEXAMPLE:SUPERSECRETKEY123@bucket/x", {}) as ObjectStore.ConfigError
    expect(inUrl.message).toBe(
      'CORE_OUTPUTS_URL "s3://***@bucket/x" is not usable: keys do not go in the URL; set AWS_ACCESS_KEY_ID and ' +
        "AWS_SECRET_ACCESS_KEY. Give s3://BUCKET or s3://BUCKET/PREFIX.",
    )
    expect(JSON.stringify(inUrl)).not.toContain("SUPERSECRET")
    const inQuery = ObjectStore.settings("s3://bucket/x?X-Amz-Signature=SECRETSIG", {}) as ObjectStore.ConfigError
    expect(JSON.stringify(inQuery)).not.toContain("SECRETSIG")
    const endpoint = ObjectStore.settings("s3://bucket", { AWS_ENDPOINT_URL: "ftp://u:SECRET@127.0.0.1:1/?token=SECRET2" }) as ObjectStore.ConfigError
    expect(endpoint.message).toBe('The S3 endpoint "ftp://***@127.0.0.1:1/?***" (AWS_ENDPOINT_URL) is not an http:// or https:// URL.')
    // Shown as written, not as a parser rewrote it.
    expect((ObjectStore.settings("s3://bucket/teamA/..", {}) as ObjectStore.ConfigError).message).toStartWith('CORE_OUTPUTS_URL "s3://bucket/teamA/.." is not usable')
    expect(JSON.stringify(endpoint)).not.toContain("SECRET")
  })
})

describe("ManagedOutputs in an object store", () => {
  test("an output one host keeps is read whole and by range on another host, from the store", async () => {
    const a = host("shared")
    const b = host("shared")
    const text = "first line\n" + "é".repeat(5_000) + "\nlast line\n"
    const written = await a.run(
      Effect.gen(function* () {
        return yield* (yield* managed).write({ text, structured: '{"n":1}', files: [new Uint8Array([0, 1, 2, 255])] }, undefined, "/work/a", "s1")
      }),
    )
    expect(written.unshared).toBeUndefined()
    // Kept locally too, where the Location's tools read it on this host.
    expect(readFileSync(written.text!, "utf8")).toBe(text)
    const [whole, structured, range] = await b.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        const whole = yield* outputs.open(written.id)
        const structured = yield* outputs.open(written.id, "structured")
        return [whole, structured, whole.content.slice(0, 10)] as const
      }),
    )
    expect(whole.path).toBeUndefined()
    expect(whole.bytes).toBe(Buffer.byteLength(text))
    expect(await whole.content.text()).toBe(text)
    expect(await range.text()).toBe("first line")
    const bytes = Buffer.byteLength(text)
    expect(await whole.content.slice(bytes - 10, bytes).text()).toBe("last line\n")
    expect(await structured.content.text()).toBe('{"n":1}')
    // Nothing of it was written to the other host's directory by reading it.
    expect(existsSync(b.directory)).toBe(false)
  })

  test("a string output's structured value (the very text) and a media-only output are read from the store too", async () => {
    const a = host("parts")
    const b = host("parts")
    const [same, media] = await a.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        return [yield* outputs.write({ text: "the text", structured: "text" }), yield* outputs.write({ files: [new Uint8Array([7, 8])] })]
      }),
    )
    const read = await b.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        return {
          structured: yield* outputs.open(same!.id, "structured"),
          media: yield* outputs.open(media!.id),
          noPart: yield* Effect.flip(outputs.open(media!.id, "structured")),
        }
      }),
    )
    expect(await read.structured.content.text()).toBe("the text")
    expect([...new Uint8Array(await read.media.content.arrayBuffer())]).toEqual([7, 8])
    expect(read.noPart._tag === "ManagedOutputs.NotFound" && read.noPart.reason).toBe("no_part")
  })

  test("a string output's structured part (its text quoted as JSON, kept as a mark) is read from the store as that JSON", async () => {
    const a = host("quoted")
    const b = host("quoted")
    const text = 'a "string"\n\u0001 é'
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text, structured: "quoted" })))
    expect(written.unshared).toBeUndefined()
    const read = await b.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        return { structured: yield* outputs.open(written.id, "structured"), text: yield* outputs.open(written.id) }
      }),
    )
    expect(await read.structured.content.text()).toBe(JSON.stringify(text))
    expect(read.structured.bytes).toBe(Buffer.byteLength(JSON.stringify(text)))
    expect(await new Response(ManagedOutputs.body(read.text)).text()).toBe(text)
  })

  test("a 20 MB text is put and read back whole", async () => {
    const a = host("large")
    const b = host("large")
    const line = "0123456789".repeat(10) + "\n"
    const text = line.repeat(Math.ceil((20 * 1024 * 1024) / line.length))
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text })))
    expect(written.unshared).toBeUndefined()
    const reference = await b.run(Effect.flatMap(managed, (outputs) => outputs.open(written.id)))
    expect(reference.bytes).toBe(text.length)
    const back = await reference.content.text()
    expect(back.length).toBe(text.length)
    expect(back === text).toBe(true)
  })

  test("an unknown id, and one the store does not hold, are not found; a prefix keeps stores apart", async () => {
    const a = host("one")
    const other = host("two")
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "kept under one" })))
    const [unknown, elsewhere] = await Promise.all([
      other.runFlip(Effect.flatMap(managed, (outputs) => outputs.open("out_zzzzzzzz_0000000000000000"))),
      other.runFlip(Effect.flatMap(managed, (outputs) => outputs.open(written.id))),
    ])
    for (const error of [unknown, elsewhere]) {
      expect(error._tag === "ManagedOutputs.NotFound" && error.reason).toBe("unknown")
      expect(error.message).toContain(server.url("two"))
    }
  })

  test("another host fetches a file into the Location and session directory it belongs to, and only there", async () => {
    const a = host("fetch")
    const b = host("fetch")
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "for session s1" }, undefined, "/work/a", "s1")))
    const own = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(b.directory, "/work/a"), "s1")
    const otherSession = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(b.directory, "/work/a"), "s2")
    const otherLocation = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(b.directory, "/work/b"), "s1")
    const fetched = await b.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        return {
          // A hostile path: the same id under another session's or Location's directory finds nothing.
          otherSession: yield* outputs.fetch(join(otherSession, written.id)),
          otherLocation: yield* outputs.fetch(join(otherLocation, written.id)),
          escape: yield* outputs.fetch(join(own, "..", "..", written.id)),
          notAnOutput: yield* outputs.fetch(join(own, "core.db")),
          outside: yield* outputs.fetch(join(b.directory, "..", written.id)),
          own: yield* outputs.fetch(join(own, written.id)),
          again: yield* outputs.fetch(join(own, written.id)),
        }
      }),
    )
    expect(fetched).toEqual({
      otherSession: false,
      otherLocation: false,
      escape: false,
      notAnOutput: false,
      outside: false,
      own: true,
      again: false,
    })
    expect(readFileSync(join(own, written.id), "utf8")).toBe("for session s1")
    expect((statSync(join(own, written.id)).mode & 0o777).toString(8)).toBe("600")
    expect((statSync(own).mode & 0o777).toString(8)).toBe("700")
    expect(existsSync(join(otherSession, written.id))).toBe(false)

    // A data directory reached through a symlink: a tool's path check names the real path, which is fetched too.
    const real = join(tempDir(), "real-outputs")
    mkdirSync(real)
    const linked = join(tempDir(), "linked-outputs")
    symlinkSync(real, linked)
    const throughLink = ManagedOutputs.layer({ directory: linked, remote: storeOf("fetch") })
    const realPath = join(ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(real, "/work/a"), "s1"), written.id)
    expect(await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.fetch(realPath)).pipe(Effect.provide(throughLink)))).toBe(true)
    expect(readFileSync(realPath, "utf8")).toBe("for session s1")
  })

  test("retention removes expired outputs from the store, and an expired one is not found", async () => {
    const a = host("retention")
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "old", structured: '{"x":1}' })))
    const store = storeOf("retention")
    // Its text, its structured JSON, and the record of its put.
    expect((await outputsIn(store)).length).toBe(3)
    // Kept for a millisecond: by the time it is read, it has expired (by the store's clock, which keeps seconds).
    const expiring = host("retention", { retentionDays: 1 / 86_400_000 })
    await Bun.sleep(1_100)
    const expired = await expiring.runFlip(Effect.flatMap(managed, (outputs) => outputs.open(written.id)))
    expect(expired._tag === "ManagedOutputs.NotFound" && expired.reason).toBe("expired")
    expect(await outputsIn(store)).toEqual([])

    // Objects under the prefix that are not outputs' files under their ids are never the sweep's.
    const foreign = join(tempDir(), "foreign")
    writeFileSync(foreign, "not core's")
    await store.put("notes/readme", foreign)
    await store.put("misc/out_aaaaaaaa_0000000000000000", foreign)
    const swept = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "to sweep" })))
    const kept = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "to keep" })))
    expect((await outputsIn(store)).length).toBe(6)
    // A sweep with a retention this short removes both hosts' objects (each output's text and record of its put);
    // the local files of this host go too.
    const sweeper = host("retention", { retentionDays: 1 / 86_400_000 })
    await Bun.sleep(1_100)
    expect(await sweeper.run(Effect.flatMap(managed, (outputs) => outputs.sweep))).toBe(4)
    expect((await outputsIn(store)).map((object) => object.key).sort()).toEqual([
      "misc/out_aaaaaaaa_0000000000000000",
      "notes/readme",
    ])
    expect(existsSync(swept.text!)).toBe(true)
    expect(kept.id).not.toBe(swept.id)
  })
})

describe("ManagedOutputs in the store, a Location keeping a retention of its own", () => {
  test("its outputs are kept by its own retention, read and swept alike by every host; the others' by the operator's", async () => {
    const DAY = 86_400_000
    const maker = host("own-retention")
    const [long, plain] = await maker.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        return [
          yield* outputs.write({ text: "long kept", structured: '{"x":1}' }, undefined, "/work/long", "ses_1"),
          yield* outputs.write({ text: "plain" }, undefined, "/work/plain", "ses_1"),
        ]
      }),
    )
    const store = storeOf("own-retention")
    expect((await outputsIn(store)).length).toBe(5)
    // Another host, whose operator keeps outputs a millisecond, knowing /work/long keeps its own for 30 days.
    const other = host("own-retention", { retentionDays: 1 / DAY })
    await Bun.sleep(1_100)
    const found = await other.run(
      Effect.gen(function* () {
        const outputs = yield* managed
        yield* outputs.retain(new Map([["/work/long", 30 * DAY]]))
        const read = yield* outputs.open(long!.id)
        return { text: yield* Effect.promise(() => read.content.text()), swept: yield* outputs.sweep }
      }),
    )
    // The plain output's text and the record of its put went; the long one's text, JSON and record stay.
    expect(found).toEqual({ text: "long kept", swept: 2 })
    const left = (await outputsIn(store)).map((object) => object.key)
    expect(left.length).toBe(3)
    expect(left.every((key) => key.startsWith(`${long!.id}/`))).toBe(true)
    expect(left.some((key) => key.startsWith(`${plain!.id}/`))).toBe(false)
  })
})

describe("ManagedOutputs on a host whose clock runs ahead", () => {
  test("its reads and sweeps go by the store's clock: other hosts' outputs within the retention stay", async () => {
    const a = host("skewed")
    const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "recent" })))
    const ahead = host("skewed")
    const real = Date.now
    // Eight days ahead, past the default retention of seven.
    Date.now = () => real() + 8 * 86_400_000
    let swept: number
    let read: unknown
    try {
      swept = await ahead.run(Effect.flatMap(managed, (outputs) => outputs.sweep))
      read = await ahead.run(Effect.flatMap(managed, (outputs) => outputs.open(written.id)))
    } finally {
      Date.now = real
    }
    expect(swept).toBe(0)
    expect(read).toMatchObject({ id: written.id, bytes: 6 })
    expect((await outputsIn(storeOf("skewed"))).length).toBe(2)
    const again = await host("skewed").run(Effect.flatMap(managed, (outputs) => outputs.open(written.id)))
    expect(again).toMatchObject({ id: written.id, bytes: 6 })
  })
})

describe("ManagedOutputs on an object store that gives no times", () => {
  // Some S3-compatible stores leave LastModified out of a listing: an output whose time is not known is never taken
  // for expired (it was taken for written in 1970, and every one was removed).
  test("its listing without LastModified: the sweep and reads keep every output", async () => {
    const objects = new Map<string, Uint8Array>()
    const deleted: Array<string> = []
    // An S3-speaking server in front of a map, whose listing says no LastModified; HEAD says one.
    const store = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const url = new URL(request.url)
        const key = decodeURIComponent(url.pathname.replace(/^\/bucket\/?/, ""))
        if (request.method === "PUT") {
          objects.set(key, new Uint8Array(await request.arrayBuffer()))
          return new Response(null, { headers: { etag: '"x"' } })
        }
        if (request.method === "DELETE") {
          deleted.push(key)
          objects.delete(key)
          return new Response(null, { status: 204 })
        }
        const found = objects.get(key)
        if (request.method === "HEAD") {
          return found === undefined
            ? new Response(null, { status: 404 })
            : new Response(null, { headers: { "last-modified": new Date().toUTCString(), "content-length": String(found.length), etag: '"x"' } })
        }
        if (url.searchParams.get("list-type") === "2") {
          const prefix = url.searchParams.get("prefix") ?? ""
          const listed = [...objects].filter(([name]) => name.startsWith(prefix))
          const contents = listed.map(([name, bytes]) => `<Contents><Key>${name}</Key><Size>${bytes.length}</Size><ETag>"x"</ETag></Contents>`).join("")
          return new Response(
            `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><Prefix>${prefix}</Prefix><KeyCount>${listed.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`,
            { headers: { "content-type": "application/xml" } },
          )
        }
        return found === undefined ? new Response("<Error><Code>NoSuchKey</Code></Error>", { status: 404 }) : new Response(found)
      },
    })
    try {
      const env = { AWS_ENDPOINT_URL: `http://127.0.0.1:${store.port}`, AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b", AWS_REGION: "us-east-1" }
      const a = host("untimed", { env, url: "s3://bucket/untimed" })
      const written = await a.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "written a moment ago" })))
      const removed = await a.run(Effect.flatMap(managed, (outputs) => outputs.sweep))
      expect(removed).toBe(0)
      const read = await host("untimed", { env, url: "s3://bucket/untimed", retentionDays: 1 / 86_400_000 }).run(
        Effect.flatMap(managed, (outputs) => outputs.open(written.id)),
      )
      expect(read).toMatchObject({ id: written.id, bytes: "written a moment ago".length })
      expect(deleted).toEqual([])
    } finally {
      store.stop(true)
    }
  })
})

describe("ManagedOutputs when the object store fails", () => {
  const bounded = (h: ReturnType<typeof host>) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const output = yield* Output.Service
        return yield* output.bound({ content: [{ type: "text", text: "line\n".repeat(5_000) }], structured: null })
      }).pipe(Effect.provide(Output.layer().pipe(Layer.provideMerge(h.layer)))),
    )

  test("refused keys: the output is kept on this host, and the preview says it is this host's only", async () => {
    const h = host("keys", { env: { ...server.env, AWS_ACCESS_KEY_ID: "WRONG", AWS_SECRET_ACCESS_KEY: "WRONG" } })
    const written = await h.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "not lost" })))
    expect(written.unshared).toContain("InvalidAccessKeyId")
    expect(written.unshared).toContain(server.url("keys"))
    expect(readFileSync(written.text!, "utf8")).toBe("not lost")
    const result = await bounded(h)
    const preview = (result.content[0] as { text: string }).text
    expect(preview).toContain("this host's files only (the shared object store could not take it)")
    expect(result.outputs.length).toBe(1)
    // Read back on this host all the same.
    const back = await h.run(Effect.flatMap(managed, (outputs) => outputs.open(result.outputs[0]!.id)))
    expect((await back.content.text()).length).toBe(25_000)
  })

  test("another host whose keys the store refuses: unavailable, saying to check the keys (not to wait)", async () => {
    const made = host("refused-read")
    const written = await made.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "made on a host with good keys" })))
    expect(written.unshared).toBeUndefined()
    const wrong = host("refused-read", { env: { ...server.env, AWS_ACCESS_KEY_ID: "WRONG", AWS_SECRET_ACCESS_KEY: "WRONG" } })
    const refused = await wrong.run(Effect.flip(Effect.flatMap(managed, (outputs) => outputs.open(written.id))))
    expect(refused._tag).toBe("ManagedOutputs.Unavailable")
    expect(refused.message).toContain("InvalidAccessKeyId")
    expect(refused.message).toContain("Check the keys core was started with (AWS_ACCESS_KEY_ID")
    expect(refused.message).not.toContain("Try again once")
  })

  test("a store that accepts the connection and never answers: kept here once the put's time is up", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
    try {
      const settings = ObjectStore.settings("s3://silent/x", { ...server.env, AWS_ENDPOINT_URL: `http://127.0.0.1:${silent.port}` })
      const layer = ManagedOutputs.layer({ directory: join(tempDir(), "outputs"), remote: ObjectStore.make(settings as ObjectStore.Settings), putBaseMs: 500 })
      const started = Date.now()
      const written = await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.write({ text: "not held" })).pipe(Effect.provide(layer)))
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(written.unshared).toContain("no answer within")
      expect(readFileSync(written.text!, "utf8")).toBe("not held")
      // Another host's lookup gives up in time too, as unavailable.
      const elsewhere = ManagedOutputs.layer({ directory: join(tempDir(), "outputs"), remote: ObjectStore.make(settings as ObjectStore.Settings), putBaseMs: 500 })
      const lookup = await Effect.runPromise(Effect.flip(Effect.flatMap(managed, (outputs) => outputs.open(written.id))).pipe(Effect.provide(elsewhere)))
      expect(lookup._tag).toBe("ManagedOutputs.Unavailable")
      expect(lookup.message).toContain("no answer within")
    } finally {
      silent.stop(true)
    }
  })

  test("a bucket that does not exist: kept here, saying which bucket", async () => {
    const h = host("x", { url: "s3://no-such-bucket/x" })
    const written = await h.run(Effect.flatMap(managed, (outputs) => outputs.write({ text: "still here" })))
    expect(written.unshared).toContain("NoSuchBucket")
    expect(existsSync(written.text!)).toBe(true)
  })

  test("a store that is down: writes are kept here, reads of other hosts' outputs are unavailable, not unknown", async () => {
    const own = await startS3()
    try {
      const env = own.env
      const settings = ObjectStore.settings(own.url("down"), env) as ObjectStore.Settings
      const a = ManagedOutputs.layer({ directory: join(tempDir(), "outputs"), remote: ObjectStore.make(settings) })
      const b = ManagedOutputs.layer({ directory: join(tempDir(), "outputs"), remote: ObjectStore.make(settings) })
      const before = await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.write({ text: "before" })).pipe(Effect.provide(a)))
      await own.stop()
      const after = await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.write({ text: "after" })).pipe(Effect.provide(a)))
      expect(after.unshared).toContain("could not put it in")
      expect(after.unshared).toContain("ConnectionRefused")
      expect(readFileSync(after.text!, "utf8")).toBe("after")
      const [unavailable, local] = await Effect.runPromise(
        Effect.gen(function* () {
          const outputs = yield* managed
          return [yield* Effect.flip(outputs.open(before.id))] as const
        }).pipe(
          Effect.provide(b),
          Effect.zip(Effect.flatMap(managed, (outputs) => outputs.open(after.id)).pipe(Effect.provide(a))),
        ),
      )
      expect(unavailable[0]._tag).toBe("ManagedOutputs.Unavailable")
      expect(unavailable[0].message).toContain("Try again once the object store can be reached")
      // The host that kept it reads it from its own files.
      expect(await local.content.text()).toBe("after")
      // A sweep while the store is down still sweeps what is here, and does not fail.
      expect(await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.sweep).pipe(Effect.provide(a)))).toBe(0)
    } finally {
      await own.remove()
    }
  })
})

// A store that answers some requests wrongly, through a proxy in front of s3rver: the record's GET failing or never
// answered, an object's body shorter than its record says. Each was taken for "not found", waited on for ever, or
// served short as if whole.
describe("an object store that answers wrongly", () => {
  type Fault = "none" | "record-500" | "record-hang" | "short-body"
  const faulty = () => {
    let fault: Fault = "none"
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: async (request) => {
        const url = new URL(request.url)
        const record = request.method === "GET" && url.pathname.endsWith(".put")
        if (record && fault === "record-500") {
          return new Response("<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>", { status: 500 })
        }
        if (record && fault === "record-hang") return new Promise<Response>(() => {})
        const answer = await fetch(new URL(url.pathname + url.search, server.endpoint), {
          method: request.method,
          headers: request.headers,
          ...(request.method === "GET" || request.method === "HEAD" ? {} : { body: await request.arrayBuffer() }),
        })
        const object = request.method === "GET" && !record && url.search === "" && !url.pathname.endsWith(ObjectStore.CLOCK_KEY)
        if (object && fault === "short-body") {
          const bytes = new Uint8Array(await answer.arrayBuffer())
          const half = bytes.subarray(0, Math.floor(bytes.length / 2))
          return new Response(half, { status: 200, headers: { "content-length": String(half.length) } })
        }
        return new Response(answer.body, { status: answer.status, headers: answer.headers })
      },
    })
    const settings = ObjectStore.settings(server.url("faulty"), { ...server.env, AWS_ENDPOINT_URL: `http://127.0.0.1:${proxy.port}` }) as ObjectStore.Settings
    const hostOf = () => {
      const directory = join(tempDir(), "outputs")
      return { directory, layer: ManagedOutputs.layer({ directory, remote: ObjectStore.make(settings), putBaseMs: 1_000 }) }
    }
    return { hostOf, set: (next: Fault) => (fault = next), stop: () => proxy.stop(true) }
  }

  test("the record's GET failing or never answered: unavailable (in time), not unknown; a fetch says so too", async () => {
    const store = faulty()
    try {
      const a = store.hostOf()
      const written = await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.write({ text: "x".repeat(1_000) }, undefined, "/work/a", "s1")).pipe(Effect.provide(a.layer)))
      expect(written.unshared).toBeUndefined()
      for (const fault of ["record-500", "record-hang"] as const) {
        store.set(fault)
        const b = store.hostOf()
        const started = performance.now()
        const failed = await Effect.runPromise(Effect.flip(Effect.flatMap(managed, (outputs) => outputs.open(written.id))).pipe(Effect.provide(b.layer)))
        expect([fault, failed._tag]).toEqual([fault, "ManagedOutputs.Unavailable"])
        expect(failed.message).toContain(fault === "record-500" ? "InternalError" : "no answer within")
        expect(performance.now() - started).toBeLessThan(10_000)
        const own = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(b.directory, "/work/a"), "s1")
        const fetched = await Effect.runPromise(Effect.flip(Effect.flatMap(managed, (outputs) => outputs.fetch(join(own, written.id)))).pipe(Effect.provide(b.layer)))
        expect([fault, fetched._tag]).toEqual([fault, "ManagedOutputs.Unavailable"])
      }
    } finally {
      store.stop()
    }
  })

  test("an object's body shorter than its record says fails the read, and a fetch, rather than pass for whole", async () => {
    const store = faulty()
    try {
      const written = await Effect.runPromise(
        Effect.flatMap(managed, (outputs) => outputs.write({ text: "y".repeat(100_000) }, undefined, "/work/a", "s1")).pipe(Effect.provide(store.hostOf().layer)),
      )
      store.set("short-body")
      const b = store.hostOf()
      const opened = await Effect.runPromise(Effect.flatMap(managed, (outputs) => outputs.open(written.id)).pipe(Effect.provide(b.layer)))
      expect(opened.bytes).toBe(100_000)
      await expect(new Response(ManagedOutputs.body(opened)).text()).rejects.toThrow("answered 50000 of the 100000 bytes asked")
      const own = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(b.directory, "/work/a"), "s1")
      const fetched = await Effect.runPromise(Effect.flip(Effect.flatMap(managed, (outputs) => outputs.fetch(join(own, written.id)))).pipe(Effect.provide(b.layer)))
      expect(fetched._tag).toBe("ManagedOutputs.Unavailable")
      expect(existsSync(join(own, written.id))).toBe(false)
    } finally {
      store.stop()
    }
  })
})
