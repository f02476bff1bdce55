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

const compile = (pattern: string): Matcher => {
  let matcher = compiled.get(pattern)
  if (matcher !== undefined) return matcher
  if (compiled.size >= MAX_COMPILED) compiled.clear()
  const normalized = pattern.replaceAll("\\", "/")
  if (normalized === "*") matcher = () => true
  else if (!/[*?]/.test(normalized)) matcher = (value) => value === normalized
  else {
    // A trailing " *" also matches the bare command: "ls *" matches "ls" and "ls -la".
    const optionalTail = normalized.endsWith(" *")
    const body = optionalTail ? normalized.slice(0, -2) : normalized
    let source = ""
    for (const char of body) {
      if (char === "*") source += "[\\s\\S]*"
      else if (char === "?") source += "[\\s\\S]"
      else source += char.replace(/[.+^${}()|[\]\\/-]/g, "\\$&")
    }
    const regex = new RegExp(`^${source}${optionalTail ? "(?: [\\s\\S]*)?" : ""}$`)
    matcher = (value) => regex.test(value)
  }
  compiled.set(pattern, matcher)
  return matcher
}

const normalize = (value: string) => (value.includes("\\") ? value.replaceAll("\\", "/") : value)

/** Whether `pattern` matches the whole of `value`. */
export const matches = (pattern: string, value: string): boolean => compile(pattern)(normalize(value))

/** The last rule matching both action and resource, if any. */
export const find = (rules: Ruleset, action: string, resource: string): Rule | undefined => {
  const normalizedAction = normalize(action)
  const normalizedResource = normalize(resource)
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index]!
    if (compile(rule.action)(normalizedAction) && compile(rule.resource)(normalizedResource)) return rule
  }
  return undefined
}

/** The effect for one action on one resource: the last matching rule, or "ask". */
export const evaluate = (rules: Ruleset, action: string, resource: string): Effect =>
  find(rules, action, resource)?.effect ?? "ask"

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
