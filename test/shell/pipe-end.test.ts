// The read end of a pipe as a stream (what a supervised command writes to): read whole, its descriptor closed at the
// end; cancelled while a writer still holds the pipe, closed at once (the writer then gets EPIPE rather than
// blocking for good); never read, closed once collected. The write end as a sink (what an MCP server reads): written
// without holding the thread, closed once ended and drained, or once no reader is left. A descriptor core kept open
// per command would run a sidecar out of them; one closed under a pending write would lose what was written.

import { describe, expect, test } from "bun:test"
import { existsSync, readlinkSync } from "node:fs"
import { Native } from "../../src/shell/native"
import { PipeEnd } from "../../src/shell/pipe-end"
import { openOn } from "../support/descriptors"

const pipe = (): readonly [number, number] => {
  const ends = Native.pipe()
  if (typeof ends === "number") throw new Error(`pipe2 failed (${ends})`)
  return ends
}

const isOpen = (fd: number) => existsSync(`/proc/self/fd/${fd}`)

/** How many of this process's descriptors lead to the pipe `fd` is an end of (Bun's own copies too). */
const holding = (fd: number) => {
  const pipe = readlinkSync(`/proc/self/fd/${fd}`)
  return () => openOn(pipe)
}

describe("PipeEnd.stream", () => {
  test("reads what a process wrote, to its end, without holding the thread, and closes the descriptor", async () => {
    const [read, write] = pipe()
    const child = Bun.spawn(["sh", "-c", "echo one; sleep 0.3; head -c 3000000 /dev/zero"], { stdin: "ignore", stdout: write, stderr: "inherit" })
    Native.close(write)
    let ticks = 0
    const timer = setInterval(() => ticks++, 20)
    const bytes = await new Response(PipeEnd.stream(read)).bytes()
    clearInterval(timer)
    expect(await child.exited).toBe(0)
    expect(bytes.length).toBe(4 + 3_000_000)
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("one\n")
    // The loop kept turning while the pipe was empty for 0.3 s.
    expect(ticks).toBeGreaterThan(5)
    expect(isOpen(read)).toBe(false)
  })

  test("cancelled while a writer still holds the pipe, it closes the descriptor and the writer is told", async () => {
    const [read, write] = pipe()
    const child = Bun.spawn(["sh", "-c", "yes"], { stdin: "ignore", stdout: write, stderr: "ignore" })
    Native.close(write)
    const reader = PipeEnd.stream(read).getReader()
    expect((await reader.read()).done).toBe(false)
    await reader.cancel()
    expect(isOpen(read)).toBe(false)
    // `yes` ends on the broken pipe (SIGPIPE) instead of blocking on a pipe nobody reads.
    const ended = await Promise.race([child.exited.then(() => "ended"), Bun.sleep(10_000).then(() => "blocked")])
    if (ended !== "ended") child.kill("SIGKILL")
    expect(ended).toBe("ended")
  })

  test("a stream never read closes its descriptor once collected", async () => {
    const [read, write] = pipe()
    Native.close(write)
    ;(() => {
      PipeEnd.stream(read)
    })()
    for (let round = 0; round < 50 && isOpen(read); round++) {
      Bun.gc(true)
      await Bun.sleep(10)
    }
    expect(isOpen(read)).toBe(false)
  })
})

describe("PipeEnd.sink", () => {
  test("writes to a process that reads slowly without holding the thread, and closes once ended and drained", async () => {
    const [read, write] = pipe()
    const child = Bun.spawn(["sh", "-c", "sleep 0.3; wc -c"], { stdin: read, stdout: "pipe", stderr: "inherit" })
    Native.close(read)
    const held = holding(write)
    const sink = PipeEnd.sink(write)
    let ticks = 0
    const timer = setInterval(() => ticks++, 20)
    sink.write(new Uint8Array(3_000_000).fill(0x61))
    const flushed = sink.flush()
    // More than a pipe holds: the rest waits for the reader, and ending now must not cut it off.
    expect(typeof flushed).not.toBe("number")
    sink.end()
    sink.end()
    // Every byte arrived: nothing was closed under a pending write.
    expect((await new Response(child.stdout).text()).trim()).toBe("3000000")
    clearInterval(timer)
    expect(await flushed).toBeGreaterThan(0)
    // The loop turned while the reader slept.
    expect(ticks).toBeGreaterThan(5)
    expect(await child.exited).toBe(0)
    for (let round = 0; round < 100 && held() > 0; round++) await Bun.sleep(10)
    expect(held()).toBe(0)
  })

  test("once no reader is left, a pending write fails rather than waiting for good, and end closes the descriptor", async () => {
    const [read, write] = pipe()
    const held = holding(write)
    const sink = PipeEnd.sink(write)
    sink.write(new Uint8Array(1_000_000).fill(0x61))
    const flushed = sink.flush()
    expect(typeof flushed).not.toBe("number")
    Native.close(read)
    const failed = await Promise.resolve(flushed).then(
      () => "flushed",
      (cause: { code?: string }) => cause.code,
    )
    expect(failed).toBe("EPIPE")
    sink.end()
    for (let round = 0; round < 100 && held() > 0; round++) await Bun.sleep(10)
    expect(held()).toBe(0)
  })
})
