export * as Nesting from "./nesting"

// How deep a value core takes from outside (a call's input, JSON a person or program typed) may nest. Deeper values
// are refused before anything recursive (a schema's decoding, JSON.stringify, a JSON Schema validator) sees them:
// those overflow the stack somewhere past a few thousand levels, which an input of a few kilobytes reaches.

/** How deep arrays and objects may nest. */
export const MAX_DEPTH = 128

/** What a value nested deeper than MAX_DEPTH is, in words. */
export const TOO_DEEP = `arrays and objects nested deeper than ${MAX_DEPTH} levels`

/**
 * Whether `value` nests deeper than MAX_DEPTH. Recursive, but never more than MAX_DEPTH + 1 calls deep: it stops at
 * the first container past the limit.
 */
export const tooDeep = (value: unknown, depth = 0): boolean => {
  if (typeof value !== "object" || value === null) return false
  if (depth >= MAX_DEPTH) return true
  if (Array.isArray(value)) {
    for (const item of value) if (tooDeep(item, depth + 1)) return true
    return false
  }
  for (const key in value) if (tooDeep((value as Record<string, unknown>)[key], depth + 1)) return true
  return false
}

/**
 * Past this many keys and items in all, a value is described by its first problem only: finding every problem of a
 * value holding a million unknown keys held core's one thread for seconds (a schema's decoding makes an issue of
 * each), stalling every other call.
 */
export const MOST_DESCRIBED = 100_000

/** Whether `value` holds more than MOST_DESCRIBED keys and items in all; it stops counting there. */
export const wide = (value: unknown): boolean => {
  let left = MOST_DESCRIBED
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next !== "object" || next === null) continue
    if (Array.isArray(next)) {
      if ((left -= next.length) < 0) return true
      for (const item of next) if (typeof item === "object" && item !== null) pending.push(item)
      continue
    }
    for (const key in next) {
      if (--left < 0) return true
      const item = (next as Record<string, unknown>)[key]
      if (typeof item === "object" && item !== null) pending.push(item)
    }
  }
  return false
}

/** Schema decoding options `options` reporting the first problem only where `value` is wide. */
export const describing = <O extends { readonly errors?: "all" | "first" }>(value: unknown, options: O): O =>
  wide(value) ? { ...options, errors: "first" } : options
