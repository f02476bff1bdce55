export * as OtlpWorker from "./otlp-worker"

// The sending thread (started by ./otlp-sender's `thread`): it reads chunks of span records from the ring it shares
// with the thread that settles calls, makes each into an OTLP request body (./otlp-record, ./otlp-wire) and sends it
// (./otlp-sender's `make`), counting what became of the spans in the ring's header. It looks at the ring every
// POLL_MS while chunks come, and sleeps on it after IDLE_POLLS looks found nothing, to be woken by the next chunk. A
// chunk it cannot read is dropped with a count.

import { OtlpRecord } from "./otlp-record"
import { OtlpSender } from "./otlp-sender"
import { OtlpWire } from "./otlp-wire"

/** This thread as a worker sees itself: its messages, and how it answers. */
const port = globalThis as unknown as {
  onmessage: (event: MessageEvent<OtlpSender.Order>) => void
  postMessage: (message: unknown) => void
}

const POLL_MS = 10
const IDLE_POLLS = 100

let header: Int32Array
let ring: Uint8Array
let view: DataView
let sender: OtlpSender.Sender
let batch: OtlpWire.Batch
let startedAt = 0
let timer: ReturnType<typeof setTimeout> | undefined
let closed = false
let idle = 0

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
    OtlpRecord.addTo(chunk, batch)
    body = batch.take()
  } catch {
    batch.take()
    report({ spans, accepted: false, failed: false, pausedUntil: 0 })
    return
  }
  sender.post(body, spans)
}

const drain = (): boolean => {
  let head = Atomics.load(header, OtlpSender.HEAD)
  let found = false
  while (head !== Atomics.load(header, OtlpSender.TAIL)) {
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
    found = true
  }
  return found
}

const look = (): void => {
  timer = undefined
  if (closed) return
  idle = drain() ? 0 : idle + 1
  if (idle < IDLE_POLLS) {
    timer = setTimeout(look, POLL_MS)
    return
  }
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
    sender = OtlpSender.make(order.options, report)
    look()
  } else {
    closed = true
    if (timer !== undefined) clearTimeout(timer)
    drain()
    await sender.close(order.deadline)
    port.postMessage({ kind: "closed" })
  }
}
