export * as Distance from "./distance"

// How far apart two strings are, for "did you mean" suggestions (tool names, file names, input keys).

/** The longest strings compared character by character. */
export const MAX_COMPARED = 256

/**
 * The fewest single-character insertions, deletions and substitutions, and swaps of two adjacent characters, that
 * make b of a (the optimal string alignment distance): a swap is one typing slip (`langauge` for `language`), which
 * Levenshtein's distance counted as two and so left unsuggested. With a `limit`, any distance past it is answered as
 * `limit + 1`, computing only the cells within `limit` of the diagonal and stopping once a row is past it.
 */
export const edits = (a: string, b: string, limit = Number.POSITIVE_INFINITY): number => {
  // Past MAX_COMPARED, the most it can be: no one's typing slip, and never a suggestion (each caller wants a third
  // of the length or less). Comparing costs the product of the lengths: a 9 MB tool name held the thread for seconds.
  if (a.length > MAX_COMPARED || b.length > MAX_COMPARED) return Math.max(a.length, b.length)
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  const band = Math.min(Math.max(a.length, b.length), limit)
  const far = a.length + b.length + 1
  // Three rows, reused: only the cells within `band` of the diagonal, and one on each side of them, are ever read.
  let before = new Int32Array(b.length + 2)
  let previous = new Int32Array(b.length + 2)
  let current = new Int32Array(b.length + 2)
  for (let j = 0; j <= b.length + 1; j++) previous[j] = j <= band ? j : far
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - band)
    const to = Math.min(b.length, i + band)
    current[0] = i <= band ? i : far
    current[from - 1] = from - 1 === 0 ? current[0]! : far
    current[to + 1] = far
    let least = current[0]!
    for (let j = from; j <= to; j++) {
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1)
      current[j] = best
      if (best < least) least = best
    }
    if (least > limit) return limit + 1
    const spare = before
    before = previous
    previous = current
    current = spare
  }
  return previous[b.length]! > limit ? limit + 1 : previous[b.length]!
}
