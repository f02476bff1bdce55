export * as McpClientStdio from "./mcp-client-stdio"

// The stdio side of an MCP server core starts (where and as what: ./launch), in its own process group under a supervisor of its own (the shell's
// per-call supervisor, so the server and whatever it starts die with core, however core ends); the group is ended
// (SIGTERM, then SIGKILL) when the connection closes. It speaks newline-delimited JSON-RPC; a line that is not a
// JSON-RPC message (a server logging to stdout) is counted and skipped, never fatal. It spawns nothing itself and
// decides nothing about tools.

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { JsonRpcId } from "../contract/json-rpc-id"
import { ProcessGroup } from "../shell/process-group"
import { JsonRpc } from "./json-rpc"
import { ServerLaunch } from "./server-launch"
import { McpSdk } from "./mcp-sdk"
import { Supervised } from "../shell/supervised"
import { Secrets } from "./secrets"

/** How long a server gets to exit after SIGTERM when its connection closes. */
export const GRACE_MS = 1000
/** How much of a server's stderr is kept for saying why it ended. */
const STDERR_TAIL_BYTES = 2048
/** How long, after the process ended, its last stderr output is waited for. */
const STDERR_SETTLE_MS = 100
/**
 * A line longer than this is not a message core will read: it is dropped unread, and the request it answers, where
 * its beginning or end shows which, fails at once saying so (JsonRpcId.glimpse).
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024
/**
 * The most of core's answers to a server's own requests (in characters) that may wait to be written to it: past it
 * the server, asking faster than it reads the answers, is ended, its calls failing. One that stopped reading while
 * it sent requests (1,500 pings with ids of a megabyte, each answered) held 3.9 GB of answers in core, for as long
 * as it lived. Core's own requests (a call's input, however large) are not counted: they wait for the server to read
 * them, as a slow server reads.
 */
export const MAX_WAITING_CHARS = 16 * 1024 * 1024

export interface Options {
  readonly command: ReadonlyArray<string>
  /** Added to the few variables a server inherits (PATH, HOME, USER, SHELL, TERM, LOGNAME): never core's secrets. */
  readonly env?: Readonly<Record<string, string>>
  /** The Location the server serves: it starts outside it, and nothing in it names its program (./launch). */
  readonly location: string
}

/** Why a server could not be started: the program is missing, not executable, or the like. */
export class SpawnFailure {
  readonly _tag = "SpawnFailure"
  constructor(
    readonly code: string,
    readonly message: string,
  ) {}
}

/** A started server, however it was started. */
interface Child {
  /** The server's own pid, which is also its process group's. */
  readonly pid: number
  readonly stdin: Supervised.Server["stdin"]
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** How the server ended: its exit code or signal. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>
  /** Ends the server's group and waits until it is gone. */
  readonly end: () => Promise<void>
}

const failure = (program: string, code: string, detail: string): SpawnFailure =>
  new SpawnFailure(
    code,
    code === "ENOENT"
      ? `command "${program}" not found (check the path, or that it is installed and on PATH)`
      : code === "EACCES"
        ? `command "${program}" is not executable`
        : `command "${program}" could not be started (${detail})`,
  )

/** The server under a supervisor of its own: it dies with core. */
const supervised = async (options: Options, launch: ServerLaunch.Launch): Promise<Child | SpawnFailure> => {
  const server = Supervised.server({ argv: [...launch.argv], cwd: launch.cwd, env: { ...launch.env }, graceMs: GRACE_MS })
  const started = await server.started
  if (started.kind === "refused") return failure(options.command[0]!, started.code, started.message)
  if (started.kind === "failed") {
    await server.stop()
    return failure(options.command[0]!, "EUNKNOWN", started.message)
  }
  ProcessGroup.track(started.pid)
  return {
    pid: started.pid,
    stdin: server.stdin,
    stdout: server.stdout,
    stderr: server.stderr,
    exited: server.ended.then((report) =>
      report === undefined ? { code: null, signal: "its supervisor's end" } : { code: report.exitCode, signal: report.signal },
    ),
    end: async () => {
      await server.stop()
      await ProcessGroup.terminate(started.pid, 0)
    },
  }
}

/**
 * The last of a server's stderr, said in a failure a model reads: every value core.json's `env` gave the server
 * (tokens, mostly) in any of its spellings shown as `[redacted]` (a server that logs its configuration, or crashes
 * quoting it, handed them to the model), and cut at a line's start wherever it was cut (`partial`: its first chunks
 * were let go), so that no part of one is left at the cut.
 */
const stderrTail = (chunks: Array<Uint8Array>, spellings: ReadonlyArray<string>, partial: boolean): string => {
  let text = Buffer.concat(chunks).toString("utf8")
  if (partial) text = text.slice(text.indexOf("\n") + 1)
  text = Secrets.redact(text.trim(), spellings)
  if (text.length <= STDERR_TAIL_BYTES) return partial ? `…${text}` : text
  const tail = text.slice(-STDERR_TAIL_BYTES)
  const line = tail.indexOf("\n")
  return `…${line === -1 ? tail : tail.slice(line)}`
}

/** A started server process as an MCP transport. */
export class Process implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  readonly pid: number
  /** Lines on stdout that were not JSON-RPC messages. */
  ignoredLines = 0
  /**
   * The size of the last message core dropped (or is dropping) for being over MAX_LINE_BYTES whose request it could
   * not tell, if one was: a request whose answer it was waits until its timeout, and is told why (the first timeout
   * after it takes it: ../connection).
   */
  oversized: number | undefined
  /** How the process ended, once it has. */
  exit: { readonly code: number | null; readonly signal: string | null; readonly stderr: string } | undefined
  private readonly child: Child
  private readonly stderr: Array<Uint8Array> = []
  /** Whether the first of its stderr was let go (only the last is kept). */
  private stderrPartial = false
  private closed = false
  /** What of core's answers to the server's requests waits to be written (characters), and whether it was ended for it. */
  private waiting = 0
  private deaf = false

  /** `spellings`: the values core.json's `env` gave the server (Secrets.spellingsOf), kept out of its stderr. */
  private constructor(
    child: Child,
    private readonly spellings: ReadonlyArray<string>,
  ) {
    this.child = child
    this.pid = child.pid
  }

  /** Starts the server, or says why it could not be started. */
  static async spawn(options: Options): Promise<Process | SpawnFailure> {
    const env = { ...McpSdk.load().stdio.getDefaultEnvironment(), ...options.env }
    if (!Supervised.launchable()) {
      return new SpawnFailure("ENOSUPERVISOR", "no supervisor can be started from this build of core to run it")
    }
    const launch = ServerLaunch.resolve(options.command, options.location, env)
    if ("code" in launch) return new SpawnFailure(launch.code, launch.message)
    const child = await supervised(options, launch)
    return child instanceof SpawnFailure ? child : new Process(child, Secrets.spellingsOf({ env: options.env ?? {} }))
  }

  async start(): Promise<void> {
    void this.read()
    const drained = this.drainStderr()
    void this.child.exited.then(async (exit) => {
      // What it said last explains why it ended; a grandchild holding stderr open must not delay saying so.
      await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, STDERR_SETTLE_MS))])
      this.exit = { ...exit, stderr: stderrTail(this.stderr, this.spellings, this.stderrPartial) }
      this.finish()
    })
  }

  private async read(): Promise<void> {
    const decoder = new TextDecoder()
    let buffer = ""
    /** The line being dropped for its length: its beginning, its end so far, and its length so far. */
    let dropping: { readonly head: string; tail: string; length: number } | undefined
    const reader = this.child.stdout.getReader()
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read()
        if (done) break
        // Only the text just read can hold the line's end: a long line is not searched again chunk after chunk.
        const searched = buffer.length
        buffer += decoder.decode(chunk, { stream: true })
        let newline = buffer.indexOf("\n", searched)
        while (newline !== -1) {
          const line = buffer.slice(0, newline)
          if (dropping === undefined) this.line(line)
          else {
            this.dropped(dropping.head, (dropping.tail + line).slice(-JsonRpcId.TAIL_CHARS), dropping.length + line.length)
            dropping = undefined
          }
          buffer = buffer.slice(newline + 1)
          newline = buffer.indexOf("\n")
        }
        if (dropping !== undefined) {
          // Only its end is kept from now on, until the line ends.
          dropping.tail = (dropping.tail + buffer).slice(-JsonRpcId.TAIL_CHARS)
          dropping.length += buffer.length
          this.oversized = dropping.length
          buffer = ""
        } else if (buffer.length > MAX_LINE_BYTES) {
          dropping = { head: buffer.slice(0, JsonRpcId.HEAD_CHARS), tail: buffer.slice(-JsonRpcId.TAIL_CHARS), length: buffer.length }
          this.oversized = dropping.length
          buffer = ""
        }
      }
    } catch (cause) {
      this.onerror?.(cause instanceof Error ? cause : new Error(String(cause)))
    }
  }

  /**
   * A line over MAX_LINE_BYTES, of `length` characters, dropped unread: where its beginning or end shows it answers a
   * request, that request fails now, saying so; else the next timeout says why (`oversized`).
   */
  private dropped(head: string, tail: string, length: number): void {
    this.ignoredLines++
    const { id: seen, kind } = JsonRpcId.glimpse(head, tail)
    // A number as written: core's own requests' ids are small integers.
    const id = typeof seen === "object" ? Number(JSON.stringify(seen)) : seen
    if (kind === "answer" && (typeof id === "string" || Number.isSafeInteger(id))) {
      this.oversized = undefined
      this.onmessage?.(JsonRpc.tooLong(id!, length, MAX_LINE_BYTES))
    } else this.oversized = length
  }

  private line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (line.trim() === "") return
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      this.ignoredLines++
      return
    }
    if (!JsonRpc.isMessage(parsed)) {
      this.ignoredLines++
      // Plainly the answer to a request, but malformed: that request fails now, saying why.
      const error = JsonRpc.stoodIn(parsed)
      if (error !== undefined) this.onmessage?.(error)
      return
    }
    this.onmessage?.(parsed)
  }

  private async drainStderr(): Promise<void> {
    let kept = 0
    try {
      for await (const chunk of this.child.stderr) {
        this.stderr.push(chunk)
        kept += chunk.byteLength
        while (kept > STDERR_TAIL_BYTES * 2 && this.stderr.length > 1) {
          kept -= this.stderr.shift()!.byteLength
          this.stderrPartial = true
        }
      }
    } catch {
      // The stream broke as the process went: what was kept is what it said.
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || this.exit !== undefined) throw new Error("the server process has ended")
    const line = `${JSON.stringify(message)}\n`
    const answer = !("method" in message) ? line.length : 0
    if (answer > 0 && this.waiting + answer > MAX_WAITING_CHARS) {
      this.deaf = true
      void this.child.end()
      throw new Error(`the server process does not read core's answers to its requests (more than ${MAX_WAITING_CHARS} characters wait)`)
    }
    this.waiting += answer
    try {
      const wrote = this.child.stdin.write(line)
      if (typeof wrote !== "number") await wrote
      // A promise only when the pipe is full: waiting then keeps a slow server from being flooded.
      const flushed = this.child.stdin.flush()
      if (typeof flushed !== "number") await flushed
    } finally {
      this.waiting -= answer
    }
  }

  private finish(): void {
    if (this.closed) return
    this.closed = true
    this.onclose?.()
  }

  /** Ends the server's process group and waits until it is gone. */
  async close(): Promise<void> {
    try {
      this.child.stdin.end()
    } catch {
      // already closed by the process ending
    }
    await this.child.end()
    this.finish()
  }

  /** How the process ended, in words, for a failure or the server's state. */
  describeExit(): string {
    if (this.exit === undefined) return "the process is running"
    if (this.deaf) return `was ended by core: it asked faster than it read, more than ${MAX_WAITING_CHARS} characters of core's answers waiting`
    const how = this.exit.signal !== null ? `was killed by ${this.exit.signal}` : `exited with code ${this.exit.code}`
    return this.exit.stderr === "" ? how : `${how}: ${this.exit.stderr}`
  }
}
