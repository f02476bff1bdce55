// webfetch of a 1 MB HTML page from a local Bun.serve, converted to markdown, against its peer: a bare `fetch` of
// the same URL and the same library's conversion (turndown) with nothing around it. Each run is a fresh child
// process (bench/webfetch-child.ts) so its peak RSS is clean; webfetch's figure includes what the peer does not do:
// the permission check, resolving and checking the address, making links absolute, settlement, bounding the
// answer and keeping it whole as a managed output. Target: webfetch p50 within 1.5x of the peer's.

import { join } from "node:path"
import { tmpdir } from "node:os"
import { duration, main, megabytes, progress, ratio, type Report, summarize } from "./measure"

const RUNS = 5
const CALLS = 5
const TARGET_RATIO = 1.5
const PAGE_BYTES = 1_000_000

/** A documentation-like page of about `bytes`: headings, paragraphs with links and code, lists and code blocks. */
const page = (bytes: number): string => {
  const sections: Array<string> = []
  let size = 0
  for (let index = 0; size < bytes; index++) {
    const section =
      `<section><h2 id="s${index}">Section ${index}</h2>\n` +
      `<p>This paragraph explains <a href="/docs/${index}">topic ${index}</a> with <code>call(${index})</code> and ` +
      `<strong>bold</strong> words, as documentation pages do. It runs on for a while to be a realistic paragraph.</p>\n` +
      `<ul><li>First item ${index}</li><li>Second item with <em>emphasis</em></li><li><a href="#s${index}">anchor</a></li></ul>\n` +
      `<pre><code>const value${index} = compute(${index})\nconsole.log(value${index})</code></pre></section>\n`
    sections.push(section)
    size += section.length
  }
  return `<!doctype html><html><head><title>Bench</title><style>p{}</style></head><body><nav><a href="/">Home</a></nav>${sections.join("")}</body></html>`
}

interface ChildResult {
  readonly times: ReadonlyArray<number>
  readonly rssBase: number
  readonly peakRss: number
  readonly markdownChars: number
}

const child = async (mode: "webfetch" | "bare", url: string): Promise<ChildResult> => {
  const spawned = Bun.spawn([process.execPath, join(import.meta.dir, "webfetch-child.ts"), mode, url, String(CALLS)], {
    cwd: join(import.meta.dir, ".."),
    env: { ...process.env, TMPDIR: tmpdir() },
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, stdout, stderr] = await Promise.all([spawned.exited, new Response(spawned.stdout).text(), new Response(spawned.stderr).text()])
  if (code !== 0) throw new Error(`webfetch child failed (exit ${code}):\n${stderr}`)
  return JSON.parse(stdout) as ChildResult
}

export const measure = async (): Promise<Report> => {
  const html = page(PAGE_BYTES)
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
  })
  try {
    const url = `http://127.0.0.1:${server.port}/page`
    const modes = ["webfetch", "bare"] as const
    const results: Record<(typeof modes)[number], Array<ChildResult>> = { webfetch: [], bare: [] }
    for (let run = 0; run < RUNS; run++) {
      for (const mode of modes) {
        progress(`webfetch: ${mode}, run ${run + 1}/${RUNS}`)
        results[mode].push(await child(mode, url))
      }
    }
    const times = (mode: (typeof modes)[number]) => summarize(results[mode].flatMap((result) => result.times))
    const rows = modes.map((mode) => {
      const time = times(mode)
      const peak = summarize(results[mode].map((result) => result.peakRss))
      const growth = summarize(results[mode].map((result) => result.peakRss - result.rssBase))
      return [
        mode === "webfetch" ? "webfetch built-in (settled, markdown)" : "peer: bare fetch + turndown",
        `${duration(time.p50)} (${duration(time.min)} / ${duration(time.max)})`,
        `${megabytes(peak.p50)} (${megabytes(peak.min)} / ${megabytes(peak.max)})`,
        megabytes(growth.p50),
        `${results[mode][0]!.markdownChars.toLocaleString("en")} chars`,
      ]
    })
    const value = times("webfetch").p50 / times("bare").p50
    return {
      name: "webfetch: a 1 MB page as markdown",
      about:
        `${RUNS} runs of each, each a fresh child process making ${CALLS} timed calls after one warm-up, against a ` +
        `${megabytes(html.length)} HTML page served by Bun.serve on 127.0.0.1. Peer: bare fetch + turndown (the same library).`,
      tables: [
        {
          title: "per call: p50 (min / max); peak RSS p50 (min / max); RSS growth over the timed calls p50; markdown size",
          columns: ["what", "time", "peak RSS", "growth", "markdown"],
          rows,
        },
      ],
      targets: [{ measure: "webfetch p50 / bare fetch + turndown p50", value: ratio(value), target: `≤ ${TARGET_RATIO}x`, met: value <= TARGET_RATIO }],
      notes: [
        "Both parse the page once (turndown's own domino parse); webfetch's rules also make every link absolute, so its markdown is longer.",
      ],
    }
  } finally {
    server.stop(true)
  }
}

if (import.meta.main) await main(measure)
