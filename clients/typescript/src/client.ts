// A client of core's HTTP sidecar (docs/serve.md): spawn `core serve` and read its ready line, or connect to a
// running one; then turns, calls (JSON, or server-sent events with progress, asks and cancellation), checks,
// settlements, asks, events and managed outputs. Calls that lose their connection are posted again with the same
// ids, which core answers by joining the running call or replaying its record, so a call never runs twice.
// Nothing here depends on a runtime but `fetch`; spawning needs `node:child_process` (Node, Bun, Deno).

import { CoreError } from "./error.js"
import { Session, type SessionOptions } from "./session.js"
import * as Sse from "./sse.js"
import type {
  RecordedCall,
  CallEvent,
  Check,
  PermissionRequest,
  Progress,
  Reply,
  ServerEvent,
  Settlement,
  Todos,
  Turn,
  HostCall,
  HostCallResult,
  HostToolDefinition,
  HostToolsRequest,
} from "./types.js"

/** How many times a request that got no answer (a refused or reset connection) is sent again. */
export const DEFAULT_RETRIES = 3
const RETRY_DELAY_MS = 25

export interface ConnectOptions {
  /** The `url` of the ready line, e.g. `http://127.0.0.1:41237`. */
  readonly url: string
  /** The `token` of the ready line. */
  readonly token: string
  /** Another Location to act on (`X-Core-Location`): an absolute directory under an allowed root. */
  readonly location?: string
  /** Resends of a request that got no answer (default 3). */
  readonly retries?: number
  /** The longest event-stream line or event read, in characters (default 64 Mi): longer fails the call. */
  readonly maxLineLength?: number
}

export interface SpawnOptions {
  /** The executable, or the command line that starts it (default `core`). */
  readonly command?: string | ReadonlyArray<string>
  /** The served Location (default: the current directory). */
  readonly location?: string
  /** Further roots under which requests may name other Locations. */
  readonly allowRoots?: ReadonlyArray<string>
  /** The child's environment (default: this process's). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Where the child's stderr (its log) goes (default `inherit`). */
  readonly stderr?: "inherit" | "ignore"
  readonly retries?: number
  /** The longest event-stream line or event read, in characters (default 64 Mi): longer fails the call. */
  readonly maxLineLength?: number
}

/** One call of the model, as core settles it. */
export interface CallRequest {
  readonly sessionID: string
  readonly assistantMessageID: string
  readonly toolCallID: string
  readonly name: string
  readonly input: unknown
}

export interface CallOptions {
  /**
   * Aborting cancels the call on core; the call then resolves with the settlement core records (`cancelled`, unless
   * it finished first). A signal aborted before the call fails it with the signal's reason and sends nothing.
   */
  readonly signal?: AbortSignal
  /** Answers an ask of this call while it waits; `undefined` leaves it pending for someone else to answer. */
  readonly onAsk?: (ask: PermissionRequest) => Reply | undefined | Promise<Reply | undefined>
  readonly onProgress?: (progress: Progress) => void
  /**
   * Performs a call of a host tool (`registerHostTools`) that this call made: its answer is sent as the call's
   * result (a throw sends its message as the failure the model reads); `undefined` leaves it for someone else.
   */
  readonly onHostCall?: (call: HostCall) => HostCallResult | undefined | Promise<HostCallResult | undefined>
  /** Stream the call's events (default: when a signal or a callback is given) or wait for its JSON answer. */
  readonly stream?: boolean
}

export interface OutputRange {
  /** The first byte (0-based). */
  readonly start?: number
  /** The last byte, inclusive (default: the end). */
  readonly end?: number
  /** Instead of start and end: the last `suffix` bytes. */
  readonly suffix?: number
}

export interface OutputRead {
  readonly bytes: Uint8Array
  /** The bytes as UTF-8 (a range may cut a character in two: then it holds U+FFFD). */
  readonly text: string
  /** The first and last byte served, and the output's whole size. */
  readonly start: number
  readonly end: number
  readonly size: number
}

export interface MaterializeOptions {
  readonly agent?: string
  /** A provider mapping (`openai`, `openai-strict`, `anthropic`, `gemini`): definitions in that provider's shape. */
  readonly provider?: string
}

/** The Location's events, as they happen. */
export interface EventStream extends AsyncIterable<ServerEvent> {
  /** Ends the subscription. */
  readonly close: () => void
}

interface Child {
  readonly exited: Promise<number | null>
  readonly kill: (signal: NodeJS.Signals) => void
}

interface Connection {
  readonly url: string
  readonly token: string
  readonly retries: number
  readonly maxLineLength?: number
  readonly child?: Child
}

/** An error of the host's own callback, thrown through the retry loop untouched: it is no lost connection. */
class HostError {
  constructor(readonly error: unknown) {}
}

const host = <A extends ReadonlyArray<unknown>>(callback: (...args: A) => unknown) => (...args: A): void => {
  try {
    callback(...args)
  } catch (error) {
    throw new HostError(error)
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A 404 met by a request sent again: what the first sending did (an ask answered, a call cancelled, a tool removed). */
const notFound = (error: CoreError): boolean => error.status === 404

/** Whether a URL path can name `id`: "." and ".." are read as steps, however escaped (core takes neither as an id). */
const nameable = (id: string): boolean => id !== "." && id !== ".."

const errorOf = async (response: Response): Promise<CoreError> => {
  const text = await response.text().catch(() => "")
  try {
    const { error } = JSON.parse(text) as { error: { kind: string; message: string } }
    return new CoreError(response.status, error.kind, error.message)
  } catch {
    return new CoreError(response.status, "unknown", text || response.statusText)
  }
}

/** A connection to one core sidecar, acting on one Location. */
export class Core {
  private constructor(
    private readonly connection: Connection,
    /** The Location requests act on; undefined: the serve's `--location`. */
    readonly location: string | undefined,
  ) {}

  /** A client of a running `core serve`. */
  static connect(options: ConnectOptions): Core {
    return new Core(
      {
        url: options.url.replace(/\/+$/, ""),
        token: options.token,
        retries: options.retries ?? DEFAULT_RETRIES,
        ...(options.maxLineLength === undefined ? {} : { maxLineLength: options.maxLineLength }),
      },
      options.location,
    )
  }

  /** Starts `core serve` on a free loopback port and connects once its ready line is printed. */
  static async spawn(options: SpawnOptions = {}): Promise<Core> {
    const { spawn } = await import("node:child_process")
    const [command, ...prefix] = typeof options.command === "string" ? [options.command] : (options.command ?? ["core"])
    const args = [...prefix, "serve", ...(options.location === undefined ? [] : ["--location", options.location])]
    for (const root of options.allowRoots ?? []) args.push("--allow-root", root)
    const child = spawn(command!, args, {
      env: { ...(options.env ?? process.env) },
      stdio: ["ignore", "pipe", options.stderr ?? "inherit"],
    })
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const spawned = new Promise<never>((_, reject) => child.once("error", reject))
    const ready = new Promise<{ url: string; token: string }>((resolve, reject) => {
      let text = ""
      const onData = (chunk: Buffer) => {
        text += chunk.toString("utf8")
        const end = text.indexOf("\n")
        if (end === -1) return
        child.stdout!.off("data", onData)
        // Nothing else is ever printed on stdout; keep it drained all the same.
        child.stdout!.resume()
        try {
          resolve(JSON.parse(text.slice(0, end)))
        } catch {
          reject(new Error(`core serve printed a ready line that is not JSON: ${text.slice(0, end)}`))
        }
      }
      child.stdout!.on("data", onData)
      void exited.then((code) => reject(new Error(`core serve exited (code ${code}) before it was ready`)))
    })
    const line = await Promise.race([ready, spawned]).catch((error) => {
      child.kill("SIGKILL")
      throw error
    })
    return new Core(
      {
        url: line.url,
        token: line.token,
        retries: options.retries ?? DEFAULT_RETRIES,
        ...(options.maxLineLength === undefined ? {} : { maxLineLength: options.maxLineLength }),
        child: { exited, kill: (signal) => child.kill(signal) },
      },
      undefined,
    )
  }

  get url(): string {
    return this.connection.url
  }

  get token(): string {
    return this.connection.token
  }

  /** A session: calls under one session id, through a turn kept current between model steps. */
  session(options: SessionOptions = {}): Session {
    return new Session(this, options)
  }

  /** The same sidecar, acting on another Location. */
  at(location: string): Core {
    return new Core(this.connection, location)
  }

  /**
   * Stops a sidecar this client spawned (SIGTERM: running calls are cancelled and recorded) and waits for it to
   * exit; nothing for one it connected to.
   */
  async close(): Promise<void> {
    const child = this.connection.child
    if (child === undefined) return
    child.kill("SIGTERM")
    await child.exited
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      authorization: `Bearer ${this.connection.token}`,
      "content-type": "application/json",
      ...(this.location === undefined ? {} : { "x-core-location": this.location }),
      ...extra,
    }
  }

  /**
   * Sends a request, again (up to the retries) while no answer comes back; answers the response when it is a
   * success, else fails with core's error. `read` consumes the body inside the retry, so a body cut short is
   * retried too. A request that does something once (a reply, a cancel) sent again may meet the refusal its first
   * sending earned, done meanwhile (a 404: no such ask any more): where `done` says an error is that, it is the
   * answer (undefined) rather than a failure.
   */
  private async send<A>(
    method: string,
    path: string,
    read: (response: Response) => Promise<A>,
    options: {
      readonly body?: unknown
      readonly headers?: Record<string, string>
      readonly signal?: AbortSignal
      readonly done?: (error: CoreError) => boolean
    } = {},
  ): Promise<A> {
    for (let attempt = 0; ; attempt++) {
      let response: Response
      try {
        response = await fetch(`${this.connection.url}${path}`, {
          method,
          headers: this.headers(options.headers),
          ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        })
      } catch (error) {
        if (options.signal?.aborted || attempt >= this.connection.retries) throw error
        await delay(RETRY_DELAY_MS * 2 ** attempt)
        continue
      }
      if (!response.ok) {
        const error = await errorOf(response)
        if (attempt > 0 && options.done?.(error) === true) return undefined as A
        throw error
      }
      try {
        return await read(response)
      } catch (error) {
        if (error instanceof HostError) throw error.error
        if (error instanceof CoreError || options.signal?.aborted || attempt >= this.connection.retries) throw error
        await delay(RETRY_DELAY_MS * 2 ** attempt)
      }
    }
  }

  private json<A>(method: string, path: string, body?: unknown, done?: (error: CoreError) => boolean): Promise<A> {
    return this.send(method, path, (response) => response.json() as Promise<A>, {
      ...(body === undefined ? {} : { body }),
      ...(done === undefined ? {} : { done }),
    })
  }

  async health(): Promise<{ readonly ok: true; readonly version: string }> {
    return this.json("GET", "/v1/health")
  }

  /** Materializes the catalog for an agent: the definitions to offer the model and the turn to settle through. */
  async materialize(options: MaterializeOptions = {}): Promise<Turn> {
    const body: Record<string, string> = {}
    if (options.agent !== undefined) body.agent = options.agent
    if (options.provider !== undefined) body.provider = options.provider
    return this.json("POST", "/v1/turns", body)
  }

  /**
   * Settles one call through a turn. An unknown or expired turn fails with a CoreError of status 404 (materialize
   * again); a settlement of any status (success, error, declined, cancelled) is the answer.
   */
  async settle(turnID: string, call: CallRequest, options: CallOptions = {}): Promise<Settlement> {
    const path = `/v1/turns/${encodeURIComponent(turnID)}/calls`
    const stream = options.stream ?? (options.signal !== undefined || options.onAsk !== undefined || options.onProgress !== undefined || options.onHostCall !== undefined)
    if (!stream) return this.json("POST", path, call)
    options.signal?.throwIfAborted()
    return this.settleStreaming(path, call, options)
  }

  private async settleStreaming(path: string, call: CallRequest, options: CallOptions): Promise<Settlement> {
    const answered = new Set<string>()
    let askFailure: { error: unknown } | undefined
    let done = false
    // The call runs on core once its stream has answered: a cancel sent before then could miss it.
    let markStarted!: () => void
    const started = new Promise<void>((resolve) => (markStarted = resolve))
    const onAbort = () => {
      void started.then(() => (done ? undefined : this.cancel(call.sessionID, call.toolCallID).catch(() => false)))
    }
    options.signal?.addEventListener("abort", onAbort, { once: true })
    const answer = async (ask: PermissionRequest) => {
      let reply: Reply | undefined
      try {
        reply = await options.onAsk!(ask)
      } catch (error) {
        askFailure ??= { error }
        reply = "reject"
      }
      // Answered elsewhere meanwhile (404) is fine: the call goes on either way.
      if (reply !== undefined) await this.reply(ask.id, reply).catch(() => undefined)
    }
    const perform = async (hostCall: HostCall) => {
      let result: HostCallResult | undefined
      try {
        result = await options.onHostCall!(hostCall)
      } catch (error) {
        result = { error: { message: error instanceof Error ? error.message : String(error) } }
      }
      // Answered, cancelled or timed out meanwhile (404, 409) is fine: the call settles either way.
      if (result !== undefined) await this.answerHostCall(hostCall.id, result).catch(() => undefined)
    }
    try {
      const settlement = await this.send(
        "POST",
        path,
        async (response) => {
          markStarted()
          // The stream ends right after its last event: reading it to the end (rather than cancelling the body)
          // keeps the connection alive for the next request.
          let final: Settlement | CoreError | undefined
          // Each event handled as it is read, not through an async iterator (which takes promise ticks per event).
          await Sse.each(response.body!, (message) => {
            const event = { event: message.event, data: JSON.parse(message.data) } as CallEvent
            switch (event.event) {
              case "progress":
                if (options.onProgress !== undefined) host(options.onProgress)(event.data)
                break
              case "permission":
                if (options.onAsk !== undefined && !answered.has(event.data.id)) {
                  answered.add(event.data.id)
                  void answer(event.data)
                }
                break
              case "host_call":
                if (options.onHostCall !== undefined && !answered.has(event.data.id)) {
                  answered.add(event.data.id)
                  void perform(event.data)
                }
                break
              case "settlement":
                final = event.data
                break
              case "error":
                final = new CoreError(500, event.data.error.kind, event.data.error.message)
                break
            }
          }, undefined, this.connection.maxLineLength)
          if (final instanceof CoreError) throw final
          if (final !== undefined) return final
          // The stream ended without its last event: the connection was cut. Posting again joins the call.
          throw new Error(`the event stream of ${call.toolCallID} ended before its settlement`)
        },
        { body: call, headers: { accept: "text/event-stream" } },
      )
      if (askFailure !== undefined) throw askFailure.error
      return settlement
    } finally {
      done = true
      markStarted()
      options.signal?.removeEventListener("abort", onAbort)
    }
  }

  /** What core would decide about a call through a turn, running, asking and recording nothing. */
  async check(turnID: string, request: { readonly name: string; readonly input: unknown; readonly agent?: string }): Promise<Check> {
    return this.json("POST", `/v1/turns/${encodeURIComponent(turnID)}/check`, request)
  }

  /** The recorded settlement of a call, or undefined when none is recorded (yet). */
  async settlement(sessionID: string, toolCallID: string): Promise<Settlement | undefined> {
    // No call has such ids (core refuses them), and a path cannot name them: "/.." is read as a step up.
    if (!nameable(sessionID) || !nameable(toolCallID)) return undefined
    try {
      return await this.json("GET", `/v1/settlements/${encodeURIComponent(sessionID)}/${encodeURIComponent(toolCallID)}`)
    } catch (error) {
      if (error instanceof CoreError && error.status === 404) return undefined
      throw error
    }
  }

  /** A session's todo list in this Location, as its last todowrite wrote it (empty when none). */
  async todos(sessionID: string): Promise<Todos> {
    if (!nameable(sessionID)) return { sessionID, todos: [] }
    return this.json("GET", `/v1/sessions/${encodeURIComponent(sessionID)}/todos`)
  }

  /**
   * The calls recorded in the Location, oldest first: of one session, received since a time (an ISO time or a
   * duration back from now: `10m`, `2h`, `7d`), at most the newest `limit` (default 100).
   */
  async calls(
    options: { readonly sessionID?: string; readonly since?: string; readonly limit?: number } = {},
  ): Promise<ReadonlyArray<RecordedCall>> {
    const query = new URLSearchParams()
    if (options.sessionID !== undefined) query.set("sessionID", options.sessionID)
    if (options.since !== undefined) query.set("since", options.since)
    if (options.limit !== undefined) query.set("limit", String(options.limit))
    const search = query.toString()
    return this.json("GET", `/v1/settlements${search === "" ? "" : `?${search}`}`)
  }

  /** Interrupts a running call (it settles `cancelled`); false when no such call is running. */
  async cancel(sessionID: string, toolCallID: string): Promise<boolean> {
    if (!nameable(sessionID) || !nameable(toolCallID)) return false
    try {
      await this.json("POST", `/v1/calls/${encodeURIComponent(sessionID)}/${encodeURIComponent(toolCallID)}/cancel`, undefined, notFound)
      return true
    } catch (error) {
      if (error instanceof CoreError && error.status === 404) return false
      throw error
    }
  }

  /** The Location's pending asks. */
  async permissions(): Promise<ReadonlyArray<PermissionRequest>> {
    return this.json("GET", "/v1/permissions")
  }

  /**
   * Answers an ask; fails with a 404 CoreError when it is unknown or already answered (but for the answer of this
   * reply itself lost and sent again: then the 404 is its own doing).
   */
  async reply(id: string, reply: Reply): Promise<void> {
    await this.json("POST", `/v1/permissions/${encodeURIComponent(id)}/reply`, typeof reply === "string" ? { reply } : reply, notFound)
  }

  /**
   * Registers tools this host performs itself: shipped ones by name (`enable: ["question", "task"]`) and its own
   * definitions; answers every host tool of the Location. A bad definition fails with a 400 CoreError, a name the
   * Location's own tools hold with a 409.
   */
  async registerHostTools(request: HostToolsRequest): Promise<ReadonlyArray<HostToolDefinition>> {
    return this.json("POST", "/v1/host-tools", request)
  }

  /** The host tools of the Location. */
  async hostTools(): Promise<ReadonlyArray<HostToolDefinition>> {
    return this.json("GET", "/v1/host-tools")
  }

  /** Removes a host tool; false when there was none of that name. */
  async removeHostTool(name: string): Promise<boolean> {
    try {
      await this.json("DELETE", `/v1/host-tools/${encodeURIComponent(name)}`, undefined, notFound)
      return true
    } catch (error) {
      if (error instanceof CoreError && error.status === 404) return false
      throw error
    }
  }

  /** The delegated calls waiting for this host's answer (after a reconnect, say). */
  async hostCalls(): Promise<ReadonlyArray<HostCall>> {
    return this.json("GET", "/v1/host-calls")
  }

  /**
   * Answers a delegated call with its output or a failure. An output that does not match the tool's output schema
   * fails with a 400 CoreError (the call goes on waiting); a call answered, cancelled or timed out with a 409.
   */
  async answerHostCall(id: string, result: HostCallResult): Promise<void> {
    await this.json("POST", `/v1/host-calls/${encodeURIComponent(id)}/result`, result, (error) => error.status === 409)
  }

  /**
   * Subscribes to the Location's events: resolves once the subscription is in place, so everything that happens
   * after is seen. Iterate the answer; `close()` (or `signal`) ends it.
   */
  async events(options: { readonly signal?: AbortSignal } = {}): Promise<EventStream> {
    const controller = new AbortController()
    const signal = options.signal === undefined ? controller.signal : AbortSignal.any([options.signal, controller.signal])
    const maxLineLength = this.connection.maxLineLength
    const response = await this.send("GET", "/v1/events", async (response) => response, {
      headers: { accept: "text/event-stream" },
      signal,
    })
    async function* iterate(): AsyncGenerator<ServerEvent, void, undefined> {
      try {
        for await (const message of Sse.read(response.body!, undefined, maxLineLength)) {
          yield { event: message.event, data: JSON.parse(message.data) } as ServerEvent
        }
      } catch (error) {
        if (!signal.aborted) throw error
      }
    }
    const events = iterate()
    return { [Symbol.asyncIterator]: () => events, close: () => controller.abort() }
  }

  /** A managed output's full text (or with `part: "structured"` its JSON), or one byte range of it. */
  async output(id: string, options: { readonly part?: "text" | "structured"; readonly range?: OutputRange } = {}): Promise<OutputRead> {
    const query = options.part === undefined ? "" : `?part=${options.part}`
    const range = options.range
    const header =
      range === undefined
        ? undefined
        : range.suffix !== undefined
          ? `bytes=-${range.suffix}`
          : `bytes=${range.start ?? 0}-${range.end ?? ""}`
    return this.send(
      "GET",
      `/v1/outputs/${encodeURIComponent(id)}${query}`,
      async (response) => {
        const bytes = new Uint8Array(await response.arrayBuffer())
        const text = new TextDecoder().decode(bytes)
        const served = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers.get("content-range") ?? "")
        if (response.status === 206 && served !== null) {
          return { bytes, text, start: Number(served[1]), end: Number(served[2]), size: Number(served[3]) }
        }
        return { bytes, text, start: 0, end: bytes.length - 1, size: bytes.length }
      },
      header === undefined ? {} : { headers: { range: header } },
    )
  }
}


