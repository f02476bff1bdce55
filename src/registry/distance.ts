export * as Distance from "./distance"

// How far apart two strings are, for "did you mean" suggestions (tool names, file names, input keys).

/**
 * The fewest single-character insertions, deletions and substitutions, and swaps of two adjacent characters, that
 * make b of a (the optimal string alignment distance): a swap is one typing slip (`langauge` for `language`), which
 * Levenshtein's distance counted as two and so left unsuggested.
 */
export const edits = (a: string, b: string): number => {
  let before: Array<number> = []
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1)
      current[j] = best
    }
    before = previous
    previous = current
  }
  return previous[b.length]!
}
