// What `core serve` offers `core exec` to forward through (docs/serve.md, "core exec forwards"): its record in the
// private socket directory, readable by the user alone, with a token of its own that the socket accepts (and not
// CORE_TOKEN); and the API's words for what exec answers with: an ask's `protected`, a reply's `unattended`, a turn's
// `warnings`.

import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { echoTool } from "../support/tools"
import { inProcess, sandbox, serve } from "./support"

describe("the serve's record for core exec", () => {
  test("0600 in its 0700 socket directory, beside the socket; its token is accepted there, CORE_TOKEN is not written", async () => {
    const box = sandbox({ "tools/echo.ts": echoTool() })
    const served = await serve(box, [], { CORE_TOKEN: "the-hosts-own-secret" })
    const name = readdirSync(box.data).find((entry) => entry.startsWith(`serve-${served.child.pid}-`))!
    const directory = join(box.data, name)
    const file = join(directory, "serve.json")
    expect(statSync(directory).mode & 0o777).toBe(0o700)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const text = readFileSync(file, "utf8")
    expect(text).not.toContain("the-hosts-own-secret")
    const record = JSON.parse(text)
    expect(record).toMatchObject({ pid: served.child.pid, url: served.url, location: expect.any(String), roots: [record.location] })

    const on = (token: string) =>
      fetch(`${record.url}/v1/turns`, {
        method: "POST",
        unix: join(directory, "http.sock"),
        headers: { authorization: `Bearer ${token}` },
        body: "{}",
      } as RequestInit)
    expect((await on(record.token)).status).toBe(200)
    expect((await on("not-the-token")).status).toBe(401)
    // The forwarding token is good on the TCP address too: it is as secret as the serve's own.
    const overTcp = await fetch(`${served.url}/v1/turns`, { method: "POST", headers: { authorization: `Bearer ${record.token}` }, body: "{}" })
    expect(overTcp.status).toBe(200)

    served.child.kill("SIGTERM")
    await served.exited()
    expect(readdirSync(box.data).some((entry) => entry === name)).toBe(false)
  })
})

describe("the API's words for core exec's answers", () => {
  test("an ask of core's own configuration says protected; a reply may say it was unattended, and the model reads why", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": echoTool(), "core.json": JSON.stringify({ permission: { echo: "ask" } }) })
    const { turnID } = await sidecar.turn()
    const askOf = async (toolCallID: string) => {
      for (let tries = 0; tries < 250; tries++) {
        const ask = (await sidecar.json("GET", "/v1/permissions")).body.find((each: any) => each.toolCallID === toolCallID)
        if (ask !== undefined) return ask
        await Bun.sleep(20)
      }
      throw new Error(`no ask for ${toolCallID}`)
    }

    const protectedCall = sidecar.settle(turnID, { name: "write", input: { filePath: "core.json", content: "{}" }, toolCallID: "call_p" })
    const protectedAsk = await askOf("call_p")
    expect(protectedAsk.protected).toEqual(expect.any(String))
    await sidecar.json("POST", `/v1/permissions/${protectedAsk.id}/reply`, { body: { reply: "reject" } })
    expect((await protectedCall).body.status).toBe("declined")

    const pending = sidecar.settle(turnID, { name: "echo", input: { text: "x" }, sessionID: "ses_u", toolCallID: "call_u" })
    const ask = await askOf("call_u")
    expect(ask.protected).toBeUndefined()
    const replied = await sidecar.json("POST", `/v1/permissions/${ask.id}/reply`, {
      body: { reply: "reject", unattended: true, why: "the test has nobody to ask" },
    })
    expect(replied.status).toBe(200)
    const settled = await pending
    expect(settled.body.status).toBe("declined")
    expect(JSON.stringify(settled.body)).toContain("the test has nobody to ask")
  })

  test("a turn says warnings once the Location reported a load problem, and not before", async () => {
    const clean = await inProcess({ "tools/echo.ts": echoTool() })
    expect((await clean.json("POST", "/v1/turns", { body: {} })).body.warnings).toBeUndefined()
    const broken = await inProcess({ "tools/echo.ts": echoTool(), "tools/broken.ts": "export default 42\n" })
    expect((await broken.json("POST", "/v1/turns", { body: {} })).body.warnings).toBe(true)
    const application = await inProcess({ "tools/echo.ts": echoTool() }, { home: { "tools/broken.ts": "export default 42\n" } })
    expect((await application.json("POST", "/v1/turns", { body: {} })).body.warnings).toBe(true)
  })
})
