export * as Permission from "./permission"

// The permission service of one Location: decides each (action, resource) from the agent's rules and the
// project's saved approvals, refuses what a rule denies, and turns what must be asked into pending requests that
// wait for a person's reply (DESIGN §7). Every caller authorizes through `authorize` (built-ins, plugins' capabilities,
// the settler) and explains through `decide`, so a call meets one order of checks however it is made. Rule
// matching itself is pure (./rule, ./agent); storage is ../store, whose failures stay here (a defect: an operational
// failure of the call, never a refusal).

import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { Approvals } from "../store/approvals"
import { realpathSync } from "node:fs"
import { homedir } from "node:os"
import { join, relative } from "node:path"
import { Agent } from "./agent"
import { Boundary } from "./boundary"
import { Credentials } from "./credentials"
import { Homes } from "./homes"
import { Git } from "./git"
import { ManagedOutputs } from "../output/managed-outputs"
import { Protected } from "./protected"
import { ProtectedMessage } from "./protected-message"
import { PreparingTurn } from "../tool/preparing-turn"
import { type Any as AnyRefusal, Declined, Denied, deniedText, Rejected } from "../tool/refusal"
import { Rule } from "./rule"
import { Toolchains } from "./toolchains"

// The refusals live below the tool value (./refusal); this module's namespace keeps naming them.
export { Declined, Denied, Rejected } from "../tool/refusal"

export class UnknownRequest extends Schema.TaggedError<UnknownRequest>()("Permission.UnknownRequest", {
  id: Schema.String,
  message: Schema.String,
}) {}

/** The refusals a permission check ends with. */
export type Refusal = AnyRefusal

export interface AssertInput {
  readonly sessionID: string
  readonly agent: string
  readonly source: { readonly messageID: string; readonly callID: string }
  readonly action: string
  /** What the action touches: paths, commands, or "*" for the whole action. */
  readonly resources: ReadonlyArray<string>
  /** The patterns an "always" reply saves (e.g. `git checkout *` for `git checkout main`). */
  readonly save: ReadonlyArray<string>
  /**
   * Ask unless a rule denies: rules that allow and saved approvals do not answer this request, and an "always"
   * reply saves nothing. For resources whose effect cannot be known before they run (a command line's code hidden
   * in a string or an expansion), where no pattern could say what is being approved.
   */
  readonly ask?: true
  /**
   * Set when the resources are core's own configuration (see ./protected): what they are, for the person asked.
   * Implies `ask`; whoever answers asks must not approve it without a person (see `personRequired`).
   */
  readonly protected?: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** One check a call makes: an action on resources, what an "always" reply saves, and whether it is always asked. */
export type Check = Pick<AssertInput, "action" | "resources" | "save" | "ask" | "protected">

export interface PathInput extends Omit<AssertInput, "resources" | "save"> {
  readonly path: string
  readonly access: "read" | "write"
}

export interface Request extends AssertInput {
  readonly id: string
}

export const Reply = Schema.Union([
  Schema.Struct({ reply: Schema.Literals(["once", "always"]) }),
  Schema.Struct({
    reply: Schema.Literal("reject"),
    message: Schema.optionalKey(Schema.String),
    /** Set by an answerer that declines because no person is there to ask (never by a person). */
    unattended: Schema.optionalKey(Schema.Boolean),
    /** With unattended: why nobody could be asked, naming the face ("core exec has no terminal to ask"). */
    why: Schema.optionalKey(Schema.String),
  }),
])
export type Reply = typeof Reply.Type

export type Event =
  | { readonly type: "asked"; readonly request: Request }
  | { readonly type: "replied"; readonly id: string; readonly sessionID: string; readonly reply: Reply["reply"] }

/** What every check of one call shares: who asks, for which call, and what a person is shown besides. */
export type Caller = Pick<AssertInput, "sessionID" | "agent" | "source" | "metadata">

/** One check of a call, decided per resource as things stand now, without asking anyone. */
export interface Decided {
  readonly check: Check
  readonly decisions: ReadonlyArray<Decision>
}

/** How one resource is decided, and why. */
export interface Decision {
  readonly resource: string
  readonly effect: Rule.Effect
  /** The last matching rule, if any (no match means ask). */
  readonly rule: Agent.SourcedRule | undefined
  /** The saved approval pattern that allows an otherwise asked resource. */
  readonly approvedBy: string | undefined
}

export interface Interface {
  /** The Location's real path: saved approvals belong to it. */
  readonly project: string
  readonly agents: ReadonlyArray<string>
  readonly isAgent: (agent: string) => boolean
  /** The ordered ruleset of an agent (deny-all for an unknown one). */
  readonly rules: (agent: string) => ReadonlyArray<Agent.SourcedRule>
  /**
   * Whether a rule of the agent denies `action` on a resource, decided by the rules alone (a saved approval never
   * overrides a deny); undefined when no rule could deny it, so a caller filtering many paths can skip the work.
   * For tools that show many files at once (list, glob, grep): what a `read` rule denies is not shown.
   */
  readonly denies: (agent: string, action: string) => ((resource: string) => boolean) | undefined
  /**
   * Whether a real path lies in one of the user's credential stores that core.json does not open for reading, or in
   * one of the system's secrets.
   */
  readonly credential: (real: string) => boolean
  /** How each resource would be decided now, without asking anyone. */
  readonly explain: (
    input: Pick<AssertInput, "agent" | "action" | "resources">,
  ) => Effect.Effect<ReadonlyArray<Decision>>
  /**
   * Decides each check now, as `authorize` would meet it (a check asked every time is never answered by a rule
   * that allows or by a saved approval): what `core check` explains.
   */
  readonly decide: (agent: string, checks: ReadonlyArray<Check>) => Effect.Effect<ReadonlyArray<Decided>>
  /**
   * Makes a call's checks: when a rule denies any resource of any check, the call is refused with that rule
   * before anything is asked (nobody is asked about part of a call a rule forbids anyway); otherwise each check
   * is asserted in turn, asking where it must. The one way every tool, built-in or plugin, is authorized.
   */
  readonly authorize: (caller: Caller, checks: ReadonlyArray<Check>) => Effect.Effect<void, Refusal>
  /**
   * The first half of `authorize`, for a caller with work to do between its asks (bash looks at its workdir only
   * once leaving the Location is approved): refuses when a rule denies any resource of any check, asking nothing;
   * answers whether every decision allows (then `authorize` would ask nothing either).
   */
  readonly refuseDenied: (agent: string, checks: ReadonlyArray<Check>) => Effect.Effect<boolean, Denied>
  /** One check (see `authorize`): succeeds when every resource is allowed, asking when a rule says ask. */
  readonly assert: (input: AssertInput) => Effect.Effect<void, Refusal>
  /**
   * Checks a path a tool is about to touch (`authorize` on `pathChecks`): outside the Location it first needs
   * `external_directory` on its directory (reading core's readable roots, such as managed outputs, excepted), then
   * the action on the path. Answers where the path really is; on a refusal the tool must not touch it.
   */
  readonly authorizePath: (input: PathInput) => Effect.Effect<Boundary.Resolved, Refusal | Boundary.PathError>
  /** The checks `authorizePath` makes for a path, in order, without making them (for explaining a call). */
  readonly pathChecks: (
    input: PathCheckInput,
  ) => Effect.Effect<{ readonly resolved: Boundary.Resolved; readonly checks: ReadonlyArray<Check> }, Boundary.PathError>
  /** What is protected in this Location (see ./protected), for checks made outside `authorizePath` (shell lines). */
  readonly protectedRoots: Protected.Roots
  readonly reply: (id: string, reply: Reply) => Effect.Effect<void, UnknownRequest>
  readonly pending: Effect.Effect<ReadonlyArray<Request>>
  /** Asked and replied events from now on, for whoever answers asks (a terminal prompt, the HTTP sidecar). */
  readonly subscribe: Effect.Effect<PubSub.Subscription<Event>, never, Scope.Scope>
}

export class Service extends Context.Service<Service, Interface>()("core/Permission") {}

/**
 * How an answerer without a person (no terminal, `--yes`) must answer a protected request: a refusal whose
 * message tells the model that a person must make the change.
 */
export const personRequired = (request: Request): Reply => ({
  reply: "reject",
  message: ProtectedMessage.personRequired(request.protected ?? "core's own configuration", request.resources),
})

export interface Options {
  readonly project: string
  readonly configured?: Agent.Configured
  /** Directories outside the project that may be read without asking (core's managed outputs). */
  readonly readableRoots?: ReadonlyArray<string>
  /** `$CORE_HOME`; by default as core resolves it from the environment. */
  readonly home?: string
  /** `$CORE_DATA_DIR`; by default as core resolves it from the environment. */
  readonly dataDir?: string
  /** The Locations this core serves now (real directories): their configuration is protected here too. */
  readonly locations?: () => ReadonlyArray<string>
  /**
   * The user's home, whose credential stores no tool reads or changes (./credentials); by default the process's.
   * `granted` are the paths core.json opens among them (`shell.allowRead` and `shell.allowWrite`, absolute).
   */
  readonly user?: { readonly home: string; readonly read: ReadonlyArray<string>; readonly write: ReadonlyArray<string> }
}

interface Pending {
  readonly request: Request
  readonly answer: Deferred.Deferred<void, Rejected | Declined>
}

/**
 * The patterns an "always" may save for a literal resource: itself, unless it contains wildcard characters that
 * would make the saved pattern match more than was approved (then nothing is saved and "always" acts as "once").
 * `suffix` characters at the end (the `/*` of a directory pattern) are meant as wildcards.
 */
const savable = (resource: string, suffix = 0): ReadonlyArray<string> =>
  /[*?]/.test(resource.slice(0, resource.length - suffix)) ? [] : [resource]

/** An agent's rules, compiled once for every decision made with them. */
type Ruleset = Rule.Compiled<Agent.SourcedRule>

/**
 * How each resource is decided by an agent's rules; where they would ask, by the project's saved approvals (read only
 * then), which answer an ask and never override a configured deny.
 */
const explained = Effect.fnUntraced(function* (
  ruleset: Ruleset,
  input: Pick<AssertInput, "action" | "resources">,
  approvals: Approvals.Interface,
  project: string,
) {
  const decided = input.resources.map((resource) => {
    const rule = ruleset.find(input.action, resource)
    return { resource, effect: rule?.effect ?? ("ask" as const), rule }
  })
  if (!decided.some((decision) => decision.effect === "ask")) {
    return decided.map((decision) => ({ ...decision, approvedBy: undefined }))
  }
  const approved = (yield* approvals.list(project)).filter((approval) => approval.action === input.action)
  return decided.map((decision) => {
    // A saved approval answers an ask; it never overrides a configured deny.
    const approval =
      decision.effect === "ask" ? approved.find((entry) => Rule.matches(entry.pattern, decision.resource)) : undefined
    return approval === undefined
      ? { ...decision, approvedBy: undefined }
      : { ...decision, effect: "allow" as const, approvedBy: approval.pattern }
  })
})

/** How the rules alone decide checks: all allowed, or refused on the first resource denied (with its check's action). */
type Ruled = typeof ALLOWED | { readonly action: string; readonly denied: Decision }

const ALLOWED = "allowed"
const ALL_ALLOWED = Effect.succeed(true)

/** The resources of a check that names none: the whole action. */
const WHOLE_ACTION: ReadonlyArray<string> = ["*"]

/** A path's real path, or the path as given where it cannot be resolved (it does not exist, say). */
const realOr = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** A check as `assert` meets it: nothing named is the whole action; protected or always-asked resources save nothing. */
const asAsserted = (given: AssertInput): AssertInput => {
  // Nothing named is not nothing to check: an empty list is checked as the whole action.
  const whole = given.resources.length === 0 ? { ...given, resources: ["*"], save: ["*"] } : given
  return whole.protected !== undefined
    ? { ...whole, ask: true as const, save: [] }
    : whole.ask === true
      ? { ...whole, save: [] }
      : whole
}

/** The refusal of a request a bare "no" declines (the request answered, and every other of its session). */
const declinedBy =
  (answer: Reply) =>
  (request: Request): Effect.Effect<never, Declined> => {
    const unattended = "unattended" in answer && answer.unattended === true
    const why = "why" in answer ? answer.why : undefined
    return Effect.fail(
      new Declined({
        action: request.action,
        resources: request.resources,
        unattended,
        ...(why === undefined ? {} : { why }),
        message: `The ${request.action} request was declined.`,
      }),
    )
  }

/** The refusal of a request still waiting when core shuts down. */
const shutDown = (request: Request): Effect.Effect<never, Declined> =>
  Effect.fail(
    new Declined({
      action: request.action,
      resources: request.resources,
      unattended: true,
      why: "core shut down before a reply came",
      message: "core shut down before a reply came.",
    }),
  )

/** The requests waiting for a reply, and the events that tell whoever answers asks about them. */
const waitingRoom = Effect.gen(function* () {
  const pending = new Map<string, Pending>()
  const events = yield* PubSub.unbounded<Event>()
  let counter = 0

  /**
   * Answers a request that is still pending, once: it is taken out of `pending` first, so a second answer
   * (or a withdrawal meanwhile) finds nothing to answer. Answers whether it was answered here.
   */
  const claim = (entry: Pending): boolean => pending.get(entry.request.id) === entry && pending.delete(entry.request.id)

  const finish = (entry: Pending, outcome: Effect.Effect<void, Rejected | Declined>, reply: Reply["reply"]) =>
    Deferred.complete(entry.answer, outcome).pipe(
      Effect.andThen(
        PubSub.publish(events, { type: "replied", id: entry.request.id, sessionID: entry.request.sessionID, reply }),
      ),
    )

  const settle = (entry: Pending, outcome: Effect.Effect<void, Rejected | Declined>, reply: Reply["reply"]) =>
    Effect.suspend(() => (claim(entry) ? finish(entry, outcome, reply).pipe(Effect.as(true)) : Effect.succeed(false)))

  /** Asks about the resources of a check and waits for the reply. */
  const ask = Effect.fnUntraced(function* (input: AssertInput, asked: ReadonlyArray<string>) {
    const request: Request = { ...input, resources: asked, id: `per_${Date.now().toString(36)}_${++counter}` }
    const entry: Pending = { request, answer: yield* Deferred.make<void, Rejected | Declined>() }
    // However the wait ends (a reply, or a cancelled call that stops waiting), the request is withdrawn. Waiting on
    // a person, the call gives up its turn at being prepared: calls of other sessions go on meanwhile.
    return yield* Effect.sync(() => pending.set(request.id, entry)).pipe(
      Effect.andThen(PreparingTurn.end),
      Effect.andThen(PubSub.publish(events, { type: "asked", request })),
      Effect.andThen(Deferred.await(entry.answer)),
      Effect.ensuring(Effect.sync(() => pending.delete(request.id))),
    )
  })

  // Shutting down declines what is still waiting.
  yield* Effect.addFinalizer(() =>
    Effect.forEach([...pending.values()], (entry) => settle(entry, shutDown(entry.request), "reject")),
  )

  return { pending, events, claim, finish, settle, ask }
})

/** Where the paths of one Location's checks are compared: real paths, and what is protected among them. */
interface Paths {
  readonly realProject: string
  readonly user: NonNullable<Options["user"]>
  /** The credential stores of the system's other users (Credentials.storesUnder), looked up on first use. */
  readonly otherStores: () => (real: string) => string | undefined
  /** The credential stores the user's environment names (Credentials.environmentOf), as given and where each really is. */
  readonly environmentStores: ReadonlyArray<string>
  readonly readableReal: ReadonlyArray<string>
  readonly protectedRoots: Protected.Roots
}

/**
 * `command`: a path a shell command reads, which reads nothing of core's data directory (its outputs included).
 * `unconfined`: a path a command changes that no read-only mount keeps from the code core loads (the OS sandbox
 * off): a folder holding that code counts as a change to it (`mv made lib`, `ln -s made lib`, `rm -r node_modules`).
 */
export type PathCheckInput = Pick<PathInput, "path" | "access" | "action"> & {
  readonly sessionID?: string
  readonly command?: true
  readonly unconfined?: true
}

/**
 * Why a resolved path is kept from every tool whatever the rules say (a credential store, core's data directory,
 * another session's managed outputs), or undefined when it is not.
 */
const keptFrom = (paths: Paths, input: PathCheckInput, resolved: Boundary.Resolved): Boundary.PathError | undefined => {
  const { user, protectedRoots } = paths
  const refused = (message: string) => new Boundary.PathError({ path: input.path, reason: "protected", message })
  const verb = input.access === "read" ? "read" : "change"
  /** A secret core keeps from every tool and command: `where` it is, and `what` such places hold. */
  const secret = (where: string, what: string) =>
    refused(
      `Cannot ${verb} ${input.path}: it is in ${where}, ${what}, which core keeps from every tool and command. Do ` +
        "not try to reach it another way; if the task needs it, ask the user.",
    )
  // Where it really is, and as it was named: a login file linked to a dotfiles repository is as secret as any.
  const grants = input.access === "read" ? user.read : user.write
  const named = environmentStoreOf(paths, resolved.real, grants) ?? environmentStoreOf(paths, resolved.requested, grants)
  if (named !== undefined) {
    return secret(named, "a credential store the user's environment names (GOOGLE_APPLICATION_CREDENTIALS, KUBECONFIG, DOCKER_CONFIG...)")
  }
  const store = Protected.ownDirectory(protectedRoots, resolved.real)
    ? undefined
    : (Credentials.anyStoreOf(user.home, resolved.real, grants, paths.otherStores()) ??
      (resolved.requested === resolved.real ? undefined : Credentials.anyStoreOf(user.home, resolved.requested, grants, paths.otherStores())) ??
      linkedStoreOf(user.home, resolved.real, grants))
  if (store !== undefined) return secret(store, "one of the user's credential stores and login files")
  const system = Credentials.systemOf(resolved.real)
  if (system !== undefined) {
    return secret(system, "one of the system's secrets (password hashes, private keys, saved logins, mounted tokens)")
  }
  if (input.access === "read" && Protected.homeSecret(protectedRoots, resolved.real)) {
    return refused(
      `Cannot read ${input.path}: it is in core's home (${protectedRoots.home}), which holds the user's ` +
        "application configuration and tools (tokens too) and is not readable by tools or commands. If the task " +
        "needs something from it, ask the user.",
    )
  }
  if (input.access === "read" && Protected.secret(protectedRoots, resolved.real)) {
    return refused(
      `Cannot read ${input.path}: it is in core's data directory (${protectedRoots.dataDir}), which holds the ` +
        "settlement store, saved approvals and other Locations' outputs, and is not readable by tools. Only this " +
        "Location's own managed outputs (the paths its previews name) can be read.",
    )
  }
  // No command reads a managed output (the sandbox keeps commands out of the whole data directory): refused before
  // anything is asked, as the rest of the directory is.
  if (input.access === "read" && input.command === true && Protected.secretToCommands(protectedRoots, resolved.real)) {
    return refused(
      `Cannot read ${input.path} with a command: it is in core's data directory (${protectedRoots.dataDir}), which ` +
        "no command reads. Read a managed output this session's results name with the read tool.",
    )
  }
  // A managed output is read without asking only in calls of the session that made it: wherever the data directory
  // lies, in the Location too (a Location at $HOME).
  const foreign =
    input.sessionID !== undefined && input.access === "read" && resolved.readable
      ? paths.readableReal.find(
          (root) =>
            Boundary.isWithin(root, resolved.real) &&
            !Boundary.isWithin(ManagedOutputs.sessionDirectory(root, input.sessionID!), resolved.real),
        )
      : undefined
  if (foreign !== undefined) {
    return refused(
      `Cannot read ${input.path}: managed outputs are readable only in the session that made them, and ` +
        "this is not it (or it names their directory). Read an output this session's results name.",
    )
  }
  return undefined
}

/** The checks touching a resolved path needs: leaving the Location first (unless readable), then the action. */
const checksOf = (paths: Paths, input: PathCheckInput, resolved: Boundary.Resolved): Array<Check> => {
  const checks: Array<Check> = []
  if (!resolved.inside && !(input.access === "read" && resolved.readable)) {
    const pattern = resolved.pattern!
    checks.push({ action: "external_directory", resources: [pattern], save: savable(pattern, 2) })
  }
  const resource = resolved.inside ? relative(paths.realProject, resolved.real) || "." : resolved.real
  const changes =
    input.access === "write"
      ? (Protected.change(paths.protectedRoots, resolved.real, { encloses: true, enclosesCode: input.unconfined === true }) ??
        Git.userConfig(paths.user.home, resolved.real) ??
        Toolchains.change(paths.user.home, resolved.real, resolved.requested, paths.realProject, process.env.PATH, paths.user.write))
      : undefined
  checks.push(
    changes === undefined
      ? { action: input.action, resources: [resource], save: savable(resource) }
      : { action: input.action, resources: [resource], save: [], ask: true, protected: changes },
  )
  return checks
}

/** How long the credential stores found to be links are reused before they are looked up again. */
const LINKED_MS = 2_000
let linked: { readonly home: string; readonly at: number; readonly stores: ReadonlyArray<readonly [store: string, target: string]> } | undefined

/**
 * The credential store under `home` that `real` is, where a store or a folder above it is a link (a dotfiles
 * repository's `bashrc`, read by that name in a Location at `~/dotfiles`; `~/.config` linked to `~/dotfiles/config`,
 * whose `gh/hosts.yml` holds a token), unless a grant names that store; undefined otherwise. A store not there yet is
 * where it would be made: a login file written through the link would run as the user logs in.
 */
const linkedStoreOf = (home: string, real: string, granted: ReadonlyArray<string>): string | undefined => {
  const now = performance.now()
  if (linked === undefined || linked.home !== home || now - linked.at > LINKED_MS) {
    const stores: Array<readonly [string, string]> = []
    for (const store of Credentials.STORES) {
      const path = join(home, store)
      // Where it really is, there or not yet made, as a path the tools are given is resolved.
      const at = Boundary.realOf(path) ?? path
      if (at !== path) stores.push([path, at])
    }
    linked = { home, at: now, stores }
  }
  const found = linked.stores.find(([store, target]) => Boundary.isWithin(target, real) && !granted.some((grant) => Boundary.isWithin(store, grant)))
  return found?.[0]
}

/**
 * The credential store the user's environment names that `path` lies in, unless a grant names that store or a path
 * inside it and holds `path` (as a store under the home); undefined otherwise.
 */
const environmentStoreOf = (paths: Paths, path: string, granted: ReadonlyArray<string>): string | undefined =>
  paths.environmentStores.find(
    (store) => Boundary.isWithin(store, path) && !granted.some((grant) => Boundary.isWithin(store, grant) && Boundary.isWithin(grant, path)),
  )

/** The real paths of a Location's options, and what is protected there. */
const pathsOf = (options: Options): Paths => {
  // Paths are compared with the project's real path (a project reached through a symlink included).
  const realProject = realOr(options.project)
  const given = options.user ?? { home: homedir(), read: [], write: [] }
  const directories = Protected.directoriesOf()
  const home = realOr(given.home)
  let others: ((real: string) => string | undefined) | undefined
  return {
    realProject,
    user: { ...given, home },
    otherStores: () => (others ??= Credentials.storesUnder(Homes.others(home))),
    environmentStores: [...new Set(Credentials.environmentOf(process.env, home, process.cwd()).flatMap((path) => [path, realOr(path)]))],
    readableReal: (options.readableRoots ?? []).map(realOr),
    protectedRoots: Protected.roots({
      location: realProject,
      home: options.home ?? directories.home,
      dataDir: options.dataDir ?? directories.dataDir,
      readable: options.readableRoots ?? [],
      ...(options.locations === undefined ? {} : { others: options.locations }),
    }),
  }
}

export const layer = (options: Options): Layer.Layer<Service, never, Approvals.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const approvals = yield* Approvals.Service
      const configured = options.configured ?? Agent.NOTHING_CONFIGURED
      const project = options.project
      const paths = pathsOf(options)
      const { user, protectedRoots } = paths
      const { pending, events, claim, finish, settle, ask } = yield* waitingRoom

      // Each known agent's rules are compiled on first use and kept: the configuration is fixed for the life of this
      // service (a changed core.json makes a new one). Unknown agents share the one ruleset that denies everything,
      // so what is kept is bounded by the agents configured, whatever names callers send.
      const compiled = new Map<string, Ruleset>()
      const unknownAgent: Ruleset = Rule.compile(Agent.DENY_ALL)
      const rulesetOf = (agent: string): Ruleset => {
        if (!Agent.isKnown(configured, agent)) return unknownAgent
        let ruleset = compiled.get(agent)
        if (ruleset === undefined) compiled.set(agent, (ruleset = Rule.compile(Agent.rules(configured, agent))))
        return ruleset
      }
      const rules = (agent: string) => rulesetOf(agent).rules

      // explain and assert are untraced on purpose: they run inside every settle, where a span would cost more
      // than the decision itself. The store failing is no refusal and no answer: an operational failure of
      // whatever asked.
      const explain = (input: Pick<AssertInput, "agent" | "action" | "resources">) =>
        explained(rulesetOf(input.agent), input, approvals, project).pipe(
          Effect.catchTag("Store.StoreError", (error) => Effect.die(error)),
        )

      // How a request is decided now: as explained, except that a request marked `ask` is never allowed.
      const decide = (input: Pick<AssertInput, "agent" | "action" | "resources" | "ask" | "protected">) =>
        input.ask === true || input.protected !== undefined
          ? Effect.map(explain(input), (decisions) =>
              decisions.map((decision) =>
                decision.effect === "allow" ? { ...decision, effect: "ask" as const, approvedBy: undefined } : decision,
              ),
            )
          : explain(input)

      const refuse = (agent: string, action: string, denied: Decision) =>
        Effect.fail(
          new Denied({
            action,
            resource: denied.resource,
            message: deniedText({ action, resource: denied.resource, agent, rule: denied.rule }),
          }),
        )

      /**
       * How checks end when the rules alone answer every resource: no check is marked ask or protected and no rule
       * leaves a resource to ask, so the full path (`refuseDecided`, `asserted`) would read no saved approval and ask
       * nobody. Its answer then is this one: the first resource a rule denies (checks in order) refuses, and otherwise
       * all is allowed. Undefined where the full path must decide. Reached synchronously, for most calls' checks.
       */
      const byRules = (agent: string, checks: ReadonlyArray<Check>): Ruled | undefined => {
        const ruleset = rulesetOf(agent)
        let denied: Ruled | undefined
        for (const check of checks) {
          if (check.ask === true || check.protected !== undefined) return undefined
          const resources = check.resources.length === 0 ? WHOLE_ACTION : check.resources
          for (const resource of resources) {
            const rule = ruleset.find(check.action, resource)
            if (rule === undefined || rule.effect === "ask") return undefined
            if (rule.effect === "deny" && denied === undefined) {
              denied = { action: check.action, denied: { resource, effect: "deny", rule, approvedBy: undefined } }
            }
          }
        }
        return denied ?? ALLOWED
      }

      const refuseRuled = (agent: string, ruled: Exclude<Ruled, typeof ALLOWED>) => refuse(agent, ruled.action, ruled.denied)

      const asserted = Effect.fnUntraced(function* (given: AssertInput) {
        const input = asAsserted(given)
        const decisions = yield* decide(input)
        const denied = decisions.find((decision) => decision.effect === "deny")
        if (denied !== undefined) return yield* refuse(input.agent, input.action, denied)
        const asked = decisions.filter((decision) => decision.effect === "ask").map((decision) => decision.resource)
        if (asked.length === 0) return
        return yield* ask(input, asked)
      })

      // Decided when run, never when made: an assert made once and run again meets the approvals saved meanwhile.
      const assert = (given: AssertInput): Effect.Effect<void, Refusal> =>
        Effect.suspend(() => {
          const ruled = byRules(given.agent, [given])
          return ruled === undefined ? asserted(given) : ruled === ALLOWED ? Effect.void : refuseRuled(given.agent, ruled)
        })

      /**
       * Answers "always": claimed first, so nothing else answers it meanwhile; saved before the call goes on, so the
       * approval exists by the time the call (and its process) is done. What was saved may answer other requests too.
       */
      const approve = Effect.fnUntraced(function* (entry: Pending) {
        yield* approvals.save(project, entry.request.action, entry.request.save).pipe(
          Effect.ensuring(finish(entry, Effect.void, "always")),
          Effect.catchTag("Store.StoreError", (error) => Effect.die(error)),
        )
        for (const other of [...pending.values()]) {
          const decisions = yield* decide(other.request)
          if (decisions.every((decision) => decision.effect === "allow")) yield* settle(other, Effect.void, "always")
        }
      })

      const reply = Effect.fn("Permission.reply")(function* (id: string, answer: Reply) {
        const entry = pending.get(id)
        const unknown = new UnknownRequest({ id, message: `No pending permission request ${id} (it may have been answered already)` })
        if (entry === undefined) return yield* unknown
        const { action, sessionID } = entry.request
        if (answer.reply === "once") {
          if (!(yield* settle(entry, Effect.void, "once"))) return yield* unknown
          return
        }
        if (answer.reply === "always") {
          if (!claim(entry)) return yield* unknown
          return yield* approve(entry)
        }
        const feedback = "message" in answer ? answer.message?.trim() : undefined
        if (feedback !== undefined && feedback !== "") {
          if (!(yield* settle(entry, Effect.fail(new Rejected({ action, message: feedback })), "reject"))) {
            return yield* unknown
          }
          return
        }
        // A bare "no" stops the whole session's asks, not just this one.
        const declined = declinedBy(answer)
        if (!(yield* settle(entry, declined(entry.request), "reject"))) return yield* unknown
        for (const other of [...pending.values()]) {
          if (other.request.sessionID === sessionID) yield* settle(other, declined(other.request), "reject")
        }
      })

      const pathChecks = Effect.fnUntraced(function* (input: PathCheckInput) {
        const resolved = yield* Boundary.resolve({
          location: project,
          path: input.path,
          readableRoots: options.readableRoots ?? [],
        })
        const kept = keptFrom(paths, input, resolved)
        if (kept !== undefined) return yield* kept
        return { resolved, checks: checksOf(paths, input, resolved) }
      })

      const decideAll = Effect.fnUntraced(function* (agent: string, checks: ReadonlyArray<Check>) {
        const decided: Array<Decided> = []
        for (const check of checks) {
          const resources = check.resources.length === 0 ? ["*"] : check.resources
          decided.push({ check, decisions: yield* decide({ ...check, agent, resources }) })
        }
        return decided
      })

      /** Refuses the first check anything denies; answers whether every decision allows (nothing to ask). */
      const refuseDecided = Effect.fnUntraced(function* (agent: string, checks: ReadonlyArray<Check>) {
        let allowed = true
        for (const { check, decisions } of yield* decideAll(agent, checks)) {
          const denied = decisions.find((decision) => decision.effect === "deny")
          if (denied !== undefined) return yield* refuse(agent, check.action, denied)
          allowed &&= decisions.every((decision) => decision.effect === "allow")
        }
        return allowed
      })

      const refuseDenied = (agent: string, checks: ReadonlyArray<Check>): Effect.Effect<boolean, Denied> =>
        Effect.suspend(() => {
          const ruled = byRules(agent, checks)
          return ruled === undefined ? refuseDecided(agent, checks) : ruled === ALLOWED ? ALL_ALLOWED : refuseRuled(agent, ruled)
        })

      // Untraced like explain and assert: it runs inside every settle.
      const authorized = Effect.fnUntraced(function* (caller: Caller, checks: ReadonlyArray<Check>) {
        // A deny anywhere refuses the whole call first: nobody is asked about a part of it that cannot happen.
        // Allowed throughout, it is done; otherwise each check is asserted in turn, decided again after the asks
        // before it (an "always" answer may allow what comes after).
        if (yield* refuseDecided(caller.agent, checks)) return
        for (const check of checks) yield* asserted({ ...caller, ...check })
      })

      const authorize = (caller: Caller, checks: ReadonlyArray<Check>): Effect.Effect<void, Refusal> =>
        Effect.suspend(() => {
          const ruled = byRules(caller.agent, checks)
          return ruled === undefined
            ? authorized(caller, checks)
            : ruled === ALLOWED
              ? Effect.void
              : refuseRuled(caller.agent, ruled)
        })

      const authorizePath = Effect.fn("Permission.authorizePath")(function* (input: PathInput) {
        const { path: _path, access: _access, action: _action, ...caller } = input
        const { resolved, checks } = yield* pathChecks(input)
        yield* authorize(caller, checks)
        return resolved
      })

      return Service.of({
        project,
        protectedRoots,
        authorizePath,
        pathChecks,
        agents: Agent.names(configured),
        isAgent: (agent) => Agent.isKnown(configured, agent),
        rules,
        denies: (agent, action) => Rule.denier(rules(agent), action),
        // This core's own directories are kept by their own rules, as in keptFrom: a session's own output folder is
        // searched where the data directory is the default `~/.local/share/core`, itself a store to other cores.
        credential: (real) =>
          environmentStoreOf(paths, real, user.read) !== undefined ||
          Credentials.systemOf(real) !== undefined ||
          (!Protected.ownDirectory(protectedRoots, real) &&
            (Credentials.anyStoreOf(user.home, real, user.read, paths.otherStores()) !== undefined ||
              linkedStoreOf(user.home, real, user.read) !== undefined)),
        explain,
        decide: decideAll,
        authorize,
        refuseDenied,
        assert,
        reply,
        pending: Effect.sync(() => [...pending.values()].map((entry) => entry.request)),
        subscribe: PubSub.subscribe(events),
      })
    }),
  )
