// `@core/client` as a package: its wire types agree with the schemas the server encodes with (checked by the type
// checker, both ways where the shapes allow), and it builds with its own tsconfig into JavaScript that Node runs
// against the compiled binary.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type * as Client from "@core/client"
import type { Api } from "../../src/server/api"
import { binary } from "../support/binary"
import { sandbox } from "../cli/fixture"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
const PACKAGE = join(ROOT, "clients/typescript")

/** Compiles only when a value of type `From` may be used as a `To`. */
const fits = <To>(_value: To): void => undefined
const sample = <A>(): A => undefined as A

// What the server sends fits the client's types (never called: the type checker is the test).
export const wireAgrees = () => {
  fits<Client.Settlement>(sample<typeof Api.Settlement.Type>())
  fits<Client.Settlement>(sample<typeof Api.CallSettlement.Type>())
  fits<Client.Turn>(sample<typeof Api.Turn.Type>())
  fits<Client.Todos>(sample<typeof Api.Todos.Type>())
  fits<Client.Check>(sample<typeof Api.Check.Type>())
  fits<Client.PermissionRequest>(sample<typeof Api.PermissionRequest.Type>())
  fits<Client.ServerEvent>(sample<typeof Api.ServerEvent.Type>())
  fits<Client.CallEvent>(sample<typeof Api.CallEvent.Type>())
  fits<Client.HostCall>(sample<typeof Api.HostCall.Type>())
  fits<Client.HostToolDefinition>(sample<typeof Api.HostToolDefinition.Type>())
  fits<ReadonlyArray<Client.RecordedCall>>(sample<ReadonlyArray<typeof Api.RecordedCall.Type>>())
  // And what the client sends fits the server's (a call's input is any JSON the model produced).
  fits<Omit<typeof Api.CallRequest.Encoded, "input">>(sample<Omit<Client.CallRequest, "input">>())
  fits<typeof Api.ReplyRequest.Encoded>(sample<Exclude<Client.Reply, string>>())
  fits<typeof Api.ReplyRequest.Encoded>({ reply: sample<Extract<Client.Reply, string>>() })
  fits<Omit<typeof Api.HostToolsRequest.Encoded, "tools">>(sample<Omit<Client.HostToolsRequest, "tools">>())
  fits<Omit<typeof Api.HostToolDefinition.Encoded, "inputSchema" | "outputSchema">>(
    sample<Omit<Client.HostToolDefinition, "inputSchema" | "outputSchema">>(),
  )
  fits<typeof Api.HostCallResult.Encoded>(sample<Extract<Client.HostCallResult, { error: unknown }>>())
}

describe("@core/client as a package", () => {
  test("declares its entry points for Bun, for types and for built JavaScript, and needs nothing at run time", () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"))
    expect(manifest.name).toBe("@core/client")
    expect(manifest.dependencies).toBeUndefined()
    expect(Object.keys(manifest.peerDependencies)).toEqual(["ai"])
    expect(manifest.exports["."]).toEqual({ types: "./dist/index.d.ts", bun: "./src/index.ts", import: "./dist/index.js" })
    expect(manifest.exports["./ai"]).toEqual({ types: "./dist/ai.d.ts", bun: "./src/ai.ts", import: "./dist/ai.js" })
  })

  test("builds with its own tsconfig, and the built client settles a call from Node", async () => {
    const out = tempDir("core-client-dist-")
    const tsc = Bun.spawn([join(ROOT, "node_modules/.bin/tsc"), "-p", join(PACKAGE, "tsconfig.json"), "--outDir", out], {
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, output] = await Promise.all([tsc.exited, new Response(tsc.stdout).text()])
    expect(output).toBe("")
    expect(code).toBe(0)
    for (const file of ["index.js", "index.d.ts", "ai.js", "ai.d.ts"]) expect(Bun.file(join(out, file)).size).toBeGreaterThan(0)

    const box = sandbox()
    const script = `
      import { Core } from ${JSON.stringify(join(out, "index.js"))}
      const core = await Core.spawn({ command: ${JSON.stringify(await binary())}, location: ${JSON.stringify(box.location)}, stderr: "ignore" })
      try {
        const session = core.session({ watch: false })
        const settlement = await session.call({ name: "bash", input: { command: "echo from node" } }, { onProgress: () => {} })
        console.log(JSON.stringify(settlement.structured.stdout))
      } finally {
        await core.close()
      }
    `
    const node = Bun.spawn(["node", "--input-type=module", "-e", script], {
      env: { ...process.env, ...box.env },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [exit, stdout, stderr] = await Promise.all([node.exited, new Response(node.stdout).text(), new Response(node.stderr).text()])
    expect({ exit, stderr }).toEqual({ exit: 0, stderr: "" })
    expect(stdout).toBe('"from node\\n"\n')
  })
})
