export * as Image from "./image"

// Image normalization: every image part that goes back to a model, whatever produced it, is recognised by its
// bytes (not its declared type), refused before decoding when its header declares more pixels than a decode may
// hold, and above the limits resized and re-encoded with Bun's built-in codecs (`Bun.Image`: libspng,
// libjpeg-turbo, libwebp, linked into the runtime, so nothing is added to the binary and nothing loads at
// start-up). Small images in a format every provider takes pass byte-identical. It never renders SVG: that is
// text. Pure but for the codec call; choosing which parts and limits is ./output's job.
//
// Why Bun.Image, measured on a 4000×3000 PNG (decode, resize to 2000 px, JPEG): about 0.5 s and 165 MB RSS, 0 bytes
// added. sharp is as fast but does not load inside `bun build --compile` (its native addon and libvips' shared
// libraries stay outside the binary); wasm-vips' vips.wasm (5 MB) is not embedded either, and under Bun its
// threaded build hung; photon (wasm, +4.2 MB) and jimp (pure JS) work but take 7–10 s and about 370 MB.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Tool } from "../tool/tool"

export interface Limits {
  /** Largest encoded image, in bytes. */
  readonly maxBytes: number
  /** Largest side, in pixels. */
  readonly maxDimension: number
}

export const DEFAULT_MAX_BYTES = 5 * 1024 * 1024
export const DEFAULT_MAX_DIMENSION = 2_000
export const DEFAULT_LIMITS: Limits = { maxBytes: DEFAULT_MAX_BYTES, maxDimension: DEFAULT_MAX_DIMENSION }
/** Below these no useful image fits (and the shrinking loop below could not end well). */
export const MIN_MAX_BYTES = 16 * 1024
export const MIN_MAX_DIMENSION = 64
/**
 * The most pixels a decode may hold (8192 × 8192, 256 MiB as RGBA): a header declaring more is refused before
 * any pixel is allocated, so a small file claiming a huge canvas (a decompression bomb) costs nothing.
 */
export const MAX_DECODE_PIXELS = 8_192 * 8_192
/**
 * The most pixels decoded for the images of one output together (four of the largest): each decode of the largest
 * costs seconds of CPU, so a result of a thousand small files declaring 8192×8191 pixels each (a hostile MCP
 * server's) would otherwise hold a call for half an hour.
 */
export const MAX_OUTPUT_PIXELS = 4 * MAX_DECODE_PIXELS
/** The lossy quality tried first, then the one tried before shrinking further. */
const QUALITY = 85
const LOW_QUALITY = 70
/** How much each further attempt shrinks the sides when an encoding is still over maxBytes. */
const SHRINK = 0.75
const MAX_ATTEMPTS = 8

export type Format = "png" | "jpeg" | "gif" | "webp" | "bmp" | "tiff" | "heic" | "avif"

/** What an image's header says, read without decoding it. */
export interface Header {
  readonly format: Format
  readonly mime: string
  /** 0 where the header gives no size this reader knows (TIFF, HEIC, AVIF). */
  readonly width: number
  readonly height: number
  /** Whether the image may have transparency (a lossy fallback then keeps it: WebP rather than JPEG). */
  readonly alpha: boolean
  /** Why the bytes cannot be a whole image of their format (cut short, a broken structure), if they cannot. */
  readonly broken?: string
}

/** Formats every provider core maps takes as they are (Anthropic, OpenAI, Gemini: PNG, JPEG, GIF, WebP). */
const ACCEPTED: ReadonlySet<Format> = new Set(["png", "jpeg", "gif", "webp"])
const LOSSLESS: ReadonlySet<Format> = new Set(["png", "gif", "bmp"])
const NAMES: Record<Format, string> = {
  png: "PNG",
  jpeg: "JPEG",
  gif: "GIF",
  webp: "WebP",
  bmp: "BMP",
  tiff: "TIFF",
  heic: "HEIC",
  avif: "AVIF",
}

/** An image part that cannot be given to a model: the call fails with `message`. */
export class Refused extends Schema.TaggedError<Refused>()("Image.Refused", {
  message: Schema.String,
}) {}

// ---------------------------------------------------------------------------------------------------------------
// Headers

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, at = 0) =>
  bytes.length >= at + signature.length && signature.every((byte, index) => bytes[at + index] === byte)
const ascii = (bytes: Uint8Array, at: number, text: string) =>
  bytes.length >= at + text.length && [...text].every((character, index) => bytes[at + index] === character.charCodeAt(0))
const u16le = (bytes: Uint8Array, at: number) => bytes[at]! | (bytes[at + 1]! << 8)
const u16be = (bytes: Uint8Array, at: number) => (bytes[at]! << 8) | bytes[at + 1]!
const u24le = (bytes: Uint8Array, at: number) => u16le(bytes, at) | (bytes[at + 2]! << 16)
const u32be = (bytes: Uint8Array, at: number) => ((bytes[at]! << 24) >>> 0) + ((bytes[at + 1]! << 16) | u16be(bytes, at + 2))
const u32le = (bytes: Uint8Array, at: number) => (u24le(bytes, at) + bytes[at + 3]! * 0x1000000) >>> 0
const i32le = (bytes: Uint8Array, at: number) => u32le(bytes, at) | 0

const header = (format: Format, width: number, height: number, alpha: boolean, broken?: string): Header => ({
  format,
  mime: `image/${format}`,
  width,
  height,
  alpha,
  ...(broken === undefined ? {} : { broken }),
})

/** A PNG's chunks walked to IEND: its size, whether it has transparency, and whether it is whole. */
const png = (bytes: Uint8Array): Header => {
  if (bytes.length < 33 || !ascii(bytes, 12, "IHDR")) return header("png", 0, 0, false, "it has no IHDR header")
  const width = u32be(bytes, 16)
  const height = u32be(bytes, 20)
  const colorType = bytes[25]!
  let alpha = colorType === 4 || colorType === 6
  let at = 8
  while (at + 12 <= bytes.length) {
    const length = u32be(bytes, at)
    const type = String.fromCharCode(bytes[at + 4]!, bytes[at + 5]!, bytes[at + 6]!, bytes[at + 7]!)
    if (type === "tRNS") alpha = true
    if (type === "IEND") return header("png", width, height, alpha)
    at += 12 + length
  }
  return header("png", width, height, alpha, "it is cut short (no IEND chunk)")
}

/** How far from its end a JPEG's end marker (EOI) is looked for: some writers append a few bytes after it. */
const JPEG_TRAILER_BYTES = 1_024

const lastIndexOfEoi = (bytes: Uint8Array, from: number): number => {
  for (let at = bytes.length - 2; at >= from; at--) if (bytes[at] === 0xff && bytes[at + 1] === 0xd9) return at
  return -1
}

/** A JPEG's size from its first start-of-frame marker; the segments before it are skipped by their lengths. */
const jpeg = (bytes: Uint8Array): Header => {
  let at = 2
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return header("jpeg", 0, 0, false, "its markers are broken")
    const marker = bytes[at + 1]!
    if (marker === 0xff) {
      at++
      continue
    }
    // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      // libjpeg-turbo decodes a cut-short JPEG with grey where data is missing: a whole one ends with EOI (FF D9),
      // which scan data cannot hold (a data FF is stuffed), allowing some trailing bytes after it.
      const ended = lastIndexOfEoi(bytes, Math.max(at, bytes.length - JPEG_TRAILER_BYTES)) !== -1
      return header("jpeg", u16be(bytes, at + 7), u16be(bytes, at + 5), false, ended ? undefined : "it is cut short (no end marker)")
    }
    if (marker === 0xd9 || marker === 0xda) break
    at += 2 + u16be(bytes, at + 2)
  }
  return header("jpeg", 0, 0, false, "it has no frame header (cut short or not a JPEG)")
}

const webp = (bytes: Uint8Array): Header => {
  const declared = u32le(bytes, 4) + 8
  const broken = bytes.length < declared ? "it is cut short" : undefined
  if (ascii(bytes, 12, "VP8X") && bytes.length >= 30) {
    return header("webp", u24le(bytes, 24) + 1, u24le(bytes, 27) + 1, (bytes[20]! & 0x10) !== 0, broken)
  }
  if (ascii(bytes, 12, "VP8L") && bytes.length >= 25) {
    const bits = u32le(bytes, 21)
    return header("webp", (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1, ((bits >>> 28) & 1) === 1, broken)
  }
  if (ascii(bytes, 12, "VP8 ") && bytes.length >= 30) {
    return header("webp", u16le(bytes, 26) & 0x3fff, u16le(bytes, 28) & 0x3fff, false, broken)
  }
  return header("webp", 0, 0, false, "it has no VP8 header")
}

/** The format of `bytes` by their magic number, with what the header says; undefined when no image format matches. */
export const sniff = (bytes: Uint8Array): Header | undefined => {
  if (startsWith(bytes, PNG_SIGNATURE)) return png(bytes)
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return jpeg(bytes)
  if (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a")) {
    const whole = bytes.length >= 14 && bytes[bytes.length - 1] === 0x3b
    return header("gif", u16le(bytes, 6), u16le(bytes, 8), true, whole ? undefined : "it is cut short (no trailer)")
  }
  if (ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WEBP")) return webp(bytes)
  if (ascii(bytes, 0, "BM") && bytes.length >= 26 && u32le(bytes, 14) >= 12) {
    return header("bmp", Math.abs(i32le(bytes, 18)), Math.abs(i32le(bytes, 22)), true)
  }
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) {
    return header("tiff", 0, 0, true)
  }
  if (ascii(bytes, 4, "ftyp")) {
    const brand = String.fromCharCode(...bytes.subarray(8, 12))
    if (brand === "avif" || brand === "avis") return header("avif", 0, 0, true)
    if (["heic", "heix", "hevc", "hevx", "mif1", "msf1"].includes(brand)) return header("heic", 0, 0, true)
  }
  return undefined
}

/** Whether the bytes are SVG (XML text): a model reads it as its source, never as a rendered image. */
const isSvg = (mime: string, bytes: Uint8Array): boolean => {
  if (mime.toLowerCase().startsWith("image/svg")) return true
  const head = new TextDecoder().decode(bytes.subarray(0, 512)).trimStart().toLowerCase()
  return head.startsWith("<svg") || (head.startsWith("<?xml") && head.includes("<svg"))
}

// ---------------------------------------------------------------------------------------------------------------
// Normalizing

type File = Tool.Content & { type: "file" }

/** Whether a part is one this module looks at: declared an image, or of no particular type (its bytes decide). */
export const concerns = (part: Tool.Content): part is File =>
  part.type === "file" &&
  (part.mime.toLowerCase().startsWith("image/") || part.mime === "application/octet-stream" || part.mime === "")

const size = (bytes: number): string =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`

const labelOf = (part: File) => (part.name === undefined ? "image" : `image ${JSON.stringify(part.name)}`)

/** The error code Bun.Image rejects with, if any. */
const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && typeof (cause as { code?: unknown }).code === "string"
    ? (cause as { code: string }).code
    : undefined

interface Encoded {
  readonly bytes: Uint8Array
  readonly format: "png" | "jpeg" | "webp"
  readonly width: number
  readonly height: number
}

/** One decode → resize → encode through Bun's codecs (a worker thread; the caller's fiber waits). */
const encode = (
  source: Uint8Array,
  width: number,
  height: number,
  format: Encoded["format"],
  quality: number,
): Promise<Encoded> => {
  const image = new Bun.Image(source, { maxPixels: MAX_DECODE_PIXELS })
  image.resize(width, height, { fit: "fill" })
  if (format === "png") image.png({ compressionLevel: 6 })
  else if (format === "jpeg") image.jpeg({ quality })
  else image.webp({ quality })
  return image.bytes().then((bytes) => ({ bytes, format, width, height }))
}

/**
 * A smaller encoding of an image over the limits: sides scaled to maxDimension, PNG kept lossless where that fits
 * maxBytes (a screenshot usually does), else JPEG (WebP where it has transparency); shrunk further while over.
 */
const reencode = async (source: Uint8Array, found: Header, limits: Limits): Promise<Encoded> => {
  // Sides of an image whose header gave none (TIFF, HEIC) come from a decode of its header.
  const { width, height } =
    found.width > 0 && found.height > 0 ? found : await new Bun.Image(source, { maxPixels: MAX_DECODE_PIXELS }).metadata()
  const scale = Math.min(1, limits.maxDimension / Math.max(width, height))
  let target = { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) }
  const lossy = found.alpha ? "webp" : "jpeg"
  // Lossless only where it may fit: the source's bytes per pixel, at the new size, well under the limit.
  const estimate = (source.length * (target.width * target.height)) / (width * height)
  if (LOSSLESS.has(found.format) && (found.format !== "png" || estimate <= limits.maxBytes * 1.5)) {
    const lossless = await encode(source, target.width, target.height, "png", 0)
    if (lossless.bytes.length <= limits.maxBytes) return lossless
  }
  let quality = QUALITY
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const encoded = await encode(source, target.width, target.height, lossy, quality)
    if (encoded.bytes.length <= limits.maxBytes) return encoded
    if (quality > LOW_QUALITY) quality = LOW_QUALITY
    else {
      target = {
        width: Math.max(1, Math.round(target.width * SHRINK)),
        height: Math.max(1, Math.round(target.height * SHRINK)),
      }
    }
  }
  throw new Error(`no encoding under ${limits.maxBytes} bytes`)
}

/**
 * One part as a model may be given it: untouched when it is a small image in a format providers take (its mime
 * corrected to what its bytes are), SVG as its source text, anything else resized and re-encoded with a text part
 * saying from what to what. Refused when it cannot be decoded, declares too many pixels, or is no image at all.
 */
export const normalize = (part: File, limits: Limits, budget?: Budget): Effect.Effect<ReadonlyArray<Tool.Content>, Refused> =>
  part.mime.toLowerCase().startsWith("image/")
    ? normalizeImage(part, limits, budget)
    : // Bytes of no declared type are shown as an image when they are a good one; otherwise they stay a file.
      normalizeImage(part, limits, budget).pipe(Effect.catch(() => Effect.succeed([part])))

/** The pixels an output's images may still have decoded (see MAX_OUTPUT_PIXELS), taken as each is. */
export interface Budget {
  pixels: number
  readonly total: number
}

const normalizeImage = (part: File, limits: Limits, budget?: Budget): Effect.Effect<ReadonlyArray<Tool.Content>, Refused> =>
  Effect.suspend(() => {
    const bytes = Buffer.from(part.data, "base64")
    const found = sniff(bytes)
    const label = labelOf(part)
    const declared = part.mime.toLowerCase()
    if (found === undefined) {
      if (isSvg(declared, bytes)) {
        return Effect.succeed([
          { type: "text", text: `[${label}: SVG (${size(bytes.length)}), shown as its source text]\n${bytes.toString("utf8")}` },
        ])
      }
      // A file of no declared type whose bytes are no image is not an image part: it passes as it came.
      if (!declared.startsWith("image/")) return Effect.succeed([part])
      return Effect.fail(
        new Refused({
          message:
            `The ${label} is declared ${part.mime}, but its ${bytes.length} bytes are not a PNG, JPEG, GIF, ` +
            "WebP or BMP image, so it was not shown.",
        }),
      )
    }
    const name = NAMES[found.format]
    if (found.broken !== undefined) {
      return Effect.fail(
        new Refused({
          message: `The ${label} (${name}, ${size(bytes.length)}) cannot be decoded: ${found.broken}. It was not shown; check the file it came from.`,
        }),
      )
    }
    if (found.width * found.height > MAX_DECODE_PIXELS) {
      return Effect.fail(
        new Refused({
          message:
            `The ${label} (${name}) declares ${found.width}×${found.height} pixels, more than the ` +
            `${MAX_DECODE_PIXELS} a decode may hold, so it was not decoded or shown. Use a smaller image.`,
        }),
      )
    }
    const within =
      ACCEPTED.has(found.format) &&
      bytes.length <= limits.maxBytes &&
      found.width > 0 &&
      Math.max(found.width, found.height) <= limits.maxDimension
    if (within) return Effect.succeed([found.mime === part.mime ? part : { ...part, mime: found.mime }])
    // A header that gives no size (TIFF, HEIC) counts as the largest a decode may hold.
    const pixels = found.width > 0 ? found.width * found.height : MAX_DECODE_PIXELS
    if (budget !== undefined) {
      if (pixels > budget.pixels) {
        return Effect.fail(
          new Refused({
            message:
              `The ${label} (${name}, ${size(bytes.length)}) was not decoded: with it, the images of this output that ` +
              `need resizing would hold more than the ${budget.total} pixels core decodes for one output. It was ` +
              "not shown; return fewer or smaller images.",
          }),
        )
      }
      budget.pixels -= pixels
    }
    return Effect.tryPromise({
      try: () => reencode(bytes, found, limits),
      catch: (cause) => {
        const code = codeOf(cause)
        const why =
          code === "ERR_IMAGE_FORMAT_UNSUPPORTED"
            ? `${name} images cannot be converted here; convert it to PNG or JPEG first`
            : code === "ERR_IMAGE_TOO_MANY_PIXELS"
              ? `it has more than the ${MAX_DECODE_PIXELS} pixels a decode may hold`
              : code === "ERR_IMAGE_DECODE_FAILED" || code === "ERR_IMAGE_UNKNOWN_FORMAT"
                ? `the ${name} data is corrupt or cut short`
                : cause instanceof Error
                  ? cause.message
                  : String(cause)
        return new Refused({
          message: `The ${label} (${name}, ${size(bytes.length)}) could not be decoded or resized: ${why}. It was not shown.`,
        })
      },
    }).pipe(
      Effect.map((encoded): ReadonlyArray<Tool.Content> => {
        const from = found.width > 0 ? `${found.width}×${found.height} ` : ""
        const newName =
          part.name === undefined ? {} : { name: part.name.replace(/\.[^./]*$/, "") + `.${encoded.format === "jpeg" ? "jpg" : encoded.format}` }
        return [
          { type: "file", data: Buffer.from(encoded.bytes).toString("base64"), mime: `image/${encoded.format}`, ...newName },
          {
            type: "text",
            text:
              `[${label} ${found.format === "gif" ? "(first frame) " : ""}` +
              `${encoded.width === found.width && encoded.height === found.height ? "converted" : "resized"} from ` +
              `${from}${name}, ${size(bytes.length)} ` +
              `to ${encoded.width}×${encoded.height} ${NAMES[encoded.format]}, ${size(encoded.bytes.length)} ` +
              `(limits: ${size(limits.maxBytes)}, ${limits.maxDimension} px)]`,
          },
        ]
      }),
    )
  })

/**
 * Every image part of `content` normalized, the rest as it came, decoding at most `pixels` (MAX_OUTPUT_PIXELS) for
 * them all; the first refusal fails the whole. Every one, shown inline or kept aside: which are shown is decided
 * after (an SVG becomes text, a file over its limit is kept aside), and none may be shown as it came.
 */
export const normalizeAll = (
  content: ReadonlyArray<Tool.Content>,
  limits: Limits,
  pixels = MAX_OUTPUT_PIXELS,
): Effect.Effect<ReadonlyArray<Tool.Content>, Refused> => {
  if (!content.some(concerns)) return Effect.succeed(content)
  const budget: Budget = { pixels, total: pixels }
  return Effect.map(
    Effect.forEach(content, (part) => (concerns(part) ? normalize(part, limits, budget) : Effect.succeed([part]))),
    (parts) => parts.flat(),
  )
}

/** The tighter of two limits, each side for itself. */
export const tighter = (limits: Limits, other: Partial<Limits> | undefined): Limits =>
  other === undefined
    ? limits
    : {
        maxBytes: Math.min(limits.maxBytes, other.maxBytes ?? Infinity),
        maxDimension: Math.min(limits.maxDimension, other.maxDimension ?? Infinity),
      }
