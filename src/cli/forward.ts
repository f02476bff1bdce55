export * as Forward from "./forward"

// `core exec` through a running `core serve` of the same data directory (docs/serve.md, "core exec forwards"): the
// call settles in the sidecar, which has the Location loaded already, and exec prints what it would have printed in
// process: the same settlement, progress, asks (answered here, through the reply route) and exit code. Anything that
// does not fit answers undefined before the call is sent, and exec runs in process. Loads no Effect and nothing of
// the host floor: this path's cost is reading a few files and four requests on a unix socket (health, the turn and
// the host tools at once, then the call).
//
// The sidecar is found only through its record in the data directory (../server/forwarding), and trusted only when
// the directory, the record and the socket are the user's own and no one else can write them (the directory held
// open as it is checked, and the record and socket reached through it), its process is alive, it answers health
// with this version, and it runs the same executable with the same environment and umask on a Location that is
// exec's own (its --location, or under an --allow-root).

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync, statSync, type Stats } from "node:fs"
import { Terminal } from "../contract/terminal"
import { join, resolve, sep } from "node:path"
import packageJson from "../../package.json" with { type: "json" }
import { Json } from "../config/json"
import { Forwarding } from "../server/forwarding"
import { AskAnswer } from "./ask-answer"
import { CallKey } from "../contract/call-key"
import { Cancelled } from "../contract/cancelled"
import type { Settlement } from "../contract/settlement"
import { ExitCodes } from "./exit-codes"
import { ReplayNote } from "./replay-note"
import { ProgressLine } from "./progress-line"
import { InputText } from "./input-text"

/** How long a sidecar may take to answer health before exec runs in process instead. */
const HEALTH_TIMEOUT_MS = 1_000
/** How long it may take to make the turn (it may be loading a Location under a root for the first time). */
const TURN_TIMEOUT_MS = 30_000
/** A record larger than this is not one core serve wrote. */
const MAX_RECORD_BYTES = 64 * 1024

const { EXIT } = ExitCodes
/** How exec ends when its terminal hangs up (SIGHUP), as a process the signal ends. */
const EXIT_HANGUP = 128 + 1
/** How long exec hung up waits for the sidecar to take the cancel of its call. */
const HANGUP_CANCEL_MS = 1_000
/**
 * How long exec waits for the cancelled settlement once it has asked for it: a command is ended within its grace
 * period (3 s, SIGTERM then SIGKILL); a sidecar that says nothing for longer is stopped or stuck.
 */
const CANCEL_ANSWER_MS = 10_000

const STRING_FLAGS = new Set(["input", "location", "agent", "session", "message", "call"])

interface Flags {
  readonly name: string
  readonly input: string
  readonly location?: string
  readonly agent?: string
  readonly session?: string
  readonly message?: string
  readonly call?: string
  readonly yes: boolean
}

/**
 * The flags of `core exec ARGS`, when they are the plain form forwarding handles: anything else (help, a usage error)
 * is left to the in-process path, which says what is wrong.
 */
const flagsOf = (args: ReadonlyArray<string>): Flags | undefined => {
  const values: Record<string, string> = {}
  const positionals: Array<string> = []
  let yes = false
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!
    if (!arg.startsWith("-")) {
      positionals.push(arg)
      continue
    }
    if (arg === "--yes") {
      yes = true
      continue
    }
    if (!arg.startsWith("--")) return undefined
    const equals = arg.indexOf("=")
    const flag = arg.slice(2, equals === -1 ? undefined : equals)
    if (!STRING_FLAGS.has(flag)) return undefined
    if (equals !== -1) values[flag] = arg.slice(equals + 1)
    else if (index + 1 < args.length) values[flag] = args[++index]!
    else return undefined
  }
  const [name] = positionals
  if (name === undefined || positionals.length !== 1 || values.input === undefined) return undefined
  // Empty, or not UTF-8: in process says what is wrong.
  for (const flag of ["agent", "session", "message", "call"]) if (values[flag]?.trim() === "" || values[flag]?.includes("\uFFFD")) return undefined
  // Ids too long for the routes that name a call (its cancel, its settlement): in process says so.
  for (const flag of ["agent", "session", "message", "call"]) if (values[flag] !== undefined && !CallKey.keepable(values[flag])) return undefined
  return { ...values, name, input: values.input, yes } as Flags
}

/** Whether `stats` are the user's own and nobody else may write (or, for `private`, enter or read) them. */
const own = (stats: Stats, uid: number, mask: number) => stats.uid === uid && (stats.mode & mask) === 0

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const isRecord = (value: unknown): value is Forwarding.Record => {
  if (typeof value !== "object" || value === null) return false
  const record = value as Record<string, unknown>
  return (
    ["version", "execPath", "url", "token", "location", "environment"].every((key) => typeof record[key] === "string") &&
    typeof record.pid === "number" &&
    typeof record.umask === "number" &&
    // Only ever a plain http address: requests go to the socket, and name it as their Host.
    /^http:\/\/[^/?#@\s]+$/.test(record.url as string) &&
    Array.isArray(record.roots) &&
    record.roots.every((root) => typeof root === "string")
  )
}

interface Sidecar {
  readonly record: Forwarding.Record
  readonly socket: string
  /** Requests name exec's Location with X-Core-Location unless it is the serve's own. */
  readonly headers: Record<string, string>
}

/** Whether `location` is `root` or under it (both real paths). */
const within = (location: string, root: string) => location === root || location.startsWith(root.endsWith(sep) ? root : root + sep)

/** The sidecars of `dataDir` whose record checks out for `location`, the one serving it as its --location first. */
const candidates = (dataDir: string, location: string): ReadonlyArray<Sidecar> => {
  const uid = process.getuid?.()
  if (uid === undefined) return []
  let names: ReadonlyArray<string>
  try {
    // The data directory may be a link the user made; what it holds is checked without following links.
    const stats = statSync(dataDir)
    if (!stats.isDirectory() || !own(stats, uid, 0o022)) return []
    names = readdirSync(dataDir)
  } catch {
    return []
  }
  // Hashed only once there is a record to compare it with: a data directory without a serve pays nothing for it.
  let environment: string | undefined
  const proc = process.platform === "linux"
  const found: Array<Sidecar> = []
  /** The sidecar whose directory (`name`, of `pid`) is held open as `held`, where it checks out. */
  const checked = (held: number, name: string, pid: number): Sidecar | undefined => {
    // Elsewhere than Linux (no /proc), by its path.
    const directory = proc ? `/proc/self/fd/${held}` : join(dataDir, name)
    const file = join(directory, Forwarding.FILE_NAME)
    const socket = join(directory, Forwarding.SOCKET_NAME)
    const folder = fstatSync(held)
    if (!folder.isDirectory() || !own(folder, uid, 0o077)) return undefined
    const stats = lstatSync(file)
    if (!stats.isFile() || !own(stats, uid, 0o077) || stats.size > MAX_RECORD_BYTES) return undefined
    const listening = lstatSync(socket)
    if (!listening.isSocket() || listening.uid !== uid) return undefined
    if (!alive(pid)) return undefined
    const record: unknown = JSON.parse(readFileSync(file, "utf8"))
    if (!isRecord(record) || record.pid !== pid) return undefined
    if (record.version !== packageJson.version || record.execPath !== process.execPath) return undefined
    if (record.environment !== (environment ??= Forwarding.environmentDigest(process.env))) return undefined
    // Files the call's commands and tools create take the serve's umask: forwarded only where it is exec's own.
    if (record.umask !== process.umask()) return undefined
    if (location !== record.location && !record.roots.some((root) => within(location, root))) return undefined
    const headers: Record<string, string> = { authorization: `Bearer ${record.token}` }
    if (location !== record.location) headers["x-core-location"] = location
    return { record, socket, headers }
  }
  for (const name of names) {
    const pid = Forwarding.DIRECTORY_PATTERN.exec(name)?.[1]
    if (pid === undefined) continue
    // The serve's directory held open, checked as it is held, and everything in it reached through the descriptor:
    // someone who may write a folder above the data directory could point its path elsewhere between a check and a
    // connection (a record and socket of theirs would get exec's input and the serve's token). Kept open while exec
    // runs; let go of where it does not check out.
    let held: number
    try {
      held = openSync(join(dataDir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    } catch {
      continue
    }
    let sidecar: Sidecar | undefined
    try {
      sidecar = checked(held, name, Number(pid))
    } catch {
      sidecar = undefined
    }
    if (sidecar === undefined) closeSync(held)
    else found.push(sidecar)
  }
  return found.sort((a, b) => Number(b.record.location === location) - Number(a.record.location === location))
}

const request = (sidecar: Sidecar, method: string, path: string, options: { body?: unknown; signal?: AbortSignal; accept?: string } = {}) =>
  fetch(`${sidecar.record.url}${path}`, {
    method,
    unix: sidecar.socket,
    headers: {
      ...sidecar.headers,
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.accept === undefined ? {} : { accept: options.accept }),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  } as RequestInit)

const json = async (response: Response): Promise<unknown> => (response.ok ? response.json() : undefined)

/**
 * Whether `sidecar` is a live core serve of this version that would settle `name` as exec in process would. Its
 * health, the turn and its host tools are asked for at once (one wait rather than three); what health does not
 * vouch for within HEALTH_TIMEOUT_MS is dropped, the other two requests with it.
 */
const turnFor = async (sidecar: Sidecar, name: string, agent: string | undefined): Promise<string | undefined> => {
  const dropped = new AbortController()
  const signal = AbortSignal.any([dropped.signal, AbortSignal.timeout(TURN_TIMEOUT_MS)])
  const answer = (path: string, method = "GET", body?: unknown) =>
    request(sidecar, method, path, { signal, ...(body === undefined ? {} : { body }) })
      .then(json)
      .catch(() => undefined)
  const turning = answer("/v1/turns", "POST", agent === undefined ? {} : { agent })
  const listing = answer("/v1/host-tools")
  try {
    const health = (await json(await request(sidecar, "GET", "/v1/health", { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }))) as
      | { ok?: unknown; version?: unknown }
      | undefined
    if (health?.ok !== true || health.version !== packageJson.version) return void dropped.abort()
  } catch {
    return void dropped.abort()
  }
  const turn = (await turning) as
    | { turnID?: unknown; definitions?: ReadonlyArray<{ name?: unknown }>; warnings?: unknown }
    | undefined
  // A Location that reported a load problem prints it in process; a tool the turn does not offer (unknown, denied
  // to the agent, or a host tool the sidecar performs through its host) is worded in process.
  if (typeof turn?.turnID !== "string" || turn.warnings !== undefined) return void dropped.abort()
  if (!Array.isArray(turn.definitions) || !turn.definitions.some((definition) => definition.name === name)) return void dropped.abort()
  const hostTools = (await listing) as ReadonlyArray<{ name?: unknown }> | undefined
  if (!Array.isArray(hostTools) || hostTools.some((tool) => tool.name === name)) return undefined
  return turn.turnID
}

/** The events of a server-sent event stream, as they arrive. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replaceAll("\r\n", "\n")
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5))
      }
      if (data.length > 0) yield { event, data: data.join("\n") }
    }
  }
}

const stderr = (text: string) => void process.stderr.write(text)

/** How to get a call's settlement later; its ids are the host's (a model's, passed on), shown inert on a terminal. */
const callAgain = (call: { readonly sessionID: string; readonly toolCallID: string }) =>
  `Call again with --session ${Terminal.shown(call.sessionID)} --call ${Terminal.shown(call.toolCallID)} to get its settlement once recorded`

/** Writes `text` on stdout and waits until the reader has it; a reader gone away is no failure. */
const stdout = async (text: string): Promise<unknown> => {
  try {
    await Bun.write(Bun.stdout, text)
    return undefined
  } catch (cause) {
    return (cause as { code?: unknown } | undefined)?.code === "EPIPE" ? undefined : cause
  }
}


interface Settling {
  readonly sidecar: Sidecar
  readonly turnID: string
  readonly flags: Flags
  readonly input: unknown
}

/** Settles the call in the sidecar, printing what exec in process prints; answers the exit code. */
const settle = async ({ sidecar, turnID, flags, input }: Settling): Promise<number | undefined> => {
  const call = {
    sessionID: flags.session ?? `ses_${crypto.randomUUID()}`,
    assistantMessageID: flags.message ?? `msg_${crypto.randomUUID()}`,
    toolCallID: flags.call ?? `call_${crypto.randomUUID()}`,
    name: flags.name,
    input,
  }
  const cancelPath = `/v1/calls/${encodeURIComponent(call.sessionID)}/${encodeURIComponent(call.toolCallID)}/cancel`
  const cancel = () => request(sidecar, "POST", cancelPath).catch(() => undefined)
  /** The progress line on stderr, once there is progress to show. */
  let line: ProgressLine.ProgressLine | undefined
  /** The signal that came before the sidecar's answer began, if one did: acted on once it is known whose call it is. */
  let asked: "stop" | "hangup" | undefined
  /** Whether the call was running already (this exec joined another's); known once the answer has begun. */
  let joined: boolean | undefined
  /**
   * A signal, once the call is known: a call this exec started is cancelled (a hangup, the terminal gone, exits once
   * the cancel is sent, as exec in process dies and takes the command's processes with it); a call it joined is left
   * to the one who started it, as in process: exec stops waiting, a cancelled answer that is no record.
   */
  const act = (signal: "stop" | "hangup") => {
    if (joined === true) {
      if (signal === "hangup") process.exit(EXIT_HANGUP)
      const stopped = {
        tool: flags.name,
        callID: call.toolCallID,
        status: "cancelled",
        content: [{ type: "text", text: Cancelled.text(flags.name) }],
        structured: null,
        outputs: [],
      }
      return void stdout(`${Terminal.pretty(stopped)}\n`).then(() => process.exit(EXIT.cancelled))
    }
    const cancelling = cancel()
    if (signal === "hangup") return void Promise.race([cancelling, Bun.sleep(HANGUP_CANCEL_MS)]).then(() => process.exit(EXIT_HANGUP))
    // A sidecar that does not answer (stopped with SIGSTOP, stuck) would leave exec waiting with nothing said.
    setTimeout(() => {
      line?.clear()
      stderr(
        `core: the core serve settling the call (pid ${sidecar.record.pid}) did not answer its cancel within ` +
          `${CANCEL_ANSWER_MS / 1000} s; the call may still run there. ${callAgain(call)}\n`,
      )
      process.exit(EXIT.operational)
    }, CANCEL_ANSWER_MS)
  }
  const onSignal = (signal: "stop" | "hangup") => {
    // A second signal does not wait for the cancelled settlement; the sidecar still ends the call's processes.
    if (asked !== undefined) process.exit(signal === "hangup" ? EXIT_HANGUP : EXIT.cancelled)
    asked = signal
    if (joined !== undefined) act(signal)
  }
  const onStop = () => onSignal("stop")
  const onHangup = () => onSignal("hangup")
  const listen = (on: boolean) => {
    if (on) {
      process.on("SIGINT", onStop).on("SIGTERM", onStop).on("SIGHUP", onHangup)
    } else {
      process.off("SIGINT", onStop).off("SIGTERM", onStop).off("SIGHUP", onHangup)
    }
  }
  // From before the call is sent: a signal while it starts stops it too.
  listen(true)

  // Refused, or the sidecar gone, before an answer began (the turn expired meanwhile, say): in process it goes. Were
  // the call started there after all, the store's record of it keeps it from running twice.
  const response = await request(sidecar, "POST", `/v1/turns/${encodeURIComponent(turnID)}/calls/stream`, {
    body: call,
    accept: "text/event-stream",
  }).catch(() => undefined)
  if (response === undefined || response.status !== 200 || response.body === null) {
    listen(false)
    if (asked === "hangup") process.exit(EXIT_HANGUP)
    if (asked !== undefined) return EXIT.cancelled
    return undefined
  }
  joined = response.headers.get("x-core-joined") === "true"
  const replayed = response.headers.get("x-core-replayed") === "true"
  // A signal that came while the call started is acted on now that it is known whose call it is.
  if (asked !== undefined) act(asked)

  const options = {
    yes: flags.yes,
    line: AskAnswer.lineOf(flags.name, input),
    get interactive() {
      return process.stdin.isTTY === true && process.stderr.isTTY === true
    },
  }
  const terminal = AskAnswer.terminalReader(stderr)
  // Asks are answered one at a time, in the order they come, as in process.
  let answering: Promise<void> = Promise.resolve()
  try {
    for await (const { event, data } of events(response.body)) {
      // A call this exec joined shows nothing of its progress and answers none of its asks, as in process: the
      // exec that started it does.
      if (joined && (event === "progress" || event === "permission")) continue
      if (event === "progress") {
        const update = JSON.parse(data) as { message: string }
        ;(line ??= ProgressLine.make(process.stderr)).show(update)
      } else if (event === "permission") {
        const ask = JSON.parse(data) as AskAnswer.Ask & { id: string }
        answering = answering.then(async () => {
          const reply = await AskAnswer.reply(ask, options, terminal.readLine, stderr)
          // The ask may have gone meanwhile (its call was cancelled): nothing to answer then.
          await request(sidecar, "POST", `/v1/permissions/${encodeURIComponent(ask.id)}/reply`, { body: reply }).catch(() => undefined)
        })
      } else if (event === "settlement" || event === "error") {
        // Hung up, exec ends as the signal ends it and prints nothing, whether the settlement came before or after
        // the sidecar took the cancel: the call is over either way.
        if (asked === "hangup") process.exit(EXIT_HANGUP)
        if (event === "error") {
          const { error } = JSON.parse(data) as { error: { message: string } }
          line?.clear()
          terminal.close()
          stderr(`core: ${error.message}\n`)
          return EXIT.operational
        }
        const { result: _result, ...settlement } = JSON.parse(data) as {
          status: Settlement.Status
          error?: { readonly kind: string }
          result?: unknown
        }
        line?.clear()
        terminal.close()
        const failure = await stdout(`${Terminal.pretty(settlement)}\n`)
        if (replayed) stderr(ReplayNote.of(call.sessionID, call.toolCallID, settlement.error?.kind))
        const code = ExitCodes.ofStatus(settlement.status)
        if (failure === undefined) return code
        stderr(`core: could not write to stdout: ${String((failure as Error).message ?? failure)}\n`)
        return code === EXIT.ok ? EXIT.operational : code
      }
    }
  } catch {
    // The connection broke: the sidecar stopped.
  }
  if (asked === "hangup") process.exit(EXIT_HANGUP)
  line?.clear()
  terminal.close()
  stderr(
    `core: the core serve settling the call (pid ${sidecar.record.pid}) stopped before answering; it may have run. ` +
      `${callAgain(call)}\n`,
  )
  return EXIT.operational
}

/**
 * Settles `core exec ARGS` in a running core serve of the same data directory and answers its exit code, or
 * undefined when exec must run in process: forwarding turned off, a form or a case it does not handle, no sidecar
 * that checks out, or one that refused the call before settling anything.
 */
export const run = async (args: ReadonlyArray<string>): Promise<number | undefined> => {
  const env = process.env
  if (env.CORE_EXEC_FORWARD === "0") return undefined
  // Traces of exec are made in process.
  if (Object.keys(env).some((name) => name.startsWith("OTEL_"))) return undefined
  const flags = flagsOf(args)
  if (flags === undefined) return undefined
  let location: string
  // An empty --location is refused in process, with its reason.
  if (flags.location?.trim() === "") return undefined
  try {
    const absolute = resolve(flags.location ?? ".")
    if (!statSync(absolute).isDirectory()) return undefined
    location = realpathSync(absolute)
    // Named through a link, which a command may have left in place of a served Location it renamed away: in
    // process, where the name is resolved again once no command of that Location runs (Host.prepare).
    if (location !== absolute) return undefined
  } catch {
    return undefined
  }
  // node:os (a quarter of a millisecond to load) only where the data directory is the default one.
  const dataDir = resolve(env.CORE_DATA_DIR || join((require("node:os") as typeof import("node:os")).homedir(), ".local/share/core"))
  const found = candidates(dataDir, location)
  if (found.length === 0) return undefined
  // `--input -` is read only now that there is somewhere to forward to; in process reads the same text (./input-text).
  // Not JSON, or not UTF-8: in process says what is wrong.
  const given = await InputText.read(flags.input)
  if (!given.utf8) return undefined
  const parsed = Json.parseStrict(given.text)
  if (!parsed.ok) return undefined
  const input = parsed.value
  if (typeof input !== "object" || input === null || Array.isArray(input) || Json.findBadValue(input) !== undefined) return undefined
  for (const sidecar of found) {
    let turnID: string | undefined
    try {
      turnID = await turnFor(sidecar, flags.name, flags.agent)
    } catch {
      turnID = undefined
    }
    if (turnID === undefined) continue
    return settle({ sidecar, turnID, flags, input })
  }
  return undefined
}
