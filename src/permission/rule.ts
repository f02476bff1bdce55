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

const compiled = new Map<string, RegExp>()

const compile = (pattern: string): RegExp => {
  let regex = compiled.get(pattern)
  if (regex !== undefined) return regex
  const normalized = pattern.replaceAll("\\", "/")
  // A trailing " *" also matches the bare command: "ls *" matches "ls" and "ls -la".
  const optionalTail = normalized.endsWith(" *")
  const body = optionalTail ? normalized.slice(0, -2) : normalized
  let source = ""
  for (const char of body) {
    if (char === "*") source += "[\\s\\S]*"
    else if (char === "?") source += "[\\s\\S]"
    else source += char.replace(/[.+^${}()|[\]\\/-]/g, "\\$&")
  }
  regex = new RegExp(`^${source}${optionalTail ? "(?: [\\s\\S]*)?" : ""}$`)
  compiled.set(pattern, regex)
  return regex
}

/** Whether `pattern` matches the whole of `value`. */
export const matches = (pattern: string, value: string): boolean =>
  pattern === "*" || compile(pattern).test(value.replaceAll("\\", "/"))

/** The last rule matching both action and resource, if any. */
export const find = (rules: Ruleset, action: string, resource: string): Rule | undefined => {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index]!
    if (matches(rule.action, action) && matches(rule.resource, resource)) return rule
  }
  return undefined
}

/** The effect for one action on one resource: the last matching rule, or "ask". */
export const evaluate = (rules: Ruleset, action: string, resource: string): Effect =>
  find(rules, action, resource)?.effect ?? "ask"

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
