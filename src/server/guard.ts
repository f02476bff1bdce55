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

interface Connection {
  readonly id: number
  readonly client: Bun.Socket<Connection>
  backend: Bun.Socket<Connection> | undefined
  connecting: boolean
  toBackend: Array<Uint8Array>
  toClient: Array<Uint8Array>
  phase: Phase
  /** The request head so far, or the current chunk-size or trailer line. */
  pending: Buffer | undefined
  /** Bytes left of a body or chunk. */
  remaining: number
  /** When the deadline began, while not released. */
  armedAt: number | undefined
  /** When the guard began connecting to the server, while connecting. */
  connectingSince: number
  closed: boolean
  backendClosed: boolean
}

const CRLFCRLF = Buffer.from("\r\n\r\n")
const LF = 0x0a

/** The header fields the guard reads or drops, at the start of a line. */
const FIELDS = /\r\n(content-length|transfer-encoding|upgrade|x-core-connection)[ \t]*:([^\r]*)/gi

/** How a request head frames its body, and the head to pass on (with the connection's header). */
const frame = (head: Buffer, id: number): { readonly head: Buffer; readonly phase: Phase; readonly length: number } => {
  const text = head.toString("latin1")
  const lengths: Array<string> = []
  const codings: Array<string> = []
  let upgrade = false
  let forged = false
  for (const match of text.matchAll(FIELDS)) {
    const name = match[1]!.toLowerCase()
    const value = match[2]!.trim()
    if (name === "content-length") lengths.push(value)
    else if (name === "transfer-encoding") codings.push(...value.toLowerCase().split(","))
    else if (name === "upgrade") upgrade = true
    else forged = true
  }
  const method = text.slice(0, text.indexOf(" ")).toUpperCase()
  let phase: Phase = "head"
  let length = 0
  if (upgrade || method === "CONNECT") phase = "opaque"
  else if (codings.length > 0) {
    phase = lengths.length === 0 && codings.length === 1 && codings[0]!.trim() === "chunked" ? "chunk-size" : "opaque"
  } else if (lengths.length > 0) {
    length = Number(lengths[0])
    if (!lengths.every((value) => value === lengths[0] && /^\d{1,15}$/.test(value))) phase = "opaque"
    else if (length > 0) phase = "length"
  }
  // The connection's header goes last; a client's own of that name is dropped.
  const kept = forged ? text.slice(0, -2).replace(/\r\nx-core-connection[ \t]*:[^\r]*/gi, "") : text.slice(0, -2)
  return { head: Buffer.from(`${kept}${CONNECTION_HEADER}: ${id}\r\n\r\n`, "latin1"), phase, length }
}

/** A connection just accepted: waiting for its request head, with no unix socket yet. */
const opened = (id: number, client: Bun.Socket<Connection>): Connection => ({
  id,
  client,
  backend: undefined,
  connecting: false,
  toBackend: [],
  toClient: [],
  phase: "head",
  pending: undefined,
  remaining: 0,
  armedAt: undefined,
  connectingSince: 0,
  closed: false,
  backendClosed: false,
})

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
 * Writes bytes on to a socket after what is queued for it; what it does not take now is queued, and `source` paused
 * until it drains.
 */
const forward = (to: Bun.Socket<Connection>, queue: Array<Uint8Array>, bytes: Uint8Array, source: Bun.Socket<Connection>) => {
  if (queue.length > 0) {
    queue.push(Buffer.from(bytes))
    return
  }
  const written = to.write(bytes)
  if (written < bytes.length) {
    queue.push(Buffer.from(bytes.subarray(Math.max(written, 0))))
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
    forward(connection.client, connection.toClient, data, socket)
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
 * Takes a request head from `data` at `offset` into `out`, framed (or, past MAX_HEAD_BYTES, as it is); keeps a
 * partial head in `pending`. `arm` starts the deadline when a head begins. Answers the offset after what it took.
 */
const takeHead = (
  connection: Connection,
  data: Buffer,
  offset: number,
  out: Array<Uint8Array>,
  arm: (connection: Connection) => void,
): number => {
  const before = connection.pending
  if (before === undefined) arm(connection)
  const head = before === undefined ? data.subarray(offset) : Buffer.concat([before, data.subarray(offset)])
  const end = head.indexOf(CRLFCRLF, Math.max(0, (before?.length ?? 0) - 3))
  if (end < 0) {
    if (head.length > MAX_HEAD_BYTES) {
      connection.pending = undefined
      connection.phase = "opaque"
      out.push(head)
    } else connection.pending = Buffer.from(head)
    return data.length
  }
  const consumed = end + 4 - (before?.length ?? 0)
  connection.pending = undefined
  const framed = frame(head.subarray(0, end + 4), connection.id)
  connection.phase = framed.phase
  connection.remaining = framed.length
  out.push(framed.head)
  return offset + consumed
}

/** Takes what is left of a Content-Length body or a chunk's data; answers the offset after it. */
const takeBody = (connection: Connection, data: Buffer, offset: number, out: Array<Uint8Array>): number => {
  const take = Math.min(connection.remaining, data.length - offset)
  out.push(data.subarray(offset, offset + take))
  connection.remaining -= take
  if (connection.remaining === 0) connection.phase = connection.phase === "length" ? "head" : "chunk-end"
  return offset + take
}

/**
 * Takes a chunk-size, chunk-end or trailer line (or, past MAX_LINE_BYTES, leaves the connection unframed); keeps a
 * partial line in `pending`. Answers the offset after what it took.
 */
const takeLine = (connection: Connection, data: Buffer, offset: number, out: Array<Uint8Array>): number => {
  const newline = data.indexOf(LF, offset)
  const stop = newline < 0 ? data.length : newline + 1
  const piece = data.subarray(offset, stop)
  out.push(piece)
  const line = connection.pending === undefined ? piece : Buffer.concat([connection.pending, piece])
  if (newline < 0) {
    if (line.length > MAX_LINE_BYTES) {
      connection.pending = undefined
      connection.phase = "opaque"
    } else connection.pending = Buffer.from(line)
    return stop
  }
  connection.pending = undefined
  const text = line.toString("latin1").trim()
  if (connection.phase === "chunk-end") connection.phase = "chunk-size"
  else if (connection.phase === "trailer") {
    if (text === "") connection.phase = "head"
  } else {
    const size = Number.parseInt(text.split(";", 1)[0]!.trim(), 16)
    if (!/^[0-9a-f]+$/i.test(text.split(";", 1)[0]!.trim()) || !Number.isSafeInteger(size)) {
      connection.phase = "opaque"
    } else if (size === 0) connection.phase = "trailer"
    else {
      connection.phase = "chunk-data"
      connection.remaining = size
    }
  }
  return stop
}

/** Follows the requests in what a client sent, phase by phase, pushing the bytes to pass on into `out`. */
const frameInto = (
  connection: Connection,
  data: Buffer,
  out: Array<Uint8Array>,
  arm: (connection: Connection) => void,
) => {
  let offset = 0
  while (offset < data.length && !connection.closed) {
    switch (connection.phase) {
      case "head":
        offset = takeHead(connection, data, offset, out, arm)
        break
      case "length":
      case "chunk-data":
        offset = takeBody(connection, data, offset, out)
        break
      case "chunk-size":
      case "chunk-end":
      case "trailer":
        offset = takeLine(connection, data, offset, out)
        break
      case "opaque":
        out.push(data.subarray(offset))
        return
    }
  }
}

/** Listens on `options.hostname:port` and passes connections to the server on `options.backend`. */
export const listen = (options: Options): Interface => {
  const connections = new Map<number, Connection>()
  /** Connections under the deadline, by when it began (oldest first). */
  const armed = new Map<number, Connection>()
  let nextID = 1
  let descriptors = 0
  /** Called once no connection is left, while closing. */
  let emptied: (() => void) | undefined

  const arm = (connection: Connection) => {
    armed.delete(connection.id)
    connection.armedAt = performance.now()
    armed.set(connection.id, connection)
  }

  /** Lets go of a connection's bookkeeping and its unix socket, once (the descriptors count at once). */
  const drop = (connection: Connection) => {
    if (connection.closed) return
    connection.closed = true
    connections.delete(connection.id)
    armed.delete(connection.id)
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
    for (const connection of armed.values()) {
      if (connection === except || connection.closed) continue
      if (connection.phase === "head") return connection
      fallback ??= connection
    }
    return fallback
  }

  const toBackend = (connection: Connection, bytes: Uint8Array) => {
    if (bytes.length === 0 || connection.backendClosed) return
    const backend = connection.backend
    if (backend === undefined) {
      connection.toBackend.push(Buffer.from(bytes))
      if (!connection.connecting) connectBackend(connection)
      return
    }
    forward(backend, connection.toBackend, bytes, connection.client)
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

  /** Frames what the client sent and passes it on, in one write. */
  const fromClient = (connection: Connection, data: Buffer) => {
    const out: Array<Uint8Array> = []
    frameInto(connection, data, out, arm)
    if (out.length === 1) toBackend(connection, out[0]!)
    else if (out.length > 1) toBackend(connection, Buffer.concat(out))
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
      for (const connection of armed.values()) {
        if (now - connection.armedAt! < options.deadlineMs) break
        armed.delete(connection.id)
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
      armed.delete(connection.id)
      connection.armedAt = undefined
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
