// What a session has seen of a file: read and the editing tools record it per (sessionID, path); write refuses
// to replace a file the session never read, write and edit refuse a file changed since the session saw it, and
// core.json's `editing.readBeforeWrite: false` turns the refusals off. The durable record survives the process.

import { describe, expect, test } from "bun:test"
import { readFileSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Reads } from "../../src/store/reads"
import { exec, sandbox, settlementOf, write } from "../cli/fixture"
import { harness, textOf } from "../support/builtin"
import { png } from "../support/image"
import { tempDir } from "../support/temp"

describe("read before write", () => {
  test("write over a file the session never read is refused, naming the file and what to do", async () => {
    const h = harness({ files: { "a.txt": "precious\n" } })
    const { settlement } = await h.settle("write", { filePath: "a.txt", content: "new\n" })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toStartWith(
      "a.txt already exists (9 bytes) and has not been read in this session, so write would replace content you have not seen. Nothing was changed. Read it first",
    )
    // What the model reads carries no advice on turning the check off: that is the user's setting.
    expect(settlement.error?.message).not.toMatch(/core\.json|readBeforeWrite|turn/)
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("precious\n")
  })

  test("after a read the write goes through and says what it replaced; another session still has to read", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\n" } })
    await h.settle("read", { filePath: "a.txt" })
    const { settlement } = await h.settle("write", { filePath: "a.txt", content: "three\n" })
    expect(textOf(settlement)).toBe("Overwrote a.txt (1 line, 6 bytes; it held 2 lines, 8 bytes).")
    const other = await h.settle("write", { filePath: "a.txt", content: "four\n" }, { session: "ses_other" })
    expect(other.settlement.status).toBe("error")
    // The session that wrote it has seen what it wrote.
    const again = await h.settle("write", { filePath: "a.txt", content: "five\n" })
    expect(again.settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("five\n")
  })

  // The model was told to read it first, read it, and was told the same again: a loop with no way out, for every
  // file read answers without its text (an image, a binary file, text that is not UTF-8).
  test("a file read shows as an image, or says it cannot show, counts as read: write then replaces it", async () => {
    const h = harness({ files: { "img.png": png(2, 2), "blob.bin": new Uint8Array([0, 1, 2, 0, 255]), "latin.txt": new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]) } })
    for (const name of ["img.png", "blob.bin", "latin.txt"]) {
      const unread = await h.settle("write", { filePath: name, content: "x\n" })
      expect([name, unread.settlement.error?.message]).toEqual([name, expect.stringContaining("has not been read in this session")])
      await h.settle("read", { filePath: name })
      const { settlement } = await h.settle("write", { filePath: name, content: "x\n" })
      expect([name, settlement.status]).toEqual([name, "success"])
      expect(readFileSync(join(h.directory, name), "utf8")).toBe("x\n")
    }
  })

  test("creating a new file needs no read", async () => {
    const h = harness()
    const { settlement } = await h.settle("write", { filePath: "new.txt", content: "x" })
    expect(settlement.status).toBe("success")
  })

  test("write and edit of a file changed since the session read it are refused", async () => {
    const h = harness({ files: { "a.txt": "one\n" } })
    await h.settle("read", { filePath: "a.txt" })
    writeFileSync(join(h.directory, "a.txt"), "one\nadded by someone\n")
    for (const [name, input] of [
      ["write", { filePath: "a.txt", content: "mine\n" }],
      ["edit", { filePath: "a.txt", oldString: "one", newString: "ONE" }],
    ] as const) {
      const { settlement } = await h.settle(name, input)
      expect(settlement.error?.message).toStartWith("a.txt changed since this session last read or wrote it (4 bytes then, 21 now)")
    }
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("one\nadded by someone\n")
  })

  test("a file touched but not changed since the read is not a change", async () => {
    const h = harness({ files: { "a.txt": "one\n" } })
    await h.settle("read", { filePath: "a.txt" })
    utimesSync(join(h.directory, "a.txt"), new Date(), new Date(Date.now() + 5_000))
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "one", newString: "ONE" })
    expect(settlement.status).toBe("success")
  })

  test("edit of a file the session never read is allowed: oldString must match it as it is", async () => {
    const h = harness({ files: { "a.txt": "one\n" } })
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "one", newString: "ONE" })
    expect(settlement.status).toBe("success")
  })

  test("editing.readBeforeWrite false turns the refusals off", async () => {
    const h = harness({ files: { "a.txt": "one\n" }, readBeforeWrite: false })
    const { settlement } = await h.settle("write", { filePath: "a.txt", content: "two\n" })
    expect(settlement.status).toBe("success")
    expect(textOf(settlement)).toContain("it held 1 line, 4 bytes")
  })
})

describe("the durable record", () => {
  test("records and answers versions per session and path, across reopening", async () => {
    const path = join(tempDir(), "core.db")
    const version: Reads.Version = { hash: "ab", size: 3, mtimeNs: "1700000000123456789", ino: "42" }
    await Effect.runPromise(
      Effect.gen(function* () {
        const reads = yield* Reads.Service
        yield* reads.record("s1", "/x/a.txt", version)
        yield* reads.record("s1", "/x/a.txt", { ...version, size: 4 })
      }).pipe(Effect.provide(Reads.layer(path))),
    )
    const [found, other] = await Effect.runPromise(
      Effect.gen(function* () {
        const reads = yield* Reads.Service
        return [yield* reads.lookup("s1", "/x/a.txt"), yield* reads.lookup("s2", "/x/a.txt")] as const
      }).pipe(Effect.provide(Layer.fresh(Reads.layer(path)))),
    )
    expect(found).toEqual({ ...version, size: 4 })
    expect(other).toBeUndefined()
  })

  test("core exec: a read in one process lets a write in another with the same --session through", async () => {
    const box = sandbox({ "a.txt": "old\n" })
    const refused = settlementOf(await exec(box, "write", { filePath: "a.txt", content: "new\n" }, ["--session", "s1"]))
    expect(refused.error?.message).toContain("has not been read in this session")
    expect(settlementOf(await exec(box, "read", { filePath: "a.txt" }, ["--session", "s1"])).status).toBe("success")
    const written = settlementOf(await exec(box, "write", { filePath: "a.txt", content: "new\n" }, ["--session", "s1"]))
    expect(written.status).toBe("success")
    expect(readFileSync(join(box.location, "a.txt"), "utf8")).toBe("new\n")
  }, 60_000)

  test("core exec: core.json editing.readBeforeWrite false lets a write through unread", async () => {
    const box = sandbox({ "a.txt": "old\n" })
    write(box.location, { "core.json": JSON.stringify({ editing: { readBeforeWrite: false } }) })
    const written = settlementOf(await exec(box, "write", { filePath: "a.txt", content: "new\n" }))
    expect(written.status).toBe("success")
  }, 60_000)
})
