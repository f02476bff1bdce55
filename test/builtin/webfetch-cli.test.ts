// webfetch through the compiled binary against a local Bun.serve: `core exec webfetch` with a core.json rule that
// opens 127.0.0.1 (the converters bundled into the executable), every outcome's exit code and settlement, the
// refusal of 127.0.0.1 without that rule, asks without a terminal, and `core check`'s explanation.

import { afterAll, describe, expect, test } from "bun:test"
import { core, exec, sandbox, settlementOf, start } from "../cli/fixture"
import { closedPort, PNG, webServer } from "../support/web-server"

const web = webServer()
const other = webServer()
afterAll(() => {
  web.stop()
  other.stop()
})

const OPEN = JSON.stringify({ permission: { webfetch: { "http://127.0.0.1:*": "allow" } } })
const box = sandbox({ "core.json": OPEN })

const fetchUrl = async (url: string, extra: Record<string, unknown> = {}, args: ReadonlyArray<string> = []) => {
  const result = await exec(box, "webfetch", { url, ...extra }, args)
  return { code: result.code, settlement: settlementOf(result), stderr: result.stderr }
}

const text = (settlement: ReturnType<typeof settlementOf>) =>
  settlement.content.map((part) => (part.type === "text" ? part.text : `[${part.mime}]`)).join("\n")

describe("core exec webfetch with a rule opening 127.0.0.1", () => {
  test("an HTML page comes back as markdown, with status, final URL, type and size", async () => {
    const { code, settlement } = await fetchUrl(web.url("/article"))
    expect(code).toBe(0)
    expect(text(settlement)).toStartWith(`URL: ${web.url("/article")}\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8 (`)
    expect(text(settlement)).toContain("# Getting started")
    expect(text(settlement)).toContain(`[the API](${web.url("/docs/api")})`)
    expect(text(settlement)).not.toContain("script text")
  })

  test("format text and format html", async () => {
    expect(text((await fetchUrl(web.url("/article"), { format: "text" })).settlement)).toContain("\n\nGetting started\n\nInstall it with npm i thing")
    expect(text((await fetchUrl(web.url("/article"), { format: "html" })).settlement)).toContain("<h1>Getting started</h1>")
  })

  test("redirects are shown; a loop and a 404 exit 1 with the reason", async () => {
    const moved = await fetchUrl(web.url("/moved"))
    expect(moved.code).toBe(0)
    expect(text(moved.settlement)).toContain(`Redirects: ${web.url("/moved")} → (301) ${web.url("/hop")} → (302) ${web.url("/article")}`)
    const loop = await fetchUrl(web.url("/loop-a"))
    expect(loop.code).toBe(1)
    expect(loop.settlement.error?.message).toStartWith("Redirect loop: ")
    const missing = await fetchUrl(web.url("/missing"))
    expect(missing.code).toBe(1)
    expect(missing.settlement.error).toMatchObject({ kind: "failure", message: expect.stringContaining("HTTP 404 Not Found") })
  })

  test("a huge body, a PDF, a timeout and a closed port are model-visible failures", async () => {
    expect((await fetchUrl(web.url("/huge-stream"))).settlement.error?.message).toContain("larger than webfetch's download cap of 5242880 bytes (5 MiB)")
    expect((await fetchUrl(web.url("/pdf"))).settlement.error?.message).toContain("is a PDF document (application/pdf)")
    expect((await fetchUrl(web.url("/hang"), { timeoutMs: 300 })).settlement.error?.message).toStartWith("Timed out after 300 ms")
    const port = closedPort()
    expect((await fetchUrl(`http://127.0.0.1:${port}/`)).settlement.error?.message).toContain("ECONNREFUSED")
  })

  test("SIGINT during a download cancels the call (exit 130) without waiting for the server", async () => {
    const started = await start(box, ["exec", "webfetch", "--input", JSON.stringify({ url: web.url("/hang?interrupt"), timeoutMs: 120_000 }), "--location", box.location])
    await web.requested("/hang?interrupt")
    started.child.kill("SIGINT")
    const result = await started.finished()
    expect(result.code).toBe(130)
  })

  test("JSON passes through as text and an image comes back as a file part", async () => {
    expect(text((await fetchUrl(web.url("/json"))).settlement)).toEndWith('{"name":"core","tags":["a","b"]}')
    const image = await fetchUrl(web.url("/image"))
    expect(image.settlement.content[1] as unknown).toEqual({
      type: "file",
      mime: "image/png",
      uri: `data:image/png;base64,${Buffer.from(PNG).toString("base64")}`,
      name: "image",
    })
  })

  test("a large page is bounded, and `core output` prints the whole markdown", async () => {
    const { settlement } = await fetchUrl(web.url("/big-article"))
    expect(settlement.outputs).toHaveLength(1)
    const output = await core(box, ["output", settlement.outputs[0]!.id])
    expect(output.code).toBe(0)
    expect(output.stdout).toContain("## Section 2999")
  })

  test("a redirect to 127.0.0.1 by a name no rule opens is refused at that hop", async () => {
    const to = `http://localhost:${other.port}/article`
    const before = other.requests.length
    const { code, settlement } = await fetchUrl(web.url(`/away?to=${encodeURIComponent(to)}`))
    expect(code).toBe(1)
    expect(settlement.error?.message).toStartWith(
      `Refused: ${web.url(`/away?to=${encodeURIComponent(to)}`)} redirected to ${to}, and localhost:${other.port} resolves to 127.0.0.1, a loopback address`,
    )
    expect(other.requests.length).toBe(before)
  })
})

describe("core exec webfetch without a rule naming the host", () => {
  const plain = sandbox()

  test("127.0.0.1 is refused and nothing is requested", async () => {
    const before = web.requests.length
    const result = await exec(plain, "webfetch", { url: web.url("/article") })
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.message).toStartWith(`Refused: 127.0.0.1:${web.port} is a loopback address (127.0.0.0/8).`)
    expect(settlementOf(result).error?.message).toContain(`"webfetch": { "http://127.0.0.1:${web.port}/*": "allow" }`)
    expect(web.requests.length).toBe(before)
  })

  test("an ask without a terminal is declined (exit 4); --yes approves it once", async () => {
    const asking = sandbox({
      "core.json": JSON.stringify({ permission: { webfetch: { "*": "ask", "http://127.0.0.1:*": "allow", [`${web.origin}/private/*`]: "ask" } } }),
    })
    expect((await exec(asking, "webfetch", { url: web.url("/article") })).code).toBe(0)
    const declined = await exec(asking, "webfetch", { url: web.url("/private/x") })
    expect(declined.code).toBe(4)
    const approved = await exec(asking, "webfetch", { url: web.url("/private/x") }, ["--yes"])
    // The page is missing: approved, it was requested, and the server's 404 is the answer.
    expect(approved.code).toBe(1)
    expect(settlementOf(approved).error?.message).toContain("HTTP 404")
  })

  test("a rule denying the URL exits 1 as denied", async () => {
    const denying = sandbox({ "core.json": JSON.stringify({ permission: { webfetch: { "http://127.0.0.1:*": "allow", [`${web.origin}/*`]: "deny" } } }) })
    const result = await exec(denying, "webfetch", { url: web.url("/article") })
    expect(result.code).toBe(1)
    expect(settlementOf(result).error?.kind).toBe("denied")
  })
})

describe("core check webfetch", () => {
  test("explains the check on the URL with the rule that decides it and what always saves", async () => {
    const asking = sandbox({ "core.json": JSON.stringify({ permission: { webfetch: { "*": "ask" } } }) })
    const result = await core(asking, ["check", "webfetch", "--input", JSON.stringify({ url: "https://docs.example.com/guide?x=1#top" }), "--location", asking.location])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({
      tool: "webfetch",
      decision: "ask",
      checks: [
        {
          action: "webfetch",
          decision: "ask",
          resources: [{ resource: "https://docs.example.com/guide?x=1", decision: "ask", rule: { resource: "*", effect: "ask" } }],
          alwaysSaves: ["https://docs.example.com/*"],
        },
      ],
    })
  })

  test("a literal loopback address without a rule is explained as refused (exit 1)", async () => {
    const result = await core(box, ["check", "webfetch", "--input", JSON.stringify({ url: "http://[::ffff:127.0.0.1]/" }), "--location", sandbox().location])
    expect(result.code).toBe(1)
    expect(result.stderr + result.stdout).toContain("Refused: [::ffff:7f00:1] is a loopback address (127.0.0.1) inside an IPv6 address")
  })
})
