export * as OtlpWorker from "./otlp-worker"

// The sending thread (started by ./otlp-sender's `thread`): it reads chunks of span records from the ring it shares
// with the thread that settles calls, makes each into an OTLP request body (./otlp-record, ./otlp-wire) and sends it
// (./otlp-sender's `make`), counting what became of the spans in the ring's header. It reads what the ring holds,
// lets its requests be answered, looks again every POLL_MS while chunks come and sleeps on the ring once none came for
// a while, to be woken by the next chunk. A chunk it cannot read is dropped with a count.

import { OtlpRead } from "./otlp-read"
import { OtlpSender } from "./otlp-sender"
import { OtlpWire } from "./otlp-wire"

/** This thread as a worker sees itself: its messages, and how it answers. */
const port = globalThis as unknown as {
  onmessage: (event: MessageEvent<OtlpSender.Order>) => void
  postMessage: (message: unknown) => void
}

let header: Int32Array
let ring: Uint8Array
let view: DataView
let sender: OtlpSender.Sender
let batch: OtlpWire.Batch
let startedAt = 0
/** How often the ring is looked at while chunks come, and how many looks find nothing before the thread sleeps. */
const POLL_MS = 1
const IDLE_POLLS = 200

let timer: ReturnType<typeof setImmediate> | ReturnType<typeof setTimeout> | undefined
let closed = false
let idle = 0

const left = (spans: number): void => {
  Atomics.add(header, OtlpSender.LEFT, spans)
}

const report = (result: OtlpSender.Result): void => {
  if (result.accepted) Atomics.add(header, OtlpSender.SENT, result.spans)
  else Atomics.add(header, OtlpSender.DROPPED, result.spans)
  if (result.accepted || result.failed) Atomics.add(header, OtlpSender.REQUESTS, 1)
  if (result.failed) Atomics.add(header, OtlpSender.FAILURES, 1)
  Atomics.store(header, OtlpSender.PAUSED, result.pausedUntil === 0 ? 0 : Math.max(1, result.pausedUntil - startedAt))
  Atomics.add(header, OtlpSender.DONE, result.spans)
}

/** A chunk of `spans` records as a request body handed to the sender; dropped with a count when it cannot be read. */
const send = (chunk: Uint8Array, spans: number): void => {
  let body: Uint8Array<ArrayBuffer> | string
  try {
    OtlpRead.addTo(chunk, batch)
    body = batch.take()
  } catch {
    batch.take()
    left(spans)
    report({ spans, accepted: false, failed: false, pausedUntil: 0 })
    return
  }
  sender.post(body, spans)
}

/** Sends the chunks the ring held when it was looked at (not those written meanwhile: requests are answered first). */
const drain = (): boolean => {
  let head = Atomics.load(header, OtlpSender.HEAD)
  const tail = Atomics.load(header, OtlpSender.TAIL)
  if (head === tail) return false
  while (head !== tail) {
    if (ring.length - head < OtlpSender.ENTRY_BYTES || view.getUint32(head, true) === OtlpSender.WRAPPED) {
      head = 0
      continue
    }
    const length = view.getUint32(head, true)
    const spans = view.getUint32(head + 4, true)
    // Copied out before its room is given back.
    const chunk = ring.slice(head + OtlpSender.ENTRY_BYTES, head + OtlpSender.ENTRY_BYTES + length)
    head += OtlpSender.ENTRY_BYTES + length
    if (head === ring.length) head = 0
    Atomics.store(header, OtlpSender.HEAD, head)
    send(chunk, spans)
  }
  return true
}

/**
 * Sends what the ring holds, then looks again on the next turn; while chunks come, every POLL_MS; sleeps on the ring
 * after IDLE_POLLS looks found it empty. (Woken from its sleep by a notify, which costs the settling thread tens of
 * microseconds: a chunk comes every few milliseconds while calls are settled, and finds it looking.)
 */
const look = (): void => {
  timer = undefined
  if (closed) return
  if (drain()) {
    idle = 0
    timer = setImmediate(look)
    return
  }
  if (++idle < IDLE_POLLS) {
    timer = setTimeout(look, POLL_MS)
    return
  }
  // Said before the ring is read once more: a chunk written after that read finds the flag set and notifies.
  Atomics.store(header, OtlpSender.SLEEPING, 1)
  const seen = Atomics.load(header, OtlpSender.TAIL)
  const waited = Atomics.waitAsync(header, OtlpSender.TAIL, seen)
  const woken = () => {
    Atomics.store(header, OtlpSender.SLEEPING, 0)
    idle = 0
    look()
  }
  if (waited.async) void waited.value.then(woken)
  else woken()
}

port.onmessage = async (event) => {
  const order = event.data
  if (order.kind === "start") {
    header = new Int32Array(order.shared, 0, OtlpSender.HEADER_BYTES / 4)
    ring = new Uint8Array(order.shared, OtlpSender.HEADER_BYTES)
    view = new DataView(order.shared, OtlpSender.HEADER_BYTES)
    startedAt = order.startedAt
    batch = OtlpWire.batch(order.encoding.protocol, order.encoding.source)
    sender = OtlpSender.make(order.options, report, left)
    look()
  } else {
    closed = true
    if (timer !== undefined) {
      clearImmediate(timer as ReturnType<typeof setImmediate>)
      clearTimeout(timer as ReturnType<typeof setTimeout>)
    }
    drain()
    await sender.close(order.deadline)
    port.postMessage({ kind: "closed" })
  }
}
