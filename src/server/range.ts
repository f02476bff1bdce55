export * as Range from "./range"

// `Range: bytes=...` for managed outputs (RFC 9110 §14): one range, a suffix (`-N`) or an open end (`N-`). A header
// that is not a single byte range is ignored (the whole content is served), as the RFC allows; one that starts past
// the end cannot be satisfied (416).

export type Resolution =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Partial"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable" }

const DIGITS = /^\d+$/

/** How to answer `header` for content of `size` bytes; `end` is inclusive. */
export const resolve = (header: string | undefined, size: number): Resolution => {
  if (header === undefined) return { _tag: "Whole" }
  const match = /^\s*bytes\s*=\s*([^,]*)$/i.exec(header)
  if (match === null) return { _tag: "Whole" }
  const [first = "", last = "", ...rest] = match[1]!.trim().split("-")
  if (rest.length > 0) return { _tag: "Whole" }
  if (first === "") {
    if (!DIGITS.test(last)) return { _tag: "Whole" }
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return { _tag: "Unsatisfiable" }
    return { _tag: "Partial", start: Math.max(0, size - suffix), end: size - 1 }
  }
  if (!DIGITS.test(first) || (last !== "" && !DIGITS.test(last))) return { _tag: "Whole" }
  const start = Number(first)
  const end = last === "" ? size - 1 : Number(last)
  if (last !== "" && end < start) return { _tag: "Whole" }
  if (start >= size) return { _tag: "Unsatisfiable" }
  return { _tag: "Partial", start, end: Math.min(end, size - 1) }
}
