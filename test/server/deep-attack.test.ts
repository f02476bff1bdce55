// Bodies a model shapes, as deep as the size cap allows: answered as a bad request or a model-visible error,
// never a failure of core, and core answers the next request.

import { describe, expect, test } from "bun:test"
import { echoTool } from "../support/tools"
import { inProcess } from "./support"

const ECHO = echoTool()

describe("deeply nested call inputs", () => {
  test("a call input nested 200,000 deep is refused without a 500, through every provider mapping", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO })
    const depth = 200_000
    const deep = `${"[".repeat(depth)}${"]".repeat(depth)}`
    for (const provider of [undefined, "openai-strict", "gemini"]) {
      const turn = await sidecar.json("POST", "/v1/turns", { body: provider === undefined ? {} : { provider } })
      for (const path of ["calls", "check"]) {
        const body = `{"sessionID":"ses_deep","assistantMessageID":"m","toolCallID":"c_${provider}_${path}","name":"echo","input":{"text":${deep}}}`
        const answer = await sidecar.handler(
          new Request(`http://127.0.0.1:4321/v1/turns/${turn.body.turnID}/${path}`, {
            method: "POST",
            headers: { host: "127.0.0.1:4321", authorization: "Bearer test-token", "content-type": "application/json" },
            body,
          }),
        )
        expect([provider, path, answer.status < 500]).toEqual([provider, path, true])
        await answer.text()
      }
    }
    expect((await sidecar.json("POST", "/v1/turns", { body: {} })).status).toBe(200)
  })
})
