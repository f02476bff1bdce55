// What `@core/tool/testing`'s helpers share: the shapes they answer (settlements, definitions, traces), the errors
// they throw, the options they take, and the in-memory kernel they settle on for a Location, permissions and limits
// as the options set them. `testing.ts` names the public surface; nothing here reads core.json or $CORE_HOME.

import { realpathSync, statSync } from "node:fs"
import { resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Kernel } from "../host/kernel"
import type { Output } from "../output/output"
import type { Agent } from "../permission/agent"
import { Permission } from "../permission/permission"
import type { Rule as PermissionRule } from "../permission/rule"
import type { Settlement as SettlementInfo } from "../contract/settlement"
import type { Settler } from "../settlement/settler"
import { Approvals } from "../store/approvals"
import { Store } from "../store/store"
import type { Definition as ToolDefinition } from "../tool/definition"
import type { Tool } from "../tool/tool"

/** The settlement JSON, exactly as `core exec` prints it (DESIGN §5). */
export type Settlement = SettlementInfo.Info

/** What a model is offered for a tool registered under a name: description and JSON Schemas. */
export type Definition = ToolDefinition.Definition

/** A progress update a tool reported through `context.progress`. */
export type Progress = Tool.Progress

/** A permission rule: `*` and `?` wildcards over the whole action and resource; the last match wins. */
export type Rule = PermissionRule.Rule

/** How a permission ask is answered: approve once, approve and save, or reject (with a message for the model). */
export type Reply = "once" | "always" | { readonly reject: string | undefined }

/** A permission ask as the reply function sees it. */
export interface Ask {
  readonly action: string
  readonly resources: ReadonlyArray<string>
}

export interface PermissionOptions {
  /** Rules applied after core's defaults (everything allowed, paths outside the Location asked). */
  readonly rules?: ReadonlyArray<Rule>
  /**
   * How asks are answered: one reply for every ask, or a function answering each (a person taking their time:
   * the call waits until its promise settles). Without it an ask is declined, as `core exec` does without a
   * terminal.
   */
  readonly reply?: Reply | ((ask: Ask) => Reply | Promise<Reply>)
}

export interface Options {
  /** The name the tool is registered and called under (default "tool"; `settleFile` needs one). */
  readonly name?: string
  /** The calling agent, whose rules apply (default "build"; "plan" may not edit). */
  readonly agent?: string
  readonly sessionID?: string
  readonly assistantMessageID?: string
  readonly toolCallID?: string
  /** The Location directory (default: a fresh temp directory; for `settleFile`, the folder above `tools/`). */
  readonly location?: string
  readonly permission?: PermissionOptions
  /**
   * What the model may see of one output before it is bounded (default 2,000 lines, 51,200 bytes), and what an
   * image may be before it is resized (default 5 MiB, 2000 px on the long side; core.json `output.image`).
   */
  readonly limits?: {
    readonly maxLines?: number
    readonly maxBytes?: number
    readonly image?: { readonly maxBytes?: number; readonly maxDimension?: number }
  }
  /** Called with each progress update while the tool runs. */
  readonly onProgress?: (update: Progress) => void
  /**
   * Cancels the call when aborted, as SIGINT does for `core exec`: a running tool is interrupted (its processes
   * killed), and the call settles `cancelled`, also while it waits for a permission reply.
   */
  readonly signal?: AbortSignal
}

/** A settlement with what happened around it. */
export interface Trace {
  readonly settlement: Settlement
  /** The progress updates, in order. */
  readonly progress: ReadonlyArray<Progress>
  /** The permission asks the call raised (answered by `permission.reply`). */
  readonly asks: ReadonlyArray<{ readonly action: string; readonly resources: ReadonlyArray<string> }>
  /** The full text of each managed output of the settlement, by id (what `core output ID` prints). */
  readonly outputs: Readonly<Record<string, string>>
  /**
   * The full structured value each managed output holds when the settlement had to drop it (`structured: null`),
   * by id (what `core output ID --structured` prints).
   */
  readonly structured: Readonly<Record<string, unknown>>
}

/** A tool that could not be registered under a name (an invalid name, a value not made by `Tool.make`). */
export class CheckError extends Schema.TaggedError<CheckError>()("Testing.CheckError", {
  name: Schema.String,
  message: Schema.String,
}) {}

/**
 * A tool file that `core` would report as a diagnostic instead of loading, with what `core tools` says: the file,
 * the reason (an install hint for a missing package) and, for a syntax error, its `position` (1-based line and
 * column).
 */
export class LoadError extends Schema.TaggedError<LoadError>()("Testing.LoadError", {
  file: Schema.String,
  message: Schema.String,
  position: Schema.optionalKey(Schema.Struct({ line: Schema.Int, column: Schema.Int })),
}) {}

/** Options that `core exec` would refuse as a usage error (an unknown agent, a missing Location). */
export class OptionsError extends Schema.TaggedError<OptionsError>()("Testing.OptionsError", {
  message: Schema.String,
}) {}

/**
 * The call ended in an operational failure: a defect (a throw, `Effect.die`), an error other than
 * `Tool.Failure`, or an output that could not be kept. Never a tool result: `core exec` exits 3.
 */
export class OperationalFailure extends Schema.TaggedError<OperationalFailure>()("Testing.OperationalFailure", {
  tool: Schema.String,
  message: Schema.String,
  cause: Schema.Defect(),
}) {}


export const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

/** A reply as the permission service takes it; none given means nobody is there to answer. */
const replyOf = (reply: Reply | undefined): Permission.Reply => {
  if (reply === "once" || reply === "always") return { reply }
  // No reply given: nobody is there to answer, as with core exec without a terminal.
  if (reply === undefined) return { reply: "reject", unattended: true }
  const message = reply.reject
  return message === undefined ? { reply: "reject" } : { reply: "reject", message }
}

/**
 * Answers the asks of `permission` as they come, for as long as the scope lasts (declined without a reply, as
 * `core exec` does), recording each in `asks`.
 */
export const answerAsks = (
  permission: Permission.Interface,
  reply: PermissionOptions["reply"],
  asks: Array<Ask>,
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function* () {
    const events = yield* permission.subscribe
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") return
          const ask = { action: event.request.action, resources: event.request.resources }
          asks.push(ask)
          const answer = typeof reply === "function" ? yield* Effect.promise(async () => reply(ask)) : reply
          yield* permission.reply(event.request.id, replyOf(answer)).pipe(Effect.ignore)
        }),
      ),
    )
  })

/** The real path of a Location directory, or OptionsError. */
export const locationOf = (path: string): string => {
  const absolute = resolve(path)
  let isDirectory = false
  try {
    isDirectory = statSync(absolute).isDirectory()
  } catch {
    throw new OptionsError({ message: `location ${absolute} does not exist` })
  }
  if (!isDirectory) throw new OptionsError({ message: `location ${absolute} is not a directory` })
  return realpathSync(absolute)
}

/** A call's ids: the options' own, else fresh ones. */
export const callOf = (
  agent: string,
  name: string,
  input: unknown,
  ids: Pick<Options, "sessionID" | "assistantMessageID" | "toolCallID">,
): Settler.Call => ({
  sessionID: ids.sessionID ?? `ses_${crypto.randomUUID()}`,
  agent,
  assistantMessageID: ids.assistantMessageID ?? `msg_${crypto.randomUUID()}`,
  toolCallID: ids.toolCallID ?? `call_${crypto.randomUUID()}`,
  name,
  input,
})

/** The kernel a test settles on: an in-memory store, outputs in `outputsDirectory`, the options' rules and limits. */
export const kernelLayer = (
  location: string,
  outputsDirectory: string,
  options: Pick<Options, "permission" | "limits">,
) => {
  const rules = (options.permission?.rules ?? []).map(
    (rule, index): Agent.SourcedRule => ({
      action: rule.action,
      resource: rule.resource,
      effect: rule.effect,
      source: { file: "@core/tool/testing", path: `permission.rules[${index}]` },
    }),
  )
  const permission = Permission.layer({
    project: location,
    configured: { rules, agents: new Map() },
    readableRoots: [outputsDirectory],
  }).pipe(Layer.provide(Approvals.layerMemory))
  const limits: Output.Settings = {
    ...(options.limits?.maxLines === undefined ? {} : { maxLines: options.limits.maxLines }),
    ...(options.limits?.maxBytes === undefined ? {} : { maxBytes: options.limits.maxBytes }),
    ...(options.limits?.image === undefined ? {} : { image: options.limits.image }),
  }
  return Kernel.layer({ store: Store.layerMemory, outputsDirectory, limits, permission })
}
