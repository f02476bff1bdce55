import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Bound } from "../../src/output/bound"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { Output } from "../../src/output/output"
import type { Tool } from "../../src/tool/tool"
import { tempDir } from "../support/temp"

const bound = (projected: Output.Projected, limits: Output.Settings = {}, directory = join(tempDir(), "outputs")) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const output = yield* Output.Service
      return yield* output.bound(projected)
    }).pipe(
      Effect.provide(Output.layer(limits).pipe(Layer.provideMerge(ManagedOutputs.layer({ directory })))),
      Effect.result,
    ),
  )

const small = { maxLines: 20, maxBytes: 1_024 }

describe("Output.bound", () => {
  test("an output within the bound passes through untouched with no managed output", async () => {
    const result = await bound({ content: [{ type: "text", text: "hi" }], structured: { a: 1 } })
    expect(result._tag === "Success" && result.success).toEqual({
      content: [{ type: "text", text: "hi" }],
      structured: { a: 1 },
      outputs: [],
    })
  })

  test("oversized text is kept in full and replaced by a preview within the bound", async () => {
    const directory = join(tempDir(), "outputs")
    const text = Array.from({ length: 500 }, (_, index) => `row ${index}`).join("\n")
    const result = await bound({ content: [{ type: "text", text }], structured: null }, small, directory)
    if (result._tag !== "Success") throw result.failure
    const { content, outputs } = result.success
    expect(outputs).toEqual([{ id: expect.stringMatching(/^out_/), bytes: Buffer.byteLength(text) }])
    expect(await Bun.file(join(directory, outputs[0]!.id)).text()).toBe(text)
    expect(content).toHaveLength(1)
    const preview = (content[0] as { text: string }).text
    expect(Bound.exceeds(preview, small)).toBe(false)
    expect(preview).toContain(outputs[0]!.id)
  })

  test("several text parts share one budget and become one preview; file parts keep their place", async () => {
    const file = { type: "file" as const, data: Buffer.from("png").toString("base64"), mime: "image/png" }
    const result = await bound(
      { content: [{ type: "text", text: "a\n".repeat(300) }, file, { type: "text", text: "b\n".repeat(300) }], structured: null },
      small,
    )
    if (result._tag !== "Success") throw result.failure
    expect(result.success.content.map((part) => part.type)).toEqual(["text", "file"])
    expect(result.success.outputs).toHaveLength(1)
  })

  test("a structured value that does not fit beside the text is dropped whole and kept; the text stays", async () => {
    const directory = join(tempDir(), "outputs")
    const structured = { rows: Array.from({ length: 400 }, (_, index) => ({ index })) }
    const result = await bound({ content: [{ type: "text", text: "400 rows" }], structured }, small, directory)
    if (result._tag !== "Success") throw result.failure
    expect(result.success.content).toEqual([{ type: "text", text: "400 rows" }])
    // Never a preview string: the whole value, or null.
    expect(result.success.structured).toBeNull()
    expect(result.success.outputs).toHaveLength(1)
    const id = result.success.outputs[0]!.id
    expect(JSON.parse(await Bun.file(join(directory, `${id}.json`)).text())).toEqual(structured)
    // Nothing of the text was left out, so no text part is kept.
    expect(existsSync(join(directory, id))).toBe(false)
  })

  test("text and structured JSON share one bound: each fitting alone is not enough", async () => {
    const text = "t".repeat(600)
    const fitsAlone = await bound({ content: [{ type: "text", text }], structured: { v: "s".repeat(300) } }, small)
    if (fitsAlone._tag !== "Success") throw fitsAlone.failure
    expect(fitsAlone.success.structured).toEqual({ v: "s".repeat(300) })
    const together = await bound({ content: [{ type: "text", text }], structured: { v: "s".repeat(500) } }, small)
    if (together._tag !== "Success") throw together.failure
    expect(together.success.structured).toBeNull()
    expect(together.success.content).toEqual([{ type: "text", text }])
    expect(together.success.outputs).toHaveLength(1)
  })

  test("an oversized text and structured value make one managed output holding both in full", async () => {
    const directory = join(tempDir(), "outputs")
    const text = "z\n".repeat(5_000)
    const structured = { output: text, exitCode: 0 }
    const result = await bound({ content: [{ type: "text", text }], structured }, small, directory)
    if (result._tag !== "Success") throw result.failure
    expect(result.success.outputs).toHaveLength(1)
    expect(result.success.structured).toBeNull()
    const id = result.success.outputs[0]!.id
    expect(await Bun.file(join(directory, id)).text()).toBe(text)
    expect(JSON.parse(await Bun.file(join(directory, `${id}.json`)).text())).toEqual(structured)
    const preview = (result.success.content[0] as { text: string }).text
    expect(Bound.exceeds(preview, small)).toBe(false)
    expect(preview).toContain(join(directory, id))
  })

  test("a structured-only output reaches the model as its JSON: bounded as text, stored once", async () => {
    const directory = join(tempDir(), "outputs")
    const structured = { rows: Array.from({ length: 400 }, (_, index) => ({ index })) }
    const result = await bound({ content: [], structured }, small, directory)
    if (result._tag !== "Success") throw result.failure
    expect(result.success.structured).toBeNull()
    const preview = (result.success.content[0] as { text: string }).text
    expect(Bound.exceeds(preview, small)).toBe(false)
    expect(preview.split("\n")[1]).toBe("{")
    const id = result.success.outputs[0]!.id
    const json = JSON.stringify(structured, null, 2)
    expect(await Bun.file(join(directory, id)).text()).toBe(json)
    expect(statSync(join(directory, `${id}.json`)).ino).toBe(statSync(join(directory, id)).ino)
    expect(result.success.outputs[0]!.bytes).toBe(Buffer.byteLength(json))
  })

  // DESIGN §5: where `structured` was dropped, the output keeps the full structured value: for a string, its JSON (a
  // quoted, escaped string), which is not its text. It was kept as the text alone (or, structured-only, as raw text
  // named `.json`), so `?part=structured` had nothing, or no JSON. The text is kept once, marked as the string.
  test("a string output past the bound keeps its text once, and its structured part is read as the string's JSON", async () => {
    const directory = join(tempDir(), "outputs")
    const text = 'line "quoted" \\ é\n'.repeat(400)
    for (const content of [[{ type: "text" as const, text }], []]) {
      const result = await bound({ content, structured: text }, small, directory)
      if (result._tag !== "Success") throw result.failure
      expect(result.success.structured).toBeNull()
      const id = result.success.outputs[0]!.id
      expect(await Bun.file(join(directory, id)).text()).toBe(text)
      expect(existsSync(join(directory, `${id}.json`))).toBe(false)
      expect(statSync(join(directory, `${id}.string`)).size).toBe(0)
      expect(result.success.outputs[0]!.bytes).toBe(Buffer.byteLength(text))
      expect(Bound.exceeds((result.success.content[0] as { text: string }).text, small)).toBe(false)
      const read = await Effect.runPromise(
        Effect.flatMap(ManagedOutputs.Service, (outputs) => outputs.open(id, "structured")).pipe(Effect.provide(ManagedOutputs.layer({ directory }))),
      )
      expect(JSON.parse(await read.content.text())).toBe(text)
      expect(read.bytes).toBe(Buffer.byteLength(JSON.stringify(text)))
    }
    // Within the bound it passes whole, kept nowhere.
    expect(await bound({ content: [{ type: "text", text: "hi" }], structured: "hi" }, small)).toMatchObject({ success: { structured: "hi", outputs: [] } })
  })

  test("a structured-only output within the bound passes with no content", async () => {
    const result = await bound({ content: [], structured: { a: [1, 2] } }, small)
    expect(result._tag === "Success" && result.success).toEqual({ content: [], structured: { a: [1, 2] }, outputs: [] })
  })

  test("an image stays inline up to image.maxBytes where that is set above the media limit; other files do not", async () => {
    const data = Buffer.alloc(3_000, 7).toString("base64")
    const limits = { maxMediaBytes: 2_000, image: { maxBytes: 20_000 } }
    const image = await bound({ content: [{ type: "file", data, mime: "image/png" }], structured: null }, limits)
    if (image._tag !== "Success") throw image.failure
    expect(image.success.outputs).toEqual([])
    const audio = await bound({ content: [{ type: "file", data, mime: "audio/wav" }], structured: null }, limits)
    if (audio._tag !== "Success") throw audio.failure
    expect(audio.success.outputs).toHaveLength(1)
  })

  test("media stays inline up to the media limit and is kept in the settlement's one output beyond it", async () => {
    const directory = join(tempDir(), "outputs")
    const data = Buffer.alloc(3_000, 7).toString("base64")
    const inline = await bound({ content: [{ type: "file", data, mime: "image/png", name: "a.png" }], structured: null }, { maxMediaBytes: 3_000 }, directory)
    if (inline._tag !== "Success") throw inline.failure
    expect(inline.success.content).toEqual([{ type: "file", mime: "image/png", uri: `data:image/png;base64,${data}`, name: "a.png" }])
    const kept = await bound({ content: [{ type: "file", data, mime: "image/png", name: "a.png" }], structured: null }, { maxMediaBytes: 2_999 }, directory)
    if (kept._tag !== "Success") throw kept.failure
    const id = kept.success.outputs[0]!.id
    expect(kept.success.content).toEqual([
      { type: "text", text: expect.stringContaining(`inline media limit of 2999 bytes; it is kept in ${join(directory, `${id}.1`)}`) },
    ])
    expect(kept.success.outputs[0]!.bytes).toBe(3_000)
    expect(Buffer.from(await Bun.file(join(directory, `${id}.1`)).arrayBuffer()).equals(Buffer.alloc(3_000, 7))).toBe(true)
  })

  test("notes for files over the media limit share the text budget; everything goes in one output", async () => {
    const directory = join(tempDir(), "outputs")
    const big = { type: "file" as const, data: Buffer.alloc(2_000, 1).toString("base64"), mime: "image/png", name: "big.png" }
    const content: Array<Tool.Content> = [{ type: "text", text: "x".repeat(900) }]
    for (let index = 0; index < 20; index++) content.push(big)
    const result = await bound({ content, structured: null }, { ...small, maxMediaBytes: 1_000 }, directory)
    if (result._tag !== "Success") throw result.failure
    const texts = result.success.content.filter((part) => part.type === "text")
    expect(texts).toHaveLength(1)
    expect(Bound.exceeds((texts[0] as { text: string }).text, small)).toBe(false)
    expect(result.success.outputs).toHaveLength(1)
    const id = result.success.outputs[0]!.id
    expect(readdirSync(directory).filter((name) => name.startsWith(`${id}.`))).toHaveLength(20)
    expect(await Bun.file(join(directory, id)).text()).toContain(`kept in ${join(directory, `${id}.20`)}`)
  })

  // Each file was checked alone: an MCP server's 250,000 empty file parts made a settlement of 37 MB, and two files
  // of 5 MiB put 10 MiB in the model's context.
  test("file parts share one inline budget: past 32 of them or the media limit together, the rest are kept aside", async () => {
    const directory = join(tempDir(), "outputs")
    const tiny = (index: number) => ({ type: "file" as const, data: Buffer.from(`f${index}`).toString("base64"), mime: "image/png", name: `${index}.png` })
    const many = await bound({ content: Array.from({ length: 1_000 }, (_, index) => tiny(index)), structured: null }, {}, directory)
    if (many._tag !== "Success") throw many.failure
    const files = many.success.content.filter((part) => part.type === "file")
    expect(files.map((part) => (part as { name: string }).name)).toEqual(Array.from({ length: 32 }, (_, index) => `${index}.png`))
    expect(JSON.stringify(many.success).length).toBeLessThan(60_000)
    const id = many.success.outputs[0]!.id
    expect(readdirSync(directory).filter((name) => name.startsWith(`${id}.`))).toHaveLength(968)
    const notes = await Bun.file(join(directory, id)).text()
    expect(notes).toContain(`[32.png (image/png, 3 bytes) is past what one output shows inline (32 files, ${Output.DEFAULT_MAX_MEDIA_BYTES} bytes of them together); it is kept in ${join(directory, `${id}.1`)}.]`)
    expect(Buffer.from(await Bun.file(join(directory, `${id}.968`)).arrayBuffer()).toString()).toBe("f999")

    // Two files each within the media limit, together past it: the first inline, the second kept.
    const half = (name: string) => ({ type: "file" as const, data: Buffer.alloc(600, 1).toString("base64"), mime: "audio/wav", name })
    const two = await bound({ content: [half("a.wav"), half("b.wav")], structured: null }, { maxMediaBytes: 1_000 })
    if (two._tag !== "Success") throw two.failure
    expect(two.success.content.map((part) => part.type)).toEqual(["file", "text"])
    expect((two.success.content[1] as { text: string }).text).toContain("[b.wav (audio/wav, 600 bytes) is past what one output shows inline")
    expect(two.success.outputs[0]!.bytes).toBe(600)
  })

  test("a file named or typed past 255 characters is kept aside, its note cutting the name", async () => {
    const data = Buffer.from("x").toString("base64")
    const named = await bound({ content: [{ type: "file", data, mime: "image/png", name: "n".repeat(5_000) }], structured: null })
    if (named._tag !== "Success") throw named.failure
    const note = (named.success.content[0] as { text: string }).text
    expect(note).toStartWith(`[${"n".repeat(255)}… (image/png, 1 bytes) has a name or media type longer than the 255 characters`)
    expect(note.length).toBeLessThan(1_000)
    const typed = await bound({ content: [{ type: "file", data, mime: `image/${"p".repeat(5_000)}` }], structured: null })
    if (typed._tag !== "Success") throw typed.failure
    expect(typed.success.content[0]!.type).toBe("text")
    expect(typed.success.outputs).toHaveLength(1)
  })

  test("when the full output cannot be kept, bounding fails rather than returning a lossy success", async () => {
    const root = tempDir()
    writeFileSync(join(root, "outputs"), "")
    const result = await bound({ content: [{ type: "text", text: "x".repeat(5_000) }], structured: null }, small, join(root, "outputs"))
    expect(result._tag).toBe("Failure")
    expect(result._tag === "Failure" && result.failure).toBeInstanceOf(ManagedOutputs.RetentionError)
  })

  test("limits below the minimum are raised so a preview always fits its marker", async () => {
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        return (yield* Output.Service).limits
      }).pipe(Effect.provide(Output.layer({ maxLines: 1, maxBytes: 10 }).pipe(Layer.provide(ManagedOutputs.layer({ directory: tempDir() }))))),
    )
    expect(result.maxLines).toBe(Bound.MIN_MAX_LINES)
    expect(result.maxBytes).toBe(Bound.MIN_MAX_BYTES)
  })
})

// A model making big outputs call after call filled the data directory's disk, and then every session's calls failed
// to keep theirs (and the store its records). Outputs now hold at most output.maxSessionBytes per session and always
// leave their disk some room; past either, the answer is the preview alone, saying the rest was not kept and why.
describe("the bound on what outputs may take", () => {
  const location = "/projects/app"
  const layerOf = (directory: string, limits: Output.Settings, minFreeBytes?: number) =>
    Output.layer(limits).pipe(
      Layer.provideMerge(ManagedOutputs.layer({ directory, ...(minFreeBytes === undefined ? {} : { minFreeBytes }) })),
    )
  const boundAll = (directory: string, limits: Output.Settings, projected: ReadonlyArray<Output.Projected>, minFreeBytes?: number) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const output = yield* Output.Service
        return yield* Effect.forEach(projected, (one) => output.bound(one))
      }).pipe(Effect.provide(layerOf(directory, limits, minFreeBytes))),
    )
  const rows = (count: number, tag: string) => Array.from({ length: count }, (_, index) => `${tag} row ${index} ${"x".repeat(90)}`).join("\n")
  const textOf = (bounded: Output.Bounded) => bounded.content.map((part) => (part.type === "text" ? part.text : "")).join("")
  const sessionFiles = (directory: string, session: string) => {
    const place = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(directory, location), session)
    return existsSync(place) ? readdirSync(place).sort() : []
  }

  test("past output.maxSessionBytes a session's outputs are answered as a preview, not kept, saying why; other sessions keep theirs", async () => {
    const directory = join(tempDir(), "outputs")
    const limits = { ...small, maxSessionBytes: 1_048_576 }
    const big = (tag: string, session: string): Output.Projected => ({ content: [{ type: "text", text: rows(4_000, tag) }], structured: null, location, session })
    const [first, second, third, other] = await boundAll(directory, limits, [big("a", "s1"), big("b", "s1"), big("c", "s1"), big("d", "s2")])
    // 4,000 rows of ~100 bytes: two fit in 1 MiB, the third does not.
    expect(first!.outputs).toHaveLength(1)
    expect(second!.outputs).toHaveLength(1)
    expect(third!.outputs).toEqual([])
    expect(other!.outputs).toHaveLength(1)
    expect(sessionFiles(directory, "s1")).toEqual([first!.outputs[0]!.id, second!.outputs[0]!.id].sort())
    const preview = textOf(third!)
    expect(Bound.exceeds(preview, small)).toBe(false)
    expect(preview).toMatch(
      /^\[Output too large to show whole: 4000 lines, \d+ bytes\. Shown: .*; left out: lines \d+-\d+ \(\d+ bytes\), which was not kept: this session's kept outputs already hold 7\d\d\.\d KiB of the 1\.0 MiB one session may keep \(output\.maxSessionBytes\)\. To see more of it, make a call that returns less/,
    )
    expect(preview).toContain("c row 3999")
    expect(preview).not.toContain("out_")
  })

  // A host settles a session's calls at once: each output checked against the count before the others were written
  // was let through, all four past the bound.
  test("outputs of one session bounded at once each count the others under way", async () => {
    const directory = join(tempDir(), "outputs")
    const limits = { ...small, maxSessionBytes: 1_048_576 }
    const big = (tag: string): Output.Projected => ({ content: [{ type: "text", text: rows(7_000, tag) }], structured: null, location, session: "s1" })
    const bounded = await Effect.runPromise(
      Effect.gen(function* () {
        const output = yield* Output.Service
        return yield* Effect.forEach(["a", "b", "c", "d"], (tag) => output.bound(big(tag)), { concurrency: "unbounded" })
      }).pipe(Effect.provide(layerOf(directory, limits))),
    )
    // ~700 KB each: one fits in 1 MiB.
    expect(bounded.map((one) => one.outputs.length)).toEqual([1, 0, 0, 0])
    expect(sessionFiles(directory, "s1")).toHaveLength(1)
    expect(textOf(bounded[1]!)).toContain("this session's kept outputs already hold")
  })

  test("what other processes removed meanwhile (a sweep) is counted afresh before refusing", async () => {
    const directory = join(tempDir(), "outputs")
    const limits = { ...small, maxSessionBytes: 1_048_576 }
    const big = (tag: string): Output.Projected => ({ content: [{ type: "text", text: rows(4_000, tag) }], structured: null, location, session: "s1" })
    await Effect.runPromise(
      Effect.gen(function* () {
        const output = yield* Output.Service
        const [a, b] = [yield* output.bound(big("a")), yield* output.bound(big("b"))]
        expect([a.outputs.length, b.outputs.length]).toEqual([1, 1])
        // Another process's sweep removes the first: the third is kept.
        const place = ManagedOutputs.sessionDirectory(ManagedOutputs.locationDirectory(directory, location), "s1")
        rmSync(join(place, a.outputs[0]!.id))
        expect((yield* output.bound(big("c"))).outputs).toHaveLength(1)
        expect((yield* output.bound(big("d"))).outputs).toEqual([])
      }).pipe(Effect.provide(layerOf(directory, limits))),
    )
  })

  test("outputs always leave their disk room: past it nothing is kept, media notes included, and the preview says so", async () => {
    const directory = join(tempDir(), "outputs")
    const file = { type: "file" as const, data: Buffer.alloc(3_000, 7).toString("base64"), mime: "application/octet-stream", name: "dump.bin" }
    const projected: Output.Projected = { content: [{ type: "text", text: rows(500, "z") }, file], structured: null, location, session: "s1" }
    // A floor above whatever this disk has free: nothing may be kept.
    const [bounded] = await boundAll(directory, { ...small, maxMediaBytes: 1_000 }, [projected], Number.MAX_SAFE_INTEGER)
    expect(bounded!.outputs).toEqual([])
    expect(existsSync(directory)).toBe(false)
    const preview = textOf(bounded!)
    expect(Bound.exceeds(preview, small)).toBe(false)
    expect(preview).toMatch(/which was not kept: the disk holding core's data directory has [\d.]+ [KMGT]iB free, and outputs always leave /)
    // The media note is the tail of the text: it says the file was not kept, not where it is.
    expect(preview).toContain("[dump.bin (application/octet-stream, 3000 bytes) is larger than the inline media limit of 1000 bytes; it was not kept: the disk")
    expect(preview).not.toContain("kept in")
  })

  // The note of a file not kept is longer than the note of one kept: a text that fit beside the one no longer fits
  // beside the other, and went to the model past the bound.
  test("a text beside a media note not kept stays within the bound, whatever its length", async () => {
    const file = { type: "file" as const, data: Buffer.alloc(3_000, 7).toString("base64"), mime: "application/octet-stream", name: "dump.bin" }
    for (let length = 700; length <= 1_000; length += 2) {
      // A short path: its note, kept, is shorter than the note saying why it was not.
      const directory = join(tempDir(), "o")
      const projected: Output.Projected = { content: [{ type: "text", text: "t".repeat(length) }, file], structured: null, location, session: "s1" }
      const [bounded] = await boundAll(directory, { ...small, maxMediaBytes: 1_000 }, [projected], Number.MAX_SAFE_INTEGER)
      const text = textOf(bounded!)
      expect([length, Bound.exceeds(text, small)]).toEqual([length, false])
      expect(text).toContain("not kept")
    }
  })

  test("a structured value too large to keep inline, and not kept, is dropped as before: structured null, no output", async () => {
    const directory = join(tempDir(), "outputs")
    const structured = { rows: Array.from({ length: 200 }, (_, id) => ({ id, name: `row ${id}` })) }
    const [bounded] = await boundAll(directory, small, [{ content: [{ type: "text", text: "200 rows" }], structured, location, session: "s1" }], Number.MAX_SAFE_INTEGER)
    expect(bounded).toEqual({ content: [{ type: "text", text: "200 rows" }], structured: null, outputs: [] })
  })
})
