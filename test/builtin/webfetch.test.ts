// The webfetch built-in settled in a real Location against a local Bun.serve (no internet here): HTML as markdown,
// text and HTML; redirects followed and shown, and re-checked at every hop; loops and long chains; HTTP errors;
// the download cap; other text, binary and images; charsets and compression; timeouts and closed ports; the
// refusal of loopback and private addresses in every spelling unless a rule names the host; URLs it refuses;
// permission per URL (ask, deny, "always" saving the origin); `core check`'s plan; bounding of a large answer.

import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Layer, PubSub } from "effect"
import { createServer } from "node:net"
import { join } from "node:path"
import { Builtins } from "../../src/builtin/builtins"
import { WebRequest } from "../../src/builtin/web-request"
import { WebFetch } from "../../src/builtin/webfetch"
import { Kernel } from "../../src/host/kernel"
import { Location } from "../../src/location/location"
import type { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import type { Rule } from "../../src/permission/rule"
import type { Settlement } from "../../src/contract/settlement"
import { Settler } from "../../src/settlement/settler"
import { Shell } from "../../src/shell/shell"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"
import { ARTICLE, closedPort, PNG, webServer } from "../support/web-server"

const web = webServer()
const other = webServer()
afterAll(() => {
  web.stop()
  other.stop()
})

const LOCAL: Rule.Rule = { action: "webfetch", resource: "http://127.0.0.1:*", effect: "allow" }
const local = harness({ rules: [LOCAL] })

const fetchPage = async (path: string, extra: Record<string, unknown> = {}) =>
  (await local.settle("webfetch", { url: web.url(path), ...extra })).settlement

describe("webfetch: HTML pages", () => {
  test("answers a page as markdown: status, final URL, type and size first, links made absolute, scripts and styles gone", async () => {
    const settlement = await fetchPage("/article")
    expect(settlement.status).toBe("success")
    const text = textOf(settlement)
    expect(text.split("\n").slice(0, 4)).toEqual([
      `URL: ${web.url("/article")}`,
      "Status: 200 OK",
      `Content-Type: text/html; charset=utf-8 (${Buffer.byteLength(ARTICLE)} bytes; shown as markdown)`,
      "Title: The Guide",
    ])
    expect(text).toContain("# Getting started")
    expect(text).toContain(`Install it with \`npm i thing\`, then read [the API](${web.url("/docs/api")}).`)
    expect(text).toMatch(/- +first point\n- +second point/)
    expect(text).toContain("```\nconst x = 1\n  if (x) run()\n```")
    expect(text).toContain(`![logo](${web.url("/pics/logo.png")})`)
    expect(text).not.toContain("script text")
    expect(text).not.toContain("color: red")
    expect(settlement.structured).toMatchObject({
      kind: "page",
      url: web.url("/article"),
      finalUrl: web.url("/article"),
      status: 200,
      format: "markdown",
      title: "The Guide",
      charset: "utf-8",
      redirects: [],
    })
  })

  test("format text answers what a reader sees, a line per block", async () => {
    const settlement = await fetchPage("/article", { format: "text" })
    const body = textOf(settlement).split("\n\n").slice(1).join("\n\n")
    expect(body).toStartWith("Home\n\nGetting started\n\nInstall")
    expect(body).toContain("Install it with npm i thing, then read the API.")
    expect(body).toContain("first point\nsecond point")
    expect(body).toContain("const x = 1\n  if (x) run()")
    expect(body).not.toContain("script text")
    expect(body).not.toContain("#")
    expect(body).not.toContain("<")
  })

  test("format html answers the page as sent", async () => {
    const settlement = await fetchPage("/article", { format: "html" })
    expect(textOf(settlement)).toEndWith(`\n\n${ARTICLE}`)
    expect(textOf(settlement)).toContain("shown as html")
  })

  test("a page without a Content-Type that starts like HTML is converted", async () => {
    const settlement = await fetchPage("/untyped-html")
    expect(textOf(settlement)).toContain("## Untyped")
  })

  test("a latin-1 page, by its Content-Type or its <meta charset>, is decoded in that charset", async () => {
    const declared = await fetchPage("/latin1")
    expect(textOf(declared)).toEndWith("Caf\u00e9 cr\u00e8me \u00fcber")
    expect(declared.structured).toMatchObject({ charset: "windows-1252" })
    const meta = await fetchPage("/meta-latin1")
    expect(textOf(meta)).toEndWith("na\u00efve")
  })

  // The page came back as CJK nonsense, its title lost, as a success.
  test("a <meta> declaring UTF-16 on an ASCII-compatible page is read as UTF-8, as a browser reads it", async () => {
    const page = await fetchPage("/meta-utf16")
    expect(page.structured).toMatchObject({ charset: "utf-8", title: "Meta" })
    expect(textOf(page)).toEndWith("caf\u00e9")
  })

  test("a byte order mark wins over the Content-Type's charset", async () => {
    const page = await fetchPage("/bom-utf8")
    expect(page.structured).toMatchObject({ charset: "utf-8" })
    expect(textOf(page)).toEndWith("caf\u00e9")
  })

  test("a gzip-compressed page is decompressed, its size counted after decompression", async () => {
    const settlement = await fetchPage("/gzip")
    expect(textOf(settlement)).toContain("# Getting started")
    expect(settlement.structured).toMatchObject({ bytes: Buffer.byteLength(ARTICLE) })
  })

  test("a large page is bounded like any output: a preview, and the whole markdown kept as a managed output", async () => {
    const { settlement, outputs } = await local.settle("webfetch", { url: web.url("/big-article") })
    expect(settlement.status).toBe("success")
    expect(settlement.outputs).toHaveLength(1)
    const full = outputs[settlement.outputs[0]!.id]!
    expect(full).toContain("## Section 2999")
    expect(textOf(settlement)).toContain("## Section 0")
    expect(textOf(settlement)).not.toContain("## Section 1500\n")
    expect(textOf(settlement)).toContain("left out")
    expect(textOf(settlement)).toContain(settlement.outputs[0]!.id)
  })
})

describe("webfetch: UTF-16 pages", () => {
  // Half their bytes are NUL: they were refused as binary before their byte order mark or charset was read.
  test("a page with a UTF-16 byte order mark, or a UTF-16 charset, is decoded as text", async () => {
    const marked = await fetchPage("/utf16")
    expect(marked.status).toBe("success")
    expect(marked.structured).toMatchObject({ charset: "utf-16le" })
    expect(JSON.stringify(marked.content)).toContain("Grüße aus UTF-16")
    const declared = await fetchPage("/utf16-charset")
    expect(declared.status).toBe("success")
    expect(JSON.stringify(declared.content)).toContain("plain UTF-16 text")
  })
})

describe("webfetch: other content", () => {
  test("JSON and plain text come back as sent, shown as text", async () => {
    const json = await fetchPage("/json")
    expect(textOf(json)).toEndWith('\n\n{"name":"core","tags":["a","b"]}')
    expect(json.structured).toMatchObject({ format: "text", contentType: "application/json;charset=utf-8" })
    const plain = await fetchPage("/plain", { format: "html" })
    expect(textOf(plain)).toEndWith("\n\njust text\nline two\n")
  })

  test("an image recognised by its bytes comes back as an image part, whatever its Content-Type", async () => {
    const settlement = await fetchPage("/image")
    expect(settlement.status).toBe("success")
    expect(settlement.content).toEqual([
      {
        type: "text",
        text: `URL: ${web.url("/image")}\nStatus: 200 OK\nContent-Type: application/octet-stream (${PNG.length} bytes; image image/png)`,
      },
      { type: "file", mime: "image/png", uri: `data:image/png;base64,${Buffer.from(PNG).toString("base64")}`, name: "image" },
    ])
  })

  test("a body typed image/png that is not one is refused as binary, never passed off as an image", async () => {
    const settlement = await fetchPage("/fake-image")
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toContain("is image/png content of 9 bytes")
  })

  test("a PDF and other binary content are refused, saying what they were", async () => {
    const pdf = await fetchPage("/pdf")
    expect(pdf.status).toBe("error")
    expect(pdf.error?.message).toStartWith(`${web.url("/pdf")} is a PDF document (application/pdf) of `)
    const binary = await fetchPage("/binary")
    expect(binary.error?.message).toStartWith(`${web.url("/binary")} is application/octet-stream content of 8 bytes`)
  })
})

describe("webfetch: status, redirects and failures", () => {
  test("redirects are followed and shown, in order, with their status", async () => {
    const settlement = await fetchPage("/moved")
    expect(settlement.status).toBe("success")
    const text = textOf(settlement)
    expect(text).toStartWith(`URL: ${web.url("/article")}\nStatus: 200 OK\n`)
    expect(text).toContain(`Redirects: ${web.url("/moved")} → (301) ${web.url("/hop")} → (302) ${web.url("/article")}`)
    expect(settlement.structured).toMatchObject({
      url: web.url("/moved"),
      finalUrl: web.url("/article"),
      redirects: [
        { status: 301, from: web.url("/moved"), to: web.url("/hop") },
        { status: 302, from: web.url("/hop"), to: web.url("/article") },
      ],
    })
  })

  test("a redirect to a path sent as raw UTF-8 is followed as a browser reads it", async () => {
    // Bun.serve would escape the header: a raw server sends the bytes as they are.
    const raw = createServer((socket) => {
      socket.once("data", (request) => {
        const path = request.toString("latin1").split(" ")[1]
        socket.end(
          path === "/go"
            ? Buffer.concat([Buffer.from("HTTP/1.1 302 Found\r\nLocation: /caf"), Buffer.from("é", "utf8"), Buffer.from("\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")])
            : `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${path!.length}\r\nConnection: close\r\n\r\n${path}`,
        )
      })
    })
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve))
    try {
      const port = (raw.address() as { port: number }).port
      const settlement = (await local.settle("webfetch", { url: `http://127.0.0.1:${port}/go` })).settlement
      expect(settlement.status).toBe("success")
      expect(textOf(settlement)).toContain("/caf%C3%A9")
      expect((settlement.structured as { finalUrl: string }).finalUrl).toBe(`http://127.0.0.1:${port}/caf%C3%A9`)
    } finally {
      raw.close()
    }
  })

  test("a redirect loop fails naming the chain", async () => {
    const settlement = await fetchPage("/loop-a")
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toBe(
      `Redirect loop: ${web.url("/loop-a")} → (302) ${web.url("/loop-b")} → (302) ${web.url("/loop-a")}. The URL never settles on a page.`,
    )
  })

  test(`more than ${WebFetch.MAX_REDIRECTS} redirects fail naming the chain`, async () => {
    const settlement = await fetchPage("/chain/0")
    expect(settlement.error?.message).toStartWith(`Too many redirects (more than ${WebFetch.MAX_REDIRECTS}): ${web.url("/chain/0")} → (302) ${web.url("/chain/1")}`)
    expect(settlement.error?.message).toContain(`(302) ${web.url("/chain/11")}.`)
  })

  test("a 404 is a model-visible error saying the status, the URL and what the page said", async () => {
    const settlement = await fetchPage("/missing")
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toStartWith(`HTTP 404 Not Found from ${web.url("/missing")}: the server did not return the page.`)
    expect(settlement.error?.message).toContain("Not here\n\nTry /article.")
  })

  test("a 500 is a model-visible error with the body the server sent", async () => {
    const settlement = await fetchPage("/broken")
    expect(settlement.error?.message).toStartWith(`HTTP 500 Internal Server Error from ${web.url("/broken")}`)
    expect(settlement.error?.message).toEndWith("\n\ndatabase is down")
  })

  test("a body over the 5 MiB cap is refused, with or without a Content-Length, saying the cap", async () => {
    const sized = await fetchPage("/huge")
    expect(sized.status).toBe("error")
    expect(sized.error?.message).toBe(
      `${web.url("/huge")} is larger than webfetch's download cap of ${WebFetch.MAX_BYTES} bytes (5 MiB): its Content-Length is ` +
        `${6 * 1024 * 1024} bytes. Nothing was kept. Fetch a smaller or more specific URL (a single page or an API with paging).`,
    )
    const streamed = await fetchPage("/huge-stream")
    expect(streamed.error?.message).toStartWith(`${web.url("/huge-stream")} is larger than webfetch's download cap of ${WebFetch.MAX_BYTES} bytes (5 MiB). Nothing was kept.`)
  })

  test("a compressed body is capped by what it decompresses to", async () => {
    const settlement = await fetchPage("/gzip-bomb")
    expect(settlement.error?.message).toStartWith(`${web.url("/gzip-bomb")} is larger than webfetch's download cap of ${WebFetch.MAX_BYTES} bytes (5 MiB). Nothing was kept.`)
  })

  // The call settled at the cap, but the decompressor kept inflating what it held: a 13 KB bomb was a minute of a
  // processor after each call.
  test("a compressed body cut at the cap stops decompressing with the call", async () => {
    // Inflating 16 GiB would keep a thread busy for minutes; a stopped stream leaves it idle. The process's processor
    // time counts every thread of the test run (the collector, the compiler, another file's left-over work, which
    // took 120-165 ms of a 400 ms window in full runs): so the quietest of five windows after the call is compared
    // with the quietest of five before it. Left running, the stream added 170-200 ms to each window (measured here).
    const quietest = async (): Promise<number> => {
      const windows: Array<number> = []
      for (let window = 0; window < 5; window++) {
        const before = process.cpuUsage()
        await Bun.sleep(400)
        const used = process.cpuUsage(before)
        windows.push((used.user + used.system) / 1000)
      }
      return Math.min(...windows)
    }
    const idle = await quietest()
    const settlement = await fetchPage("/brotli-bomb")
    expect(settlement.error?.message).toStartWith(`${web.url("/brotli-bomb")} is larger than webfetch's download cap`)
    expect(await quietest()).toBeLessThan(idle + 90)
  })

  test("HTML nested too deeply to convert is a failure saying to ask for the markup; as html it comes whole", async () => {
    const settlement = await fetchPage("/deep")
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toBe(`${web.url("/deep")} is HTML nested too deeply to convert to markdown. Fetch it again with format "html" to get its markup as it is.`)
    expect((await fetchPage("/deep", { format: "html" })).status).toBe("success")
    // Far deeper, as markdown and as text: refused as too deep, not after the budget spent in the parser.
    for (const format of ["markdown", "text"] as const) {
      const deeper = await fetchPage("/deeper", { format })
      expect(deeper.error?.message).toBe(`${web.url("/deeper")} is HTML nested too deeply to convert to ${format}. Fetch it again with format "html" to get its markup as it is.`)
    }
  })

  // A page is the web's: markup that takes the converter time quadratic in its size must neither stall every other
  // call (the conversion runs on a thread of its own) nor run on without end (it has a budget, then it is ended).
  test("a page that takes too long to convert fails after the budget, saying how else to fetch it; nothing stalls meanwhile", async () => {
    let ticks = 0
    const ticking = setInterval(() => ticks++, 10)
    const started = performance.now()
    const settlement = await fetchPage("/nested-lists")
    const took = performance.now() - started
    clearInterval(ticking)
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toBe(
      `${web.url("/nested-lists")} is HTML that took longer than 10 s to convert to markdown, and was left unconverted. ` +
        'Fetch it again with format "text" (its text, converted faster) or "html" (its markup as it is).',
    )
    expect(took).toBeGreaterThanOrEqual(10_000)
    // The settling thread stayed free: its timers kept firing through the whole conversion (a synchronous one
    // would have let none fire; a loaded machine delays some).
    expect(ticks).toBeGreaterThan(took / 10 / 4)
    const text = await fetchPage("/nested-lists", { format: "text" })
    expect(text.status).toBe("success")
    expect(textOf(text)).toContain("x\nx\nx")
  }, 60_000)

  test("a server that does not answer in time fails with the timeout", async () => {
    const started = Date.now()
    const settlement = await fetchPage("/hang", { timeoutMs: 300 })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toStartWith(`Timed out after 300 ms fetching ${web.url("/hang")}.`)
    expect(Date.now() - started).toBeLessThan(20_000)
  })

  test("a timeout above the most allowed is invalid input", async () => {
    const settlement = await fetchPage("/article", { timeoutMs: WebFetch.MAX_TIMEOUT_MS + 1 })
    expect(settlement.error?.kind).toBe("invalid_input")
  })

  test("a closed port fails saying the connection was refused", async () => {
    const port = closedPort()
    const { settlement } = await local.settle("webfetch", { url: `http://127.0.0.1:${port}/` })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toStartWith(`Could not fetch http://127.0.0.1:${port}/: ECONNREFUSED`)
  })

  test("a host that does not resolve fails saying so", async () => {
    const { settlement } = await local.settle("webfetch", { url: "http://no-such-host.invalid/" })
    expect(settlement.error?.message).toStartWith("Could not resolve no-such-host.invalid (")
  })
})

describe("webfetch: fetches a session runs at once", () => {
  // A thousand fetches of a page that never finished held a socket and up to 5 MiB each: a sidecar ran out of
  // descriptors (another session's bash and read failed with EMFILE) and memory.
  test("a fetch counts against shell.maxRunning: the session's next fetch waits its turn, another session's does not", async () => {
    const box = harness({ rules: [LOCAL], shell: { maxRunning: 1 } })
    let heldSettled = false
    const held = box.settle("webfetch", { url: web.url("/hang?held"), timeoutMs: 2_000 }, { session: "ses_a" })
    void held.then(() => (heldSettled = true))
    await web.requested("/hang?held")
    const progress: Array<string> = []
    const { promise: waiting, resolve: waited } = Promise.withResolvers<void>()
    const next = box.settle("webfetch", { url: web.url("/plain?next") }, {
      session: "ses_a",
      onProgress: (update) => {
        progress.push(update.message)
        if (update.message.startsWith("Waiting to start")) waited()
      },
    })
    await waiting
    // Another session's fetch runs while the first holds the session's one turn, and the next waits for it.
    const elsewhere = await box.settle("webfetch", { url: web.url("/plain?elsewhere") }, { session: "ses_b" })
    expect(elsewhere.settlement.status).toBe("success")
    expect([heldSettled, web.requests.includes("/plain?next")]).toEqual([false, false])
    expect(progress).toEqual(["Waiting to start: 1 commands, searches and fetches of this session are running, the most it runs at once (shell.maxRunning)."])
    expect((await held).settlement.error?.message).toStartWith("Timed out after 2000 ms")
    expect((await next).settlement.status).toBe("success")
    expect(progress.at(-1)).toBe(`GET ${web.url("/plain?next")}`)
  })
})

describe("webfetch: URLs it refuses", () => {
  const refused = async (url: string) => (await local.settle("webfetch", { url })).settlement

  test("only http and https", async () => {
    for (const url of ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,hi", "javascript:alert(1)", "gopher://127.0.0.1/"]) {
      const settlement = await refused(url)
      expect([url, settlement.status]).toEqual([url, "error"])
      expect(settlement.error?.message).toContain("webfetch fetches http:// and https:// URLs only, not ")
    }
  })

  test("credentials in the URL are refused, not stripped", async () => {
    const settlement = await refused(`http://user:secret@127.0.0.1:${web.port}/article`)
    expect(settlement.error?.message).toBe(
      "URLs with credentials (user:password@host) are refused: webfetch sends no credentials. Remove them from the URL.",
    )
    expect(web.requests).not.toContain("/article?user")
  })

  test("a relative or malformed URL is refused", async () => {
    expect((await refused("/article")).error?.message).toContain("Give an absolute http:// or https:// URL.")
    expect((await refused("http://")).error?.message).toStartWith("Invalid URL")
  })

  test("a redirect to a scheme webfetch refuses fails naming the chain", async () => {
    const settlement = await fetchPage(`/away?to=${encodeURIComponent("file:///etc/passwd")}`)
    expect(settlement.error?.message).toContain("redirected (302) to a URL webfetch refuses: webfetch fetches http:// and https:// URLs only, not file:")
  })
})

describe("webfetch: loopback, private and link-local addresses", () => {
  const open = harness()

  test("127.0.0.1 is refused without a rule naming it, and nothing is requested", async () => {
    const before = web.requests.length
    const { settlement } = await open.settle("webfetch", { url: web.url("/article") })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toBe(
      `Refused: 127.0.0.1:${web.port} is a loopback address (127.0.0.0/8). webfetch reaches loopback, private and ` +
        `link-local addresses only when a core.json rule allowing the URL names its host, e.g. "permission": { "webfetch": ` +
        `{ "http://127.0.0.1:${web.port}/*": "allow" } }. Ask the user to add one if this fetch is meant.`,
    )
    expect(web.requests.length).toBe(before)
  })

  test("every other spelling of a loopback or metadata address is refused too", async () => {
    const before = web.requests.length
    const urls = [
      `http://2130706433:${web.port}/article`,
      `http://0x7f.1:${web.port}/article`,
      `http://0177.0.0.1:${web.port}/article`,
      `http://127.1:${web.port}/article`,
      `http://[::1]:${web.port}/article`,
      `http://[::ffff:127.0.0.1]:${web.port}/article`,
      `http://[::ffff:7f00:1]:${web.port}/article`,
      `http://0.0.0.0:${web.port}/article`,
      "http://169.254.169.254/latest/meta-data/",
      "http://[fd00::1]/",
      "http://[fe80::1]/",
      "http://10.0.0.1/",
      "http://192.168.0.1/",
      "http://172.16.0.1/",
      "http://100.64.0.1/",
    ]
    for (const url of urls) {
      const { settlement } = await open.settle("webfetch", { url })
      expect([url, settlement.status, settlement.error?.message.startsWith("Refused: ")]).toEqual([url, "error", true])
    }
    expect(web.requests.length).toBe(before)
  })

  test("a host name that resolves to a loopback address is refused, naming the address", async () => {
    const { settlement } = await open.settle("webfetch", { url: `http://localhost:${web.port}/article` })
    expect(settlement.error?.message).toStartWith(`Refused: localhost:${web.port} resolves to 127.0.0.1, a loopback address (127.0.0.0/8).`)
  })

  test("a bare allow of webfetch, a wildcard host and the default allow-all never open reserved addresses", async () => {
    for (const rule of [
      { action: "webfetch", resource: "*", effect: "allow" },
      { action: "webfetch", resource: "http://*", effect: "allow" },
      { action: "*", resource: "*", effect: "allow" },
      { action: "webfetch", resource: "http://127.0.0.1*", effect: "ask" },
    ] as const) {
      const { settlement } = await harness({ rules: [rule] }).settle("webfetch", { url: web.url("/article") })
      expect([rule, settlement.error?.message.startsWith("Refused: ")]).toEqual([rule, true])
    }
  })

  test("a rule naming the host by name opens that name, and only for the URLs it matches", async () => {
    const named = harness({ rules: [{ action: "webfetch", resource: `http://localhost:${web.port}/*`, effect: "allow" }] })
    expect((await named.settle("webfetch", { url: `http://localhost:${web.port}/article` })).settlement.status).toBe("success")
    const otherPort = await named.settle("webfetch", { url: `http://localhost:${other.port}/article` })
    expect(otherPort.settlement.error?.message).toStartWith("Refused: ")
  })

  test("a rule opening one path of a host opens no other path through a spelling the server reads as it", async () => {
    const before = web.requests.length
    const pub = harness({ rules: [{ action: "webfetch", resource: `${web.origin}/plain*`, effect: "allow" }] })
    expect((await pub.settle("webfetch", { url: web.url("/plain") })).settlement.status).toBe("success")
    for (const path of ["/plain/..%2farticle", "/plain/%2e%2e%2farticle", "/plain/%ff/..%2f..%2farticle", "/plain/..;/article", "/plain/..%252farticle"]) {
      const { settlement } = await pub.settle("webfetch", { url: `${web.origin}${path}` })
      expect([path, settlement.error?.message.startsWith("Refused: ")]).toEqual([path, true])
    }
    expect(web.requests.length).toBe(before + 1)
  })

  test("a redirect from an opened URL to one no rule opens is refused at that hop, before it is requested", async () => {
    const onePort = harness({ rules: [{ action: "webfetch", resource: `${web.origin}/*`, effect: "allow" }] })
    const before = other.requests.length
    for (const to of [other.url("/article"), `http://[::ffff:127.0.0.1]:${other.port}/article`, "http://169.254.169.254/latest/meta-data/", `http://localhost:${other.port}/article`]) {
      const start = web.url(`/away?to=${encodeURIComponent(to)}`)
      const { settlement } = await onePort.settle("webfetch", { url: start })
      const message = settlement.error?.message ?? ""
      // Said as where the page's redirect led: no rule is suggested for an address the call never named.
      expect([to, settlement.status, message.startsWith(`Refused: ${start} redirected to ${new URL(to).href}, and `)]).toEqual([to, "error", true])
      expect([to, message.includes('"allow"'), message.includes("Ask the user")]).toEqual([to, false, false])
      expect(message).toContain("The page chose that address, not this call.")
      expect(message).toEndWith(`Redirects: ${start} → (302) ${new URL(to).href}`)
    }
    expect(other.requests.length).toBe(before)
  })

  test("the connection goes to the addresses checked: a name is never resolved a second time", async () => {
    // `.invalid` never resolves: reaching the server proves the request used the checked address it was given.
    const controller = new AbortController()
    const outcome = await WebRequest.get({
      url: new URL(`http://rebind.invalid:${web.port}/plain`),
      addresses: [{ address: "127.0.0.1", family: 4 }],
      maxBytes: 1024,
      accept: "*/*",
      signal: controller.signal,
    })
    expect(outcome._tag).toBe("Response")
    if (outcome._tag === "Response") expect(Buffer.from(outcome.body).toString()).toBe("just text\nline two\n")
  })
})

/** Settles calls one after another in one Location (saved approvals kept between them), answering asks with `reply`. */
const settleInOne = (
  rules: ReadonlyArray<Rule.Rule>,
  urls: ReadonlyArray<string>,
  reply: Permission.Reply,
): Promise<{ settlements: ReadonlyArray<Settlement.Info>; asks: ReadonlyArray<Permission.Request> }> => {
  const directory = tempDir("core-webfetch-")
  const sourced = rules.map((rule, index): Agent.SourcedRule => ({ ...rule, source: { file: "test", path: `rules[${index}]` } }))
  const permission = Permission.layer({ project: directory, configured: { rules: sourced, agents: new Map() } }).pipe(
    Layer.provide(Approvals.layerMemory),
  )
  const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(tempDir(), "outputs"), permission })
  const layer = Location.layer(directory, Builtins.layer.pipe(Layer.provide(Shell.layer()))).pipe(Layer.provideMerge(kernel))
  const program = Effect.gen(function* () {
    const service = yield* Permission.Service
    const events = yield* service.subscribe
    const asks: Array<Permission.Request> = []
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const event = yield* PubSub.take(events)
          if (event.type !== "asked") return
          asks.push(event.request)
          yield* service.reply(event.request.id, reply)
        }),
      ),
    )
    const settlements: Array<Settlement.Info> = []
    for (const url of urls) {
      const turn = yield* (yield* Settler.Service).materialize()
      const { settlement } = yield* turn.settle({
        sessionID: "ses_web",
        agent: "build",
        assistantMessageID: "msg_web",
        toolCallID: `call_${crypto.randomUUID()}`,
        name: "webfetch",
        input: { url },
      })
      settlements.push(settlement)
    }
    return { settlements, asks }
  })
  return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)) as Effect.Effect<never, unknown>)
}

describe("webfetch: permission per URL", () => {
  const ASK: Rule.Rule = { action: "webfetch", resource: "*", effect: "ask" }

  test("an ask names the URL and offers to save its origin; declined, nothing is requested", async () => {
    const before = web.requests.length
    const h = harness({ rules: [LOCAL, ASK] })
    const { settlement, asks } = await h.settle("webfetch", { url: web.url("/article?q=1#top") })
    expect(settlement.status).toBe("declined")
    expect(asks).toEqual([{ action: "webfetch", resources: [web.url("/article?q=1")], save: [`${web.origin}/*`] }])
    expect(web.requests.length).toBe(before)
  })

  test("a rule denying the URL refuses it as denied", async () => {
    const h = harness({ rules: [LOCAL, { action: "webfetch", resource: `${web.origin}/*`, effect: "deny" }] })
    const { settlement, asks } = await h.settle("webfetch", { url: web.url("/article") })
    expect(settlement.error?.kind).toBe("denied")
    expect(asks).toEqual([])
  })

  // A deny by path or host held only for the URL spelled as the rule spells it: /%61rticle, //article,
  // /article%2f and /plain/..%2farticle were the same page to the server, and a host with a trailing dot the same host.
  test("a rule denying a path or a host holds for every spelling of it a server reads the same", async () => {
    const before = web.requests.length
    const h = harness({ rules: [LOCAL, { action: "webfetch", resource: `${web.origin}/article*`, effect: "deny" }] })
    // An escape that is no UTF-8 (`%ff`) does not keep the others from being read as the server reads them.
    // Nor do a segment's `;parameters` (which Tomcat, Jetty and Spring take off) or an escape escaped again (read by
    // a proxy, then the application).
    for (const path of ["/%61rticle", "//article", "/article%2fx", "/%61rticle?q=1", "/plain/..%2farticle", "/plain/.%2f..%2f%61rticle/x", "/%61rticle/%ff..%2f..%2fx", "/%ff/..%2f%61rticle", "/article;a/x", "/plain/..;/article", "/plain;x/..;y/article", "/%2561rticle", "/%252561rticle", "/plain/..%252farticle", "/%2561rticle%3bx/y", "/plain/..%5carticle", "/article./x", "/article%20/x", "/%u0061rticle/x"]) {
      const { settlement } = await h.settle("webfetch", { url: `${web.origin}${path}` })
      expect([path, settlement.error?.kind]).toEqual([path, "denied"])
    }
    const byHost = harness({ rules: [{ action: "webfetch", resource: "https://evil.example/*", effect: "deny" }] })
    for (const url of ["https://evil.example./", "https://evil.example%2e/x", "https://EVIL.example../"]) {
      const { settlement } = await byHost.settle("webfetch", { url })
      expect([url, settlement.error?.kind]).toEqual([url, "denied"])
    }
    expect(web.requests.length).toBe(before)
    // A page the rule does not name is fetched as before, its spelling shown as given.
    expect((await h.settle("webfetch", { url: web.url("/plain") })).settlement.status).toBe("success")
  })

  test("every redirect hop is checked: a denied hop stops the fetch there", async () => {
    const h = harness({ rules: [LOCAL, { action: "webfetch", resource: `${web.origin}/hop`, effect: "deny" }] })
    const { settlement } = await h.settle("webfetch", { url: web.url("/moved") })
    expect(settlement.error?.kind).toBe("denied")
  })

  test('"always" saves the origin: the next URL of that host is not asked, another host still is', async () => {
    const { settlements, asks } = await settleInOne(
      [LOCAL, ASK],
      [web.url("/article"), web.url("/plain"), other.url("/plain")],
      { reply: "always" },
    )
    expect(settlements.map((settlement) => settlement.status)).toEqual(["success", "success", "success"])
    expect(asks.map((ask) => [ask.resources, ask.save])).toEqual([
      [[web.url("/article")], [`${web.origin}/*`]],
      [[other.url("/plain")], [`${other.origin}/*`]],
    ])
  })

  // The IPv4 spelling of a host written as IPv6 is checked beside it: "always" saved only the IPv6 origin, so the
  // IPv4 spelling was asked again at every fetch.
  test('"always" on a host written as IPv6 that carries an IPv4 address saves both origins: the next fetch is not asked', async () => {
    const mapped = `http://[::ffff:7f00:1]:${web.port}`
    const { settlements, asks } = await settleInOne(
      [{ action: "webfetch", resource: `${mapped}/*`, effect: "allow" }, ASK],
      [`${mapped}/plain`, `${mapped}/article`],
      { reply: "always" },
    )
    expect(settlements.map((settlement) => settlement.status)).toEqual(["success", "success"])
    expect(asks.map((ask) => ask.save)).toEqual([[`${mapped}/*`, `${web.origin}/*`]])
  })

  test('an "always" approval never opens a reserved address that no rule opens', async () => {
    const { settlements } = await settleInOne([ASK], [web.url("/article")], { reply: "always" })
    expect(settlements[0]!.error?.message).toStartWith("Refused: ")
  })
})

describe("webfetch: core check", () => {
  test("explains the check on the URL: the rule that decides it and what always saves", async () => {
    const h = harness({ rules: [LOCAL, { action: "webfetch", resource: `${web.origin}/private/*`, effect: "ask" }] })
    const allowed = await h.check("webfetch", { url: web.url("/article") })
    expect(allowed).toMatchObject({
      decision: "allow",
      checks: [{ action: "webfetch", decision: "allow", resources: [{ resource: web.url("/article"), rule: { resource: "http://127.0.0.1:*" } }] }],
    })
    const asked = await h.check("webfetch", { url: web.url("/private/x") })
    expect(asked).toMatchObject({ decision: "ask", checks: [{ alwaysSaves: [`${web.origin}/*`] }] })
  })

  test("a literal loopback address no rule opens, and a URL webfetch refuses, fail to explain with the reason", async () => {
    const h = harness()
    await expect(h.check("webfetch", { url: "http://127.0.0.1:8080/" })).rejects.toMatchObject({ message: expect.stringContaining("Refused: 127.0.0.1:8080 is a loopback address") })
    await expect(h.check("webfetch", { url: "file:///etc/passwd" })).rejects.toMatchObject({ message: expect.stringContaining("not file:") })
  })

  test("a public host name is explained without resolving it", async () => {
    const explanation = await harness().check("webfetch", { url: "https://docs.example.com/guide" })
    expect(explanation).toMatchObject({ decision: "allow", checks: [{ action: "webfetch", resources: [{ resource: "https://docs.example.com/guide" }] }] })
  })
})
