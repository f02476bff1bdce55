export * as Builtin from "./builtin"

// What every built-in tool shares: the Location services it captures when it is made (DESIGN §2 law 3: no
// services in the call context), the path check each file tool makes before touching anything, and how paths
// are shown to the model (relative to the Location when inside it, absolute otherwise).

import { isAbsolute, relative, sep } from "node:path"
import * as Effect from "effect/Effect"
import { Boundary } from "../permission/boundary"
import { Stopping } from "../settlement/stopping"
import { Permission } from "../permission/permission"
import type { ManagedOutputs } from "../output/managed-outputs"
import type { Shell } from "../shell/shell"
import type { Reads } from "../store/reads"
import type { Todos } from "../store/todos"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Text } from "./text"

/** The services a built-in captures at construction. */
export interface Services {
  /** The Location's real absolute directory. */
  readonly directory: string
  /** The Location's permission service. */
  readonly permission: Permission.Interface
  /** The process producer commands run through. */
  readonly shell: Shell.Interface
  /** What each session has seen of each file (see ./read-tracking); nothing is tracked without it. */
  readonly reads?: Reads.Interface
  /** Where todowrite keeps each session's list; in memory for the life of the tools without it. */
  readonly todos?: Todos.Interface
  /** Whether write and edit refuse changes to files the session has not seen as they are (default true). */
  readonly readBeforeWrite?: boolean
  /** Managed outputs: read brings one another host kept from the object store they share. */
  readonly outputs?: Pick<ManagedOutputs.Interface, "fetch">
}

/**
 * `Tool.make` for a built-in: its input's JSON Schema is derived when first asked for (a turn's definitions), not
 * when the tool is made (see Internal.deriveInputLater); test/builtin/inputs.test.ts checks that each derives as
 * `Tool.make` requires.
 */
export const tool = <I extends Tool.Codec, O extends Tool.Codec>(config: Tool.Config<I, O>): Tool.Tool<I, O> =>
  Tool.make(Internal.deriveInputLater(config))

/** The part of a permission request every check of one call shares. */
export const requestOf = (context: Tool.Context) => ({
  sessionID: context.sessionID,
  agent: context.agent,
  source: { messageID: context.assistantMessageID, callID: context.toolCallID },
})

/**
 * Makes a call's checks, in order, as every tool does (Permission.authorize): a rule denying any resource of any
 * check refuses the call before anything is asked; otherwise each check is asserted in turn, asking where it must.
 * Made before the tool does anything (`beforeEffects`, as every built-in checks first), a call cancelled in them
 * settles as cancelled before it ran (Stopping.beforeStart), its text saying nothing of it ran.
 */
export const authorize = (
  services: Services,
  context: Tool.Context,
  checks: ReadonlyArray<Permission.Check>,
  metadata: Readonly<Record<string, unknown>>,
  beforeEffects = true,
): Effect.Effect<void, Permission.Refusal> => {
  const checked = services.permission.authorize({ ...requestOf(context), metadata }, checks)
  return beforeEffects ? Stopping.beforeStart(checked) : checked
}

/** Refuses the call when a rule denies any resource of `checks`, asking nothing; succeeds otherwise. */
export const refuseDenied = (
  services: Services,
  context: Tool.Context,
  checks: ReadonlyArray<Permission.Check>,
): Effect.Effect<void, Permission.Refusal> => services.permission.refuseDenied(context.agent, checks)

/**
 * Checks a path before the tool touches it: outside the Location `external_directory` first, then `action` on
 * the path (DESIGN §7), each as Permission.pathChecks names it, so what is asked is what `core check` explains.
 * Answers where the path really leads. A path that cannot be resolved is a model-visible failure; a store that
 * cannot be read is an operational failure, never a tool result.
 */
export const authorizePath = (
  services: Services,
  context: Tool.Context,
  input: { readonly action: string; readonly path: string; readonly access: "read" | "write"; readonly tool: string },
): Effect.Effect<Boundary.Resolved, Tool.Failure | Permission.Refusal> =>
  Effect.gen(function* () {
    const { resolved, checks } = yield* services.permission
      .pathChecks({ action: input.action, path: input.path, access: input.access, sessionID: context.sessionID })
      .pipe(Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))))
    yield* authorize(services, context, checks, { tool: input.tool })
    return resolved
  })

/**
 * The checks of a change to the file at `path`, in order: outside the Location `external_directory`, then, when the
 * tool `reads` the file's text (edit and an apply_patch update read it, show it back in a diff or a near match, and
 * may move it where it can be read), `read` on it, as bash's `mv` and `sed -i` are checked, then `edit`. A rule
 * denying the read refuses the change as it refuses the read: one rule per path, whichever tool reaches it. The
 * read is the calling session's (`sessionID`, left out only to explain a call): another session's managed output is
 * refused to it as it is to `read`, whatever is approved.
 */
export const changePlan = (
  services: Services,
  input: { readonly path: string; readonly reads: boolean; readonly sessionID?: string },
): Effect.Effect<{ readonly resolved: Boundary.Resolved; readonly checks: ReadonlyArray<Permission.Check> }, Tool.Failure> =>
  Effect.gen(function* () {
    const failed = (error: Boundary.PathError) => Effect.fail(new Tool.Failure({ message: error.message }))
    const edit = yield* services.permission
      .pathChecks({ action: "edit", path: input.path, access: "write" })
      .pipe(Effect.catchTag("Boundary.PathError", failed))
    if (!input.reads) return edit
    const session = input.sessionID === undefined ? {} : { sessionID: input.sessionID }
    const read = yield* services.permission
      .pathChecks({ action: "read", path: input.path, access: "read", ...session })
      .pipe(Effect.catchTag("Boundary.PathError", failed))
    const checks = [...edit.checks]
    checks.splice(checks.length - 1, 0, ...read.checks.filter((check) => check.action === "read"))
    return { resolved: edit.resolved, checks }
  })

/**
 * Checks a file a tool changes (write, edit, apply_patch): a path that names a directory (a trailing "/") is
 * refused before anything is asked, then the change is authorized (`changePlan`). Answers where the path really
 * leads, and how it is shown.
 */
export const authorizeChange = (
  services: Services,
  context: Tool.Context,
  input: { readonly tool: string; readonly path: string; readonly reads: boolean },
): Effect.Effect<{ readonly resolved: Boundary.Resolved; readonly shown: string; readonly asked: boolean }, Tool.Failure | Permission.Refusal> =>
  Effect.gen(function* () {
    const ending = Text.directoryEnding(input.path)
    if (ending !== undefined) {
      return yield* new Tool.Failure({ message: `Cannot ${input.tool} ${input.path}: ${Text.namesDirectory(ending)}` })
    }
    // A directory (the Location, the folder above it, one in it), named as such: not (as its check would say) a change
    // of all that it holds, core's configuration among it, for a person to make. Out of the Location, a directory is
    // said so only once the path is allowed (./write, ./edit): whether one is there is not the model's to learn.
    const directory = (shown: string) =>
      new Tool.Failure({ message: `Cannot ${input.tool} ${input.path}: it is a directory. Give the path of a file, such as ${shown}.` })
    if (/^\.{1,2}$/.test(input.path)) return yield* directory("name.txt")
    const { resolved, checks } = yield* changePlan(services, { path: input.path, reads: input.reads, sessionID: context.sessionID })
    if (resolved.inside && resolved.kind === "directory") return yield* directory(`${display(services.directory, resolved.real)}/name.txt`)
    yield* authorize(services, context, checks, { tool: input.tool })
    return { resolved, shown: display(services.directory, resolved.real), asked: askedOf(checks) }
  })

/**
 * Why a file a tool made without a protected ask cannot stay (to be taken out, and the call failed), or undefined: it
 * became core's configuration after its check. A command made a folder above a missing protected place a link to
 * the file's folder meanwhile (`lib -> lib2` while `lib2/fmt.ts` was written, the write waiting its turn behind
 * another change of the file), and the command's guard, finding nothing made, let the link stand. Asked once the
 * file is there, so no such link is missed: a link made after this is made by a command whose guard finds the place
 * made, and takes it out.
 */
export const becameProtected = (services: Services, real: string, shown: string): Effect.Effect<string | undefined, Tool.Failure> =>
  changePlan(services, { path: real, reads: false }).pipe(
    Effect.map(({ checks }) => {
      const what = checks.find((check) => check.protected !== undefined)?.protected
      return what === undefined ? undefined : `Cannot create ${shown}: with a change made at the same time, it is now ${what}.`
    }),
  )

/** Whether `checks` asked a person for a protected change (approved, since the call goes on). */
export const askedOf = (checks: ReadonlyArray<Permission.Check>): boolean => checks.some((check) => check.protected !== undefined)

/**
 * Checks a directory a tool reads (glob, list): authorized with the tool's own action, then required to exist and
 * be a directory. `leaveOut` finishes the missing-directory hint ("search the project"), `instead` the hint for a
 * file given where a directory is needed.
 */
export const authorizeDirectory = (
  services: Services,
  context: Tool.Context,
  input: { readonly tool: string; readonly path: string | undefined; readonly leaveOut: string; readonly instead: string },
): Effect.Effect<{ readonly resolved: Boundary.Resolved; readonly shown: string }, Tool.Failure | Permission.Refusal> =>
  Effect.gen(function* () {
    const resolved = yield* authorizePath(services, context, {
      action: input.tool,
      path: input.path ?? ".",
      access: "read",
      tool: input.tool,
    })
    const shown = display(services.directory, resolved.real)
    if (resolved.kind === "missing") {
      return yield* new Tool.Failure({
        message: `Directory not found: ${shown}. Give an existing directory, or leave path out to ${input.leaveOut}.`,
      })
    }
    if (resolved.kind !== "directory") {
      const what = resolved.kind === "file" ? "file" : "special file"
      return yield* new Tool.Failure({ message: `${shown} is a ${what}, not a directory. ${input.instead}` })
    }
    return { resolved, shown }
  })

/**
 * The permission checks a call of a built-in would make for an input, in order, found without making them or
 * touching anything: how `core check` explains a built-in's call per path or per command. Each built-in records
 * its plan with `planned`; the same functions decide what its `execute` checks.
 */
export type Plan<I> = (input: I, agent: string) => Effect.Effect<ReadonlyArray<Permission.Check>, Tool.Failure>

const plans = new WeakMap<Tool.Any, Plan<any>>()

/** The decoded input of a tool. */
type InputOf<T> = T extends Tool.Tool<infer I, any> ? I["Type"] : never

/** Records how `tool` finds its checks for an input (see Plan). */
export const planned = <T extends Tool.Any>(tool: T, plan: Plan<InputOf<T>>): T => {
  plans.set(tool, plan)
  return tool
}

/** A built-in's plan, or undefined for a tool that checks its action as a whole. */
export const planOf = (tool: Tool.Any): Plan<unknown> | undefined => plans.get(tool)

/** The checks `authorizePath` makes for one path (see Permission.pathChecks); an unresolvable path is a failure. */
export const pathPlan = (
  services: Services,
  input: Permission.PathCheckInput,
): Effect.Effect<ReadonlyArray<Permission.Check>, Tool.Failure> =>
  services.permission.pathChecks(input).pipe(
    Effect.map(({ checks }) => checks),
    Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))),
  )

/**
 * Whether a file, by its real path, is one the agent's `read` rules deny; undefined when no rule denies a read.
 * (bash checks its files against this; the sandbox keeps commands from the credential stores.)
 */
export const readDenied = (services: Pick<Services, "directory" | "permission">, agent: string): ((real: string) => boolean) | undefined =>
  deniedFor(services, agent, "read")

/** Whether the agent's `edit` rules deny a file by its real path (as readDenied reads the `read` rules). */
export const editDenied = (services: Pick<Services, "directory" | "permission">, agent: string): ((real: string) => boolean) | undefined =>
  deniedFor(services, agent, "edit")

const deniedFor = (services: Pick<Services, "directory" | "permission">, agent: string, action: string): ((real: string) => boolean) | undefined => {
  const denies = services.permission.denies(agent, action)
  if (denies === undefined) return undefined
  const inside = services.directory.endsWith(sep) ? services.directory : services.directory + sep
  const test = (real: string) =>
    denies(real === services.directory ? "." : real.startsWith(inside) ? real.slice(inside.length).split(sep).join("/") : real)
  // The same rules in the same Location answer alike: a walk over many paths may keep the answers (Shell Covered).
  const key = (denies as { readonly key?: string }).key
  return key === undefined ? test : Object.assign(test, { key: `${services.directory}\0${action}\0${key}` })
}

/**
 * Whether a tool showing many files leaves one out (its name from list and glob, its lines from grep), by its real
 * path: one the agent's `read` rules deny, one of the user's credential stores, or one in core's data directory (the
 * store, other sessions' and Locations' managed outputs, what core took out of its configuration), as `read` of it is
 * refused. A walk that starts inside the data directory (the session's own managed outputs, as its results name
 * them) was let in by the path checks, and its files are left to the other tests. `skill`, showing a skill of
 * `$CORE_HOME` (`skill`, its real directory), shows that directory's files as it shows its SKILL.md; nothing else of
 * the home (a skill that leads to the home itself shows none of it).
 */
export const hidden = (
  services: Pick<Services, "directory" | "permission">,
  agent: string,
  root?: string,
  skill?: string,
): ((real: string) => boolean) => {
  const denied = readDenied(services, agent)
  const credential = services.permission.credential
  // Absolute and normal already (as the places were made, and as walks print real paths): tested by prefix, as this
  // runs for every file a walk finds.
  const { fixed, location } = services.permission.protectedRoots
  const under = (directory: string) => {
    const prefix = directory.endsWith(sep) ? directory : directory + sep
    return (real: string) => real === directory || real.startsWith(prefix)
  }
  // core's data directory, unless the walk starts in it (the session's own outputs); and its home (the application's
  // core.json may hold tokens) but for a Location in it, which sees its own files. Commands read neither.
  const data = fixed.data.map((place) => place.path).filter((directory) => root === undefined || !Boundary.isWithin(directory, root)).map(under)
  const home = fixed.home.map((place) => under(place.path))
  const inLocation = under(location)
  const inSkill =
    skill !== undefined && !fixed.home.some((place) => Boundary.isWithin(skill, place.path)) ? under(skill) : () => false
  const inCore = (real: string) =>
    data.some((inside) => inside(real)) || (home.some((inside) => inside(real)) && !inLocation(real) && !inSkill(real))
  const kept = (real: string) => credential(real) || inCore(real)
  return denied === undefined ? kept : (real) => kept(real) || denied(real)
}

/** How many entries a rule kept out of an answer, as the model reads it (never which). */
export const hiddenNote = (hidden: number, what: string): string =>
  `(${hidden} ${what}${hidden === 1 ? "" : "s"} not shown: the user's rules, credential stores, the system's secrets or core's own directories, which no tool reads.)`

/**
 * A file's name or path as a line of a listing shows it: as JSON writes it (quoted, `\n` for a line feed) when it
 * holds a control character, which would otherwise start a line of its own that reads as another entry.
 */
export const nameLine = (name: string): string => (/[\u0000-\u001f\u007f]/.test(name) ? JSON.stringify(name) : name)

/**
 * `value` with a comma between each group of three digits, as `toLocaleString("en-US")` writes a whole number, without
 * its first use loading the locale data (1.6 ms of every start, for the bash tool's description).
 */
export const count = (value: number): string =>
  Number.isSafeInteger(value) ? String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",") : value.toLocaleString("en-US")

/** A path as the model should see it: relative to the Location when inside it ("." for the Location itself). */
export const display = (directory: string, path: string): string => {
  if (!isAbsolute(path)) return path
  if (!Boundary.isWithin(directory, path)) return path
  return relative(directory, path).split(sep).join("/") || "."
}
