export * as McpContent from "./mcp-content"

// What an MCP server's tool result becomes in core: text stays text, an image or audio clip becomes a file part,
// an embedded resource's text becomes text and its blob a file part, a resource link a line naming it. The
// structured part is the server's `structuredContent`, else none. Pure: no I/O, no services.

import type { Tool } from "../tool/tool"

/** The part of an MCP `CallToolResult` core keeps as a call's output. */
export interface Result {
  readonly content: ReadonlyArray<Part>
  readonly structuredContent?: { readonly [key: string]: unknown }
}

/** One MCP content block, as far as core reads it. */
export type Part =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image" | "audio"; readonly data: string; readonly mimeType: string }
  | {
      readonly type: "resource"
      readonly resource: { readonly uri: string; readonly mimeType?: string; readonly text?: string; readonly blob?: string }
    }
  | { readonly type: "resource_link"; readonly uri: string; readonly name?: string; readonly mimeType?: string }
  | { readonly type: string }

const nameOf = (uri: string): string | undefined => {
  const last = uri.split(/[/\\]/).filter((segment) => segment !== "").at(-1)
  return last === undefined || last.includes(":") ? undefined : last
}

/** A media type as RFC 6838 writes one (`type/subtype`, no parameters), which a data: URI can carry as it is. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i

/**
 * A server's media type, or `application/octet-stream` for one that is not one (a line break and a header after it,
 * say): core then reads the bytes for what they are, as for any file part of no type.
 */
const mediaType = (declared: string | undefined): string =>
  declared !== undefined && MEDIA_TYPE.test(declared) ? declared : "application/octet-stream"

/** One MCP content block as core content; a block core does not know is named, never dropped silently. */
export const part = (block: Part): Tool.Content => {
  switch (block.type) {
    case "text":
      return { type: "text", text: (block as { text: string }).text }
    case "image":
    case "audio": {
      const media = block as { data: string; mimeType: string }
      return { type: "file", data: media.data, mime: mediaType(media.mimeType) }
    }
    case "resource": {
      const { resource } = block as Extract<Part, { type: "resource" }>
      if (typeof resource.text === "string") return { type: "text", text: resource.text }
      const name = nameOf(resource.uri)
      return {
        type: "file",
        data: resource.blob ?? "",
        mime: mediaType(resource.mimeType),
        ...(name === undefined ? {} : { name }),
      }
    }
    case "resource_link": {
      const link = block as Extract<Part, { type: "resource_link" }>
      const label = link.name === undefined || link.name === link.uri ? "" : ` (${link.name})`
      return { type: "text", text: `Resource: ${link.uri}${label}` }
    }
    default:
      return { type: "text", text: `[content of type "${block.type}" that core does not show]` }
  }
}

export const parts = (result: Result): ReadonlyArray<Tool.Content> => result.content.map(part)

/**
 * `value` with every string and key made whole: half of a character (a lone UTF-16 surrogate, JSON's `"\ud800"`)
 * becomes U+FFFD, as a decoder makes bytes that are not UTF-8. A server's result holding one would be recorded and
 * sent to the model as it came, and a provider may refuse the whole request that carries it (every later turn of
 * the conversation). The very value where nothing changes; nested no deeper than the caller checked.
 */
export const wellFormed = <A>(value: A): A => {
  if (typeof value === "string") return (value.isWellFormed() ? value : value.toWellFormed()) as A
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    let changed: Array<unknown> | undefined
    for (let index = 0; index < value.length; index++) {
      const made = wellFormed(value[index])
      if (made !== value[index]) (changed ??= [...value])[index] = made
    }
    return (changed ?? value) as A
  }
  let changed = false
  const made = Object.entries(value).map(([key, item]): [string, unknown] => {
    const wholeKey = wellFormed(key)
    const whole = wellFormed(item)
    if (wholeKey !== key || whole !== item) changed = true
    return [wholeKey, whole]
  })
  // Own data properties, as JSON.parse makes them: a server's "__proto__" key stays a key.
  return (changed ? Object.fromEntries(made) : value) as A
}

/** The text of a result, for a failure's message: its text parts, or a note that it had none. */
export const text = (result: Result): string => {
  const texts = result.content.flatMap((block) =>
    block.type === "text" ? [(block as { text: string }).text] : [],
  )
  return texts.length > 0 ? texts.join("\n") : "(no text in the error result)"
}
