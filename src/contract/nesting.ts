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
