export * as Registry from "./registry"

// Scoped tool registries (DESIGN §2 laws 4–7): the process placement (application tools) and a Location
// placement layered over it, the registration-only `Tools` view, and `capture`, which freezes the effective
// catalog of one turn and answers, per call, whether the advertised registration is still the effective one.
// Settling calls is not done here (see ../settlement).

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { Rule } from "../permission/rule"
import { Definition } from "../tool/definition"
import * as Internal from "../tool/internal"
import { ToolName } from "../tool/tool-name"
import type { Tool } from "../tool/tool"
import { Placement } from "./placement"
import { Distance } from "./distance"

export class RegistrationError extends Schema.TaggedError<RegistrationError>()("Registry.RegistrationError", {
  reason: Schema.Literals(["invalid_record", "invalid_name", "not_a_tool", "scope_closed"]),
  name: Schema.optionalKey(Schema.String),
  message: Schema.String,
}) {}

/** The narrow registration-only view handed to whoever contributes tools. */
export interface Tools {
  /**
   * Registers every `name: tool` of the record into the current Scope, atomically: one invalid name or value
   * fails the whole call and changes nothing. Closing the Scope removes exactly this registration.
   */
  readonly register: (
    record: Readonly<Record<string, Tool.Any>>,
  ) => Effect.Effect<void, RegistrationError, Scope.Scope>
}

/** What a catalog says about one name of a call. */
export type Resolution =
  | { readonly _tag: "Found"; readonly name: string; readonly tool: Tool.Any }
  | { readonly _tag: "Stale"; readonly name: string }
  | { readonly _tag: "Unknown"; readonly name: string; readonly suggestions: ReadonlyArray<string> }

/** The effective catalog captured for one turn. */
export interface Catalog {
  readonly definitions: ReadonlyArray<Definition.Definition>
  readonly resolve: (name: string) => Resolution
}

const makeTools = (placement: Placement.Stacks): Tools => ({
  register: Effect.fn("Registry.register")(function* (record: Readonly<Record<string, Tool.Any>>) {
    if (typeof record !== "object" || record === null || Array.isArray(record)) {
      return yield* new RegistrationError({ reason: "invalid_record", message: "register expects a { name: tool } record" })
    }
    // Copy now: mutating the record after this call changes nothing.
    const entries: Array<Placement.Entry> = []
    for (const [name, tool] of Object.entries(record)) {
      const problem = ToolName.problem(name)
      if (problem !== undefined) {
        return yield* new RegistrationError({ reason: "invalid_name", name, message: `Invalid tool name: ${problem}` })
      }
      if (!Internal.has(tool)) {
        return yield* new RegistrationError({
          reason: "not_a_tool",
          name,
          message: `"${name}" is not a tool made by Tool.make`,
        })
      }
      entries.push({ name, tool })
    }
    const scope = yield* Scope.Scope
    if (scope.state._tag === "Closed") {
      return yield* new RegistrationError({ reason: "scope_closed", message: "cannot register into a closed scope" })
    }
    // Adding and arranging the removal happen together: an interruption cannot leave one without the other.
    yield* Effect.uninterruptible(
      Effect.sync(() => placement.add(entries)).pipe(
        Effect.andThen(Scope.addFinalizer(scope, Effect.sync(() => placement.remove(entries)))),
      ),
    )
  }),
})

export interface ApplicationInterface {
  readonly tools: Tools
  readonly placement: Placement.Stacks
}

/** The process placement: application tools shared by every Location. */
export class Application extends Context.Service<Application, ApplicationInterface>()("core/Registry/Application") {}

export const applicationLayer: Layer.Layer<Application> = Layer.sync(Application, () => {
  const placement = new Placement.Stacks()
  return Application.of({ tools: makeTools(placement), placement })
})

export interface Interface {
  /** Registers into this Location's placement. */
  readonly tools: Tools
  /** Captures the effective catalog, hiding tools whose permission action the rules wholly deny. */
  readonly capture: (rules?: Rule.Ruleset) => Catalog
}

/** A Location's registry: its own placement over the application placement. */
export class Service extends Context.Service<Service, Interface>()("core/Registry") {}

export const layer: Layer.Layer<Service, never, Application> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const application = (yield* Application).placement
    const location = new Placement.Stacks()
    const effective = (name: string) => location.top(name) ?? application.top(name)

    /**
     * The catalogs captured since the placements last changed, by rules: a host that captures for an agent's rules
     * and without rules in turn (an MCP call checks the tool is known, then settles) builds each once.
     */
    let cachedAt = { app: -1, loc: -1 }
    let unruled: Catalog | undefined
    let ruled = new WeakMap<Rule.Ruleset, Catalog>()

    const build = (rules: Rule.Ruleset | undefined): Catalog => {
      const advertised = new Map<string, Placement.Entry>()
      for (const name of mergeSorted(location.names(), application.names())) {
        const entry = effective(name)!
        if (rules !== undefined && isHidden(rules, name, entry.tool)) continue
        advertised.set(name, entry)
      }
      // Derived when first asked for: a command that settles one call by name (core exec) never needs the JSON
      // Schemas of every tool, and deriving them is most of a cold start's registry work.
      let definitions: ReadonlyArray<Definition.Definition> | undefined
      return {
        get definitions() {
          definitions ??= [...advertised].map(([name, entry]) => (entry.definition ??= Definition.of(entry.tool, name)))
          return definitions
        },
        resolve: (name) => {
          const entry = advertised.get(name)
          if (entry === undefined) return { _tag: "Unknown", name, suggestions: nearest(name, advertised.keys()) }
          if (effective(name) !== entry) return { _tag: "Stale", name }
          return { _tag: "Found", name, tool: entry.tool }
        },
      }
    }

    const capture = (rules?: Rule.Ruleset): Catalog => {
      if (cachedAt.app !== application.version || cachedAt.loc !== location.version) {
        cachedAt = { app: application.version, loc: location.version }
        unruled = undefined
        ruled = new WeakMap()
      }
      if (rules === undefined) return (unruled ??= build(undefined))
      let catalog = ruled.get(rules)
      if (catalog === undefined) ruled.set(rules, (catalog = build(rules)))
      return catalog
    }

    return Service.of({ tools: makeTools(location), capture })
  }),
)

/**
 * Whether rules hide a tool from a catalog: one that checks its own resources is hidden when its action is
 * denied whatever the resource; one checked as a whole is hidden exactly when that check would deny it.
 */
const isHidden = (rules: Rule.Ruleset, name: string, tool: Tool.Any): boolean => {
  const action = Rule.actionOf(name)
  return Internal.get(tool)!.checksPermissions
    ? Rule.isWhollyDenied(rules, action)
    : Rule.evaluate(rules, action, "*") === "deny"
}

const mergeSorted = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (b.length === 0) return a
  if (a.length === 0) return b
  const out: Array<string> = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]! < b[j]!)) out.push(a[i++]!)
    else if (i >= a.length || b[j]! < a[i]!) out.push(b[j++]!)
    else {
      out.push(a[i++]!)
      j++
    }
  }
  return out
}

const MAX_SUGGESTIONS = 3

/** Up to three advertised names closest to `name` (edit distance, then prefix), for an "unknown tool" error. */
export const nearest = (name: string, names: Iterable<string>): ReadonlyArray<string> => {
  const lower = name.toLowerCase()
  const scored: Array<{ name: string; score: number }> = []
  for (const candidate of names) {
    const other = candidate.toLowerCase()
    const distance = Distance.edits(lower, other)
    const related = other.includes(lower) || lower.includes(other)
    const limit = Math.max(2, Math.floor(Math.max(lower.length, other.length) / 3))
    if (distance <= limit || related) scored.push({ name: candidate, score: related ? Math.min(distance, 1) : distance })
  }
  scored.sort((x, y) => x.score - y.score || x.name.localeCompare(y.name))
  return scored.slice(0, MAX_SUGGESTIONS).map((entry) => entry.name)
}

