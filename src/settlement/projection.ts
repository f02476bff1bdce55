export * as Projection from "./projection"

// Projection (DESIGN §4): from a call's encoded output to the parts the model reads and the structured value a
// settlement carries. `toModelOutput({ input, output })` chooses the parts (a string is one text part); without
// it a string output is one text part and any other output stays structured only. Structured data that only
// repeats a file part's bytes is left out, so they travel once. Bounding comes after, in ../output.

import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Internal from "../tool/internal"
import type { Tool } from "../tool/tool"

const ContentArray = Schema.Array(
  Schema.Union([
    Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
    Schema.Struct({
      type: Schema.Literal("file"),
      data: Schema.String,
      mime: Schema.String,
      name: Schema.optionalKey(Schema.String),
    }),
  ]),
)
/** Checks parts a projection (or an after hook) answered: text or file content only. */
export const decodeContent = Schema.decodeUnknownExit(ContentArray)

/** Without toModelOutput: a string output is one text part; any other output stays structured only. */
const defaultProjection = (encoded: unknown): ReadonlyArray<Tool.Content> =>
  typeof encoded === "string" ? [{ type: "text", text: encoded }] : []

/** Whether `value` holds, anywhere, one of `data` (the base64 of a media part the content already carries). */
const repeatsMedia = (value: unknown, data: ReadonlySet<string>): boolean => {
  if (typeof value === "string") return data.has(value)
  if (typeof value !== "object" || value === null) return false
  for (const item of Array.isArray(value) ? value : Object.values(value)) if (repeatsMedia(item, data)) return true
  return false
}

/**
 * The structured output as the settlement carries it: null when there is none, and when it only repeats the
 * bytes of a file part of the content (an image read: the parts carry them once, natively).
 */
const structuredOf = (encoded: unknown, content: ReadonlyArray<Tool.Content>): unknown => {
  if (encoded === undefined) return null
  let media: Set<string> | undefined
  for (const part of content) if (part.type === "file") (media ??= new Set()).add(part.data)
  return media !== undefined && repeatsMedia(encoded, media) ? null : encoded
}

const SHAPE = 'each part is { type: "text", text } or { type: "file", data: a base64 string, mime, name? }'

/** A value's kind in words: `a Uint8Array`, `a number`, `null`. */
const kindOf = (value: unknown): string =>
  value === null
    ? "null"
    : typeof value === "object"
      ? `a${/^[AEIOU]/.test(value.constructor?.name ?? "") ? "n" : ""} ${value.constructor?.name ?? "object"}`
      : `a ${typeof value}`

/**
 * What is wrong with parts toModelOutput answered, for the tool's author: the first part that is not content and
 * why, with the shape expected. Bytes in a file part's `data` are the usual slip (the contract carries base64).
 */
export const problemOf = (parts: unknown): string => {
  if (!Array.isArray(parts)) return `${kindOf(parts)}, not a string or an array of parts (${SHAPE})`
  for (const [index, part] of parts.entries()) {
    const at = `part ${index}`
    if (typeof part !== "object" || part === null) return `${at} is ${kindOf(part)} (${SHAPE})`
    const { type, data } = part as { readonly type?: unknown; readonly data?: unknown }
    if (type === "file" && (ArrayBuffer.isView(data) || data instanceof ArrayBuffer)) {
      return (
        `${at}: a file part's data is bytes (${data.constructor.name}), but it must be a ` +
        'base64 string: data: Buffer.from(bytes).toString("base64")'
      )
    }
    if (type !== "text" && type !== "file") return `${at} has type ${JSON.stringify(type) ?? "undefined"} (${SHAPE})`
  }
  return `parts that are not text or file content (${SHAPE})`
}

/**
 * What the model reads, and the structured value, of one call; a failure saying what is wrong (problemOf) when
 * toModelOutput returned something that is not content.
 */
export const project = (
  tool: Internal.Record,
  input: unknown,
  structured: unknown,
  encoded: unknown,
): Exit.Exit<{ readonly content: ReadonlyArray<Tool.Content>; readonly structured: unknown }, string> => {
  const projected = tool.toModelOutput === undefined ? undefined : tool.toModelOutput({ input, output: encoded })
  const parts = typeof projected === "string" ? [{ type: "text", text: projected }] : projected
  const content = projected === undefined ? Exit.succeed(defaultProjection(structured)) : decodeContent(parts)
  if (Exit.isFailure(content)) return Exit.fail(problemOf(parts))
  return Exit.succeed({ content: content.value, structured: structuredOf(structured, content.value) })
}
