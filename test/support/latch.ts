export * as Latch from "./latch"

// A gate a test holds shut and a tool waits at, in this process or another (the compiled binary): a loopback HTTP
// server of the test's own, whose requests are answered only once the test releases it. The tool awaits
// `fetch(latch.url)`; the test awaits `entered()` to know the tool is at the gate, then calls `release()`. A test
// opens it with `await using`, so it is released and closed when the test ends, passed or failed: nothing hangs.

export interface Interface extends AsyncDisposable {
  /** Where a tool waits: a GET here is answered once the latch is released. */
  readonly url: string
  /** How many requests have arrived so far (a tool entered the gate that many times). */
  readonly arrivals: () => number
  /** Resolves once `count` requests have arrived: a tool is waiting at the gate. */
  readonly entered: (count?: number) => Promise<void>
  /** Answers every waiting request, and every later one at once. */
  readonly release: () => void
  /** Releases, then stops the server. */
  readonly close: () => Promise<void>
}

/** A latch on a loopback port of its own, shut until `release`; open it with `await using`. */
export const open = (): Interface => {
  const released = Promise.withResolvers<void>()
  let arrived = 0
  const waiters: Array<{ readonly count: number; readonly resolve: () => void }> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A tool may wait at the gate for as long as the test takes: the connection must not time out meanwhile.
    idleTimeout: 0,
    fetch: async () => {
      arrived++
      for (const waiter of waiters.filter((waiter) => arrived >= waiter.count)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
      await released.promise
      return new Response("open")
    },
  })
  let closing: Promise<void> | undefined
  const latch: Interface = {
    url: `http://127.0.0.1:${server.port}/`,
    arrivals: () => arrived,
    entered: (count = 1) =>
      arrived >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve })),
    release: () => released.resolve(),
    close: () =>
      (closing ??= (async () => {
        released.resolve()
        // Not forced: the requests just released are answered before the server goes.
        await server.stop()
      })()),
    [Symbol.asyncDispose]: () => latch.close(),
  }
  return latch
}
