export * as Agent from "./agent"

// Which rules apply to an agent (DESIGN §7): core's defaults, then the configured top-level rules, then the
// agent's own (built in and configured), later entries winning. `build` is the default agent and `plan` may not
// edit; an agent nobody defined gets a ruleset that denies everything. Pure: no services, no I/O.

import type { Rule } from "./rule"

export const DEFAULT_AGENT = "build"

/** A rule with where it came from, so a decision can be explained. */
export interface SourcedRule extends Rule.Rule {
  readonly source: { readonly file: string; readonly path: string }
}

/** Sources of rules that are not in a file. */
export const DEFAULTS_SOURCE = "core defaults"
export const BUILT_IN_SOURCE = "core built-in agent"

const rule = (action: string, resource: string, effect: Rule.Effect, file: string, path: string): SourcedRule => ({
  action,
  resource,
  effect,
  source: { file, path },
})

/** When nothing is configured: everything inside the Location is allowed, leaving it is asked. */
export const DEFAULT_RULES: ReadonlyArray<SourcedRule> = [
  rule("*", "*", "allow", DEFAULTS_SOURCE, "*"),
  rule("external_directory", "*", "ask", DEFAULTS_SOURCE, "external_directory"),
]

const BUILT_IN: Readonly<Record<string, { readonly description: string; readonly rules: ReadonlyArray<SourcedRule> }>> = {
  build: { description: "The default agent: works inside the Location.", rules: [] },
  plan: {
    description: "Plans without changing files: edits are denied.",
    rules: [rule("edit", "*", "deny", BUILT_IN_SOURCE, "plan.edit")],
  },
}

/** What configuration contributes (see ../config). */
export interface Configured {
  readonly rules: ReadonlyArray<SourcedRule>
  readonly agents: ReadonlyMap<string, { readonly description?: string; readonly rules: ReadonlyArray<SourcedRule> }>
}

export const NOTHING_CONFIGURED: Configured = { rules: [], agents: new Map() }

/** Every known agent: the built-in ones and the configured ones, sorted. */
export const names = (configured: Configured): ReadonlyArray<string> =>
  [...new Set([...Object.keys(BUILT_IN), ...configured.agents.keys()])].sort()

export const isKnown = (configured: Configured, agent: string): boolean =>
  Object.hasOwn(BUILT_IN, agent) || configured.agents.has(agent)

/** The ruleset of an agent nobody defined. */
export const DENY_ALL: ReadonlyArray<SourcedRule> = [rule("*", "*", "deny", "core (unknown agent)", "*")]

/** The ordered ruleset for `agent`; an unknown agent may do nothing. */
export const rules = (configured: Configured, agent: string): ReadonlyArray<SourcedRule> => {
  if (!isKnown(configured, agent)) return DENY_ALL
  return [
    ...DEFAULT_RULES,
    ...configured.rules,
    ...(Object.hasOwn(BUILT_IN, agent) ? BUILT_IN[agent]!.rules : []),
    ...(configured.agents.get(agent)?.rules ?? []),
  ]
}
