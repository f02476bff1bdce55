// A local web server for webfetch tests (no internet here): a real Bun.serve on 127.0.0.1 with the pages a test
// fetches — HTML, redirects (chains, loops, to reserved addresses), errors, huge and compressed bodies, other
// text, binary and images, a latin-1 page, and a route that never answers.

import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { png } from "./image"

/** A real 2×2 PNG (a truncated one is refused by the image check every image part meets). */
export const PNG = Uint8Array.from(png(2, 2))

export const ARTICLE = `<!doctype html>
<html><head><title>The Guide</title><style>body { color: red }</style><script>window.secret = "script text"</script></head>
<body>
<nav><a href="/home">Home</a></nav>
<h1>Getting started</h1>
<p>Install it with <code>npm i thing</code>, then read <a href="/docs/api">the API</a>.</p>
<ul><li>first point</li><li>second point</li></ul>
<pre><code>const x = 1
  if (x) run()</code></pre>
<img src="pics/logo.png" alt="logo">
<script>document.write("more script text")</script>
</body></html>`

/** Bytes past webfetch's 5 MiB cap. */
export const HUGE_BYTES = 6 * 1024 * 1024

export interface WebServer {
  readonly port: number
  /** `http://127.0.0.1:PORT` */
  readonly origin: string
  readonly url: (path: string) => string
  /** Paths requested so far, in order. */
  readonly requests: Array<string>
  /** Resolves when `path` (with its query, if any) is requested, or at once if it already was. */
  readonly requested: (path: string) => Promise<void>
  readonly stop: () => void
}

/**
 * Starts the server. `redirectTo` lists where `/away` redirects (a URL another test builds, such as another
 * server's or a reserved address).
 */
export const webServer = (options: { readonly away?: string } = {}): WebServer => {
  const requests: Array<string> = []
  const waiting: Array<{ readonly path: string; readonly resolve: () => void }> = []
  const hanging: Array<() => void> = []
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: async (request) => {
      const url = new URL(request.url)
      requests.push(url.pathname + url.search)
      for (const waiter of waiting.filter((entry) => entry.path === url.pathname + url.search)) {
        waiting.splice(waiting.indexOf(waiter), 1)
        waiter.resolve()
      }
      const path = url.pathname
      const html = (body: string, status = 200) => new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8" } })
      const redirect = (to: string, status = 302) => new Response(null, { status, headers: { location: to } })
      if (path === "/article") return html(ARTICLE)
      if (path === "/plain") return new Response("just text\nline two\n", { headers: { "content-type": "text/plain" } })
      if (path === "/json") return Response.json({ name: "core", tags: ["a", "b"] })
      if (path === "/untyped-html") return new Response(new Blob(["<!DOCTYPE html><html><body><h2>Untyped</h2></body></html>"]), { headers: { "content-type": "" } })
      if (path === "/latin1") {
        return new Response(Buffer.from("<html><body><p>Caf\u00e9 cr\u00e8me \u00fcber</p></body></html>", "latin1"), {
          headers: { "content-type": "text/html; charset=ISO-8859-1" },
        })
      }
      if (path === "/meta-latin1") {
        return new Response(Buffer.from('<html><head><meta charset="windows-1252"></head><body><p>na\u00efve</p></body></html>', "latin1"), {
          headers: { "content-type": "text/html" },
        })
      }
      if (path === "/meta-utf16") {
        // UTF-8 bytes whose <meta> says UTF-16 (a frequent mistake): a browser reads them as UTF-8.
        return new Response('<html><head><meta charset="utf-16le"><title>Meta</title></head><body><p>caf\u00e9</p></body></html>', {
          headers: { "content-type": "text/html" },
        })
      }
      if (path === "/bom-utf8") {
        // A UTF-8 byte order mark under a Content-Type that says latin-1: the mark wins, as in a browser.
        return new Response(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("<html><body><p>caf\u00e9</p></body></html>")]), {
          headers: { "content-type": "text/html; charset=iso-8859-1" },
        })
      }
      if (path === "/gzip") {
        return new Response(gzipSync(Buffer.from(ARTICLE)), {
          headers: { "content-type": "text/html; charset=utf-8", "content-encoding": "gzip" },
        })
      }
      if (path === "/missing") return html("<html><body><h1>Not here</h1><p>Try /article.</p></body></html>", 404)
      if (path === "/broken") return new Response("database is down", { status: 500, headers: { "content-type": "text/plain" } })
      if (path === "/pdf") return new Response("%PDF-1.7\n%\u00e2\u00e3\n1 0 obj\n", { headers: { "content-type": "application/pdf" } })
      if (path === "/binary") return new Response(Uint8Array.from([0, 1, 2, 3, 0, 0, 9, 0]), { headers: { "content-type": "application/octet-stream" } })
      if (path === "/image") return new Response(PNG, { headers: { "content-type": "application/octet-stream" } })
      if (path === "/fake-image") return new Response("not a png", { headers: { "content-type": "image/png" } })
      if (path === "/gzip-bomb") {
        // A few kilobytes on the wire, 6 MiB once decompressed: the cap counts what it decompresses to.
        return new Response(gzipSync(Buffer.alloc(HUGE_BYTES, 0x61)), {
          headers: { "content-type": "text/plain", "content-encoding": "gzip" },
        })
      }
      if (path === "/utf16") {
        // UTF-16 with a byte order mark, and without one but for the charset: half NUL bytes, and text.
        const text = "<html><body><p>Grüße aus UTF-16</p></body></html>"
        return new Response(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]), { headers: { "content-type": "text/html" } })
      }
      if (path === "/utf16-charset") {
        return new Response(Buffer.from("plain UTF-16 text\n", "utf16le"), { headers: { "content-type": "text/plain; charset=utf-16le" } })
      }
      if (path === "/nested-lists") {
        // 900 lists nested in one another around 2,000 lines: 40 KB that took turndown 20 s to convert to markdown.
        return new Response(`<html><body>${"<ul><li>".repeat(900)}${"x<br>".repeat(2_000)}${"</li></ul>".repeat(900)}</body></html>`, {
          headers: { "content-type": "text/html" },
        })
      }
      if (path === "/deep") {
        // 10,000 nested elements: 110 KB that overflowed the converters' recursion.
        return new Response(`<html><body>${"<div>".repeat(10_000)}deep${"</div>".repeat(10_000)}</body></html>`, {
          headers: { "content-type": "text/html" },
        })
      }
      if (path === "/deeper") {
        // 100,000 nested elements, 1.2 MB: the parser alone took most of a minute (its time grows with the square
        // of the depth).
        return new Response(`<html><body>${"<div>".repeat(100_000)}deeper${"</div>".repeat(100_000)}</body></html>`, {
          headers: { "content-type": "text/html" },
        })
      }
      if (path === "/brotli-bomb") {
        // 12.9 KB on the wire, 16 GiB of zeros once decompressed (made by a brotli stream, quality 5, window 24,
        // of 16 MiB zero chunks): what was cut at the cap must stop inflating with the call.
        return new Response(Bun.file(join(import.meta.dir, "bomb-16g.br")), {
          headers: { "content-type": "text/plain", "content-encoding": "br" },
        })
      }
      if (path === "/huge") return new Response("x".repeat(HUGE_BYTES), { headers: { "content-type": "text/plain" } })
      if (path === "/huge-stream") {
        // No Content-Length: the cap must stop the reading itself.
        let sent = 0
        return new Response(
          new ReadableStream({
            pull(controller) {
              if (sent >= HUGE_BYTES) return controller.close()
              sent += 64 * 1024
              controller.enqueue(new Uint8Array(64 * 1024).fill(0x61))
            },
          }),
          { headers: { "content-type": "text/plain" } },
        )
      }
      if (path === "/big-article") {
        const sections = Array.from({ length: 3000 }, (_, index) => `<h2>Section ${index}</h2><p>Paragraph ${index} of the long page.</p>`)
        return html(`<html><body>${sections.join("\n")}</body></html>`)
      }
      if (path === "/hang") return new Promise<Response>((resolve) => hanging.push(() => resolve(new Response("late"))))
      if (path === "/moved") return redirect("/hop", 301)
      if (path === "/hop") return redirect(`${url.origin}/article`, 302)
      if (path === "/loop-a") return redirect("/loop-b")
      if (path === "/loop-b") return redirect("/loop-a")
      if (path.startsWith("/chain/")) return redirect(`/chain/${Number(path.slice(7)) + 1}`)
      if (path === "/away") return redirect(url.searchParams.get("to") ?? options.away ?? "/article")
      return html("<p>no such route</p>", 404)
    },
  })
  const port = server.port!
  const origin = `http://127.0.0.1:${port}`
  return {
    port,
    origin,
    url: (path) => `${origin}${path}`,
    requests,
    requested: (path) =>
      requests.includes(path)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiting.push({ path, resolve })),
    stop: () => {
      for (const release of hanging) release()
      server.stop(true)
    },
  }
}

/** A port nothing listens on: one a server held and gave back. */
export const closedPort = (): number => {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") })
  const port = server.port!
  server.stop(true)
  return port
}
