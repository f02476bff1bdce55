// Image normalization end to end, through the compiled `core`: `core exec read` of a 4000×3000 PNG answers an
// image within the limits and a note of both sizes; a small image comes back byte-identical; a cut-short image
// and a decompression bomb fail the call clearly; an MCP server's large image is resized the same way; core.json
// sets the limits (and a wrong one names file and key); and `core mcp` (the binary) does the same for the
// official SDK client.

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BUN, location } from "../mcp-client/support"
import { binary, run } from "../support/binary"
import { bomb, metadata, png } from "../support/image"

const SERVER = join(import.meta.dir, "image-server.ts")
const MAX_BYTES = 5 * 1024 * 1024

interface Settlement {
  readonly status: string
  readonly content: ReadonlyArray<{ type: string; text?: string; mime?: string; uri?: string; name?: string }>
  readonly error?: { kind: string; message: string }
}

const bytesOfUri = (uri: string) => Buffer.from(uri.slice(uri.indexOf(",") + 1), "base64")

const large = png(4000, 3000)
const small = png(40, 30)
const { directory, environment } = location({ permission: { "*": "allow" }, mcp: { pics: { command: [BUN, SERVER] } } })
writeFileSync(join(directory, "large.png"), large)
writeFileSync(join(directory, "small.png"), small)
writeFileSync(join(directory, "cut.png"), large.subarray(0, 100_000))
writeFileSync(join(directory, "bomb.png"), bomb())
const env = { CORE_DATA_DIR: environment.dataDir, CORE_HOME: environment.home }

const exec = async (name: string, input: unknown, where = directory) => {
  const result = await run(["exec", name, "--input", JSON.stringify(input), "--location", where], { env })
  return { code: result.code, settlement: JSON.parse(result.stdout) as Settlement, stderr: result.stderr }
}

/** The resized image of a settlement, checked within the limits, and its note. */
const resized = async (settlement: Settlement, side: number) => {
  const image = settlement.content.find((part) => part.type === "file")!
  const bytes = bytesOfUri(image.uri!)
  expect(bytes.length).toBeLessThanOrEqual(MAX_BYTES)
  const meta = await metadata(bytes)
  expect(Math.max(meta.width, meta.height)).toBe(side)
  expect(image.mime).toBe(`image/${meta.format}`)
  const note = settlement.content.find((part) => part.type === "text" && part.text!.includes("resized from"))
  return { meta, note: note?.text }
}

describe("image normalization through the binary", () => {
  beforeAll(() => binary(), 120_000)

  test("read of a 4000×3000 PNG answers it resized within 5 MiB and 2000 px, saying both sizes", async () => {
    const { code, settlement } = await exec("read", { filePath: "large.png" })
    expect(code).toBe(0)
    const { meta, note } = await resized(settlement, 2000)
    expect(meta.height).toBe(1500)
    expect(note).toMatch(/^\[image "large\.png" resized from 4000×3000 PNG, [\d.]+ MiB to 2000×1500 \w+, [\d.]+ (KiB|MiB) \(limits: 5\.0 MiB, 2000 px\)\]$/)
  }, 120_000)

  test("read of a small PNG answers its very bytes", async () => {
    const { settlement } = await exec("read", { filePath: "small.png" })
    expect(settlement.content).toEqual([
      { type: "file", mime: "image/png", uri: `data:image/png;base64,${small.toString("base64")}`, name: "small.png" },
    ])
  }, 120_000)

  test("read of a cut-short image, or of a bomb, is a model-visible failure (exit 1), not a crash", async () => {
    const cut = await exec("read", { filePath: "cut.png" })
    expect(cut.code).toBe(1)
    expect(cut.settlement.error).toEqual({
      kind: "failure",
      message: 'The image "cut.png" (PNG, 98 KiB) cannot be decoded: it is cut short (no IEND chunk). It was not shown; check the file it came from.',
    })
    const bombed = await exec("read", { filePath: "bomb.png" })
    expect(bombed.code).toBe(1)
    expect(bombed.settlement.error?.message).toStartWith('The image "bomb.png" (PNG) declares 100000×100000 pixels')
  }, 120_000)

  test("an MCP server's large image is resized; its corrupt image and its bomb fail; a wrong mime is corrected", async () => {
    const { settlement } = await exec("pics_large", {})
    expect(settlement.status).toBe("success")
    expect(settlement.content[0]).toEqual({ type: "text", text: "the large image:" })
    const { note } = await resized(settlement, 2000)
    expect(note).toMatch(/^\[image resized from 4000×3000 PNG/)
    expect((await exec("pics_corrupt", {})).settlement.error?.message).toContain("cannot be decoded: it is cut short")
    expect((await exec("pics_bomb", {})).settlement.error?.message).toContain("declares 100000×100000 pixels")
    const relabelled = (await exec("pics_mislabelled", {})).settlement
    expect(relabelled.content[1]).toMatchObject({ type: "file", mime: "image/png" })
  }, 120_000)

  test("core.json output.image sets the limits; a wrong value names the file, the key and what was expected", async () => {
    const tight = location({ output: { image: { maxDimension: 800, maxBytes: 200_000 } } })
    writeFileSync(join(tight.directory, "large.png"), large)
    const result = await run(["exec", "read", "--input", '{"filePath":"large.png"}', "--location", tight.directory], {
      env: { CORE_DATA_DIR: tight.environment.dataDir, CORE_HOME: tight.environment.home },
    })
    const settlement = JSON.parse(result.stdout) as Settlement
    const image = settlement.content.find((part) => part.type === "file")!
    const bytes = bytesOfUri(image.uri!)
    expect(bytes.length).toBeLessThanOrEqual(200_000)
    expect(Math.max((await metadata(bytes)).width, (await metadata(bytes)).height)).toBeLessThanOrEqual(800)

    const wrong = location({ output: { image: { maxDimension: "large" } } })
    const refused = await run(["exec", "read", "--input", '{"filePath":"core.json"}', "--location", wrong.directory], {
      env: { CORE_DATA_DIR: wrong.environment.dataDir, CORE_HOME: wrong.environment.home },
    })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain(join(wrong.directory, "core.json"))
    expect(refused.stderr).toContain("output.image.maxDimension")
    expect(refused.stderr).toContain("an integer of at least 64")
  }, 120_000)
})

describe("image normalization over `core mcp` (the binary) with the SDK client", () => {
  let client: Client
  beforeAll(async () => {
    client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(
      new StdioClientTransport({
        command: await binary(),
        args: ["mcp", "--location", directory],
        env: { PATH: process.env.PATH ?? "", HOME: environment.home, ...env },
        stderr: "pipe",
      }),
    )
  }, 120_000)
  afterAll(() => client.close())

  const call = (name: string) =>
    client.callTool({ name, arguments: name === "read" ? { filePath: "large.png" } : {} }) as Promise<{
      content: Array<{ type: string; text?: string; data?: string; mimeType?: string }>
      isError?: boolean
    }>

  test("read and an MCP server's tool answer their large images resized, with the note", async () => {
    for (const name of ["read", "pics_large"]) {
      const result = await call(name)
      expect(result.isError).toBeFalsy()
      const image = result.content.find((part) => part.type === "image")!
      const bytes = Buffer.from(image.data!, "base64")
      expect(bytes.length).toBeLessThanOrEqual(MAX_BYTES)
      const meta = await metadata(bytes)
      expect({ width: meta.width, height: meta.height, mime: image.mimeType }).toEqual({
        width: 2000,
        height: 1500,
        mime: `image/${meta.format}`,
      })
      expect(result.content.some((part) => part.type === "text" && part.text!.includes("resized from 4000×3000 PNG"))).toBe(true)
    }
  }, 120_000)

  test("a corrupt image and a bomb are errors the client sees, and the session goes on", async () => {
    for (const name of ["pics_corrupt", "pics_bomb"]) {
      const result = await call(name)
      expect(result.isError).toBe(true)
      expect(result.content[0]!.text).toMatch(/cannot be decoded|declares 100000×100000 pixels/)
    }
    expect((await call("pics_small")).content[1]).toMatchObject({ type: "image", mimeType: "image/png" })
  }, 120_000)
})
