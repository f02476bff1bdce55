export * as PipeEnd from "./pipe-end"

// The ends of a pipe (Native.pipe) that core keeps. A read end is a stream of what its writers wrote: read through
// Bun's file reader, which waits for a pipe without holding the thread, and closed once read to its end, failed, or
// cancelled; one never read is closed once it is collected. A write end is written through Bun's file writer, which
// waits for a full pipe without holding the thread, and closed once ended and what was written has gone (or cannot
// go: every reader is gone). Bun's reader and writer work on copies of the descriptor, which they close as they end;
// the descriptor itself is core's to close.

import { Native } from "./native"

interface Held {
  readonly fd: number
  open: boolean
}

interface State extends Held {
  /** Whether Bun's reader was made: from then on, only its end or a cancel closes the descriptor. */
  read: boolean
}

const close = (state: Held) => {
  if (!state.open) return
  state.open = false
  Native.close(state.fd)
}

const unread = new FinalizationRegistry<State>((state) => {
  if (!state.read) close(state)
})

/** The read end `fd` as a stream; the stream owns it from now on. */
export const stream = (fd: number): ReadableStream<Uint8Array> => {
  const state: State = { fd, read: false, open: true }
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  const outer = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (reader === undefined) {
          state.read = true
          reader = Bun.file(fd).stream().getReader() as unknown as ReadableStreamDefaultReader<Uint8Array>
        }
        let next: { readonly done: boolean; readonly value?: Uint8Array | undefined }
        try {
          next = await reader.read()
        } catch (cause) {
          close(state)
          throw cause
        }
        if (next.done) {
          close(state)
          controller.close()
        } else controller.enqueue(next.value!)
      },
      async cancel(reason) {
        try {
          await reader?.cancel(reason)
        } finally {
          close(state)
        }
      },
    },
    { highWaterMark: 0 },
  )
  unread.register(outer, state)
  return outer
}

/** What core writes to a pipe: Bun's file writer's `write` and `flush`, and an `end` that lets the pipe go. */
export interface Sink {
  /** Queues `chunk` (a promise when Bun writes it at once and must wait for room). */
  readonly write: (chunk: string | Uint8Array) => number | Promise<number>
  /** Writes what is queued: a number when it all went at once, else a promise, which fails once no reader is left. */
  readonly flush: () => number | Promise<number>
  /** Ends the writing: the descriptor is closed once what was queued has gone or cannot go. Ending again does nothing. */
  readonly end: () => void
}

/** The write end `fd` as a Sink; the sink owns it from now on. */
export const sink = (fd: number): Sink => {
  const state: Held = { fd, open: true }
  const writer = Bun.file(fd).writer()
  let ended = false
  return {
    write: (chunk) => writer.write(chunk),
    flush: () => writer.flush(),
    end: () => {
      if (ended) return
      ended = true
      // Not before the writer is done with it: were Bun ever to write through this descriptor itself, one closed
      // under a pending write could be a new file's by the time the write is made.
      let done: number | Promise<number>
      try {
        done = writer.end()
      } catch {
        close(state)
        return
      }
      if (typeof done === "number") close(state)
      else void done.then(() => close(state), () => close(state))
    },
  }
}
