// A reference for permission decisions, written apart from src/permission: rules matched as DESIGN §7 and
// docs/permissions.md state them (`*` any run, `?` one UTF-16 code unit, over the whole string; a trailing " *" also
// matches the bare command; backslashes count as slashes; the last matching rule wins), by a hand-written glob
// matcher rather than regular expressions, and a seeded generator of hostile rules and resources. Tests decide the
// same inputs with core and with this, and expect the same answers.

import type { Rule } from "../../src/permission/rule"

const slashes = (value: string) => value.replaceAll("\\", "/")

/** `*` and `?` over UTF-16 code units, matching the whole of `value`. */
const glob = (pattern: string, value: string): boolean => {
  let p = 0
  let v = 0
  let star = -1
  let resumed = 0
  while (v < value.length) {
    if (p < pattern.length && pattern[p] === "*") {
      star = p++
      resumed = v
    } else if (p < pattern.length && (pattern[p] === "?" || pattern[p] === value[v])) {
      p++
      v++
    } else if (star >= 0) {
      p = star + 1
      v = ++resumed
    } else return false
  }
  while (p < pattern.length && pattern[p] === "*") p++
  return p === pattern.length
}

export const matches = (pattern: string, value: string): boolean => {
  const p = slashes(pattern)
  const v = slashes(value)
  return glob(p, v) || (p.endsWith(" *") && glob(p.slice(0, -2), v))
}

export const find = <R extends Rule.Rule>(rules: ReadonlyArray<R>, action: string, resource: string): R | undefined => {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index]!
    if (matches(rule.action, action) && matches(rule.resource, resource)) return rule
  }
  return undefined
}

/** A small seeded generator (mulberry32), so a failing case is the same on every run. */
export const random = (seed: number) => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (below: number) => Math.floor(next() * below)
  const pick = <A>(items: ReadonlyArray<A>): A => items[int(items.length)]!
  return { next, int, pick }
}

export type Random = ReturnType<typeof random>

/**
 * Pieces of hostile text: path traversal, both slashes, case, regular-expression syntax, whitespace and line
 * breaks, composed and decomposed accents, an astral character and a lone surrogate, and the wildcard characters
 * themselves (literal in a resource).
 */
const PIECES = [
  "a", "A", "b", "src", "SRC", "/", "\\", ".", "..", "../", "./", "~", " ", "  ", "-", "--force", "rm", "git",
  "é", "e\u0301", "\u00c9", "😀", "\ud83d", "\u0000", "\n", "\r\n", "\t", "\u2028", ".*", "$", "^", "(", ")", "[",
  "]", "{", "}", "|", "+", "x{2}", "\\d", "%2e%2e", "*", "?",
]

const WILDCARDS = ["*", "?", " *", "**", "*?"]

const text = (rng: Random, pieces: number): string => {
  let out = ""
  for (let count = 0; count < pieces; count++) out += rng.pick(PIECES)
  return out
}

const pattern = (rng: Random): string => {
  if (rng.next() < 0.15) return "*"
  let out = ""
  const parts = 1 + rng.int(4)
  for (let count = 0; count < parts; count++) out += rng.next() < 0.4 ? rng.pick(WILDCARDS) : text(rng, 1 + rng.int(2))
  return out
}

/** A value `pattern` may well match: each wildcard replaced by hostile text (or, for `*`, by nothing). */
export const instance = (rng: Random, of: string): string => {
  let out = ""
  for (const char of of) {
    if (char === "*") out += rng.next() < 0.3 ? "" : text(rng, rng.int(3))
    else if (char === "?") out += rng.pick(["x", "/", "\\", " ", "é", "\ud83d", "*", "?"])
    else out += char === "\\" && rng.next() < 0.5 ? "/" : char === "/" && rng.next() < 0.2 ? "\\" : char
  }
  return out
}

const ACTIONS = ["read", "edit", "bash", "external_directory", "Read", "re?d", "e*", "*", "b\\sh", "deploy"]
const EFFECTS = ["allow", "deny", "ask"] as const

export const rules = (rng: Random, count: number): Array<Rule.Rule> =>
  Array.from({ length: count }, () => ({
    action: rng.next() < 0.7 ? rng.pick(ACTIONS) : pattern(rng),
    resource: pattern(rng),
    effect: rng.pick(EFFECTS),
  }))

/** A resource to decide against `rules`: often an instance of one of their patterns, else hostile text. */
export const resource = (rng: Random, rules: ReadonlyArray<Rule.Rule>): string =>
  rules.length > 0 && rng.next() < 0.6 ? instance(rng, rng.pick(rules).resource) : text(rng, rng.int(5))

export const action = (rng: Random, rules: ReadonlyArray<Rule.Rule>): string =>
  rules.length > 0 && rng.next() < 0.3 ? instance(rng, rng.pick(rules).action) : rng.pick(ACTIONS.concat(["write", "bash "]))
