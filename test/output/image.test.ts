// Image normalization: detection by magic bytes (not the declared type), small images byte-identical, large ones
// resized within the limits (PNG kept lossless when it fits, else JPEG, WebP with transparency) with a note of
// both sizes, and clear refusals for corrupt, cut-short, bomb and non-image bytes. Real images, made here.

import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Image } from "../../src/output/image"
import type { Tool } from "../../src/tool/tool"
import { bmp, bomb, convert, metadata, png } from "../support/image"

const LIMITS = Image.DEFAULT_LIMITS
const file = (bytes: Uint8Array, mime = "image/png", name?: string): Tool.Content & { type: "file" } => ({
  type: "file",
  data: Buffer.from(bytes).toString("base64"),
  mime,
  ...(name === undefined ? {} : { name }),
})
const normalize = (part: Tool.Content & { type: "file" }, limits: Image.Limits = LIMITS) =>
  Effect.runPromise(Effect.exit(Image.normalize(part, limits)))
const ok = async (part: Tool.Content & { type: "file" }, limits?: Image.Limits) => {
  const exit = await normalize(part, limits)
  if (Exit.isFailure(exit)) throw new Error(`refused: ${JSON.stringify(exit.cause)}`)
  return exit.value
}
const refused = async (part: Tool.Content & { type: "file" }, limits?: Image.Limits): Promise<string> => {
  const exit = await normalize(part, limits)
  if (Exit.isSuccess(exit)) throw new Error("not refused")
  const error = exit.cause.reasons[0]
  return (error as { error: Image.Refused }).error.message
}
const bytesOf = (part: Tool.Content) => Buffer.from((part as { data: string }).data, "base64")

describe("Image.sniff", () => {
  test("reads each format's size from its header, whatever it is named", async () => {
    const source = png(320, 200)
    expect(Image.sniff(source)).toMatchObject({ format: "png", width: 320, height: 200, alpha: false })
    expect(Image.sniff(png(10, 10, { alpha: true }))).toMatchObject({ format: "png", alpha: true })
    expect(Image.sniff(await convert(source, "jpeg"))).toMatchObject({ format: "jpeg", width: 320, height: 200 })
    expect(Image.sniff(await convert(source, "webp"))).toMatchObject({ format: "webp", width: 320, height: 200 })
    expect(Image.sniff(bmp(30, 20))).toMatchObject({ format: "bmp", width: 30, height: 20 })
    expect(Image.sniff(Buffer.from("GIF89a\x05\x00\x03\x00\x00\x00\x00;", "latin1"))).toMatchObject({ format: "gif", width: 5, height: 3 })
    expect(Image.sniff(Buffer.from("II*\0rest", "latin1"))).toMatchObject({ format: "tiff" })
    expect(Image.sniff(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))).toBeUndefined()
    expect(Image.sniff(Buffer.from("hello"))).toBeUndefined()
  })

  test("says a PNG without its end or a JPEG without a frame is broken", () => {
    const whole = png(64, 64)
    expect(Image.sniff(whole)?.broken).toBeUndefined()
    expect(Image.sniff(whole.subarray(0, whole.length - 20))?.broken).toContain("cut short")
    expect(Image.sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, ...new Array(14).fill(0)]))?.broken).toContain("no frame")
  })
})

describe("Image.normalize", () => {
  test("leaves a small image in an accepted format byte-identical, the same part", async () => {
    const part = file(png(800, 600), "image/png", "small.png")
    const [out, ...rest] = await ok(part)
    expect(out).toBe(part)
    expect(rest).toEqual([])
  })

  test("corrects a declared type that disagrees with the bytes, keeping the bytes", async () => {
    const source = png(50, 40)
    const [out] = await ok(file(source, "image/jpeg", "x.jpg"))
    expect(out).toMatchObject({ type: "file", mime: "image/png", name: "x.jpg" })
    expect(bytesOf(out!).equals(source)).toBe(true)
    const [untyped] = await ok(file(source, "application/octet-stream"))
    expect(untyped).toMatchObject({ mime: "image/png" })
  })

  test("resizes a 4000×3000 PNG to 2000 px on the long side, within the byte limit, saying both sizes", async () => {
    const source = png(4000, 3000)
    expect(source.length).toBeGreaterThan(LIMITS.maxBytes)
    const [image, note] = await ok(file(source, "image/png", "photo.png"))
    const out = bytesOf(image!)
    expect(out.length).toBeLessThanOrEqual(LIMITS.maxBytes)
    const meta = await metadata(out)
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 2000, height: 1500 })
    expect(image).toMatchObject({ mime: `image/${meta.format}`, name: `photo.${meta.format === "jpeg" ? "jpg" : meta.format}` })
    expect(note).toEqual({
      type: "text",
      text: expect.stringMatching(
        /^\[image "photo\.png" resized from 4000×3000 PNG, [\d.]+ MiB to 2000×1500 (JPEG|PNG|WebP), [\d.]+ (KiB|MiB) \(limits: 5\.0 MiB, 2000 px\)\]$/,
      ),
    })
  })

  test("keeps a PNG lossless when its smaller version fits, else goes lossy (WebP where it has transparency)", async () => {
    const smooth = await ok(file(png(3000, 1000, { noise: 0 })))
    expect(smooth[0]).toMatchObject({ mime: "image/png" })
    expect((await metadata(bytesOf(smooth[0]!))).width).toBe(2000)
    const noisy = await ok(file(png(1500, 1500, { noise: 255 })), { maxBytes: 1024 * 1024, maxDimension: 2000 })
    expect(noisy[0]).toMatchObject({ mime: "image/jpeg" })
    expect(bytesOf(noisy[0]!).length).toBeLessThanOrEqual(1024 * 1024)
    const clear = await ok(file(png(1500, 1500, { noise: 255, alpha: true })), { maxBytes: 1024 * 1024, maxDimension: 2000 })
    expect(clear[0]).toMatchObject({ mime: "image/webp" })
  })

  test("shrinks until the bytes fit a tight limit", async () => {
    const limits = { maxBytes: 32 * 1024, maxDimension: 2000 }
    const [image] = await ok(file(png(1200, 900, { noise: 255 })), limits)
    expect(bytesOf(image!).length).toBeLessThanOrEqual(limits.maxBytes)
  })

  test("converts a BMP, which no provider takes, to PNG", async () => {
    const [image, note] = await ok(file(bmp(40, 30), "image/bmp", "a.bmp"))
    expect(image).toMatchObject({ mime: "image/png", name: "a.png" })
    expect(await metadata(bytesOf(image!))).toMatchObject({ format: "png", width: 40, height: 30 })
    expect((note as { text: string }).text).toMatch(/^\[image "a\.bmp" converted from 40×30 BMP, [\d.]+ KiB to 40×30 PNG, /)
  })

  test("refuses a decompression bomb by its header, before decoding", async () => {
    const source = bomb()
    expect(source.length).toBeLessThan(64 * 1024)
    expect(await refused(file(source, "image/png", "bomb.png"))).toBe(
      `The image "bomb.png" (PNG) declares 100000×100000 pixels, more than the ${Image.MAX_DECODE_PIXELS} a decode ` +
        "may hold, so it was not decoded or shown. Use a smaller image.",
    )
  })

  test("refuses GIF, WebP and JPEG headers declaring huge canvases the same way", async () => {
    const gif = Buffer.from("GIF89a\xff\xff\xff\xff\x00\x00\x00;", "latin1")
    const webp = Buffer.alloc(30)
    webp.write("RIFF", 0, "latin1")
    webp.writeUInt32LE(22, 4)
    webp.write("WEBPVP8X", 8, "latin1")
    webp.writeUIntLE(0xffffff, 24, 3)
    webp.writeUIntLE(0xffffff, 27, 3)
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xc0, 0, 11, 8, 0xff, 0xff, 0xff, 0xff, 1, 1, 0x11, 0, 0xff, 0xd9])
    for (const [bytes, side] of [[gif, 65535], [webp, 16777216], [jpeg, 65535]] as const) {
      expect(await refused(file(bytes, "image/png"))).toContain(`declares ${side}×${side} pixels`)
    }
  })

  test("refuses a cut-short image, small or large, saying so", async () => {
    const small = png(100, 100)
    expect(await refused(file(small.subarray(0, small.length - 30), "image/png", "cut.png"))).toMatch(
      /^The image "cut\.png" \(PNG, [\d.]+ KiB\) cannot be decoded: it is cut short \(no IEND chunk\)\./,
    )
    const jpeg = await convert(png(3000, 2000), "jpeg")
    expect(await refused(file(jpeg.subarray(0, 2000), "image/jpeg"))).toBe(
      "The image (JPEG, 2 KiB) cannot be decoded: it is cut short (no end marker). It was not shown; check the file it came from.",
    )
  })

  test("refuses a PNG whose data is corrupt when it must be decoded", async () => {
    const source = png(2500, 2500, { noise: 0 })
    // The IDAT's compressed bytes overwritten in the middle: the structure holds, the data does not decode.
    const corrupt = Buffer.from(source)
    corrupt.fill(0x55, 100, Math.min(corrupt.length - 100, 5000))
    expect(await refused(file(corrupt, "image/png", "bad.png"))).toMatch(
      /^The image "bad\.png" \(PNG, [\d.]+ (KiB|MiB)\) could not be decoded or resized: the PNG data is corrupt or cut short\. It was not shown\.$/,
    )
  })

  test("refuses bytes declared an image that are none, and passes untyped bytes that are none", async () => {
    expect(await refused(file(Buffer.from("<html>not an image</html>"), "image/png"))).toBe(
      "The image is declared image/png, but its 25 bytes are not a PNG, JPEG, GIF, WebP or BMP image, so it was not shown.",
    )
    const other = file(Buffer.from("just bytes"), "application/octet-stream")
    expect(await ok(other)).toEqual([other])
    // Untyped bytes that start like a PNG but are cut short were never claimed to be an image: they stay a file.
    const cut = file(png(64, 64).subarray(0, 300), "application/octet-stream")
    expect(await ok(cut)).toEqual([cut])
  })

  test("refuses a TIFF it cannot convert, saying what to do", async () => {
    expect(await refused(file(Buffer.from("II*\0\x08\0\0\0\0\0", "latin1"), "image/tiff", "scan.tif"))).toContain(
      "TIFF images cannot be converted here; convert it to PNG or JPEG first",
    )
  })

  test("gives an SVG as its source text, never rendered", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>`
    const out = await ok(file(Buffer.from(svg), "image/svg+xml", "logo.svg"))
    expect(out).toEqual([{ type: "text", text: `[image "logo.svg": SVG (${svg.length} B), shown as its source text]\n${svg}` }])
  })
})

describe("Image.normalizeAll", () => {
  test("returns the very content when it has no image part", async () => {
    const content: ReadonlyArray<Tool.Content> = [{ type: "text", text: "hi" }, { type: "file", data: "AAAA", mime: "audio/wav" }]
    expect(await Effect.runPromise(Image.normalizeAll(content, LIMITS))).toBe(content)
  })

  // A hostile MCP server's result of a thousand 11 KB PNGs declaring 8192×8191 pixels each cost 2 s of CPU apiece:
  // half an hour for one call. Only the files an output can show are normalized, decoding a bounded sum of pixels.
  test("refuses an image once the decodes of an output's images together would pass its pixels", async () => {
    const wide = () => file(png(3000, 10), "image/png")
    const over = await Effect.runPromise(Effect.exit(Image.normalizeAll([wide(), wide(), wide()], LIMITS, 70_000)))
    if (Exit.isSuccess(over)) throw new Error("not refused")
    expect((over.cause.reasons[0] as unknown as { error: Image.Refused }).error.message).toMatch(
      /^The image \(PNG, \d+ KiB\) was not decoded: with it, the images of this output that need resizing would hold more than the 70000 pixels core decodes for one output\. It was not shown; return fewer or smaller images\.$/,
    )
    // Within the budget, both are decoded and resized; an image that needs no decode takes none of it.
    const both = await Effect.runPromise(Image.normalizeAll([wide(), file(png(100, 100)), wide()], LIMITS, 70_000))
    expect(both.flatMap((part) => (part.type === "file" ? [Image.sniff(bytesOf(part))?.width] : []))).toEqual([2000, 100, 2000])
  })

  test("tighter limits win side by side", () => {
    expect(Image.tighter(LIMITS, { maxDimension: 1568 })).toEqual({ maxBytes: LIMITS.maxBytes, maxDimension: 1568 })
    expect(Image.tighter(LIMITS, { maxBytes: 1000, maxDimension: 9000 })).toEqual({ maxBytes: 1000, maxDimension: 2000 })
  })
})
