// Real images for tests, made here: a PNG encoder (zlib from node) of an RGB or RGBA picture with gradients and
// noise (so it compresses like a photo, not like a blank page), and Bun's own codecs for JPEG, WebP and GIF-free
// conversions. No fixture files: each test makes the size it needs.

import { crc32, deflateSync } from "node:zlib"

const chunk = (type: string, data: Uint8Array): Buffer => {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, "latin1")
  Buffer.from(data).copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)) >>> 0, 8 + data.length)
  return out
}

export interface PngOptions {
  /** Noise amplitude 0–255: 0 gives smooth gradients that compress well; more makes it photo-like. */
  readonly noise?: number
  readonly alpha?: boolean
}

/** A real PNG of `width`×`height`: gradients plus deterministic noise. */
export const png = (width: number, height: number, options: PngOptions = {}): Buffer => {
  const noise = options.noise ?? 24
  const channels = options.alpha === true ? 4 : 3
  const row = 1 + width * channels
  const raw = Buffer.alloc(row * height)
  let seed = 1
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      const n = noise === 0 ? 0 : (seed >>> 24) % noise
      const at = y * row + 1 + x * channels
      raw[at] = ((x * 255) / width + n) & 255
      raw[at + 1] = ((y * 255) / height + n) & 255
      raw[at + 2] = (x + y) & 255
      if (channels === 4) raw[at + 3] = 128 + (x & 127)
    }
  }
  return pngOf(width, height, options.alpha === true ? 6 : 2, deflateSync(raw, { level: 6 }))
}

/** A PNG whose header says `width`×`height` and whose data is whatever `idat` holds (for bombs and broken images). */
export const pngOf = (width: number, height: number, colorType: number, idat: Uint8Array): Buffer => {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8
  ihdr[9] = colorType
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", idat),
    chunk("IEND", new Uint8Array()),
  ])
}

/** A decompression bomb: a small, well-formed PNG declaring `side`×`side` pixels of zeros (compressed away). */
export const bomb = (side = 100_000): Buffer => pngOf(side, side, 2, deflateSync(Buffer.alloc(1024 * 1024)))

/** An image re-encoded by Bun's codecs into `format`. */
export const convert = async (source: Uint8Array, format: "jpeg" | "webp" | "png"): Promise<Uint8Array> => {
  const image = new Bun.Image(source)
  if (format === "jpeg") image.jpeg({ quality: 90 })
  else if (format === "webp") image.webp({ quality: 90 })
  else image.png()
  return image.bytes()
}

/** An image's size and format as Bun's decoder reads them. */
export const metadata = (bytes: Uint8Array) => new Bun.Image(bytes).metadata()

/** A 24-bit BMP of `width`×`height`. */
export const bmp = (width: number, height: number): Buffer => {
  const row = Math.ceil((width * 3) / 4) * 4
  const out = Buffer.alloc(54 + row * height)
  out.write("BM", 0, "latin1")
  out.writeUInt32LE(out.length, 2)
  out.writeUInt32LE(54, 10)
  out.writeUInt32LE(40, 14)
  out.writeInt32LE(width, 18)
  out.writeInt32LE(height, 22)
  out.writeUInt16LE(1, 26)
  out.writeUInt16LE(24, 28)
  out.writeUInt32LE(row * height, 34)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) out[54 + y * row + x * 3] = (x * 7 + y) & 255
  return out
}
