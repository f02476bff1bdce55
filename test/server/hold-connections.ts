// A hostile local process without the token, for test/server/edges.test.ts: opens COUNT raw connections to
// 127.0.0.1:PORT and holds them, a third each sending nothing, half a request header (then a byte a second) or a
// request with a body that trickles a byte a second. Prints one JSON line once every connection is open, and one
// once the server has closed them all (or once they all ended otherwise, with how many the server never closed).
// With KIND ("silent", "partial" or "body", or "all"), every connection is of that kind; with SOURCE, they are made
// from that loopback address (Linux gives connect() about 14,000 fast ports per source and destination).
//
//   bun test/server/hold-connections.ts PORT HOST COUNT [KIND] [SOURCE]

import { connect } from "node:net"

const [port, host, count] = [Number(process.argv[2]), process.argv[3]!, Number(process.argv[4])]
const ALL_KINDS = ["silent", "partial header", "slow body"] as const
const only = ALL_KINDS.find((kind) => kind.startsWith(process.argv[5] ?? "-"))
const KINDS = only === undefined ? ALL_KINDS : [only]
const source = process.argv[6]

let connected = 0
let closed = 0
let failed = 0
const report = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`)

const done = () => {
  if (connected + failed === count && closed === connected) {
    report({ closed, failed })
    process.exit(0)
  }
}

/** Connections being opened at once, at most: more would overflow the server's accept queue and wait on SYN retries. */
const OPENING = 500
let started = 0
const openNext = () => {
  while (started < count && started - connected - failed < OPENING) hold(started++)
}

const hold = (index: number) => {
  const kind = KINDS[index % KINDS.length]!
  let trickle: ReturnType<typeof setInterval> | undefined
  let open = false
  const socket = connect({ port, host: "127.0.0.1", ...(source === undefined ? {} : { localAddress: source }) })
  // TCP keep-alive probes carry no data: a connection the server's accept queue dropped (the client still thinks
  // it is open) is reset by the server's kernel and ends here, instead of seeming held forever.
  socket.setKeepAlive(true, 1_000)
  socket.once("connect", () => {
    open = true
    if (kind === "partial header") {
      socket.write(`GET /v1/turns HTTP/1.1\r\nHost: ${host}\r\n`)
      trickle = setInterval(() => socket.write("X"), 1_000)
    } else if (kind === "slow body") {
      socket.write(`POST /v1/turns HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 100000\r\n\r\n{`)
      trickle = setInterval(() => socket.write(" "), 1_000)
    }
    if (++connected + failed === count) report({ connected, failed })
    openNext()
  })
  socket.on("error", () => {})
  socket.on("close", () => {
    clearInterval(trickle)
    if (!open) {
      if (++failed + connected === count) report({ connected, failed })
      openNext()
    } else closed++
    done()
  })
}

openNext()
