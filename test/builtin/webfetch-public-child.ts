// Run by webfetch-public.test.ts inside a network namespace of its own where 1.2.3.4, a public address, is this
// machine's (on its loopback device): webfetch settled in process against a "public" server there and a loopback
// one. Prints what each case settled as and which requests each server got, as JSON.

import { harness } from "../support/builtin"

const PUBLIC = "1.2.3.4"
const got: Record<string, Array<string>> = { public: [], local: [] }
const serve = (hostname: string, name: string) =>
  Bun.serve({
    hostname,
    port: 0,
    fetch: (request) => {
      const url = new URL(request.url)
      got[name]!.push(url.pathname)
      if (url.pathname === "/away") return Response.redirect(url.searchParams.get("to")!, 302)
      return new Response(`${name} says hello\n`, { headers: { "content-type": "text/plain" } })
    },
  })
const publicServer = serve(PUBLIC, "public")
const localServer = serve("127.0.0.1", "local")
const local = `http://127.0.0.1:${localServer.port}`
const away = (from: string, to: string) => `${from}/away?to=${encodeURIComponent(to)}`
const publicOrigin = `http://${PUBLIC}:${publicServer.port}`
// 1.2.3.4 written as IPv6: IPv4-mapped, IPv4-compatible, NAT64 and 6to4 (the last two reach it only through a gateway).
const mapped = [`[::ffff:${PUBLIC}]`, "[::ffff:102:304]", "[64:ff9b::102:304]", "[2002:102:304::1]"]

const opened = harness({ rules: [{ action: "webfetch", resource: "http://127.0.0.1:*", effect: "allow" }] })
const denying = harness({ rules: [{ action: "webfetch", resource: `http://${PUBLIC}:*`, effect: "deny" }] })
const asking = harness({ rules: [{ action: "webfetch", resource: `http://${PUBLIC}:*`, effect: "ask" }] })
const outcome = async (h: typeof opened, url: string) => {
  const { settlement, asks } = await h.settle("webfetch", { url })
  return { status: settlement.status, kind: settlement.error?.kind, message: settlement.error?.message, asks: asks.length }
}
const results = {
  publicDirect: await outcome(opened, `${publicOrigin}/page`),
  publicToLocal: await outcome(opened, away(publicOrigin, `${local}/secret`)),
  localToLocal: await outcome(opened, away(local, `${local}/inside`)),
  mappedDenied: await Promise.all(mapped.map((host) => outcome(denying, `http://${host}:${publicServer.port}/mapped`))),
  mappedAsked: await Promise.all(mapped.map((host) => outcome(asking, `http://${host}:${publicServer.port}/mapped`))),
  got,
}
publicServer.stop(true)
localServer.stop(true)
console.log(JSON.stringify(results))
process.exit(0)
