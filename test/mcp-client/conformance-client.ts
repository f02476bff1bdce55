// core's MCP client as the conformance runner drives a client: given a server URL (the last argument), a Location
// whose core.json names that server is wired as `core exec` wires one; its tools are listed and each is called
// through the settling pipeline. Prints each settlement on stdout; exits 1 when the server could not be used.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { Host } from "../../src/host/host"
import { Permission } from "../../src/permission/permission"
import { McpClient } from "../../src/mcp-client/mcp-client"
import { Settler } from "../../src/settlement/settler"

const url = process.argv.at(-1)!
const root = mkdtempSync(join(tmpdir(), "core-conformance-"))
const location = join(root, "location")
mkdirSync(location)
mkdirSync(join(root, "home"))
writeFileSync(join(location, "core.json"), JSON.stringify({ mcp: { srv: { url, timeoutMs: 10_000 } }, permission: { "srv_*": "allow" } }))
const environment = { dataDir: join(root, "data"), home: join(root, "home") }

/** An input for a tool from its schema: numbers for required numeric properties, strings for string ones. */
const inputFor = (schema: { readonly properties?: Record<string, { readonly type?: string }>; readonly required?: ReadonlyArray<string> }) =>
  Object.fromEntries(
    (schema.required ?? []).map((key, index) => {
      const type = schema.properties?.[key]?.type
      return [key, type === "number" || type === "integer" ? index + 2 : type === "boolean" ? true : "conformance"]
    }),
  )

const code = await Effect.runPromise(
  Effect.gen(function* () {
    const prepared = yield* Host.prepare(environment, location)
    return yield* Effect.gen(function* () {
      const remote = yield* McpClient.Service
      yield* remote.ensure
      const state = remote.states()[0]!
      if (state.status !== "connected") {
        process.stderr.write(`${JSON.stringify(state)}\n`)
        return 1
      }
      const turn = yield* (yield* Settler.Service).materialize((yield* Permission.Service).rules("build"))
      let index = 0
      for (const definition of turn.definitions.filter((definition) => definition.name.startsWith("srv_"))) {
        const { settlement } = yield* turn.settle({
          sessionID: "ses_conformance",
          agent: "build",
          assistantMessageID: "msg",
          toolCallID: `call_${++index}`,
          name: definition.name,
          input: inputFor(definition.inputSchema as Parameters<typeof inputFor>[0]),
        })
        process.stdout.write(`${JSON.stringify(settlement)}\n`)
      }
      return 0
    }).pipe(Effect.scoped, Effect.provide(Host.settlingLayer(environment, prepared)))
  }),
).finally(() => rmSync(root, { recursive: true, force: true }))
process.exit(code)
