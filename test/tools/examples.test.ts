// This repository's example tools, tested the way tool authors test theirs: through `@core/tool/testing`, which
// settles a tool of a file in-process through the real pipeline.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { check, settleFile } from "@core/tool/testing"
import hash from "../../tools/hash"

const ROOT = join(import.meta.dir, "../..")
const file = (name: string) => join(ROOT, "tools", `${name}.ts`)

describe("the example tools", () => {
  test("hash returns the hex digest as a string, and its definition is one registration would accept", async () => {
    const settlement = await settleFile(file("hash"), "hash", { text: "hi" })
    expect(settlement.structured).toBe("8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4")
    expect((await settleFile(file("hash"), "hash", { text: "hi", algorithm: "md5" })).structured).toBe(
      "49f68a5c8493ec2c0bf489821c21fc3b",
    )
    expect(check(hash, "hash").inputSchema).toMatchObject({ type: "object", required: ["text"] })
  })

  test("wc counts a project file and projects the counts into one line", async () => {
    const settlement = await settleFile(file("wc"), "wc", { path: "package.json" })
    const text = await Bun.file(join(ROOT, "package.json")).text()
    expect(settlement.structured).toEqual({
      path: "package.json",
      lines: text.split("\n").length - 1,
      words: text.split(/\s+/).filter((word) => word.length > 0).length,
      bytes: Buffer.byteLength(text),
    })
    expect(settlement.content).toEqual([{ type: "text", text: expect.stringMatching(/^package\.json: \d+ lines, \d+ words, \d+ bytes$/) }])
  })

  test("wc refuses paths outside the project and reports a missing file as a model-visible failure", async () => {
    expect((await settleFile(file("wc"), "wc", { path: "../outside.txt" })).error).toEqual({
      kind: "failure",
      message: "../outside.txt is outside the project; give a path inside it.",
    })
    expect((await settleFile(file("wc"), "wc", { path: "no-such-file.txt" })).error?.message).toStartWith(
      "File not found: no-such-file.txt",
    )
  })

  test("text_slug and text_identifier rewrite names", async () => {
    expect((await settleFile(file("text"), "text_slug", { text: "Héllo, Wörld!" })).structured).toBe("hello-world")
    expect((await settleFile(file("text"), "text_identifier", { text: "max retry count", style: "camel" })).structured).toBe(
      "maxRetryCount",
    )
    expect(
      (await settleFile(file("text"), "text_identifier", { text: "maxRetryCount", style: "constant" })).structured,
    ).toBe("MAX_RETRY_COUNT")
  })
})
