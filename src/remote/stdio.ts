export * as RemoteStdio from "./stdio"

// The stdio side of an MCP server core starts: the platform edge that spawns it (Bun.spawn) in its own process
// group, tracked so that a forced exit of core kills it too, and ended as a group (SIGTERM, then SIGKILL) when the
// connection closes. It speaks newline-delimited JSON-RPC; a line that is not a JSON-RPC message (a server logging
// to stdout) is counted and skipped, never fatal. It decides nothing about tools.

import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { ProcessGroup } from "../shell/group"

/** How long a server gets to exit after SIGTERM when its connection closes. */
export const GRACE_MS = 1000
/** How much of a server's stderr is kept for saying why it ended. */
const STDERR_TAIL_BYTES = 2048
/** How long, after the process ended, its last stderr output is waited for. */
const STDERR_SETTLE_MS = 100
/** A line longer than this is not a message core will read: it is dropped like garbage. */
const MAX_LINE_BYTES = 16 * 1024 * 1024

export interface Options {
  readonly command: ReadonlyArray<string>
  /** Added to the few variables a server inherits (PATH, HOME, USER, SHELL, TERM, LOGNAME): never core's secrets. */
  readonly env?: Readonly<Record<string, string>>
  readonly cwd: string
}

/** Why a server could not be started: the program is missing, not executable, or the like. */
export class SpawnFailure {
  readonly _tag = "SpawnFailure"
  constructor(
    readonly code: string,
    readonly message: string,
  ) {}
}

const stderrTail = (chunks: Array<Uint8Array>): string => {
  const text = Buffer.concat(chunks).toString("utf8").trim()
  return text.length <= STDERR_TAIL_BYTES ? text : `…${text.slice(-STDERR_TAIL_BYTES)}`
}

/** A started server process as an MCP transport. */
export class Process implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  readonly pid: number
  /** Lines on stdout that were not JSON-RPC messages. */
  ignoredLines = 0
  /** How the process ended, once it has. */
  exit: { readonly code: number | null; readonly signal: string | null; readonly stderr: string } | undefined
  private readonly child: Bun.Subprocess<"pipe", "pipe", "pipe">
  private readonly stderr: Array<Uint8Array> = []
  private closed = false

  private constructor(child: Bun.Subprocess<"pipe", "pipe", "pipe">) {
    this.child = child
    this.pid = child.pid
  }

  /** Starts the server, or says why it could not be started. */
  static spawn(options: Options): Process | SpawnFailure {
    let child: Bun.Subprocess<"pipe", "pipe", "pipe">
    try {
      child = Bun.spawn([...options.command], {
        cwd: options.cwd,
        env: { ...getDefaultEnvironment(), ...options.env },
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        // Its own process group: one signal ends the server and whatever it started.
        detached: true,
      })
    } catch (cause) {
      const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : "EUNKNOWN"
      const program = options.command[0]!
      const message =
        code === "ENOENT"
          ? `command "${program}" not found (check the path, or that it is installed and on PATH)`
          : code === "EACCES"
            ? `command "${program}" is not executable`
            : `command "${program}" could not be started (${cause instanceof Error ? cause.message : String(cause)})`
      return new SpawnFailure(code, message)
    }
    ProcessGroup.track(child.pid)
    return new Process(child)
  }

  async start(): Promise<void> {
    void this.read()
    const drained = this.drainStderr()
    void this.child.exited.then(async () => {
      // What it said last explains why it ended; a grandchild holding stderr open must not delay saying so.
      await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, STDERR_SETTLE_MS))])
      const signal = this.child.signalCode
      this.exit = { code: this.child.exitCode, signal: signal === null ? null : String(signal), stderr: stderrTail(this.stderr) }
      this.finish()
    })
  }

  private async read(): Promise<void> {
    const decoder = new TextDecoder()
    let buffer = ""
    const reader = this.child.stdout.getReader()
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read()
        if (done) break
        buffer += decoder.decode(chunk, { stream: true })
        let newline = buffer.indexOf("\n")
        while (newline !== -1) {
          this.line(buffer.slice(0, newline))
          buffer = buffer.slice(newline + 1)
          newline = buffer.indexOf("\n")
        }
        if (buffer.length > MAX_LINE_BYTES) {
          this.ignoredLines++
          buffer = ""
        }
      }
    } catch (cause) {
      this.onerror?.(cause instanceof Error ? cause : new Error(String(cause)))
    }
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
    const message = JSONRPCMessageSchema.safeParse(parsed)
    if (!message.success) {
      this.ignoredLines++
      return
    }
    this.onmessage?.(message.data)
  }

  private async drainStderr(): Promise<void> {
    let kept = 0
    try {
      for await (const chunk of this.child.stderr) {
        this.stderr.push(chunk)
        kept += chunk.byteLength
        while (kept > STDERR_TAIL_BYTES * 2 && this.stderr.length > 1) kept -= this.stderr.shift()!.byteLength
      }
    } catch {
      // The stream broke as the process went: what was kept is what it said.
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || this.exit !== undefined) throw new Error("the server process has ended")
    this.child.stdin.write(`${JSON.stringify(message)}\n`)
    // A promise only when the pipe is full: waiting then keeps a slow server from being flooded.
    const flushed = this.child.stdin.flush()
    if (typeof flushed !== "number") await flushed
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
    await ProcessGroup.terminate(this.pid, GRACE_MS)
    this.finish()
  }

  /** How the process ended, in words, for a failure or the server's state. */
  describeExit(): string {
    if (this.exit === undefined) return "the process is running"
    const how = this.exit.signal !== null ? `was killed by ${this.exit.signal}` : `exited with code ${this.exit.code}`
    return this.exit.stderr === "" ? how : `${how}: ${this.exit.stderr}`
  }
}
