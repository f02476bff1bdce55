export * as ProviderResult from "./provider-result"

// A settlement as every provider's tool result starts from it (DESIGN §4, §14): its content parts, or the JSON of
// `structured` when a tool answered with structured output only, with `file` parts split into their media type and
// base64 data when they are `data:` URIs. Each provider module words these pieces as its own result block.

import type { Settlement } from "../contract/settlement"

export type Piece =
  | { readonly type: "text"; readonly text: string }
  /** Inline media from a `data:` URI. */
  | { readonly type: "media"; readonly mime: string; readonly data: string; readonly name?: string }
  /** A file part whose URI is not inline data: the model can only be told where it is. */
  | { readonly type: "link"; readonly mime: string; readonly uri: string; readonly name?: string }

const DATA_URI = /^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$/s

/**
 * What the model reads of a settlement: its content; the JSON of `structured` when the content is empty; the error
 * message when an error has no content. Declined and cancelled calls carry their note as text.
 */
export const pieces = (settlement: Settlement.Info): ReadonlyArray<Piece> => {
  const found: Array<Piece> = settlement.content.map((part): Piece => {
    if (part.type === "text") return { type: "text", text: part.text }
    const name = part.name === undefined ? {} : { name: part.name }
    const data = DATA_URI.exec(part.uri)
    return data === null
      ? { type: "link", mime: part.mime, uri: part.uri, ...name }
      : { type: "media", mime: part.mime, data: data[2] ?? "", ...name }
  })
  if (found.length === 0 && settlement.structured !== null) found.push({ type: "text", text: JSON.stringify(settlement.structured) })
  if (found.length === 0 && settlement.error !== undefined) found.push({ type: "text", text: settlement.error.message })
  return found
}

/** Whether the model should read the result as a failed call: errors, and calls declined or cancelled. */
export const isError = (settlement: Settlement.Info): boolean => settlement.status !== "success"

/** A piece the provider cannot carry inline, said in words instead so the model knows it exists. */
export const described = (piece: Exclude<Piece, { type: "text" }>, why: string): string => {
  const name = piece.name === undefined ? "" : ` ${JSON.stringify(piece.name)}`
  const where = piece.type === "link" ? ` at ${piece.uri}` : ""
  return `[file${name} (${piece.mime})${where}: ${why}]`
}

