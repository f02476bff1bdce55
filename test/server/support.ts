// The HTTP sidecar for tests: in process (the real Sidecar on temp directories behind the web handler, fed
// Requests, no socket) and end to end (`core serve` from the freshly built binary on a loopback port, read from its
// ready line). Also a reader for server-sent events that waits on events, never on time.

import { atRunEnd } from "../support/at-run-end"
import { realpathSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { Runtime } from "../../src/cli/runtime"
import { Router } from "../../src/server/router"
import { Security } from "../../src/server/security"
import { Sidecar } from "../../src/host/sidecar"
import { binary } from "../support/binary"
import { type Sandbox, sandbox } from "../cli/fixture"

export { IMPORTS, RAN, runs, sandbox, write, type Sandbox, type Settlement } from "../cli/fixture"

export const TOKEN = "test-token"
export const PORT = 4321
export const HOST = `127.0.0.1:${PORT}`

export interface Event {
  readonly event: string
  readonly data: any
}

/** Reads server-sent events from a response body as they arrive. */
export class EventReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array<ArrayBuffer>>
  private readonly decoder = new TextDecoder()
  private buffer = ""
  private readonly queued: Array<Event> = []
  private comments = 0
  ended = false

  constructor(readonly response: Response) {
    this.reader = response.body!.getReader() as ReadableStreamDefaultReader<Uint8Array<ArrayBuffer>>
  }

  private async pull(): Promise<boolean> {
    const chunk = await this.reader.read()
    if (chunk.done) {
      this.ended = true
      return false
    }
    this.buffer += this.decoder.decode(chunk.value, { stream: true })
    for (let end = this.buffer.indexOf("\n\n"); end !== -1; end = this.buffer.indexOf("\n\n")) {
      const block = this.buffer.slice(0, end)
      this.buffer = this.buffer.slice(end + 2)
      if (block.startsWith(":")) {
        this.comments++
        continue
      }
      let event = "message"
      let data = ""
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7)
        else if (line.startsWith("data: ")) data += line.slice(6)
      }
      this.queued.push({ event, data: JSON.parse(data) })
    }
    return true
  }

  /** Resolves once the stream's first comment (the subscription is in place) has arrived. */
  async connected(): Promise<void> {
    while (this.comments === 0) {
      if (!(await this.pull())) throw new Error("the event stream ended before it connected")
    }
  }

  /** The next event; fails if the stream ends first. */
  async next(): Promise<Event> {
    while (this.queued.length === 0) {
      if (!(await this.pull())) throw new Error("the event stream ended")
    }
    return this.queued.shift()!
  }

  /** The next event named `event` (and matching `where`), skipping others. */
  async until(event: string, where: (data: any) => boolean = () => true): Promise<Event> {
    for (;;) {
      const next = await this.next()
      if (next.event === event && where(next.data)) return next
    }
  }

  /** Every event until the stream ends. */
  async rest(): Promise<Array<Event>> {
    const events: Array<Event> = []
    for (;;) {
      while (this.queued.length > 0) events.push(this.queued.shift()!)
      if (!(await this.pull())) {
        events.push(...this.queued.splice(0))
        return events
      }
    }
  }

  async close(): Promise<void> {
    await this.reader.cancel().catch(() => {})
  }
}

export interface RequestOptions {
  readonly body?: unknown
  readonly headers?: Record<string, string>
  readonly signal?: AbortSignal
}

export interface Client {
  readonly fetch: (method: string, path: string, options?: RequestOptions) => Promise<Response>
  /** Sends a request and reads the JSON answer. */
  readonly json: (method: string, path: string, options?: RequestOptions) => Promise<{ status: number; headers: Headers; body: any }>
  /** Materializes a turn; answers its id and definitions. */
  readonly turn: (agent?: string, headers?: Record<string, string>) => Promise<{ turnID: string; definitions: Array<any> }>
  /** Settles one call through `turnID` as JSON. */
  readonly settle: (turnID: string, call: Call, headers?: Record<string, string>) => Promise<{ status: number; headers: Headers; body: any }>
  /** Opens `/v1/events` and waits until it is connected. */
  readonly events: (headers?: Record<string, string>) => Promise<EventReader>
}

export interface Call {
  readonly name: string
  readonly input: unknown
  readonly sessionID?: string
  readonly toolCallID?: string
  readonly assistantMessageID?: string
}

export const callBody = (call: Call) => ({
  sessionID: call.sessionID ?? "ses_test",
  assistantMessageID: call.assistantMessageID ?? "msg_test",
  toolCallID: call.toolCallID ?? `call_${crypto.randomUUID()}`,
  name: call.name,
  input: call.input,
})

const bodyOf = (body: unknown): string | ReadableStream | Blob | undefined =>
  body === undefined
    ? undefined
    : typeof body === "string" || body instanceof ReadableStream || body instanceof Blob
      ? body
      : JSON.stringify(body)

/** A client over `send`, with the token and Host a well-behaved host sends. */
export const client = (send: (request: Request) => Promise<Response>, base: string, host: string, token: string): Client => {
  const fetch = (method: string, path: string, options: RequestOptions = {}) =>
    send(
      new Request(`${base}${path}`, {
        method,
        headers: { host, authorization: `Bearer ${token}`, ...options.headers },
        body: bodyOf(options.body),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      }),
    )
  const json = async (method: string, path: string, options: RequestOptions = {}) => {
    const response = await fetch(method, path, options)
    const text = await response.text()
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      throw new Error(`${method} ${path} answered ${response.status} with a body that is not JSON:\n${text}`)
    }
    return { status: response.status, headers: response.headers, body }
  }
  return {
    fetch,
    json,
    turn: async (agent, headers = {}) => {
      const answer = await json("POST", "/v1/turns", { body: agent === undefined ? {} : { agent }, headers })
      if (answer.status !== 200) throw new Error(`POST /v1/turns answered ${answer.status}: ${JSON.stringify(answer.body)}`)
      return answer.body as { turnID: string; definitions: Array<any> }
    },
    settle: (turnID, call, headers = {}) => json("POST", `/v1/turns/${turnID}/calls`, { body: callBody(call), headers }),
    events: async (headers = {}) => {
      const response = await fetch("GET", "/v1/events", { headers })
      if (response.status !== 200) throw new Error(`GET /v1/events answered ${response.status}: ${await response.text()}`)
      const reader = new EventReader(response)
      await reader.connected()
      return reader
    },
  }
}

export interface InProcess extends Client {
  readonly box: Sandbox
  readonly sidecar: Sidecar.Interface
  readonly handler: (request: Request) => Promise<Response>
  /** Operator log lines written so far. */
  readonly log: Array<string>
  readonly close: () => Promise<void>
}

const open: Array<InProcess> = []
atRunEnd(async () => {
  for (const sidecar of open.splice(0)) {
    // A sidecar that does not close is said, not waited for past a bound: the rest of the clean-up still runs.
    const closed = await Promise.race([sidecar.close().then(() => true), Bun.sleep(15_000).then(() => false)])
    if (!closed) console.error(`the in-process sidecar of ${sidecar.box.location} did not close within 15 s`)
  }
})

/**
 * The sidecar in process on a sandbox (a Location with `files`, its own CORE_HOME with `home` and data directory),
 * answering requests for Host `127.0.0.1:4321` and token `test-token`. `roots` are extra allowed roots.
 */
export const inProcess = async (
  files: Record<string, string> = {},
  options: {
    readonly home?: Record<string, string>
    readonly roots?: ReadonlyArray<string>
    readonly watch?: boolean
    /** Waits until the next retention sweep is due (default: an hour). */
    readonly nextSweep?: Effect.Effect<void>
    /** How many other Locations are kept and for how long, by which clock. */
    readonly locations?: Sidecar.Options["locations"]
    /** Runs on the sandbox before the sidecar starts. */
    readonly before?: (box: Sandbox) => void
  } = {},
): Promise<InProcess> => {
  const box = sandbox(files, options.home ?? {})
  options.before?.(box)
  const environment = { dataDir: box.data, home: box.home }
  const log: Array<string> = []
  const scope = Effect.runSync(Scope.make())
  const sidecar = await Effect.runPromise(
    Effect.gen(function* () {
      const primary = yield* Runtime.prepare("serve", environment, box.location)
      return yield* Sidecar.make({
        environment,
        primary,
        watch: options.watch ?? false,
        log: (line) => log.push(line),
        ...(options.nextSweep === undefined ? {} : { nextSweep: options.nextSweep }),
        ...(options.locations === undefined ? {} : { locations: options.locations }),
      })
    }).pipe(Scope.provide(scope)),
  )
  const web = Router.make({
    sidecar,
    version: "test",
    checkToken: Security.tokenChecker(TOKEN),
    checkHost: Security.hostChecker("127.0.0.1", PORT),
    roots: [realpathSync(box.location), ...(options.roots ?? []).map((root) => realpathSync(root))],
    log: (line) => log.push(line),
  })
  let closed = false
  const instance: InProcess = {
    ...client(web.handler, `http://${HOST}`, HOST, TOKEN),
    box,
    sidecar,
    handler: web.handler,
    log,
    close: async () => {
      if (closed) return
      closed = true
      await web.dispose()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    },
  }
  open.push(instance)
  return instance
}

export interface Served extends Client {
  readonly child: Bun.Subprocess<"ignore", "pipe", "pipe">
  readonly url: string
  readonly token: string
  /** Everything the server wrote on stderr so far. */
  readonly stderr: () => string
  /** Resolves with stderr once what it wrote satisfies `check` (each write is looked at); fails if stderr ends first. */
  readonly stderrUntil: (check: (stderr: string) => boolean, what: string) => Promise<string>
  /** Waits for the server to exit; answers its code and whole stdout. */
  readonly exited: () => Promise<{ code: number; stdout: string; stderr: string }>
}

const running: Array<Bun.Subprocess> = []
atRunEnd(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
})

/** Starts `core serve --location <sandbox> ...args` and waits for its ready line. */
export const serve = async (
  box: Sandbox,
  args: ReadonlyArray<string> = [],
  env: Record<string, string> = {},
  /** The open-file limit (ulimit -n) to serve under, lower than this process's. */
  openFiles?: number,
): Promise<Served> => {
  const argv = [await binary(), "serve", "--location", box.location, ...args]
  const limited = openFiles === undefined ? argv : ["sh", "-c", `ulimit -n ${openFiles} && exec "$@"`, "sh", ...argv]
  const child = Bun.spawn(limited, {
    env: { ...process.env, ...box.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  })
  running.push(child)
  let stderr = ""
  let stderrEnded = false
  // Waiters are looked at after every write to stderr, and told when it ends.
  const waiters = new Set<() => void>()
  const stderrDone = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true })
      for (const wake of waiters) wake()
    }
  })().finally(() => {
    stderrEnded = true
    for (const wake of waiters) wake()
  })
  const stderrUntil = (check: (stderr: string) => boolean, what: string) =>
    new Promise<string>((resolve, reject) => {
      const look = () => {
        if (check(stderr)) resolve(stderr)
        else if (stderrEnded) reject(new Error(`core serve's stderr ended before ${what}:\n${stderr}`))
        else return
        waiters.delete(look)
      }
      waiters.add(look)
      look()
    })
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let stdout = ""
  while (!stdout.includes("\n")) {
    const chunk = await reader.read()
    if (chunk.done) {
      await stderrDone
      throw new Error(`core serve exited before its ready line (code ${await child.exited}):\n${stderr}`)
    }
    stdout += decoder.decode(chunk.value, { stream: true })
  }
  const ready = JSON.parse(stdout.slice(0, stdout.indexOf("\n"))) as { url: string; token: string }
  const host = new URL(ready.url).host
  return {
    ...client((request) => fetch(request), ready.url, host, ready.token),
    child,
    url: ready.url,
    token: ready.token,
    stderr: () => stderr,
    stderrUntil,
    exited: async () => {
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done) break
        stdout += decoder.decode(chunk.value, { stream: true })
      }
      const code = await child.exited
      await stderrDone
      return { code, stdout, stderr }
    },
  }
}

/** Whether process `pid` is gone or a zombie (killed, not yet reaped). */
export const isDead = (pid: number): boolean => {
  try {
    const stat = require("node:fs").readFileSync(`/proc/${pid}/stat`, "utf8") as string
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
    return state === "Z" || state === "X"
  } catch {
    return true
  }
}

export const location = (box: Sandbox, path = ""): string => join(realpathSync(box.location), path)

export interface Sweeper {
  /** The sidecar's wait for its next retention sweep: it lasts until the test calls `sweep`. */
  readonly next: Effect.Effect<void>
  /** Lets one sweep run; resolves once it is done and the sidecar waits for the next. */
  readonly sweep: () => Promise<void>
}

/** Retention sweeps on the test's word rather than the clock's. */
export const sweeper = (): Sweeper => {
  let waiting = Promise.withResolvers<void>()
  let release: (() => void) | undefined
  const next = Effect.promise(() => {
    const go = Promise.withResolvers<void>()
    release = go.resolve
    waiting.resolve()
    return go.promise
  })
  return {
    next,
    sweep: async () => {
      await waiting.promise
      waiting = Promise.withResolvers<void>()
      release!()
      await waiting.promise
    },
  }
}
