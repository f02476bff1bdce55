// Agent names from a request are data: names of Object.prototype's members are unknown agents like any other,
// never a way around the rules.

import { describe, expect, test } from "bun:test"
import { echoTool } from "../support/tools"
import { inProcess } from "./support"

const ECHO = echoTool()

describe("agent names from a request", () => {
  test("inherited property names are unknown agents: a 400 naming the known ones, never a 500 or a turn", async () => {
    const sidecar = await inProcess({ "tools/echo.ts": ECHO, "core.json": JSON.stringify({ agents: { plan: { permission: { echo: "deny" } } } }) })
    for (const agent of ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]) {
      const answer = await sidecar.json("POST", "/v1/turns", { body: { agent } })
      expect([agent, answer.status]).toEqual([agent, 400])
    }
  })
})
