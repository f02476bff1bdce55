// What a call costs the server answered as JSON against answered as a server-sent event stream: the compiled
// `core serve` (durable SQLite store, one turn, a trivial echo tool), batches of 1,000 concurrent calls, each a fresh
// (sessionID, toolCallID), the same call posted to `/v1/turns/{turnID}/calls` with or without
// `Accept: text/event-stream`. The figure is the server process's CPU (user + system, from /proc/<pid>/stat, read
// before and after each batch) per call; the client is this process, and its CPU is not counted. Batches of the two
// forms alternate, A B B A, so drift falls on both, and each round's SSE/JSON ratio is taken within the round.
//
// The client is a bare HTTP/1.1 client over 1,000 kept-alive sockets (Bun.connect), opened before measuring and
// each first used in small groups: a thousand connections arriving at once would measure connection set-up, not the
// answer's form. Each batch writes one
// request on every socket and reads every answer to its end (an event stream until its final event and the
// chunked body's end), so the server does all its work. Where the open-file limit (the server's or this process's)
// holds fewer connections, the batches are smaller, and a note says so. With `--base BINARY` (a compiled core of an
// earlier build) that server is measured beside this build's in the same rounds, taking turns going first.

import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Server } from "../src/server/server"
import { buildCore, cleanup, ECHO_TOOL, duration, firstLine, main, median, progress, ratio, type Report, summarize } from "./measure"

/** Calls in flight per batch, unless an open-file limit holds fewer connections (then as many as it holds). */
const WANTED = 1_000
/** Descriptors this process keeps for everything but its sockets. */
const CLIENT_RESERVE = 256
/** Rounds of one batch of each form; their order alternates, so the batches run A B B A. */
const ROUNDS = 10
/** Sockets opened, and first used, at a time: under the backlog of the server's listener and of its backend. */
const OPEN_GROUP = 100
const INPUT = { text: "hello" }
const CRLF2 = "\r\n\r\n"

type Form = "json" | "sse"
const FORMS: ReadonlyArray<Form> = ["json", "sse"]
const LABEL: Record<Form, string> = { json: "JSON", sse: "event stream" }

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ). */
const clockTicks = (): number => {
  const answer = Bun.spawnSync(["getconf", "CLK_TCK"], { stdout: "pipe", stderr: "ignore" })
  const ticks = Number(answer.stdout.toString().trim())
  return answer.exitCode === 0 && Number.isInteger(ticks) && ticks > 0 ? ticks : 100
}

/** The open-file (soft) limit of a process, as Bun left it (it raises the soft limit to the hard one at start). */
const openFiles = (pid: number | "self"): number => {
  const line = readFileSync(`/proc/${pid}/limits`, "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("Max open files"))
  const limit = Number(line?.split(/\s+/)[3])
  return Number.isFinite(limit) ? limit : Number.POSITIVE_INFINITY
}

/** The CPU a process has used (user + system, its own threads, not its children's), in milliseconds. */
const cpuMs = (pid: number, ticks: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticks
}

/** One answer read off a socket: its status and its body, de-chunked. */
interface Answer {
  readonly status: number
  readonly body: string
}

/**
 * The end of an HTTP/1.1 answer in `text` (latin1), or undefined while it is incomplete: a Content-Length body or a
 * chunked one up to its last chunk.
 */
const parseAnswer = (text: string): Answer | undefined => {
  const headEnd = text.indexOf(CRLF2)
  if (headEnd < 0) return undefined
  const head = text.slice(0, headEnd).toLowerCase()
  const status = Number(head.slice(9, 12))
  let at = headEnd + 4
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head)
  if (length !== null) {
    const end = at + Number(length[1])
    return text.length < end ? undefined : { status, body: text.slice(at, end) }
  }
  if (!/\r\ntransfer-encoding:\s*chunked/.test(head)) return undefined
  let body = ""
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at)
    if (lineEnd < 0) return undefined
    const size = Number.parseInt(text.slice(at, lineEnd), 16)
    if (size === 0) return text.indexOf(CRLF2, lineEnd - 2) < 0 ? undefined : { status, body }
    const dataEnd = lineEnd + 2 + size
    if (text.length < dataEnd + 2) return undefined
    body += text.slice(lineEnd + 2, dataEnd)
    at = dataEnd + 2
  }
}

/** The status of the settlement an answer of `form` holds ("none" when it holds none). */
const settled = (form: Form, answer: Answer): string => {
  if (answer.status !== 200) return `HTTP ${answer.status}`
  try {
    if (form === "json") return (JSON.parse(answer.body) as { status?: string }).status ?? "none"
    // The stream's last event must be the settlement.
    const events = answer.body.trim().split("\n\n")
    const last = events[events.length - 1] ?? ""
    const data = /^event: settlement\ndata: (.*)$/.exec(last)?.[1]
    return data === undefined ? `last event: ${last.slice(0, 80)}` : ((JSON.parse(data) as { status?: string }).status ?? "none")
  } catch {
    return "unreadable"
  }
}

interface Connection {
  socket: Bun.Socket<Connection> | undefined
  received: string
  waiting: ((answer: Answer | Error) => void) | undefined
}

/** Kept-alive sockets to the server, each carrying one request at a time. */
const connections = async (hostname: string, port: number, count: number) => {
  const all: Array<Connection> = Array.from({ length: count }, () => ({ socket: undefined, received: "", waiting: undefined }))
  const settle = (connection: Connection, outcome: Answer | Error) => {
    const waiting = connection.waiting
    connection.waiting = undefined
    connection.received = ""
    waiting?.(outcome)
  }
  const open = (connection: Connection) =>
    Bun.connect<Connection>({
      hostname,
      port,
      data: connection,
      socket: {
        data: (socket, bytes) => {
          const connection = socket.data
          connection.received += bytes.toString("latin1")
          const answer = parseAnswer(connection.received)
          if (answer !== undefined) settle(connection, answer)
        },
        close: (socket) => {
          socket.data.socket = undefined
          settle(socket.data, new Error("the server closed the connection"))
        },
        error: (socket, error) => settle(socket.data, error),
      },
    }).then((socket) => {
      connection.socket = socket
    })
  /** Opens the sockets that are not open, OPEN_GROUP at a time. */
  const reopen = async () => {
    const closed = all.filter((connection) => connection.socket === undefined)
    for (let at = 0; at < closed.length; at += OPEN_GROUP) await Promise.all(closed.slice(at, at + OPEN_GROUP).map(open))
    return closed.length
  }
  await reopen()
  return {
    all,
    reopen,
    /** Writes `request` on `connection` and answers what comes back. */
    send: (connection: Connection, request: string): Promise<Answer | Error> =>
      new Promise((resolve) => {
        const socket = connection.socket
        if (socket === undefined) return resolve(new Error("the connection is closed"))
        connection.waiting = resolve
        connection.received = ""
        const bytes = Buffer.from(request)
        // Requests are a few hundred bytes: a socket takes them whole, or the call is counted as failed.
        if (socket.write(bytes) !== bytes.length) settle(connection, new Error("the request was not written whole"))
      }),
    close: () => {
      for (const connection of all) connection.socket?.end()
    },
  }
}

/** Spawns `core serve` and answers its ready line. */
const serve = async (binary: string, location: string, root: string) => {
  const child = Bun.spawn([binary, "serve", "--location", location, "--log-level", "warn"], {
    env: { ...process.env, CORE_DATA_DIR: join(root, "data"), CORE_HOME: join(root, "home") },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  })
  return { child, ready: JSON.parse(await firstLine(child, "core serve")) as { url: string; token: string } }
}

interface Batch {
  readonly calls: number
  readonly cpuMs: number
  readonly wallMs: number
  readonly success: number
  readonly failures: Map<string, number>
}

/** `--base BINARY`: a compiled core (an earlier build) measured beside this one, in the same rounds. */
const baseBinary = (): string | undefined => {
  const at = process.argv.indexOf("--base")
  return at < 0 ? undefined : process.argv[at + 1]
}

/** One server under measure: its process, its kept-alive sockets and its calls. */
const setUp = async (label: string, binary: string, location: string, root: string, wanted: number) => {
  const { child, ready } = await serve(binary, location, join(root, label.replaceAll(/\W+/g, "-")))
  const stopServer = async () => {
    child.kill("SIGTERM")
    await child.exited
  }
  try {
    const url = new URL(ready.url)
    const turn = await fetch(`${ready.url}/v1/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${ready.token}`, "content-type": "application/json" },
      body: "{}",
    })
    const { turnID } = (await turn.json()) as { turnID: string }
    // The server holds a connection with three descriptors (see Server.connectionDescriptors), this process with one.
    const serverLimit = openFiles(child.pid)
    const clientLimit = openFiles("self")
    const concurrency = Math.min(
      wanted,
      Math.floor(Server.connectionDescriptors(serverLimit) / 3) - OPEN_GROUP,
      clientLimit - CLIENT_RESERVE,
    )
    if (concurrency < OPEN_GROUP) throw new Error(`open-file limits too low (server ${serverLimit}, here ${clientLimit})`)
    progress(`serve-sse: ${label}: opening ${concurrency} connections`)
    const pool = await connections(url.hostname, Number(url.port), concurrency)
    let next = 0
    const request = (form: Form): string => {
      const index = next++
      const body = JSON.stringify({
        sessionID: `ses_${form}_${index}`,
        assistantMessageID: "msg_bench",
        toolCallID: `call_${form}_${index}`,
        name: "echo",
        input: INPUT,
      })
      return (
        `POST /v1/turns/${turnID}/calls HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${ready.token}\r\n` +
        `Content-Type: application/json\r\n${form === "sse" ? "Accept: text/event-stream\r\n" : ""}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      )
    }
    const ticks = clockTicks()
    /** One call on each of `targets`, all at once; the server's CPU over the batch. */
    const batch = async (form: Form, targets: ReadonlyArray<Connection>): Promise<Batch> => {
      const requests = targets.map(() => request(form))
      const cpuBefore = cpuMs(child.pid, ticks)
      const started = performance.now()
      const answers = await Promise.all(targets.map((connection, at) => pool.send(connection, requests[at]!)))
      const wallMs = performance.now() - started
      const cpu = cpuMs(child.pid, ticks) - cpuBefore
      const failures = new Map<string, number>()
      let success = 0
      for (const answer of answers) {
        const status = answer instanceof Error ? answer.message : settled(form, answer)
        if (status === "success") success++
        else failures.set(status, (failures.get(status) ?? 0) + 1)
      }
      return { calls: targets.length, cpuMs: cpu, wallMs, success, failures }
    }
    return {
      label,
      pool,
      concurrency,
      serverLimit,
      clientLimit,
      ticks,
      batch,
      stop: async () => {
        pool.close()
        await stopServer()
      },
    }
  } catch (cause) {
    await stopServer()
    throw cause
  }
}

const failed = (label: string, result: Batch) =>
  new Error(
    `${label}: ${result.calls - result.success} of ${result.calls} calls did not settle success (` +
      `${[...result.failures].map(([status, count]) => `${count} × ${status}`).join(", ")})`,
  )

export const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-serve-sse-"))
  const stops: Array<() => Promise<void>> = []
  try {
    progress("serve-sse: building the binary (build.ts --outfile)")
    const binary = await buildCore(join(root, "core"))
    const location = join(root, "location")
    mkdirSync(join(location, "tools"), { recursive: true })
    writeFileSync(join(location, "tools", "echo.ts"), ECHO_TOOL)
    const base = baseBinary()
    // With a base build, each server gets half the connections this process may hold.
    const wanted = base === undefined ? WANTED : Math.min(WANTED, Math.floor((openFiles("self") - CLIENT_RESERVE) / 2))
    const servers = []
    for (const [label, path] of [["this build", binary], ...(base === undefined ? [] : [["base", base]])] as const) {
      const server = await setUp(label, path, location, root, wanted)
      stops.push(server.stop)
      servers.push(server)
    }
    const concurrency = Math.min(...servers.map((server) => server.concurrency))

    // Each socket's first request connects it through to the server: a group at a time, then one full batch of each
    // form to warm up.
    for (const server of servers) {
      progress(`serve-sse: ${server.label}: warming up (a call on every connection, then a batch of each form)`)
      for (let at = 0; at < concurrency; at += OPEN_GROUP) {
        const warm = await server.batch(FORMS[(at / OPEN_GROUP) % 2]!, server.pool.all.slice(at, at + OPEN_GROUP))
        if (warm.success !== warm.calls) throw failed("warm-up", warm)
      }
      for (const form of FORMS) {
        const warm = await server.batch(form, server.pool.all.slice(0, concurrency))
        if (warm.success !== warm.calls) throw failed(`warm-up (${LABEL[form]})`, warm)
      }
    }

    const measured = servers.map(() => ({ batches: { json: [], sse: [] } as Record<Form, Array<Batch>>, ratios: [] as Array<number> }))
    let reopened = 0
    for (let round = 0; round < ROUNDS; round++) {
      const order: ReadonlyArray<Form> = round % 2 === 0 ? FORMS : [...FORMS].reverse()
      // With a base build, the two servers take turns going first.
      const turns = servers.map((_, index) => (index + round) % servers.length)
      progress(`serve-sse: round ${round + 1}/${ROUNDS} (${order.map((form) => LABEL[form]).join(", then ")})`)
      for (const index of turns) {
        const server = servers[index]!
        const { batches, ratios } = measured[index]!
        for (const form of order) {
          reopened += await server.pool.reopen()
          Bun.gc(true)
          const result = await server.batch(form, server.pool.all.slice(0, concurrency))
          if (result.success !== result.calls) throw failed(`${server.label}, round ${round + 1} (${LABEL[form]})`, result)
          batches[form].push(result)
        }
        ratios.push(batches.sse[round]!.cpuMs / batches.json[round]!.cpuMs)
      }
    }
    for (const stop of stops.splice(0).reverse()) await stop()

    const tables = servers.flatMap((server, index) => {
      const { batches, ratios } = measured[index]!
      const perCall = (form: Form) => summarize(batches[form].map((result) => result.cpuMs / concurrency))
      const wall = (form: Form) => summarize(batches[form].map((result) => result.wallMs))
      const spread = summarize(ratios)
      const settledCount = (form: Form) => batches[form].reduce((total, result) => total + result.success, 0)
      const which = servers.length > 1 ? `${server.label}: ` : ""
      return [
        {
          title: `${which}server CPU per call (${ROUNDS} batches of ${concurrency} concurrent calls per form)`,
          columns: ["answer", "CPU per call (median)", "min – max", "wall per batch (median)", "min – max", "settled success"],
          rows: FORMS.map((form) => [
            LABEL[form],
            duration(perCall(form).p50),
            `${duration(perCall(form).min)} – ${duration(perCall(form).max)}`,
            duration(wall(form).p50),
            `${duration(wall(form).min)} – ${duration(wall(form).max)}`,
            `${settledCount(form)} of ${ROUNDS * concurrency}`,
          ]),
        },
        {
          title: `${which}event stream / JSON, server CPU per call (per round)`,
          columns: ["ratio (median of rounds)", "min – max", "rounds"],
          rows: [
            [ratio(spread.p50), `${ratio(spread.min)} – ${ratio(spread.max)}`, ratios.map((value) => value.toFixed(2)).join(" ")],
          ],
        },
      ]
    })
    if (servers.length > 1) {
      const cpu = (index: number, form: Form) => median(measured[index]!.batches[form].map((result) => result.cpuMs))
      tables.push({
        title: "this build / base, server CPU per call (median of batches)",
        columns: ["answer", "this build / base"],
        rows: FORMS.map((form) => [LABEL[form], ratio(cpu(0, form) / cpu(1, form))]),
      })
    }
    const first = servers[0]!
    return {
      name: "serve-sse: server CPU per call, JSON vs event stream",
      about:
        `core serve (compiled, Bun ${Bun.version}${base === undefined ? "" : `; beside the base build ${base}`}): a trivial ` +
        `tool, ${concurrency} concurrent calls per batch, each a fresh call; the server process's CPU (user + system from ` +
        `/proc) per call answered as JSON and as an event stream, ${ROUNDS} rounds, batches A B B A.`,
      tables,
      targets: [],
      notes: [
        ...(concurrency < WANTED
          ? [
              `${concurrency} calls per batch, not ${WANTED}: the open-file limit (ulimit -n: the server's ${first.serverLimit}, ` +
                `this process's ${first.clientLimit}${base === undefined ? "" : ", shared by two servers"}) holds no more ` +
                `connections; raise it to measure ${WANTED}`,
            ]
          : []),
        `no target: a figure to follow. CPU is read from /proc/<pid>/stat at ${first.ticks} ticks a second ` +
          `(${duration(1000 / first.ticks)} resolution; a JSON batch used a median of ` +
          `${duration(median(measured[0]!.batches.json.map((result) => result.cpuMs)))} of it)`,
        `the client is a bare HTTP/1.1 client on ${concurrency} kept-alive sockets per server, opened and first used ` +
          `${OPEN_GROUP} at a time before measuring, so that connection set-up is not measured` +
          (reopened > 0 ? ` (${reopened} closed by the server between batches and opened again)` : ""),
        "every call is recorded durably (intent and settlement); the event stream carries only its settlement event " +
          "(the echo tool reports no progress and asks nothing)",
      ],
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
