// The thread webfetch converts HTML on: a page converted there, a conversion past its budget or cancelled ended with
// its thread (the next page gets another), and the thread that settles calls free all the while.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { HtmlThread } from "../../src/builtin/html-thread"
import { inChild } from "../support/in-child"

const NESTED_LISTS = `${"<ul><li>".repeat(900)}${"x<br>".repeat(2_000)}${"</li></ul>".repeat(900)}`
const order = (html: string, format: "markdown" | "text" = "markdown") => ({ html, url: "https://example.com/dir/", format })

/** Ticks of a 10 ms timer on this thread while `work` runs. */
const ticking = async <A>(work: () => Promise<A>): Promise<{ readonly result: A; readonly ticks: number; readonly ms: number }> => {
  let ticks = 0
  const timer = setInterval(() => ticks++, 10)
  const started = performance.now()
  const result = await work()
  clearInterval(timer)
  return { result, ticks, ms: performance.now() - started }
}

describe("HtmlThread", () => {
  test("converts a page to markdown or text on its thread, links made absolute", async () => {
    expect(await HtmlThread.convert(order('<title>T</title><h1>Hi</h1><p>see <a href="a">a</a></p>'))).toEqual({
      kind: "converted",
      converted: { title: "T", content: "# Hi\n\nsee [a](https://example.com/dir/a)" },
    })
    expect(await HtmlThread.convert(order("<p>one</p><p>two</p>", "text"))).toEqual({ kind: "converted", converted: { content: "one\n\ntwo" } })
  })

  test("past its budget the conversion is ended, and this thread's timers kept firing meanwhile", async () => {
    const { result, ticks, ms } = await ticking(() => HtmlThread.convert(order(NESTED_LISTS), undefined, 1_000))
    expect(result).toEqual({ kind: "slow" })
    expect(ms).toBeGreaterThanOrEqual(1_000)
    expect(ms).toBeLessThan(5_000)
    expect(ticks).toBeGreaterThan(ms / 10 / 4)
    // The next page gets a thread of its own: the one ended is not reused.
    expect(await HtmlThread.convert(order("<p>after</p>", "text"))).toEqual({ kind: "converted", converted: { content: "after" } })
  })

  // Each thread holds its page's DOM: many large pages at once must not take every thread (and the memory) there is.
  test("at most MAX_THREADS pages convert at once, the rest in turn", async () => {
    expect(HtmlThread.MAX_THREADS).toBe(2)
    const started = performance.now()
    const ends = await Promise.all(
      [0, 1, 2].map(() => HtmlThread.convert(order(NESTED_LISTS), undefined, 600).then((outcome) => [outcome.kind, performance.now() - started] as const)),
    )
    expect(ends.map(([kind]) => kind)).toEqual(["slow", "slow", "slow"])
    // The third waited for a turn: its budget ran from then.
    expect(ends[2]![1]).toBeGreaterThanOrEqual(1_200)
    expect(Math.max(ends[0]![1], ends[1]![1])).toBeLessThan(1_200)
  })

  // In a process of its own, where nothing else runs: the threads ended past their budget work no more.
  test("a thread ended past its budget stops working: its process is idle in the second after", async () => {
    const used = await inChild(`
      import { HtmlThread } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/html-thread.ts"))}
      const html = ${JSON.stringify(NESTED_LISTS)}
      const ends = await Promise.all([0, 1].map(() => HtmlThread.convert({ html, url: "https://example.com/", format: "markdown" }, undefined, 500)))
      const before = process.cpuUsage()
      await Bun.sleep(1_000)
      const used = process.cpuUsage(before)
      console.log(JSON.stringify({ kinds: ends.map((end) => end.kind), ms: (used.user + used.system) / 1_000 }))
    `)
    expect(used).toMatchObject({ kinds: ["slow", "slow"] })
    // A thread still converting would use the whole second.
    expect((used as { ms: number }).ms).toBeLessThan(400)
  }, 30_000)

  test("a cancelled conversion ends at once, its thread with it", async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const { result, ms } = await ticking(() => HtmlThread.convert(order(NESTED_LISTS), controller.signal))
    expect(result).toEqual({ kind: "failed", message: "cancelled" })
    expect(ms).toBeLessThan(2_000)
    expect(await HtmlThread.convert(order("<p>next</p>", "text"))).toEqual({ kind: "converted", converted: { content: "next" } })
  })

  test("a conversion cancelled while it waits for its turn ends at once, and takes no turn", async () => {
    const busy = [0, 1].map(() => HtmlThread.convert(order(NESTED_LISTS), undefined, 1_500))
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const { result, ms } = await ticking(() => HtmlThread.convert(order("<p>late</p>", "text"), controller.signal))
    expect(result).toEqual({ kind: "failed", message: "cancelled" })
    expect(ms).toBeLessThan(1_000)
    expect(await Promise.all(busy)).toEqual([{ kind: "slow" }, { kind: "slow" }])
    expect(await HtmlThread.convert(order("<p>next</p>", "text"))).toEqual({ kind: "converted", converted: { content: "next" } })
  })

  test("markup nested too deeply for the converters' recursion is answered as such", async () => {
    expect(await HtmlThread.convert(order(`${"<div>".repeat(10_000)}deep${"</div>".repeat(10_000)}`))).toEqual({ kind: "deep" })
  })
})
