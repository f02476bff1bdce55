export * as Range from "./range"

// `Range: bytes=...` for managed outputs (RFC 9110 §14): one range, a suffix (`-N`) or an open end (`N-`), digits
// only, no spaces inside. A header that is not a single byte range is ignored (the whole content is served), as the
// RFC allows; one that selects no byte (it starts past the end, an empty suffix, or the content is empty) cannot be
// satisfied (416), and says why.

export type Resolution =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Partial"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable"; readonly reason: string }

const SINGLE = /^\s*bytes\s*=\s*(\d*)-(\d*)\s*$/i

/**
 * How to answer `header` for content of `size` bytes; `end` is inclusive. With an `If-Range` (`ifRange`), the whole
 * content: core sends no validator (no ETag, no Last-Modified) that one could match, and a range asked for on a
 * validator that does not match is ignored (RFC 9110 §13.1.5).
 */
export const resolve = (header: string | undefined, size: number, ifRange?: string): Resolution => {
  if (header === undefined || ifRange !== undefined) return { _tag: "Whole" }
  const match = SINGLE.exec(header)
  if (match === null) return { _tag: "Whole" }
  const [, first = "", last = ""] = match
  if (first === "" && last === "") return { _tag: "Whole" }
  // Compared as the whole numbers they are: past 2^53 a Number is another number (or Infinity).
  const bytes = BigInt(size)
  if (first === "") {
    const suffix = BigInt(last)
    if (suffix === 0n) return unsatisfiable("it asks for the last 0 bytes (an empty suffix); ask for at least one")
    if (size === 0) return unsatisfiable("the output is empty")
    return { _tag: "Partial", start: suffix >= bytes ? 0 : Number(bytes - suffix), end: size - 1 }
  }
  const start = BigInt(first)
  const end = last === "" ? bytes - 1n : BigInt(last)
  if (last !== "" && end < start) return { _tag: "Whole" }
  if (size === 0) return unsatisfiable("the output is empty")
  if (start >= bytes) return unsatisfiable(`it starts at byte ${shown(start)}, past the end of the ${size} bytes`)
  return { _tag: "Partial", start: Number(start), end: Number(end < bytes - 1n ? end : bytes - 1n) }
}

/** A byte number as a message shows it: whole up to 20 digits, past that by how many it has. */
const shown = (value: bigint): string => {
  const digits = value.toString()
  return digits.length <= 20 ? digits : `${digits.slice(0, 6)}… (a number of ${digits.length} digits)`
}

const unsatisfiable = (reason: string): Resolution => ({ _tag: "Unsatisfiable", reason })
