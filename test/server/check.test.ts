// `POST /v1/turns/{turnID}/check` in process: what `core check` says about a call through a turn, with nothing
// run, asked or recorded; a deny anywhere in the call is the answer; bad turns, names and inputs are refused. And
// the route beside the compiled binary's `core check` on one Location: the same answer, the plugin hooks the call
// meets included.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { core } from "../cli/fixture"
import { binary } from "../support/binary"
import { tempDir } from "../support/temp"
import { inProcess } from "./support"

const coreJson = (permission: unknown) => ({ "core.json": JSON.stringify({ permission }) })

/** A plugin whose hooks apply to bash only: a definition hook and a before hook, both changing nothing. */
const BASH_HOOKS = `import { Plugin } from "@core/tool"
import { Effect } from "effect"
export default Plugin.make({
  install: Effect.succeed({
    tools: ["bash"],
    "tool.definition": () => undefined,
    "tool.execute.before": () => Effect.succeed(undefined),
  }),
})
`

beforeAll(async () => {
  await binary()
}, 300_000)

describe("POST /v1/turns/{turnID}/check", () => {
  test("a bash line denied by a rule is a deny, although its path outside the Location would be asked", async () => {
    const sidecar = await inProcess(coreJson({ bash: { "cat /etc/passwd": "deny" } }))
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.json("POST", `/v1/turns/${turnID}/check`, {
      body: { name: "bash", input: { command: "cat /etc/passwd" } },
    })
    expect(answer.status).toBe(200)
    expect(answer.body.decision).toBe("deny")
    expect(answer.body.checks.map((check: any) => [check.action, check.decision])).toEqual([
      ["external_directory", "ask"],
      // The file cat reads meets the read rules (core's defaults allow it).
      ["read", "allow"],
      ["bash", "deny"],
    ])
    expect(answer.body.checks[2].resources[0]).toMatchObject({
      resource: "cat /etc/passwd",
      decision: "deny",
      rule: { action: "bash", resource: "cat /etc/passwd", effect: "deny" },
    })
    expect((await sidecar.json("GET", "/v1/permissions")).body).toEqual([])
  })

  test("runs nothing and asks nothing: a file a command would make is not made", async () => {
    const sidecar = await inProcess(coreJson({ bash: { "*": "ask" } }))
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.json("POST", `/v1/turns/${turnID}/check`, {
      body: { name: "bash", input: { command: "touch made" } },
    })
    expect(answer.body).toMatchObject({ tool: "bash", agent: "build", decision: "ask" })
    expect(answer.body.checks.find((check: any) => check.action === "bash").alwaysSaves).toEqual(["touch *"])
    expect(existsSync(join(sidecar.box.location, "made"))).toBe(false)
    expect((await sidecar.json("GET", "/v1/permissions")).body).toEqual([])
  })

  test("a path outside the Location asks external_directory first, then the tool's own action", async () => {
    const sidecar = await inProcess()
    const outside = realpathSync(tempDir("core-check-outside-"))
    const { turnID } = await sidecar.turn()
    const answer = await sidecar.json("POST", `/v1/turns/${turnID}/check`, {
      body: { name: "read", input: { filePath: join(outside, "a.txt") } },
    })
    expect(answer.body.decision).toBe("ask")
    expect(answer.body.checks).toEqual([
      {
        action: "external_directory",
        decision: "ask",
        resources: [expect.objectContaining({ resource: `${outside}/*`, decision: "ask" })],
        alwaysSaves: [`${outside}/*`],
      },
      { action: "read", decision: "allow", resources: [expect.objectContaining({ resource: join(outside, "a.txt") })] },
    ])
  })

  test("the turn's agent decides unless the request names another; a tool the turn hides is unknown", async () => {
    const sidecar = await inProcess()
    const build = await sidecar.turn()
    const input = { filePath: "a.txt", content: "x" }
    const check = (turnID: string, body: unknown) => sidecar.json("POST", `/v1/turns/${turnID}/check`, { body })
    expect((await check(build.turnID, { name: "write", input })).body).toMatchObject({ agent: "build", decision: "allow" })
    expect((await check(build.turnID, { name: "write", input, agent: "plan" })).body).toMatchObject({ agent: "plan", decision: "deny" })
    // The plan agent's catalog does not advertise write: its call would be unknown, and so is its check.
    const plan = await sidecar.turn("plan")
    expect((await check(plan.turnID, { name: "write", input })).status).toBe(404)
    const unknown = await check(build.turnID, { name: "write", input, agent: "nobody" })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.message).toContain('Unknown agent "nobody"')
  })

  test("an unknown turn or a name the turn does not advertise is a 404; an invalid input is a 400", async () => {
    const sidecar = await inProcess()
    const gone = await sidecar.json("POST", "/v1/turns/turn_nope/check", { body: { name: "read", input: { filePath: "a" } } })
    expect(gone.status).toBe(404)
    const { turnID } = await sidecar.turn()
    const unknown = await sidecar.json("POST", `/v1/turns/${turnID}/check`, { body: { name: "raed", input: {} } })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.message).toContain("read")
    const invalid = await sidecar.json("POST", `/v1/turns/${turnID}/check`, { body: { name: "read", input: { file_path: "a" } } })
    expect(invalid.status).toBe(400)
    expect(invalid.body.error.message).toContain("invalid input for read")
    const missing = await sidecar.json("POST", `/v1/turns/${turnID}/check`, { body: { input: {} } })
    expect(missing.status).toBe(400)
  })

  test("the OpenAPI document describes the route with its request and answer schemas", async () => {
    const sidecar = await inProcess()
    const document = (await sidecar.json("GET", "/v1/openapi.json")).body
    const operation = document.paths["/v1/turns/{turnID}/check"].post
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["200", "400", "404"]))
    expect(document.components.schemas.CheckRequest.required).toEqual(["name", "input"])
    expect(document.components.schemas.Check.properties.decision.enum).toEqual(["allow", "deny", "ask"])
  })

  test("answers what core check prints for the same call on the same Location, the plugin hooks it meets included", async () => {
    const sidecar = await inProcess({ ...coreJson({ bash: { "touch *": "ask" } }), "plugins/audit.ts": BASH_HOOKS })
    const input = { command: "touch x" }
    const printed = await core(sidecar.box, ["check", "bash", "--input", JSON.stringify(input), "--location", sidecar.box.location])
    expect({ code: printed.code, stderr: printed.stderr }).toEqual({ code: 0, stderr: expect.any(String) })
    const cli = JSON.parse(printed.stdout)
    expect(cli).toMatchObject({
      tool: "bash",
      agent: "build",
      decision: "ask",
      hooks: [{ plugin: "audit", hooks: ["tool.definition", "tool.execute.before"] }],
    })

    const { turnID } = await sidecar.turn()
    const answered = await sidecar.json("POST", `/v1/turns/${turnID}/check`, { body: { name: "bash", input } })
    expect(answered.status).toBe(200)
    expect(answered.body).toEqual(cli)
    expect(existsSync(join(sidecar.box.location, "x"))).toBe(false)
  }, 120_000)
})
