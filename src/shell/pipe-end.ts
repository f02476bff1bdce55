export * as PipeEnd from "./pipe-end"

// The read end of a pipe (Native.pipe) as a stream of what its writers wrote: read through Bun's file reader, which
// waits for a pipe without holding the thread, and closed once read to its end, failed, or cancelled. Bun closes
// no descriptor it did not open. A stream never read is closed once it is collected.

import { Native } from "./native"

interface State {
  readonly fd: number
  /** Whether Bun's reader was made: from then on, only its end or a cancel closes the descriptor. */
  read: boolean
  open: boolean
}

const close = (state: State) => {
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
