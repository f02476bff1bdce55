export * as Rule from "./rule"

// Pure permission rules (DESIGN §7): `{ action, resource, effect }` with `*` and `?` wildcards over the whole
// string; the last matching rule wins and no match means "ask". No services and no I/O live here.

export type Effect = "allow" | "deny" | "ask"

export interface Rule {
  readonly action: string
  readonly resource: string
  readonly effect: Effect
}

export type Ruleset = ReadonlyArray<Rule>

/** Tools whose names differ but which share one permission action. */
const SHARED_ACTIONS: Readonly<Record<string, string>> = { edit: "edit", write: "edit", apply_patch: "edit" }

/** The permission action a tool name is checked under. */
export const actionOf = (toolName: string): string =>
  Object.hasOwn(SHARED_ACTIONS, toolName) ? SHARED_ACTIONS[toolName]! : toolName

/** A compiled pattern: most patterns are `*` or plain text, which need no regular expression. */
type Matcher = (value: string) => boolean

/** Compiled patterns, reused: rules and saved approvals repeat the same few patterns. Bounded all the same. */
const compiled = new Map<string, Matcher>()
const MAX_COMPILED = 10_000

/**
 * Whether `pattern` (`*`: any run of UTF-16 code units, `?`: one, anything else itself) matches the whole of `value`.
 * Greedy, going back only to the last `*` seen: a mismatch after it retries that `*` one unit longer, never an earlier
 * one (a longer run for an earlier `*` can only shift what a later one covers). So it takes at most the lengths'
 * product in steps, where a backtracking regular expression of `*a*a*b` took 24 s on 5,000 characters, and a resource
 * sent by a model could stall every call.
 */
const glob = (pattern: string, value: string): boolean => {
  const patternLength = pattern.length
  const valueLength = value.length
  let at = 0
  let of = 0
  /** Where the last `*` seen is in the pattern (-1: none yet), and where in the value its run ends now. */
  let star = -1
  let runEnd = 0
  while (of < valueLength) {
    if (at < patternLength) {
      const code = pattern.charCodeAt(at)
      if (code === STAR) {
        star = at++
        runEnd = of
        continue
      }
      if (code === ONE || code === value.charCodeAt(of)) {
        at++
        of++
        continue
      }
    }
    if (star < 0) return false
    at = star + 1
    of = ++runEnd
  }
  while (at < patternLength && pattern.charCodeAt(at) === STAR) at++
  return at === patternLength
}

const STAR = 42
const ONE = 63

const patternOf = (pattern: string): Matcher => {
  let matcher = compiled.get(pattern)
  if (matcher !== undefined) return matcher
  if (compiled.size >= MAX_COMPILED) compiled.clear()
  const normalized = pattern.replaceAll("\\", "/")
  if (normalized === "*") matcher = () => true
  else if (!/[*?]/.test(normalized)) matcher = (value) => value === normalized
  else if (normalized.endsWith(" *")) {
    // A trailing " *" also matches the bare command: "ls *" matches "ls" and "ls -la".
    const bare = normalized.slice(0, -2)
    matcher = (value) => glob(normalized, value) || glob(bare, value)
  } else matcher = (value) => glob(normalized, value)
  compiled.set(pattern, matcher)
  return matcher
}

const normalize = (value: string) => (value.includes("\\") ? value.replaceAll("\\", "/") : value)

/** Whether `pattern` matches the whole of `value`. */
export const matches = (pattern: string, value: string): boolean => patternOf(pattern)(normalize(value))

/** The last rule matching both action and resource, if any. */
export const find = (rules: Ruleset, action: string, resource: string): Rule | undefined => {
  const normalizedAction = normalize(action)
  const normalizedResource = normalize(resource)
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index]!
    if (patternOf(rule.action)(normalizedAction) && patternOf(rule.resource)(normalizedResource)) return rule
  }
  return undefined
}

/** The effect for one action on one resource: the last matching rule, or "ask". */
export const evaluate = (rules: Ruleset, action: string, resource: string): Effect =>
  find(rules, action, resource)?.effect ?? "ask"

/**
 * A ruleset compiled once for many decisions: `find` answers as `find` over `rules` does, keeping for each action
 * the rules whose action pattern matches it (in order, each with its resource pattern compiled), so a decision
 * matches only resource patterns, and only those of its action's rules.
 */
export interface Compiled<R extends Rule = Rule> {
  /** The rules as they were when compiled: changing the array given to `compile` later changes nothing here. */
  readonly rules: ReadonlyArray<R>
  /** The last rule matching both action and resource, if any. */
  readonly find: (action: string, resource: string) => R | undefined
}

/** Actions a compiled ruleset keeps their rules for; past that it starts again (actions come from tools' names). */
const MAX_ACTIONS = 1_000

/** The rules of one action, in order, beside their resource patterns compiled (two arrays: a pointer per rule). */
interface ActionRules<R extends Rule> {
  readonly rules: ReadonlyArray<R>
  readonly resources: ReadonlyArray<Matcher>
}

export const compile = <R extends Rule>(ruleset: ReadonlyArray<R>): Compiled<R> => {
  const rules = ruleset.slice()
  // Each rule's patterns are compiled once, here, and shared by the lists of every action the rule applies to.
  const actions = rules.map((rule) => patternOf(rule.action))
  const resources = rules.map((rule) => patternOf(rule.resource))
  const byAction = new Map<string, ActionRules<R>>()
  const rulesOf = (action: string): ActionRules<R> => {
    let found = byAction.get(action)
    if (found !== undefined) return found
    if (byAction.size >= MAX_ACTIONS) byAction.clear()
    const normalizedAction = normalize(action)
    const matching: Array<R> = []
    const matchers: Array<Matcher> = []
    for (let index = 0; index < rules.length; index++) {
      if (!actions[index]!(normalizedAction)) continue
      matching.push(rules[index]!)
      matchers.push(resources[index]!)
    }
    byAction.set(action, (found = { rules: matching, resources: matchers }))
    return found
  }
  return {
    rules,
    find: (action, resource) => {
      const candidates = rulesOf(action)
      const normalizedResource = normalize(resource)
      for (let index = candidates.resources.length - 1; index >= 0; index--) {
        if (candidates.resources[index]!(normalizedResource)) return candidates.rules[index]
      }
      return undefined
    },
  }
}

/**
 * A test of whether `action` is denied on a resource, or undefined when no rule denies the action on anything
 * (then nothing need be tested).
 */
export const denier = (rules: Ruleset, action: string): Denier | undefined => {
  const relevant = rules.filter((rule) => matches(rule.action, action))
  if (!relevant.some((rule) => rule.effect === "deny")) return undefined
  return Object.assign((resource: string) => find(relevant, action, resource)?.effect === "deny", {
    key: JSON.stringify([action, relevant.map((rule) => [rule.action, rule.resource, rule.effect])]),
  })
}

/**
 * A test of whether a resource is denied, with `key`: the same for two tests that answer alike for every resource
 * (the rules they decide by), so a caller may keep their answers.
 */
export type Denier = ((resource: string) => boolean) & { readonly key?: string }

/**
 * Whether an action is denied whatever its resource: the last rule naming the action covers every resource and
 * denies. Used only to hide tools from a catalog; it never authorizes anything.
 */
export const isWhollyDenied = (rules: Ruleset, action: string): boolean => {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index]!
    if (matches(rule.action, action)) return rule.resource === "*" && rule.effect === "deny"
  }
  return false
}
