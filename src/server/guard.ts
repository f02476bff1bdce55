export * as Guard from "./guard"

// The connection guard in front of the sidecar's HTTP server. Bun.serve has no hook at accept, so on its own a local
// process could hold connections with half a request header until the process has no file descriptor left, and then
// nothing would be answered. The guard listens on the sidecar's address (Bun.listen), counts the descriptors its
// connections hold, and passes each connection's bytes to Bun.serve on a unix socket in a private directory. It
// keeps the read deadline itself: a connection is closed once its request has been arriving for the deadline
// without being released (Http's `release`: the request passed the checks and its body is in), and at its limit it
// closes the connection that has waited longest for its request, so a new one (health) is still answered.
//
// To know which connection a request came on, the guard frames the requests it passes (Content-Length or chunked
// bodies) and adds one header to each, X-Core-Connection; a client's own header of that name is dropped. Framing it
// cannot follow (both lengths, an unknown transfer coding, an upgrade) is passed on as it is, and that connection is
// never released: the deadline closes it. A released connection stays open until the client sends its next request.

/** The header naming the guard's connection a request came on. */
export const CONNECTION_HEADER = "x-core-connection"

/**
 * A request head longer than this is passed on as it is, unframed (Bun answers it with 431: this is Bun's own limit,
 * `--max-http-header-size`). It bounds what a connection holding half a header costs the guard.
 */
const MAX_HEAD_BYTES = 16 * 1024
/** A chunk-size or trailer line longer than this leaves the connection unframed. */
const MAX_LINE_BYTES = 4 * 1024
/** How often the deadline is checked, at most. */
const SWEEP_MS = 1_000
/** The descriptors a connection holds once it reaches the server: its own and both ends of the unix socket. */
const PASSED_DESCRIPTORS = 3
/**
 * How long a connection's unix socket is tried again when the server refuses it. Bun.serve queues 512 connections it
 * has not accepted yet and refuses more, and the guard connects as each connection's first request arrives: a burst
 * of requests on new connections passes that at once, and is answered once the server has accepted the queue.
 */
const BACKEND_RETRY_MS = 5_000
/** The pause before each try again, so that the server accepts what is queued in between. */
const BACKEND_RETRY_PAUSE_MS = 5

export interface Options {
  readonly hostname: string
  readonly port: number
  /** The unix socket Bun.serve listens on. */
  readonly backend: string
  /** The read deadline, in milliseconds. */
  readonly deadlineMs: number
  /** The descriptors all connections may hold together (theirs and their unix sockets'). */
  readonly maxDescriptors: number
  /** Writes a line for the operator (stderr). */
  readonly log: (line: string) => void
}

export interface Interface {
  readonly port: number
  /** Releases the connection a request came on from the read deadline, until its next request. */
  readonly release: (request: Request) => void
  /** Stops accepting connections; those open go on. */
  readonly stopAccepting: () => void
  /**
   * Stops the listener and closes the connections: each as soon as what the server sent it is passed on, any left
   * after `graceMs` at once.
   */
  readonly close: (graceMs: number) => Promise<void>
  /** The descriptors the connections hold now. */
  readonly descriptors: () => number
}

type Phase = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-end" | "trailer" | "opaque"

/**
 * Bytes held back until they are whole: a request head, or a chunk-size or trailer line. It grows by doubling and is
 * searched only where bytes were added, so a head sent a byte at a time costs its length, not its square.
 */
interface Held {
  bytes: Buffer
  length: number
}

interface Connection {
  readonly id: number
  readonly client: Bun.Socket<Connection>
  /** `x-core-connection: <id>\r\n`, the line the guard adds to each request head. */
  readonly header: Buffer
  backend: Bun.Socket<Connection> | undefined
  connecting: boolean
  toBackend: Array<Uint8Array>
  toClient: Array<Uint8Array>
  phase: Phase
  /** The request head so far, or the current chunk-size or trailer line. */
  pending: Held | undefined
  /** Bytes left of a body or chunk. */
  remaining: number
  /** When the deadline began, while not released. */
  armedAt: number | undefined
  /**
   * Whether a request on it was ever released (it passed the checks: the token). Until then its deadline runs from
   * its first byte whatever it sends: a request answered without the token (health, a refusal) starts no new one,
   * so asking again and again holds no connection for good.
   */
  trusted: boolean
  /** The connections armed before and after this one, while it is armed. */
  older: Connection | undefined
  newer: Connection | undefined
  /** When the guard began connecting to the server, while connecting. */
  connectingSince: number
  closed: boolean
  backendClosed: boolean
}

const CRLFCRLF = Buffer.from("\r\n\r\n")
const LF = 0x0a
const SPACE = 0x20
/**
 * The room first made for a held head or line; it doubles as needed, to at most MAX_HEAD_BYTES while it is held
 * (more only for the moment before a head that long is passed on).
 */
const HELD_BYTES = 256

/** The header fields the guard reads or drops, at the start of a line. */
const FIELDS = /\r\n(content-length|transfer-encoding|upgrade|x-core-connection)[ \t]*:([^\r]*)/gi
const FORGED = /\r\nx-core-connection[ \t]*:[^\r]*/gi
const DIGITS = /^\d{1,15}$/
const HEX = /^[0-9a-f]+$/i

/**
 * How a request head (`text`, through its blank line) frames its body: Content-Length or chunked, else nothing to
 * follow ("opaque": both lengths, lengths that differ, an unknown transfer coding, an upgrade, CONNECT). `forged`:
 * the head carries an X-Core-Connection of its own.
 */
const frame = (text: string): { readonly phase: Phase; readonly length: number; readonly forged: boolean } => {
  let length: string | undefined
  let lengthsAgree = true
  let codings = 0
  let coding = ""
  let upgrade = false
  let forged = false
  FIELDS.lastIndex = 0
  for (let match = FIELDS.exec(text); match !== null; match = FIELDS.exec(text)) {
    const name = match[1]!.toLowerCase()
    const value = match[2]!.trim()
    if (name === "content-length") {
      if (length === undefined) length = value
      else if (value !== length) lengthsAgree = false
    } else if (name === "transfer-encoding") {
      for (const part of value.toLowerCase().split(",")) {
        codings++
        coding = part
      }
    } else if (name === "upgrade") upgrade = true
    else forged = true
  }
  // The method is what comes before the first space.
  const connect = text.charCodeAt(7) === SPACE && text.slice(0, 7).toUpperCase() === "CONNECT"
  if (upgrade || connect) return { phase: "opaque", length: 0, forged }
  if (codings > 0) {
    return { phase: length === undefined && codings === 1 && coding.trim() === "chunked" ? "chunk-size" : "opaque", length: 0, forged }
  }
  if (length === undefined) return { phase: "head", length: 0, forged }
  if (!lengthsAgree || !DIGITS.test(length)) return { phase: "opaque", length: 0, forged }
  const bytes = Number(length)
  return { phase: bytes > 0 ? "length" : "head", length: bytes, forged }
}

/** A head whose client sent an X-Core-Connection: passed on without it, with the connection's own last. */
const withoutForged = (text: string, header: Buffer): Buffer =>
  Buffer.from(`${text.slice(0, -2).replace(FORGED, "")}${header.toString("latin1")}\r\n`, "latin1")

/** A connection just accepted: waiting for its request head, with no unix socket yet. */
const opened = (id: number, client: Bun.Socket<Connection>): Connection => ({
  id,
  client,
  header: Buffer.from(`${CONNECTION_HEADER}: ${id}\r\n`, "latin1"),
  backend: undefined,
  connecting: false,
  toBackend: [],
  toClient: [],
  phase: "head",
  pending: undefined,
  remaining: 0,
  armedAt: undefined,
  trusted: false,
  older: undefined,
  newer: undefined,
  connectingSince: 0,
  closed: false,
  backendClosed: false,
})

/** Adds `data[from, to)` to what is held (made if none), growing it as needed; answers the length held before. */
const hold = (connection: Connection, data: Buffer, from: number, to: number): number => {
  const held = (connection.pending ??= { bytes: Buffer.allocUnsafe(HELD_BYTES), length: 0 })
  const before = held.length
  const needed = before + to - from
  if (needed > held.bytes.length) {
    let size = held.bytes.length * 2
    while (size < needed) size *= 2
    size = Math.max(needed, Math.min(size, MAX_HEAD_BYTES))
    const grown = Buffer.allocUnsafe(size)
    held.bytes.copy(grown, 0, 0, before)
    held.bytes = grown
  }
  data.copy(held.bytes, before, from, to)
  held.length = needed
  return before
}

/** Writes a queue to a socket as far as it takes it; answers whether the queue is empty. */
const flush = (socket: Bun.Socket<Connection>, queue: Array<Uint8Array>): boolean => {
  while (queue.length > 0) {
    const bytes = queue[0]!
    const written = socket.write(bytes)
    if (written < bytes.length) {
      queue[0] = bytes.subarray(Math.max(written, 0))
      return false
    }
    queue.shift()
  }
  return true
}

/**
 * The part of `bytes` from `from` to `to`, to keep in a queue: a copy when the guard reuses `bytes` (`gathered`), else
 * a view (the bytes Bun hands over are the handler's own, and so are buffers the guard made for them).
 */
const kept = (bytes: Uint8Array, from: number, to: number): Uint8Array =>
  bytes === gathered ? Buffer.from(bytes.subarray(from, to)) : bytes.subarray(from, to)

/**
 * Writes `bytes[offset, offset + length)` on to a socket after what is queued for it; what it does not take now is
 * kept in the queue, and `source` paused until it drains.
 */
const forward = (
  to: Bun.Socket<Connection>,
  queue: Array<Uint8Array>,
  bytes: Uint8Array,
  offset: number,
  length: number,
  source: Bun.Socket<Connection>,
) => {
  if (queue.length > 0) {
    queue.push(kept(bytes, offset, offset + length))
    return
  }
  const written = offset === 0 && length === bytes.length ? to.write(bytes) : to.write(bytes, offset, length)
  if (written < length) {
    queue.push(kept(bytes, offset + Math.max(written, 0), offset + length))
    source.pause()
  }
}

/** The handlers of a connection's unix socket to the server: what the server sends goes on to the client. */
const backendSocket = (on: {
  /** Tries the connection's unix socket again after a refusal; answers false once it is too late. */
  readonly retry: (connection: Connection) => boolean
  readonly dropBackend: (connection: Connection) => void
  readonly close: (connection: Connection) => void
  readonly log: (line: string) => void
}): Bun.SocketHandler<Connection> => ({
  open: (socket) => {
    const connection = socket.data
    connection.connecting = false
    if (connection.closed || connection.backendClosed) {
      socket.terminate()
      return
    }
    connection.backend = socket
    if (flush(socket, connection.toBackend)) connection.client.resume()
  },
  data: (socket, data) => {
    const connection = socket.data
    if (connection.closed) return
    forward(connection.client, connection.toClient, data, 0, data.length, socket)
  },
  drain: (socket) => {
    const connection = socket.data
    if (flush(socket, connection.toBackend)) connection.client.resume()
  },
  end: (socket) => {
    socket.end()
  },
  close: (socket) => {
    const connection = socket.data
    on.dropBackend(connection)
    if (!connection.closed && connection.toClient.length === 0) connection.client.end()
  },
  connectError: (socket, error) => {
    const connection = socket.data
    if (!connection.closed && on.retry(connection)) return
    on.dropBackend(connection)
    connection.connecting = false
    if (!connection.closed) on.log(`core: cannot reach the HTTP server: ${error.message}`)
    on.close(connection)
  },
})

/**
 * What a client sent, as it is to be passed on: runs of its bytes as they are, the guard's own bytes between them
 * (each head's X-Core-Connection), and none of what is held back (a partial head). The runs are offsets, not views:
 * a view of the bytes Bun hands over costs more than copying them (it gives them a buffer of their own).
 */
interface Output {
  data: Buffer
  /** Runs of `data` as start and end offsets, each followed by the guard's bytes at the same index in `inserts`. */
  readonly runs: Array<number>
  readonly inserts: Array<Uint8Array | undefined>
  /** Where the run of `data` not yet in `runs` begins. */
  from: number
}

/** Ends the current run at `at` and adds the guard's `bytes`; the next run begins at `next`. */
const splice = (out: Output, at: number, bytes: Uint8Array | undefined, next: number) => {
  out.runs.push(out.from, Math.max(at, out.from))
  out.inserts.push(bytes)
  out.from = next
}

/**
 * Takes the request head in `head[start, end)` (through its blank line): its framing becomes the connection's phase,
 * and its bytes go out with the connection's header added (a forged one dropped). `at` is where the head is in the
 * output's data, or, for a head that was held, where in the data it ended.
 */
const takeFramed = (connection: Connection, head: Buffer, start: number, end: number, out: Output, held: boolean, at: number) => {
  const text = head.toString("latin1", start, end)
  const framed = frame(text)
  connection.phase = framed.phase
  connection.remaining = framed.length
  if (framed.forged) splice(out, held ? out.from : at, withoutForged(text, connection.header), held ? at : at + end - start)
  else if (held) {
    // The held head (a copy) with the header before its blank line; the blank line itself is in neither.
    splice(out, out.from, Buffer.concat([head.subarray(start, end - 2), connection.header, CRLFCRLF.subarray(2)]), at)
  } else splice(out, at + end - start - 2, connection.header, at + end - start - 2)
}

/**
 * Takes a request head from the data at `offset`: framed once whole (or, past MAX_HEAD_BYTES, passed on as it is);
 * a partial head is held. `arm` starts the deadline when a head begins. Answers the offset after what it took.
 */
const takeHead = (connection: Connection, out: Output, offset: number, arm: (connection: Connection) => void): number => {
  const data = out.data
  if (connection.pending === undefined) {
    arm(connection)
    const end = data.indexOf(CRLFCRLF, offset)
    if (end >= 0) {
      takeFramed(connection, data, offset, end + 4, out, false, offset)
      return end + 4
    }
    if (data.length - offset > MAX_HEAD_BYTES) connection.phase = "opaque"
    else {
      hold(connection, data, offset, data.length)
      splice(out, offset, undefined, data.length)
    }
    return data.length
  }
  const before = hold(connection, data, offset, data.length)
  const held = connection.pending
  const end = held.bytes.subarray(0, held.length).indexOf(CRLFCRLF, Math.max(0, before - 3))
  if (end >= 0) {
    connection.pending = undefined
    const consumed = end + 4 - before
    splice(out, offset, undefined, offset)
    takeFramed(connection, held.bytes, 0, end + 4, out, true, offset + consumed)
    return offset + consumed
  }
  if (held.length > MAX_HEAD_BYTES) {
    // Passed on as it is: what was held, then this data.
    connection.pending = undefined
    connection.phase = "opaque"
    splice(out, offset, held.bytes.subarray(0, before), offset)
  } else splice(out, offset, undefined, data.length)
  return data.length
}

/** Takes what is left of a Content-Length body or a chunk's data; answers the offset after it. */
const takeBody = (connection: Connection, data: Buffer, offset: number): number => {
  const take = Math.min(connection.remaining, data.length - offset)
  connection.remaining -= take
  if (connection.remaining === 0) connection.phase = connection.phase === "length" ? "head" : "chunk-end"
  return offset + take
}

/**
 * Takes a chunk-size, chunk-end or trailer line, passed on as it arrives (or, past MAX_LINE_BYTES, leaves the
 * connection unframed); a partial line is held too, to read once whole. Answers the offset after what it took.
 */
const takeLine = (connection: Connection, data: Buffer, offset: number): number => {
  const newline = data.indexOf(LF, offset)
  const stop = newline < 0 ? data.length : newline + 1
  if (newline < 0 || connection.pending !== undefined) hold(connection, data, offset, stop)
  const held = connection.pending
  if (newline < 0) {
    if (held!.length > MAX_LINE_BYTES) {
      connection.pending = undefined
      connection.phase = "opaque"
    }
    return stop
  }
  connection.pending = undefined
  const text = (held === undefined ? data.toString("latin1", offset, stop) : held.bytes.toString("latin1", 0, held.length)).trim()
  if (connection.phase === "chunk-end") connection.phase = "chunk-size"
  else if (connection.phase === "trailer") {
    if (text === "") connection.phase = "head"
  } else {
    const digits = text.split(";", 1)[0]!.trim()
    const size = Number.parseInt(digits, 16)
    if (!HEX.test(digits) || !Number.isSafeInteger(size)) connection.phase = "opaque"
    else if (size === 0) connection.phase = "trailer"
    else {
      connection.phase = "chunk-data"
      connection.remaining = size
    }
  }
  return stop
}

/** Follows the requests in what a client sent, phase by phase, gathering what to pass on in `out`. */
const frameInto = (connection: Connection, out: Output, arm: (connection: Connection) => void) => {
  const data = out.data
  let offset = 0
  while (offset < data.length && !connection.closed) {
    switch (connection.phase) {
      case "head":
        offset = takeHead(connection, out, offset, arm)
        break
      case "length":
      case "chunk-data":
        offset = takeBody(connection, data, offset)
        break
      case "chunk-size":
      case "chunk-end":
      case "trailer":
        offset = takeLine(connection, data, offset)
        break
      case "opaque":
        return
    }
  }
}

/**
 * Where what a client sent is put together with the guard's headers before it is written on, when it fits; the
 * bytes are written (or copied to a queue) before the next data arrives, so one buffer serves every connection.
 */
const GATHER_BYTES = 64 * 1024
const gathered = Buffer.allocUnsafe(GATHER_BYTES)

/** The one output: what the client sent is framed and written on before the next data arrives. */
const output: Output = { data: gathered, runs: [], inserts: [], from: 0 }

/** How long the output is, put together. */
const joinedLength = (out: Output): number => {
  const { runs, inserts } = out
  let length = out.data.length - out.from
  for (let index = 0; index < inserts.length; index++) {
    length += runs[2 * index + 1]! - runs[2 * index]! + (inserts[index]?.length ?? 0)
  }
  return length
}

/**
 * Puts the runs and the guard's bytes together at the start of `into`, then the rest of the data from `out.from` unless
 * `tail` is false; and empties the output.
 */
const join = (out: Output, into: Buffer, tail: boolean) => {
  const { data, runs, inserts } = out
  let at = 0
  for (let index = 0; index < inserts.length; index++) {
    at += data.copy(into, at, runs[2 * index]!, runs[2 * index + 1]!)
    const bytes = inserts[index]
    if (bytes !== undefined) {
      into.set(bytes, at)
      at += bytes.length
    }
  }
  if (tail) data.copy(into, at, out.from)
  out.data = gathered
  runs.length = 0
  inserts.length = 0
}

/** Listens on `options.hostname:port` and passes connections to the server on `options.backend`. */
export const listen = (options: Options): Interface => {
  const connections = new Map<number, Connection>()
  /** The ends of the list of connections under the deadline, by when it began (linked by `older` and `newer`). */
  let oldest: Connection | undefined
  let newest: Connection | undefined
  let nextID = 1
  let descriptors = 0
  /** Called once no connection is left, while closing. */
  let emptied: (() => void) | undefined

  /** Takes a connection off the deadline. */
  const disarm = (connection: Connection) => {
    if (connection.armedAt === undefined) return
    const { older, newer } = connection
    if (older === undefined) oldest = newer
    else older.newer = newer
    if (newer === undefined) newest = older
    else newer.older = older
    connection.older = undefined
    connection.newer = undefined
    connection.armedAt = undefined
  }

  /** Starts a connection's deadline (again, once it was ever released), last in the list. */
  const arm = (connection: Connection) => {
    if (connection.armedAt !== undefined && !connection.trusted) return
    const now = performance.now()
    if (connection !== newest) {
      disarm(connection)
      connection.older = newest
      if (newest === undefined) oldest = connection
      else newest.newer = connection
      newest = connection
    }
    connection.armedAt = now
  }

  /** Lets go of a connection's bookkeeping and its unix socket, once (the descriptors count at once). */
  const drop = (connection: Connection) => {
    if (connection.closed) return
    connection.closed = true
    connections.delete(connection.id)
    disarm(connection)
    descriptors -= 1
    if (connections.size === 0) emptied?.()
    connection.toBackend = []
    connection.toClient = []
    dropBackend(connection)
    connection.backend?.terminate()
  }

  const dropBackend = (connection: Connection) => {
    if (connection.backendClosed || (connection.backend === undefined && !connection.connecting)) return
    connection.backendClosed = true
    descriptors -= PASSED_DESCRIPTORS - 1
  }

  const close = (connection: Connection) => {
    if (connection.closed) return
    drop(connection)
    connection.client.terminate()
  }

  /** The connection to close for room: the longest waiting for its request, else the longest unreleased. */
  const evictable = (except: Connection): Connection | undefined => {
    let fallback: Connection | undefined
    for (let connection = oldest; connection !== undefined; connection = connection.newer) {
      if (connection === except || connection.closed) continue
      if (connection.phase === "head") return connection
      fallback ??= connection
    }
    return fallback
  }

  /** Passes `bytes[offset, offset + length)` on to the server, connecting to it first if need be. */
  const toBackend = (connection: Connection, bytes: Uint8Array, offset: number, length: number) => {
    if (length === 0 || connection.backendClosed) return
    const backend = connection.backend
    if (backend === undefined) {
      connection.toBackend.push(kept(bytes, offset, offset + length))
      if (!connection.connecting) connectBackend(connection)
      return
    }
    forward(backend, connection.toBackend, bytes, offset, length, connection.client)
  }

  const dial = (connection: Connection) => {
    Bun.connect<Connection>({ unix: options.backend, data: connection, socket: backendHandlers }).catch(() => {
      // connectError has tried again or closed the client.
    })
  }

  // While it waits, the connection still counts its unix socket's descriptors, and stays under the read deadline.
  const retry = (connection: Connection) => {
    if (performance.now() - connection.connectingSince >= BACKEND_RETRY_MS) return false
    setTimeout(() => {
      if (!connection.closed && !connection.backendClosed) dial(connection)
    }, BACKEND_RETRY_PAUSE_MS)
    return true
  }

  const backendHandlers = backendSocket({ retry, dropBackend, close, log: options.log })

  const connectBackend = (connection: Connection) => {
    connection.connecting = true
    connection.connectingSince = performance.now()
    connection.client.pause()
    descriptors += PASSED_DESCRIPTORS - 1
    dial(connection)
  }

  /** Frames what the client sent and passes it on, in one write: the data itself when it is passed on unchanged. */
  const fromClient = (connection: Connection, data: Buffer) => {
    const out = output
    out.data = data
    out.from = 0
    out.runs.length = 0
    out.inserts.length = 0
    frameInto(connection, out, arm)
    if (out.inserts.length === 0) {
      out.data = gathered
      if (out.from < data.length) toBackend(connection, data, out.from, data.length - out.from)
      return
    }
    // The rest of a large read (a body after its head) is written after the head, not copied with it.
    const from = out.from
    const tail = data.length - from
    const apart = tail > GATHER_BYTES
    const length = joinedLength(out) - (apart ? tail : 0)
    const into = length > GATHER_BYTES ? Buffer.allocUnsafe(length) : gathered
    join(out, into, !apart)
    toBackend(connection, into, 0, length)
    if (apart) toBackend(connection, data, from, tail)
  }

  /** Takes a new connection in, making room for it by closing the one waiting longest (or itself, if none can go). */
  const admit = (client: Bun.Socket<Connection>) => {
    const connection = opened(nextID++, client)
    client.data = connection
    connections.set(connection.id, connection)
    descriptors += 1
    arm(connection)
    while (descriptors + PASSED_DESCRIPTORS - 1 > options.maxDescriptors) {
      const evicted = evictable(connection)
      if (evicted === undefined) break
      close(evicted)
    }
    if (descriptors + PASSED_DESCRIPTORS - 1 > options.maxDescriptors) close(connection)
  }

  const listener = Bun.listen<Connection>({
    hostname: options.hostname,
    port: options.port,
    socket: {
      open: admit,
      data: (client, data) => fromClient(client.data, data),
      drain: (client) => {
        const connection = client.data
        if (connection.backend === undefined) return
        if (flush(client, connection.toClient)) {
          if (connection.backendClosed) client.end()
          else connection.backend.resume()
        }
      },
      end: (client) => {
        // The client sent all it will; a request in flight is still answered (the server closes its side after).
        const connection = client.data
        if (connection.backend === undefined || connection.backendClosed) client.end()
      },
      close: (client) => drop(client.data),
      error: (_client, error) => options.log(`core: connection failed: ${error.message}`),
    },
  })

  const sweep = setInterval(
    () => {
      const now = performance.now()
      while (oldest !== undefined && now - oldest.armedAt! >= options.deadlineMs) {
        const connection = oldest
        disarm(connection)
        close(connection)
      }
    },
    Math.min(SWEEP_MS, Math.max(50, options.deadlineMs / 4)),
  )
  sweep.unref?.()

  return {
    port: listener.port,
    release: (request) => {
      const connection = connections.get(Number(request.headers.get(CONNECTION_HEADER)))
      if (connection === undefined) return
      connection.trusted = true
      disarm(connection)
    },
    stopAccepting: () => listener.stop(false),
    close: async (graceMs) => {
      clearInterval(sweep)
      listener.stop(false)
      const empty = new Promise<void>((resolve) => (emptied = resolve))
      // The server has closed its side: what it sent is read and passed on, then each connection ends.
      for (const connection of connections.values()) {
        const idle = connection.backend === undefined && !connection.connecting
        if ((idle || connection.backendClosed) && connection.toClient.length === 0) connection.client.end()
      }
      if (connections.size > 0) await Promise.race([empty, Bun.sleep(graceMs)])
      for (const connection of [...connections.values()]) close(connection)
      listener.stop(true)
    },
    descriptors: () => descriptors,
  }
}
