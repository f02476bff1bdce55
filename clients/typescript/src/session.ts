// A host's conversation with core: one session id, one agent, and the turn its model steps settle through. The
// turn is materialized again, before the next model step asks for definitions, once it is outdated: core said the
// tools changed (`tools.changed` on the events stream), a call came back `stale`, or core no longer knows the turn
// (404: it expired, or core.json changed). A call whose turn is gone is posted again through a fresh turn, with the
// same ids, only when that turn advertises the tool exactly as the model saw it.

import type { CallOptions, Core, EventStream, MaterializeOptions } from "./client.js"
import { CoreError } from "./error.js"
import type { Check, Definition, Settlement, Turn } from "./types.js"

export interface SessionOptions extends MaterializeOptions {
  /** The session's id (default: a fresh one). Calls are identified by it and their tool call ids. */
  readonly sessionID?: string
  /** Follow the Location's events to learn when tools change (default true); without, every stale call or 404 still re-materializes. */
  readonly watch?: boolean
  /** Runs when core says the tools changed (the next step gets a fresh turn). */
  readonly onToolsChanged?: () => void
}

export interface SessionCall {
  readonly name: string
  readonly input: unknown
  /** The model's id for the call (default: a fresh one). Posting the same id again never runs the tool twice. */
  readonly toolCallID?: string
  /** The assistant message that made the call (default: a fresh id). */
  readonly assistantMessageID?: string
}

const freshID = (prefix: string): string => `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`

export class Session {
  readonly id: string
  private current: Promise<Turn> | undefined
  /** The turn `current` resolved to, once it has. */
  private latest: Turn | undefined
  private outdated = true
  private readonly watcher = new AbortController()
  private watching: Promise<void> | undefined
  /** The events stream ended: no change can be seen coming. */
  private blind = false

  constructor(
    readonly core: Core,
    private readonly options: SessionOptions = {},
  ) {
    this.id = options.sessionID ?? freshID("ses")
  }

  /** The provider mapping the session's turns are materialized for; undefined: core's own definitions. */
  get provider(): string | undefined {
    return this.options.provider
  }

  /** The turn to settle through, materialized again first when it is outdated. */
  async turn(): Promise<Turn> {
    if (this.outdated || this.blind || this.current === undefined) {
      this.outdated = false
      const materializing = this.watch().then(() => this.core.materialize(this.options))
      this.current = materializing
      materializing.then((turn) => {
        if (this.current === materializing) this.latest = turn
      }, () => undefined)
      // A turn that failed to materialize is tried again on the next step.
      materializing.catch(() => {
        if (this.current === materializing) this.outdated = true
      })
    }
    return this.current
  }

  /** The definitions to offer the model for its next step. */
  async definitions(): Promise<ReadonlyArray<Definition>> {
    return (await this.turn()).definitions
  }

  /** Whether the next step gets a fresh turn. */
  get isOutdated(): boolean {
    return this.outdated || this.blind || this.current === undefined
  }

  /** Marks the turn outdated: the next `turn()` materializes again. */
  invalidate(): void {
    this.outdated = true
  }

  /**
   * Settles one call of the model through the turn the model last saw, never a fresher one: a tool that changed
   * since is settled `stale` (nothing runs) and the next step gets the new definitions.
   */
  async call(call: SessionCall, options: CallOptions = {}): Promise<Settlement> {
    const turn = await this.seen()
    const request = {
      sessionID: this.id,
      assistantMessageID: call.assistantMessageID ?? freshID("msg"),
      toolCallID: call.toolCallID ?? freshID("call"),
      name: call.name,
      input: call.input,
    }
    try {
      const settlement = await this.core.settle(turn.turnID, request, options)
      if (settlement.error?.kind === "stale") this.invalidate()
      return settlement
    } catch (error) {
      if (!(error instanceof CoreError && error.status === 404)) throw error
      // The turn is gone and nothing was recorded for the call: a fresh turn may settle it if the tool is unchanged.
      if (this.current !== undefined && (await this.current.catch(() => undefined))?.turnID === turn.turnID) this.invalidate()
      const fresh = await this.turn()
      const before = turn.definitions.find((definition) => definition.name === call.name)
      const now = fresh.definitions.find((definition) => definition.name === call.name)
      if (before === undefined || now === undefined || JSON.stringify(before) !== JSON.stringify(now)) {
        throw new CoreError(
          404,
          "not_found",
          `The turn the model saw is gone and "${call.name}" is no longer offered as it was; nothing ran. ` +
            `Offer the model the current definitions and let it call again.`,
        )
      }
      return this.core.settle(fresh.turnID, request, options)
    }
  }

  /** What core would decide about a call, running nothing. */
  async check(name: string, input: unknown): Promise<Check> {
    const turn = await this.seen()
    const agent = this.options.agent === undefined ? {} : { agent: this.options.agent }
    return this.core.check(turn.turnID, { name, input, ...agent })
  }

  /** The turn last handed out, or a first one. */
  private async seen(): Promise<Turn> {
    if (this.latest !== undefined) return this.latest
    const current = this.current === undefined ? undefined : await this.current.catch(() => undefined)
    return current ?? this.turn()
  }

  /** Stops following events. */
  close(): void {
    this.watcher.abort()
  }

  /** Subscribes to the Location's events once, before the first turn, so no change after it is missed. */
  private watch(): Promise<void> {
    if (this.options.watch === false) return Promise.resolve()
    this.watching ??= this.core.events({ signal: this.watcher.signal }).then(
      (events) => {
        void this.follow(events)
      },
      () => {
        this.blind = true
      },
    )
    return this.watching
  }

  private async follow(events: EventStream): Promise<void> {
    try {
      for await (const event of events) {
        if (event.event !== "tools.changed") continue
        this.outdated = true
        this.options.onToolsChanged?.()
      }
    } catch {
      // The stream is gone either way.
    }
    // Nothing says any more when tools change: from now on every step materializes afresh.
    if (!this.watcher.signal.aborted) this.blind = true
  }
}
