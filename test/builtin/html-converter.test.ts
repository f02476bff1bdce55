// The process webfetch converts HTML in: a page converted there, a conversion past its budget or cancelled ended
// with its process (the next page gets another), and the thread that settles calls free all the while.

import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { HtmlConverter } from "../../src/builtin/html-converter"
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

describe("HtmlConverter", () => {
  test("a converter past its memory is ended and the page fails saying so; the next page converts", async () => {
    // Line breaks by the hundred thousand: the DOM and turndown take hundreds of bytes each.
    const outcome = await HtmlConverter.convert(order(`<p>${"x<br>".repeat(400_000)}</p>`), { budgetMs: 20_000, maxBytes: 64 * 1024 * 1024 })
    expect(outcome).toEqual({ kind: "failed", message: "converting it took more than 64 MiB of memory" })
    expect(await HtmlConverter.convert(order("<p>one</p>", "text"))).toEqual({ kind: "converted", converted: { content: "one" } })
  }, 60_000)

  test("links made absolute grow a page by at most a mebibyte; past it they stay as written, and the page says so", async () => {
    // The page's server chooses its URL: a path of 3,000 characters, and 10,000 relative links.
    const long = { html: `<p>${'<a href="a">b</a> '.repeat(10_000)}</p>`, url: `https://example.com/${"p".repeat(3_000)}/page`, format: "markdown" as const }
    const outcome = await HtmlConverter.convert(long)
    if (outcome.kind !== "converted") throw new Error(`not converted: ${JSON.stringify(outcome)}`)
    const { content } = outcome.converted
    expect(content.length).toBeLessThan(1024 * 1024 + 200_000)
    expect(content).toContain(`[b](${long.url.replace(/page$/, "a")})`)
    expect(content).toContain("[b](a)")
    expect(content).toMatch(/\((\d+) more links and images are left as the page wrote them, relative to the page's URL\.\)$/)
  }, 60_000)

  test("converts a page to markdown or text in its process, links made absolute", async () => {
    expect(await HtmlConverter.convert(order('<title>T</title><h1>Hi</h1><p>see <a href="a">a</a></p>'))).toEqual({
      kind: "converted",
      converted: { title: "T", content: "# Hi\n\nsee [a](https://example.com/dir/a)" },
    })
    expect(await HtmlConverter.convert(order("<p>one</p><p>two</p>", "text"))).toEqual({ kind: "converted", converted: { content: "one\n\ntwo" } })
  })

  test("past its budget the conversion is ended, and this thread's timers kept firing meanwhile", async () => {
    const { result, ticks, ms } = await ticking(() => HtmlConverter.convert(order(NESTED_LISTS), { budgetMs: 1_000 }))
    expect(result).toEqual({ kind: "slow" })
    expect(ms).toBeGreaterThanOrEqual(1_000)
    expect(ms).toBeLessThan(5_000)
    expect(ticks).toBeGreaterThan(ms / 10 / 4)
    // The next page gets a thread of its own: the one ended is not reused.
    expect(await HtmlConverter.convert(order("<p>after</p>", "text"))).toEqual({ kind: "converted", converted: { content: "after" } })
  })

  // Each thread holds its page's DOM: many large pages at once must not take every thread (and the memory) there is.
  test("at most MAX_PROCESSES pages convert at once, the rest in turn", async () => {
    expect(HtmlConverter.MAX_PROCESSES).toBe(2)
    const started = performance.now()
    const ends = await Promise.all(
      [0, 1, 2].map(() => HtmlConverter.convert(order(NESTED_LISTS), { budgetMs: 600 }).then((outcome) => [outcome.kind, performance.now() - started] as const)),
    )
    expect(ends.map(([kind]) => kind)).toEqual(["slow", "slow", "slow"])
    // The third waited for a turn: its budget ran from then.
    expect(ends[2]![1]).toBeGreaterThanOrEqual(1_200)
    expect(Math.max(ends[0]![1], ends[1]![1])).toBeLessThan(1_200)
  })

  // A thread cannot be stopped inside one regular expression (turndown's inline-code rule takes time quadratic in a
  // long run of spaces: minutes for a page of a few hundred KB); a process can. Measured in a process of its own,
  // where nothing else runs: a converter still at work there would use the whole second after.
  test("a conversion stuck in one regular expression is ended past its budget, and works no more", async () => {
    const measured = await inChild(`
      import { existsSync, readdirSync, readFileSync } from "node:fs"
      import { HtmlConverter } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/html-converter.ts"))}
      const stuck = "<p><code><br>" + "a ".repeat(400_000) + "a</code></p>"
      const started = performance.now()
      const outcome = await HtmlConverter.convert({ html: stuck, url: "https://example.com/", format: "markdown" }, { budgetMs: 1_000 })
      const took = performance.now() - started
      const before = process.cpuUsage()
      await Bun.sleep(1_000)
      const used = process.cpuUsage(before)
      const converters = readdirSync("/proc").filter((pid) => {
        try {
          return readFileSync("/proc/" + pid + "/cmdline", "utf8").includes("__convert-html")
            && readFileSync("/proc/" + pid + "/stat", "utf8").split(") ")[1].split(" ")[1] === String(process.pid)
        } catch {
          return false
        }
      })
      console.log(JSON.stringify({ kind: outcome.kind, took, ms: (used.user + used.system) / 1_000, converters: converters.length }))
    `)
    expect(measured).toMatchObject({ kind: "slow", converters: 0 })
    const { took, ms } = measured as { took: number; ms: number }
    expect(took).toBeLessThan(5_000)
    expect(ms).toBeLessThan(400)
    expect(await HtmlConverter.convert(order("<p>after</p>", "text"))).toEqual({ kind: "converted", converted: { content: "after" } })
  }, 30_000)

  test("past MAX_WAITING waiting for a turn, a page is refused at once as busy", async () => {
    const controller = new AbortController()
    const running = [0, 1].map(() => HtmlConverter.convert(order(NESTED_LISTS), { signal: controller.signal, budgetMs: 5_000 }))
    const queued = Array.from({ length: HtmlConverter.MAX_WAITING }, () => HtmlConverter.convert(order("<p>q</p>", "text"), { signal: controller.signal }))
    const started = performance.now()
    expect(await HtmlConverter.convert(order("<p>one too many</p>", "text"))).toEqual({ kind: "busy" })
    expect(performance.now() - started).toBeLessThan(500)
    controller.abort()
    for (const outcome of await Promise.all([...running, ...queued])) expect(outcome).toEqual({ kind: "failed", message: "cancelled" })
  })

  // One session's flood of slow pages (a hostile model's, or a bad site's) must not make every other session's
  // webfetch wait it out, or fail as busy: turns go first to the sessions with the fewest pages converting.
  test("a page of another session takes the next turn that comes, ahead of a flood of one session's pages", async () => {
    const started = performance.now()
    const flood = Array.from({ length: 6 }, () =>
      HtmlConverter.convert(order(NESTED_LISTS), { party: "ses_flood", budgetMs: 1_500 }).then((outcome) => outcome.kind),
    )
    await Bun.sleep(100)
    const other = await HtmlConverter.convert(order("<p>mine</p>", "text"), { party: "ses_other" })
    const took = performance.now() - started
    expect(other).toEqual({ kind: "converted", converted: { content: "mine" } })
    // The first turn to come free (at 1.5 s) was its: not after the flood's four waiting pages (4.5 s and more).
    expect(took).toBeGreaterThanOrEqual(1_400)
    expect(took).toBeLessThan(2_900)
    expect(await Promise.all(flood)).toEqual(Array(6).fill("slow"))
  }, 30_000)

  test("with MAX_WAITING waiting, a page of a session with fewer waiting takes the place of the crowd's newest", async () => {
    const running = [0, 1].map(() => HtmlConverter.convert(order(NESTED_LISTS), { party: "ses_flood", budgetMs: 1_000 }))
    const queued = Array.from({ length: HtmlConverter.MAX_WAITING }, (_, index) =>
      HtmlConverter.convert(order(`<p>q${index}</p>`, "text"), { party: "ses_flood" }),
    )
    const other = HtmlConverter.convert(order("<p>mine</p>", "text"), { party: "ses_other" })
    // The flood's own page past MAX_WAITING is refused at once, as before: no page of its gives way to it.
    expect(await HtmlConverter.convert(order("<p>more</p>", "text"), { party: "ses_flood" })).toEqual({ kind: "busy" })
    expect(await other).toEqual({ kind: "converted", converted: { content: "mine" } })
    const outcomes = await Promise.all(queued)
    expect(outcomes.at(-1)).toEqual({ kind: "busy" })
    expect(outcomes.slice(0, -1).map((outcome) => outcome.kind)).toEqual(Array(HtmlConverter.MAX_WAITING - 1).fill("converted"))
    expect((await Promise.all(running)).map((outcome) => outcome.kind)).toEqual(["slow", "slow"])
  }, 60_000)

  test("a cancelled conversion ends at once, its process with it", async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const { result, ms } = await ticking(() => HtmlConverter.convert(order(NESTED_LISTS), { signal: controller.signal }))
    expect(result).toEqual({ kind: "failed", message: "cancelled" })
    expect(ms).toBeLessThan(2_000)
    expect(await HtmlConverter.convert(order("<p>next</p>", "text"))).toEqual({ kind: "converted", converted: { content: "next" } })
  })

  test("a conversion cancelled while it waits for its turn ends at once, and takes no turn", async () => {
    const busy = [0, 1].map(() => HtmlConverter.convert(order(NESTED_LISTS), { budgetMs: 1_500 }))
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const { result, ms } = await ticking(() => HtmlConverter.convert(order("<p>late</p>", "text"), { signal: controller.signal }))
    expect(result).toEqual({ kind: "failed", message: "cancelled" })
    expect(ms).toBeLessThan(1_000)
    expect(await Promise.all(busy)).toEqual([{ kind: "slow" }, { kind: "slow" }])
    expect(await HtmlConverter.convert(order("<p>next</p>", "text"))).toEqual({ kind: "converted", converted: { content: "next" } })
  })

  // Out of memory, the kernel kills the biggest process: the converter, ended without an answer. The call fails
  // saying so (not a defect, not a hang), and the next page gets a converter of its own.
  test("a converter killed from outside before it answered fails the page, saying so", async () => {
    const stuck = `<p><code><br>${"a ".repeat(400_000)}a</code></p>`
    const converting = HtmlConverter.convert(order(stuck))
    let killed = false
    for (let attempt = 0; attempt < 200 && !killed; attempt++) {
      await Bun.sleep(25)
      for (const pid of readdirSync("/proc")) {
        try {
          if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("__convert-html")) continue
          if (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1] !== String(process.pid)) continue
          // The one at work, not one kept idle: it is using the processor.
          if (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[0] !== "R") continue
          process.kill(Number(pid), "SIGKILL")
          killed = true
        } catch {
          // gone meanwhile
        }
      }
    }
    expect(killed).toBe(true)
    expect(await converting).toEqual({ kind: "failed", message: "the converter stopped (out of memory, or killed) before it answered" })
    expect(await HtmlConverter.convert(order("<p>next</p>", "text"))).toEqual({ kind: "converted", converted: { content: "next" } })
  }, 30_000)

  // A core killed with -9 mid-conversion: its converter, busy in one regular expression, never sees the channel
  // close; it dies with its parent all the same (a parent-death signal), instead of converting on for minutes.
  test("a converter dies with its parent, killed in the middle of a conversion", async () => {
    const script = `
      import { HtmlConverter } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/html-converter.ts"))}
      console.log("started")
      await HtmlConverter.convert({ html: "<p><code><br>" + "a ".repeat(400_000) + "a</code></p>", url: "https://example.com/", format: "markdown" }, { budgetMs: 60_000 })
    `
    const parent = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "ignore" })
    await parent.stdout.getReader().read()
    const converterOf = () =>
      readdirSync("/proc").find((pid) => {
        try {
          return (
            readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("__convert-html") &&
            readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1] === String(parent.pid)
          )
        } catch {
          return false
        }
      })
    let converter: string | undefined
    for (let attempt = 0; attempt < 200 && converter === undefined; attempt++) {
      await Bun.sleep(25)
      converter = converterOf()
    }
    expect(converter).toBeDefined()
    await Bun.sleep(300)
    parent.kill("SIGKILL")
    await parent.exited
    let gone = false
    for (let attempt = 0; attempt < 100 && !gone; attempt++) {
      await Bun.sleep(20)
      gone = !existsSync(`/proc/${converter}`) || readFileSync(`/proc/${converter}/stat`, "utf8").split(") ")[1]!.startsWith("Z")
    }
    expect(gone).toBe(true)
  }, 30_000)

  test("markup nested too deeply for the converters' recursion is answered as such", async () => {
    expect(await HtmlConverter.convert(order(`${"<div>".repeat(10_000)}deep${"</div>".repeat(10_000)}`))).toEqual({ kind: "deep" })
  })
})
