import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { tempDir } from "../support/temp"

const withOutputs = <A, E>(directory: string, program: Effect.Effect<A, E, ManagedOutputs.Service>, retentionDays?: number) =>
  Effect.runPromise(
    program.pipe(Effect.provide(ManagedOutputs.layer({ directory, ...(retentionDays === undefined ? {} : { retentionDays }) }))),
  )

/** Why an output could not be opened (a local directory is never unavailable). */
const reasonOf = (error: ManagedOutputs.NotFound | ManagedOutputs.Unavailable) =>
  error._tag === "ManagedOutputs.NotFound" ? error.reason : "unavailable"

describe("ManagedOutputs", () => {
  test("an output a Location makes is kept in that Location's own directory, found by id, and swept there too", async () => {
    const directory = join(tempDir(), "outputs")
    const [found, paths, swept, gone] = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const written = yield* managed.write({ text: "mine", structured: "text" }, undefined, "/work/a")
        const found = yield* managed.open(written.id)
        const paths = managed.paths(written.id)
        utimesSync(found.path!, new Date(0), new Date(0))
        utimesSync(paths.structured, new Date(0), new Date(0))
        const swept = yield* managed.sweep
        return [found, paths, swept, yield* Effect.flip(managed.open(written.id))] as const
      }),
    )
    const own = ManagedOutputs.locationDirectory(directory, "/work/a")
    expect(own).not.toBe(ManagedOutputs.locationDirectory(directory, "/work/b"))
    expect(found.path!).toBe(join(own, found.id))
    expect(paths.structured).toBe(join(own, `${found.id}.json`))
    expect((statSync(own).mode & 0o777).toString(8)).toBe("700")
    expect(swept).toBe(2)
    expect(reasonOf(gone)).toBe("unknown")
  })

  test("keeps text and bytes in full under a fresh id and finds them again", async () => {
    const directory = join(tempDir(), "outputs")
    const [text, bytes] = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const text = yield* managed.write({ text: "héllo\nworld" })
        const bytes = yield* managed.write({ files: [new Uint8Array([0, 1, 2, 255])] })
        return [yield* managed.open(text.id), yield* managed.open(bytes.id)]
      }),
    )
    expect(text!.bytes).toBe(Buffer.byteLength("héllo\nworld"))
    expect(await Bun.file(text!.path!).text()).toBe("héllo\nworld")
    expect([...new Uint8Array(await Bun.file(bytes!.path!).arrayBuffer())]).toEqual([0, 1, 2, 255])
    expect(text!.id).not.toBe(bytes!.id)
    // Written atomically: no temporary file is left behind.
    expect(readdirSync(directory).filter((name) => name.endsWith(".tmp"))).toEqual([])
  })

  test("fails with RetentionError naming the path and the OS error when the directory cannot be made", async () => {
    const root = tempDir()
    writeFileSync(join(root, "outputs"), "a file where the directory should be")
    const error = await withOutputs(
      join(root, "outputs"),
      Effect.gen(function* () {
        return yield* (yield* ManagedOutputs.Service).write({ text: "data" }).pipe(Effect.flip)
      }),
    )
    if (!(error instanceof ManagedOutputs.RetentionError)) throw new Error(`expected a RetentionError, got ${error._tag}`)
    expect(error.path).toBe(join(root, "outputs"))
    expect(error.message).toContain(join(root, "outputs"))
    expect(error.message).toMatch(/EEXIST|ENOTDIR|exists|not a directory/i)
  })

  test("refuses ids that are not output ids, so a lookup cannot escape the directory", async () => {
    const directory = tempDir()
    for (const id of ["../core.db", "out_x/../../etc/passwd", "", "out_abc"]) {
      const error = await withOutputs(
        directory,
        Effect.gen(function* () {
          return yield* (yield* ManagedOutputs.Service).open(id).pipe(Effect.flip)
        }),
      )
      expect(reasonOf(error)).toBe("invalid_id")
    }
  })

  test("an unknown id and an expired output are not found, and say so", async () => {
    const directory = tempDir()
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const unknown = yield* managed.open("out_zzzzzzzz_0000000000000000").pipe(Effect.flip)
        const kept = yield* managed.write({ text: "old" })
        const old = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000)
        utimesSync(kept.text!, old, old)
        const expired = yield* managed.open(kept.id).pipe(Effect.flip)
        return { unknown, expired, path: kept.text! }
      }),
    )
    expect(reasonOf(result.unknown)).toBe("unknown")
    expect(reasonOf(result.expired)).toBe("expired")
    expect(existsSync(result.path)).toBe(false)
  })

  test("the sweep removes only outputs past the retention period", async () => {
    const directory = tempDir()
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const fresh = yield* managed.write({ text: "fresh" })
        const stale = yield* managed.write({ text: "stale" })
        const old = new Date(Date.now() - 3 * 24 * 60 * 60 * 1000)
        utimesSync(stale.text!, old, old)
        writeFileSync(join(directory, "notes.txt"), "not ours")
        utimesSync(join(directory, "notes.txt"), old, old)
        return { removed: yield* managed.sweep, fresh, stale }
      }),
      2,
    )
    expect(result.removed).toBe(1)
    expect(existsSync(result.fresh.text!)).toBe(true)
    expect(existsSync(result.stale.text!)).toBe(false)
    expect(existsSync(join(directory, "notes.txt"))).toBe(true)
  })

  test("a Location keeping a retention of its own: its outputs expire and are swept by it, every other by the operator's", async () => {
    const directory = tempDir()
    const DAY = 24 * 60 * 60 * 1000
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        yield* managed.retain(new Map([["/work/long", 30 * DAY], ["/work/short", DAY]]))
        const write = (location: string) => managed.write({ text: location }, undefined, location, "ses_1")
        const age = (written: { readonly text?: string | undefined }, days: number) => {
          const at = new Date(Date.now() - days * DAY)
          utimesSync(written.text!, at, at)
        }
        // Ten days old: past the operator's 7, within the long Location's 30.
        const long = yield* write("/work/long")
        const plain = yield* write("/work/plain")
        age(long, 10)
        age(plain, 10)
        // Two days old: within the operator's, past the short Location's one day.
        const short = yield* write("/work/short")
        age(short, 2)
        const opened = yield* managed.open(long.id)
        const plainExpired = yield* managed.open(plain.id).pipe(Effect.flip)
        const shortExpired = yield* managed.open(short.id).pipe(Effect.flip)
        // Swept by the same measures.
        const kept = yield* write("/work/long")
        const stale = yield* write("/work/long")
        age(kept, 20)
        age(stale, 31)
        const swept = yield* managed.sweep
        // Once the Location keeps none of its own, the operator's applies to it too.
        yield* managed.retain(new Map())
        const later = yield* managed.open(kept.id).pipe(Effect.flip)
        return { opened: opened.bytes, plainExpired, shortExpired, swept, kept, stale, long, later }
      }),
    )
    expect(result.opened).toBe("/work/long".length)
    expect(reasonOf(result.plainExpired)).toBe("expired")
    expect(reasonOf(result.shortExpired)).toBe("expired")
    expect(result.swept).toBe(1)
    expect(existsSync(result.kept.text!)).toBe(false)
    expect(existsSync(result.stale.text!)).toBe(false)
    expect(reasonOf(result.later)).toBe("expired")
  })

  test("sweeping a directory that does not exist yet removes nothing", async () => {
    const removed = await withOutputs(join(tempDir(), "missing"), Effect.gen(function* () {
      return yield* (yield* ManagedOutputs.Service).sweep
    }))
    expect(removed).toBe(0)
  })
})

describe("ManagedOutputs.sweepIfDue", () => {
  test("sweeps at most once an hour", async () => {
    const directory = tempDir()
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const old = new Date(Date.now() - 10 * 24 * 60 * 60 * 1000)
        const first = yield* managed.write({ text: "a" })
        utimesSync(first.text!, old, old)
        const firstSweep = yield* managed.sweepIfDue
        const second = yield* managed.write({ text: "b" })
        utimesSync(second.text!, old, old)
        const skipped = yield* managed.sweepIfDue
        // Once the last sweep is over an hour old, it sweeps again.
        const longAgo = new Date(Date.now() - ManagedOutputs.SWEEP_INTERVAL_MS - 1_000)
        utimesSync(join(directory, ".last-sweep"), longAgo, longAgo)
        const again = yield* managed.sweepIfDue
        return { firstSweep, skipped, again }
      }),
    )
    expect(result).toEqual({ firstSweep: 1, skipped: undefined, again: 1 })
  })
})

describe("ManagedOutputs.write of large text", () => {
  test("keeps a multi-megabyte text byte for byte, including characters on chunk boundaries", async () => {
    const directory = tempDir()
    // Surrogate pairs and multi-byte characters land on every chunk boundary of 2^20 characters.
    const text = "a😀é\n".repeat(700_000)
    const reference = await withOutputs(
      directory,
      Effect.gen(function* () {
        return yield* (yield* ManagedOutputs.Service).write({ text })
      }),
    )
    expect(reference.bytes).toBe(Buffer.byteLength(text))
    expect(await Bun.file(reference.text!).text()).toBe(text)
  })
})

describe("ManagedOutputs parts", () => {
  test("one output holds the text, the structured value and media under one id, each found by part", async () => {
    const directory = tempDir()
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const written = yield* managed.write({ text: "full text", structured: '{"a":1}', files: [new Uint8Array([9, 9])] })
        return {
          written,
          text: yield* managed.open(written.id),
          structured: yield* managed.open(written.id, "structured"),
        }
      }),
    )
    // `bytes` is the size of the default part, the text.
    expect(result.written.bytes).toBe(9)
    expect(await Bun.file(result.text.path!).text()).toBe("full text")
    expect(await Bun.file(result.structured.path!).text()).toBe('{"a":1}')
    expect(result.written.files).toEqual([join(directory, `${result.written.id}.1`)])
    expect(readdirSync(directory).sort()).toEqual(
      [result.written.id, `${result.written.id}.1`, `${result.written.id}.json`].sort(),
    )
  })

  test("a structured value that is the kept text itself is stored once, under both parts", async () => {
    const directory = tempDir()
    const json = JSON.stringify({ rows: [1, 2, 3] }, null, 2)
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const written = yield* managed.write({ text: json, structured: "text" })
        return { written, structured: yield* managed.open(written.id, "structured") }
      }),
    )
    expect(result.written.bytes).toBe(Buffer.byteLength(json))
    expect(await Bun.file(result.structured.path!).text()).toBe(json)
    // The same inode: the bytes are on disk once.
    expect(statSync(result.structured.path!).ino).toBe(statSync(result.written.text!).ino)
  })

  test("an output that kept only its structured value gives it as its text too; one without says so", async () => {
    const directory = tempDir()
    const result = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const onlyStructured = yield* managed.write({ structured: "[1]" })
        const onlyText = yield* managed.write({ text: "t" })
        return {
          text: yield* managed.open(onlyStructured.id),
          missing: yield* managed.open(onlyText.id, "structured").pipe(Effect.flip),
        }
      }),
    )
    expect(await Bun.file(result.text.path!).text()).toBe("[1]")
    expect(reasonOf(result.missing)).toBe("no_part")
  })

  test("the sweep removes every file of an expired output", async () => {
    const directory = tempDir()
    const removed = await withOutputs(
      directory,
      Effect.gen(function* () {
        const managed = yield* ManagedOutputs.Service
        const written = yield* managed.write({ text: "t", structured: "{}", files: [new Uint8Array([1])] })
        const old = new Date(Date.now() - 3 * 24 * 60 * 60 * 1000)
        for (const name of readdirSync(directory)) utimesSync(join(directory, name), old, old)
        return { removed: yield* managed.sweep, id: written.id }
      }),
      2,
    )
    expect(removed.removed).toBe(3)
    expect(readdirSync(directory)).toEqual([])
  })
})

/** A stream of `chunks`, as an output store's answer arrives. */
const answered = (...chunks: ReadonlyArray<string>) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })

describe("an output store's answer to a range, held to it", () => {
  test("from the start: the first bytes, whatever the store sent (s3rver answers bytes=0-0 with the whole object)", async () => {
    expect(await new Response(ManagedOutputs.exactly(answered("abcdef"), 0, 1)).text()).toBe("a")
    expect(await new Response(ManagedOutputs.exactly(answered("ab", "cd", "ef"), 0, 3)).text()).toBe("abc")
  })

  test("from a later byte: the bytes asked; a store that sent more, even at a chunk's end, or fewer, fails it", async () => {
    expect(await new Response(ManagedOutputs.exactly(answered("cd"), 2, 2)).text()).toBe("cd")
    // The whole object from byte 0, its first chunk exactly as long as the range: the wrong bytes, never served whole.
    await expect(new Response(ManagedOutputs.exactly(answered("ab", "cdef"), 2, 2)).text()).rejects.toThrow("more than the 2 bytes")
    await expect(new Response(ManagedOutputs.exactly(answered("c"), 2, 2)).text()).rejects.toThrow("answered 1 of the 2 bytes")
  })

  // A store that answers a GET and then sends nothing held `core output`, MCP resources/read and the read tool for
  // ever: the read fails once nothing arrived for the idle deadline, and lets the store's answer go.
  test("a store that stops sending fails the read after the idle deadline, and the answer is let go", async () => {
    let cancelled = false
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("ab"))
      },
      cancel() {
        cancelled = true
      },
    })
    const started = performance.now()
    await expect(new Response(ManagedOutputs.exactly(stalled, 0, 4, 200)).text()).rejects.toThrow(
      "the output store sent 2 of the 4 bytes asked, then no answer within 0 s",
    )
    expect(performance.now() - started).toBeGreaterThanOrEqual(190)
    expect(cancelled).toBe(true)
  })

  // An empty chunk handed nothing on, so the stream never asked again: the read hung, no deadline armed.
  test("empty chunks from the store are read past, whole and from a later byte", async () => {
    expect(await new Response(ManagedOutputs.exactly(answered("a", "", "b"), 0, 2, 500)).text()).toBe("ab")
    expect(await new Response(ManagedOutputs.exactly(answered("c", "", "", "d"), 2, 2, 500)).text()).toBe("cd")
  })

  test("a body shorter than the record says fails, whole or from a later byte", async () => {
    await expect(new Response(ManagedOutputs.exactly(answered("ab", "c"), 0, 6)).text()).rejects.toThrow("answered 3 of the 6 bytes")
  })
})
