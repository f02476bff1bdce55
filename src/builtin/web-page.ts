export * as WebPage from "./web-page"

// What webfetch makes of a downloaded body before any conversion: an image recognised by its bytes, text decoded
// in its charset (the Content-Type's, else a byte order mark, else the page's own <meta>, else UTF-8), HTML told
// from other text, or a refusal naming what the bytes were. Pure: no network. HTML conversion is ./html-convert,
// loaded only when a page needs it.

export type Format = "markdown" | "text" | "html"

const IMAGE_SIGNATURES: ReadonlyArray<{ readonly mime: string; readonly matches: (head: Uint8Array) => boolean }> = [
  { mime: "image/png", matches: (head) => startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { mime: "image/jpeg", matches: (head) => startsWith(head, [0xff, 0xd8, 0xff]) },
  { mime: "image/gif", matches: (head) => ascii(head, 0, "GIF87a") || ascii(head, 0, "GIF89a") },
  { mime: "image/webp", matches: (head) => ascii(head, 0, "RIFF") && ascii(head, 8, "WEBP") },
]

/** Known binary formats by their first bytes, to say what a refused body was when its type does not. */
const BINARY_SIGNATURES: ReadonlyArray<{ readonly what: string; readonly matches: (head: Uint8Array) => boolean }> = [
  { what: "a PDF document", matches: (head) => ascii(head, 0, "%PDF-") },
  { what: "a ZIP archive", matches: (head) => startsWith(head, [0x50, 0x4b, 0x03, 0x04]) },
  { what: "a gzip archive", matches: (head) => startsWith(head, [0x1f, 0x8b]) },
  { what: "an ELF executable", matches: (head) => startsWith(head, [0x7f, 0x45, 0x4c, 0x46]) },
  { what: "a WebAssembly module", matches: (head) => startsWith(head, [0x00, 0x61, 0x73, 0x6d]) },
]

const startsWith = (head: Uint8Array, bytes: ReadonlyArray<number>) =>
  head.length >= bytes.length && bytes.every((byte, index) => head[index] === byte)

const ascii = (head: Uint8Array, at: number, text: string) =>
  head.length >= at + text.length && [...text].every((character, index) => head[at + index] === character.charCodeAt(0))

/** The image format of a body by its first bytes (PNG, JPEG, GIF, WEBP), whatever its Content-Type says. */
export const imageOf = (body: Uint8Array): string | undefined =>
  IMAGE_SIGNATURES.find((signature) => signature.matches(body))?.mime

/** The media type of a Content-Type header, lower case, without parameters ("" when there is none). */
export const mediaType = (contentType: string): string => contentType.split(";")[0]!.trim().toLowerCase()

const TEXT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
  "application/ecmascript",
  "application/x-javascript",
  "application/typescript",
  "application/x-sh",
  "application/x-yaml",
  "application/yaml",
  "application/toml",
  "application/x-ndjson",
  "application/graphql",
  "application/sql",
  "application/x-www-form-urlencoded",
  "image/svg+xml",
])

/** Whether a media type is text (text/*, JSON, XML, scripts and the like). */
export const isTextType = (type: string): boolean =>
  type.startsWith("text/") || TEXT_TYPES.has(type) || type.endsWith("+json") || type.endsWith("+xml")

/** Whether a body is HTML by its type, or, untyped, by how it starts. */
export const isHtml = (type: string, text: string): boolean =>
  type === "text/html" ||
  type === "application/xhtml+xml" ||
  (type === "" && /^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text.slice(0, 1024)))

/**
 * Why a body that is not an image is binary (so it is refused), or undefined when it is text: its type when that
 * names a binary format, else a known signature, NUL bytes, or mostly control characters in its first 8 KiB.
 */
export const binaryReason = (type: string, body: Uint8Array, contentType = type): string | undefined => {
  const known = BINARY_SIGNATURES.find((signature) => signature.matches(body))
  if (type !== "" && !isTextType(type)) return known === undefined ? `${type} content` : `${known.what} (${type})`
  if (known !== undefined) return known.what
  // UTF-16 text is half NUL bytes: a byte order mark or a charset that says so is text, decoded as such.
  if (utf16(body, contentType)) return undefined
  const sample = body.subarray(0, 8 * 1024)
  if (sample.includes(0)) return "binary content (it contains NUL bytes)"
  let control = 0
  for (const byte of sample) if ((byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13 && byte !== 27) || byte === 0x7f) control++
  return sample.length > 0 && control / sample.length > 0.3 ? "binary content (mostly control characters)" : undefined
}

const charsetOf = (contentType: string): string | undefined => {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)
  return match?.[1]
}

/** Whether the body is UTF-16 by its byte order mark or its Content-Type's charset. */
const utf16 = (body: Uint8Array, contentType: string): boolean =>
  startsWith(body, [0xff, 0xfe]) || startsWith(body, [0xfe, 0xff]) || /^utf-?16/i.test(charsetOf(contentType) ?? "")

/**
 * The charset an HTML page declares in its first 1024 bytes (<meta charset> or http-equiv), as a browser takes it: a
 * page read by its <meta> is ASCII-compatible so far, so one declaring UTF-16 (a frequent mistake) is UTF-8, and
 * x-user-defined is windows-1252 (the HTML standard's "prescan").
 */
const declaredCharset = (body: Uint8Array): string | undefined => {
  const head = new TextDecoder("latin1").decode(body.subarray(0, 1024))
  const declared = /<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)/i.exec(head)?.[1]
  if (declared === undefined) return undefined
  if (/^utf-?16/i.test(declared)) return "utf-8"
  return declared.toLowerCase() === "x-user-defined" ? "windows-1252" : declared
}

export interface Decoded {
  readonly text: string
  /** The charset the text was decoded from, as TextDecoder names it. */
  readonly charset: string
  /** Set when the declared charset is unknown and UTF-8 was used instead. */
  readonly unknownCharset?: string
}

/**
 * Decodes a text body as a browser does (the Encoding standard): a byte order mark, else the Content-Type's
 * charset, else the page's <meta> (HTML), else UTF-8.
 */
export const decode = (body: Uint8Array, contentType: string, html: boolean): Decoded => {
  const bom =
    startsWith(body, [0xef, 0xbb, 0xbf]) ? "utf-8"
    : startsWith(body, [0xff, 0xfe]) ? "utf-16le"
    : startsWith(body, [0xfe, 0xff]) ? "utf-16be"
    : undefined
  const label = bom ?? charsetOf(contentType) ?? (html ? declaredCharset(body) : undefined) ?? "utf-8"
  try {
    const decoder = new TextDecoder(label as "utf-8")
    return { text: decoder.decode(body), charset: decoder.encoding }
  } catch {
    return { text: new TextDecoder("utf-8").decode(body), charset: "utf-8", unknownCharset: label }
  }
}
