export * as HostTools from "./host-tools"

// The tools a host registers in a served Location and performs itself (`question`, `task`, or any tool it
// defines). Each is a canonical tool of the Location (input checked against its JSON Schema, permission by its name,
// bounding, recording, at-most-once, cancel, stale) whose executor publishes a `host_call` and waits for the host's
// answer, bounded by the definition's timeout. Registrations live until the host removes them, the Location is let
// go or the serve stops; registering a name again replaces it (turns made before see it as stale). A host tool never
// takes a name the Location's own tools hold. No HTTP here: the edges translate.

import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { ProviderDialect } from "../provider/provider-dialect"
import type { Registry } from "../registry/registry"
import { McpSdk } from "../mcp-client/mcp-sdk"
import { Definition as ToolDefinition } from "../tool/definition"
import { Described } from "../tool/described"
import type { JsonSchema } from "../tool/json-schema"
import { ToolName } from "../tool/tool-name"
import { Tool } from "../tool/tool"
import { ShippedTools } from "./shipped-tools"

/** How long a delegated call waits for the host's answer unless its definition says otherwise. */
export const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000
/** The longest wait a definition may ask for. */
export const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000
/** Ids of finished delegated calls remembered, so a late or second answer is refused as such rather than unknown. */
const MAX_FINISHED = 10_000

// Schemas

const JsonObject = Schema.Record(Schema.String, Schema.Json)

export const Definition = Schema.Struct({
  name: Schema.String.annotate({ description: "The tool's name: a letter, then letters, digits, _ or -, 64 at most" }),
  description: Schema.String.annotate({ description: "What the model reads about the tool" }),
  inputSchema: JsonObject.annotate({ description: "JSON Schema of the input; its root is an object" }),
  outputSchema: Schema.optionalKey(
    JsonObject.annotate({ description: "JSON Schema the host's output is checked against (any JSON value without it)" }),
  ),
  timeoutMs: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TIMEOUT_MS })).annotate({
      description: `How long a call waits for the host's answer, in ms (default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS})`,
    }),
  ),
  annotations: Schema.optionalKey(ToolDefinition.Annotations),
}).annotate({ identifier: "HostToolDefinition" })
export type Definition = typeof Definition.Type

export const Registration = Schema.Struct({
  enable: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: `Shipped tools to register by name: ${ShippedTools.NAMES.map((name) => `"${name}"`).join(", ")}`,
    }),
  ),
  tools: Schema.optionalKey(Schema.Array(Definition).annotate({ description: "The host's own tools" })),
}).annotate({ identifier: "HostToolsRequest" })
export type Registration = typeof Registration.Type

/** A delegated call waiting for the host's answer (the `host_call` event). */
export const Call = Schema.Struct({
  id: Schema.String.annotate({ description: "Answer it with POST /v1/host-calls/{id}/result" }),
  sessionID: Schema.String,
  toolCallID: Schema.String,
  name: Schema.String,
  input: Schema.Json.annotate({ description: "The input, valid against the tool's input schema" }),
  deadline: Schema.Finite.annotate({ description: "When the call stops waiting (ms since the epoch)" }),
}).annotate({ identifier: "HostCall" })
export type Call = typeof Call.Type

export const Answer = Schema.Struct({
  output: Schema.optionalKey(Schema.Json.annotate({ description: "The tool's output, valid against its output schema" })),
  error: Schema.optionalKey(
    Schema.Struct({ message: Schema.String }).annotate({ description: "A failure the model reads instead of an output" }),
  ),
}).annotate({ identifier: "HostCallResult", description: "Exactly one of output and error" })
export type Answer = typeof Answer.Type

// Errors

/** A registration or answer that cannot be taken: nothing changed. */
export class Invalid extends Schema.TaggedError<Invalid>()("HostTools.Invalid", { message: Schema.String }) {}

/** A name the Location's own tools hold. */
export class Taken extends Schema.TaggedError<Taken>()("HostTools.Taken", {
  name: Schema.String,
  message: Schema.String,
}) {}

export class Unknown extends Schema.TaggedError<Unknown>()("HostTools.Unknown", { message: Schema.String }) {}

/** An answer to a delegated call that is no longer waiting. */
export class Finished extends Schema.TaggedError<Finished>()("HostTools.Finished", {
  id: Schema.String,
  reason: Schema.Literals(["answered", "cancelled", "timed_out"]),
  message: Schema.String,
}) {}

// Interface

/** Where host tools are registered: a generation's registry, its scope, and what it resolves a name to now. */
export interface Target {
  readonly tools: Registry.Tools
  readonly scope: Scope.Scope
  readonly find: (name: string) => Tool.Any | undefined
}

export interface Interface {
  /** Checks every definition, then registers them all (replacing those of the same names); answers every host tool. */
  readonly register: (registration: Registration) => Effect.Effect<ReadonlyArray<Definition>, Invalid | Taken>
  readonly remove: (name: string) => Effect.Effect<void, Unknown>
  readonly list: () => ReadonlyArray<Definition>
  /** The delegated calls waiting for an answer, oldest first. */
  readonly pending: () => ReadonlyArray<Call>
  readonly answer: (id: string, answer: Answer) => Effect.Effect<void, Invalid | Unknown | Finished>
  /** Registers every host tool into `target` (a new generation); answers the names left out as taken. */
  readonly attach: (target: Target) => Effect.Effect<ReadonlyArray<string>>
}

type Outcome = { readonly _tag: "output"; readonly value: unknown } | { readonly _tag: "error"; readonly message: string }

interface Entry {
  readonly definition: Definition
  readonly tool: Tool.Any
  readonly checkOutput: (output: unknown) => string | undefined
}

interface Waiting {
  readonly call: Call
  readonly entry: Entry
  readonly done: Deferred.Deferred<Outcome>
}

/** A JSON Schema compiled into a check, or why it cannot be used. */
const compile = (schema: unknown, what: string): Effect.Effect<(value: unknown) => string | undefined, Invalid> =>
  Effect.try({
    try: () => {
      const validators = McpSdk.validators()
      const validator = validators.getValidator(schema as Parameters<typeof validators.getValidator>[0])
      return (value: unknown) => {
        const result = validator(value)
        return result.valid ? undefined : result.errorMessage
      }
    },
    catch: (cause) => new Invalid({ message: `${what} is not a usable JSON Schema: ${cause instanceof Error ? cause.message : String(cause)}` }),
  })

const secondsOf = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`)

/** The host tools of one served Location; `publish` announces each delegated call. */
export const make = (options: { readonly publish: (call: Call) => Effect.Effect<void> }): Interface => {
  const entries = new Map<string, Entry>()
  const waiting = new Map<string, Waiting>()
  const finished = new Map<string, Finished["reason"]>()
  let target: Target | undefined
  /** Each host tool's registration in the target, in a scope of its own. */
  const scopes = new Map<string, Scope.Closeable>()

  const finish = (id: string, waited: Waiting, reason: Finished["reason"]): boolean => {
    if (waiting.get(id) !== waited) return false
    waiting.delete(id)
    finished.set(id, reason)
    if (finished.size > MAX_FINISHED) finished.delete(finished.keys().next().value!)
    return true
  }

  const delegate = (entry: Entry, input: unknown, context: Tool.Context): Effect.Effect<unknown, Tool.Failure> =>
    Effect.gen(function* () {
      const { name, timeoutMs = DEFAULT_TIMEOUT_MS } = entry.definition
      const id = `hc_${crypto.randomUUID().replaceAll("-", "")}`
      const call: Call = {
        id,
        sessionID: context.sessionID,
        toolCallID: context.toolCallID,
        name,
        input: input as Schema.Json,
        deadline: Date.now() + timeoutMs,
      }
      const waited: Waiting = { call, entry, done: yield* Deferred.make<Outcome>() }
      waiting.set(id, waited)
      const outcome = yield* Effect.gen(function* () {
        yield* options.publish(call)
        const first = yield* Deferred.await(waited.done).pipe(Effect.timeoutOption(timeoutMs))
        if (Option.isSome(first)) return first.value
        // An answer that came as the timer fired wins: the call is finished by whichever came first.
        if (!finish(id, waited, "timed_out")) return yield* Deferred.await(waited.done)
        return yield* new Tool.Failure({
          message: `${name}: the host did not answer within ${secondsOf(timeoutMs)}, so nothing came back. Go on without it, or call it again if it is still needed.`,
        })
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => finish(id, waited, "cancelled"))))
      if (outcome._tag === "error") {
        // A host that gave no reason (an empty message) is said so, not shown as a name and a colon.
        const reason = outcome.message.trim() === "" ? "it failed, and its host gave no reason" : outcome.message
        return yield* new Tool.Failure({ message: `${name}: ${reason}` })
      }
      return outcome.value
    })

  /** The tool for a checked definition. */
  const build = Effect.fnUntraced(function* (definition: Definition) {
    if (definition.inputSchema.type !== "object") {
      return yield* new Invalid({ message: `${definition.name}: inputSchema must have "type": "object" at its root` })
    }
    const validate = yield* compile(definition.inputSchema, `${definition.name}: inputSchema`)
    const checkOutput =
      definition.outputSchema === undefined ? () => undefined : yield* compile(definition.outputSchema, `${definition.name}: outputSchema`)
    const shipped = ShippedTools.BY_NAME.get(definition.name)
    const projected = shipped !== undefined && shipped.inputSchema === definition.inputSchema ? shipped : undefined
    const entry: Entry = {
      definition,
      checkOutput,
      tool: Described.make<unknown>({
        description: definition.description,
        inputSchema: ProviderDialect.canonical(definition.inputSchema as JsonSchema.JsonSchema),
        ...(definition.outputSchema === undefined
          ? {}
          : { outputSchema: ProviderDialect.canonical(definition.outputSchema as JsonSchema.JsonSchema) }),
        ...(definition.annotations === undefined ? {} : { annotations: definition.annotations }),
        validate,
        execute: (input, context) => delegate(entry, input, context),
        toModelOutput: ({ input, output }) => {
          if (projected !== undefined) return [{ type: "text", text: projected.toModelOutput(input, output) }]
          return typeof output === "string" ? [{ type: "text", text: output }] : []
        },
        structured: (output) => output,
      }),
    }
    return entry
  })

  const check = Effect.fnUntraced(function* (registration: Registration) {
    const definitions: Array<Definition> = []
    for (const name of registration.enable ?? []) {
      const shipped = ShippedTools.BY_NAME.get(name)
      if (shipped === undefined) {
        return yield* new Invalid({ message: `enable: "${name}" is not a shipped host tool; shipped: ${ShippedTools.NAMES.join(", ")}` })
      }
      const { toModelOutput: _, ...definition } = shipped
      definitions.push(definition)
    }
    definitions.push(...(registration.tools ?? []))
    if (definitions.length === 0) return yield* new Invalid({ message: "Nothing to register: give enable, tools or both" })
    const seen = new Set<string>()
    for (const definition of definitions) {
      const problem = ToolName.problem(definition.name)
      if (problem !== undefined) return yield* new Invalid({ message: `"${definition.name}" is not a valid tool name: ${problem}` })
      if (seen.has(definition.name)) return yield* new Invalid({ message: `"${definition.name}" is given twice` })
      seen.add(definition.name)
    }
    return yield* Effect.forEach(definitions, build)
  })

  /** The host tool of `name` registered in the target, in a fresh scope; the previous one removed. */
  const install = (current: Target, entry: Entry) =>
    Effect.gen(function* () {
      const name = entry.definition.name
      const previous = scopes.get(name)
      if (previous !== undefined) yield* Scope.close(previous, Exit.void)
      const scope = yield* Scope.fork(current.scope)
      scopes.set(name, scope)
      yield* Scope.provide(current.tools.register({ [name]: entry.tool }), scope).pipe(Effect.orDie)
    })

  /** Whether the target resolves `name` to a tool that is not a host tool. */
  const takenIn = (current: Target, name: string): boolean => {
    const found = current.find(name)
    return found !== undefined && found !== entries.get(name)?.tool
  }

  const register: Interface["register"] = (registration) =>
    Effect.gen(function* () {
      const checked = yield* check(registration)
      const current = target
      if (current !== undefined) {
        const taken = checked.find((entry) => takenIn(current, entry.definition.name))
        if (taken !== undefined) {
          const name = taken.definition.name
          return yield* new Taken({
            name,
            message: `"${name}" is already a tool of this Location (built-in, tool file, plugin or MCP server); choose another name`,
          })
        }
      }
      for (const entry of checked) {
        entries.set(entry.definition.name, entry)
        if (current !== undefined) yield* install(current, entry)
      }
      return list()
    })

  const remove: Interface["remove"] = (name) =>
    Effect.gen(function* () {
      if (!entries.delete(name)) {
        return yield* new Unknown({ message: `No host tool "${name}" is registered in this Location` })
      }
      const scope = scopes.get(name)
      scopes.delete(name)
      if (scope !== undefined) yield* Scope.close(scope, Exit.void)
    })

  const list = () => [...entries.values()].map((entry) => entry.definition)

  const answer: Interface["answer"] = (id, given) =>
    Effect.suspend((): Effect.Effect<void, Invalid | Unknown | Finished> => {
      const waited = waiting.get(id)
      if (waited === undefined) {
        const reason = finished.get(id)
        if (reason === undefined) return Effect.fail(new Unknown({ message: `No delegated call ${id} is waiting in this Location` }))
        const why = { answered: "was answered already", cancelled: "was cancelled", timed_out: "timed out" }[reason]
        return Effect.fail(new Finished({ id, reason, message: `The delegated call ${id} ${why}; this answer is not taken` }))
      }
      if ((given.output === undefined) === (given.error === undefined)) {
        return Effect.fail(new Invalid({ message: "Give exactly one of output and error" }))
      }
      let outcome: Outcome
      if (given.error !== undefined) outcome = { _tag: "error", message: given.error.message }
      else {
        const problem = waited.entry.checkOutput(given.output)
        if (problem !== undefined) {
          return Effect.fail(
            new Invalid({
              message: `The output does not match ${waited.call.name}'s output schema (${problem}); the call still waits for a valid answer`,
            }),
          )
        }
        outcome = { _tag: "output", value: given.output }
      }
      finish(id, waited, "answered")
      return Deferred.succeed(waited.done, outcome).pipe(Effect.asVoid)
    })

  const attach: Interface["attach"] = (next) =>
    Effect.gen(function* () {
      target = next
      scopes.clear()
      const left: Array<string> = []
      for (const entry of entries.values()) {
        if (takenIn(next, entry.definition.name)) left.push(entry.definition.name)
        else yield* install(next, entry)
      }
      return left
    })

  return {
    register,
    remove,
    list,
    pending: () => [...waiting.values()].map((waited) => waited.call),
    answer,
    attach,
  }
}
