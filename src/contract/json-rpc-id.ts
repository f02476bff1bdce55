export * as JsonRpcId from "./json-rpc-id"

// What a JSON-RPC message's text says of itself without being parsed whole: its id and whether it answers a request,
// read from its beginning or its end alone. A message too long to read (a client's 20 MB call to `core mcp`, a
// server's 17 MiB answer to core) is skipped unread, but the request it is, or answers, is still answered or failed
// at once, by its id, rather than left to wait out a timeout. Both transports keep only a line's first HEAD_CHARS
// and last TAIL_CHARS while skipping it. Pure: no state, no I/O.

/** How much of a line's beginning is kept to find its id and members (peers put `id` before `params`). */
export const HEAD_CHARS = 64 * 1024
/** How much of a line's end is kept to find its id there (the MCP SDKs put `id` last). */
export const TAIL_CHARS = 1024

type Id = string | number

/**
 * A numeric id as its message wrote it, which JSON.stringify writes back as it is (`JSON.rawJSON`, which Bun has and
 * TypeScript's lib does not yet): read as a number, `9007199254740993` would be answered as `9007199254740992`, an id
 * the client never sent, and a client matching answers by id would wait for its own forever.
 */
export type Written = object
export const written = (JSON as unknown as { readonly rawJSON: (text: string) => Written }).rawJSON

/** An id JSON-RPC allows, as its text was written at the start of `text`. */
const ID_VALUE = /^\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/
/**
 * A top-level `id` as the last member of an object ending the text: a member (after `{` or `,`), its value a string
 * or a number, then the one closing brace. In text that is JSON, an unescaped quote cannot sit inside a string, so
 * what this finds is the object's own member; the value is captured.
 */
const ID_LAST = /[{,]\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*\}\s*$/

/** The index of the quote that closes the JSON string opening at `start`, or -1 if the text ends first. */
const stringEnd = (text: string, start: number): number => {
  for (let index = start + 1; index < text.length; index++) {
    const char = text[index]
    if (char === "\\") index++
    else if (char === '"') return index
  }
  return -1
}

/** An id's JSON text read as a value (a number as written), undefined where it is not valid JSON (`01`, `"\q"`). */
const parsedId = (text: string): Id | Written | undefined => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  return typeof value === "number" ? written(text) : (value as Id)
}

/** The top-level members of a JSON object's text named in its beginning (the rest may be missing), and its `id`. */
const membersOf = (text: string): { readonly keys: ReadonlySet<string>; readonly id: Id | Written | undefined } => {
  const keys = new Set<string>()
  let id: Id | Written | undefined
  let depth = 0
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    if (char === '"') {
      const end = stringEnd(text, index)
      if (end === -1) break
      const colon = depth === 1 ? /^\s*:/.exec(text.slice(end + 1, end + 64)) : null
      if (colon !== null) {
        const key = text.slice(index + 1, end)
        // The first `id` is the one read (a key given twice is a message no peer should send).
        if (key === "id" && !keys.has("id")) {
          const at = end + 1 + colon[0].length
          const value = ID_VALUE.exec(text.slice(at, at + 1024))
          id = value === null ? undefined : parsedId(value[1]!)
        }
        keys.add(key)
      }
      index = end
    } else if (char === "{" || char === "[") depth++
    else if (char === "}" || char === "]") depth--
  }
  return { keys, id }
}

/** The top-level `id` of a JSON object's text, read from its beginning alone (the rest may be missing). */
export const scanId = (text: string): Id | Written | undefined => membersOf(text).id

/** The top-level `id` of a JSON object's text, read from its end alone, where it is the object's last member. */
export const scanLastId = (text: string): Id | Written | undefined => {
  const found = ID_LAST.exec(text)
  return found === null ? undefined : parsedId(found[1]!)
}

/** What a message too long to read says of itself. */
export interface Glimpse {
  /** Its id, where its beginning or its end shows it. */
  readonly id: Id | Written | undefined
  /**
   * "answer" where its beginning shows a `result` or an `error` and no `method`; "request" where it shows a `method`
   * (a request or a notification); undefined where neither shows.
   */
  readonly kind: "answer" | "request" | undefined
}

/** What a line's beginning (`head`, at most HEAD_CHARS) and end (`tail`, at most TAIL_CHARS) say of its message. */
export const glimpse = (head: string, tail: string): Glimpse => {
  const { keys, id } = membersOf(head)
  const kind = keys.has("method") ? "request" : keys.has("result") || keys.has("error") ? "answer" : undefined
  return { id: id ?? (keys.has("id") ? undefined : scanLastId(tail)), kind }
}
