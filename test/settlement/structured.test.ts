// The settlement's `structured` as hosts rely on it (DESIGN §2 law 10, §5): for every built-in, small and
// oversized, it is null or the complete encoded output, valid against the outputSchema the tool advertises
// (checked with a JSON Schema validator, as an MCP client checks it), and a settlement keeps at most one managed
// output. An image read keeps its bytes once: in the file part, not again in `structured`.

import { describe, expect, test } from "bun:test"
import { mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import Ajv2020 from "ajv/dist/2020"
import { Effect, Layer } from "effect"
import { Builtins } from "../../src/builtin/builtins"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Location } from "../../src/location/location"
import { Permission } from "../../src/permission/permission"
import { Settler } from "../../src/settlement/settler"
import type { Settlement } from "../../src/contract/settlement"
import { Shell } from "../../src/shell/shell"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

interface Settled {
  readonly settlement: Settlement.Info
  readonly outputSchema: { readonly [key: string]: unknown }
  readonly outputs: string
}

/** A Location holding `files`, where every call is allowed; settles built-ins with their advertised definitions. */
const location = (files: Record<string, string | Uint8Array>) => {
  const directory = realpathSync(tempDir("core-structured-"))
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(directory, path)), { recursive: true })
    writeFileSync(join(directory, path), content)
  }
  const outputs = join(tempDir("core-structured-data-"), "outputs")
  const settle = (name: string, input: unknown): Promise<Settled> => {
    const permission = Permission.layer({ project: directory, readableRoots: [outputs] }).pipe(
      Layer.provide(Approvals.layerMemory),
    )
    const kernel = CoreKernel.layer({ store: Store.layerMemory, outputsDirectory: outputs, permission })
    const layer = Location.layer(directory, Builtins.layer.pipe(Layer.provide(Shell.layer()))).pipe(
      Layer.provideMerge(kernel),
    )
    const program = Effect.gen(function* () {
      const turn = yield* (yield* Settler.Service).materialize()
      const definition = turn.definitions.find((candidate) => candidate.name === name)!
      const { settlement } = yield* turn.settle({
        sessionID: "ses_structured",
        agent: "build",
        assistantMessageID: "msg_structured",
        toolCallID: `call_${crypto.randomUUID()}`,
        name,
        input,
      })
      return { settlement, outputSchema: definition.outputSchema, outputs }
    })
    return Effect.runPromise(program.pipe(Effect.scoped, Kernel.onPath, Effect.provide(layer)) as Effect.Effect<Settled>)
  }
  return { directory, settle }
}

const ajv = new Ajv2020({ strict: false, allErrors: true })

/** Null, or valid against the advertised schema; and at most one managed output. */
const expectHonest = ({ settlement, outputSchema }: Settled) => {
  expect(settlement.status).toBe("success")
  expect(settlement.outputs.length).toBeLessThanOrEqual(1)
  if (settlement.structured === null) return
  const validate = ajv.compile(outputSchema)
  const valid = validate(settlement.structured)
  expect(validate.errors ?? []).toEqual([])
  expect(valid).toBe(true)
}

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
)

const many = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, index) => [`many/file-${String(index).padStart(5, "0")}.txt`, `match ${index}\n`]))

for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    describe("structured is the complete output, valid against its outputSchema, or null", () => {
      const big = Array.from({ length: 30_000 }, (_, index) => `line ${index + 1} ${"x".repeat(20)}`).join("\n")

      test("read: a small file, a large page, a directory", async () => {
        const place = location({ "small.txt": "one\ntwo\n", "big.txt": big, "dir/a.txt": "a" })
        const small = await place.settle("read", { filePath: "small.txt" })
        expect(small.settlement.structured).toMatchObject({ kind: "text", content: "one\ntwo" })
        expectHonest(small)
        expectHonest(await place.settle("read", { filePath: "big.txt" }))
        expectHonest(await place.settle("read", { filePath: "dir" }))
      })

      test("read of an image: the bytes go once, as the file part; structured does not repeat them", async () => {
        const place = location({ "dot.png": PNG })
        const settled = await place.settle("read", { filePath: "dot.png" })
        expectHonest(settled)
        expect(settled.settlement.content).toEqual([
          { type: "file", mime: "image/png", uri: `data:image/png;base64,${PNG.toString("base64")}`, name: "dot.png" },
        ])
        expect(settled.settlement.structured).toBeNull()
        expect(settled.settlement.outputs).toEqual([])
      })

      test("write, edit and apply_patch", async () => {
        const place = location({ "a.txt": `${big}\n` })
        expectHonest(await place.settle("write", { filePath: "new.txt", content: "hello\n" }))
        // An edit of a large block: its diff is large, so the structured output cannot stay beside the text.
        const edited = await place.settle("edit", { filePath: "a.txt", oldString: big, newString: big.replaceAll("x", "y") })
        expectHonest(edited)
        expect(edited.settlement.outputs).toHaveLength(1)
        expectHonest(
          await place.settle("apply_patch", {
            patchText: "*** Begin Patch\n*** Add File: added.txt\n+hi\n*** End Patch",
          }),
        )
      })

      test("glob, grep and list, with few and with thousands of results", async () => {
        const place = location({ "one.txt": "match\n", ...many(4_000) })
        for (const [name, input] of [
          ["glob", { pattern: "one.txt" }],
          ["glob", { pattern: "**/*.txt" }],
          ["grep", { pattern: "nothing-matches-this|^match$" }],
          ["grep", { pattern: "match" }],
          ["list", { path: "." }],
          ["list", { path: "many" }],
        ] as const) {
          expectHonest(await place.settle(name, input))
        }
      }, 60_000)

      test("bash: seq 1 200000 makes exactly one managed output and a valid (or null) structured", async () => {
        const place = location({})
        const small = await place.settle("bash", { command: "echo hi" })
        expectHonest(small)
        expect(small.settlement.structured).toMatchObject({ exitCode: 0 })
        const large = await place.settle("bash", { command: "seq 1 200000" })
        expectHonest(large)
        expect(large.settlement.outputs).toHaveLength(1)
        const [kept] = large.settlement.outputs
        // One output holds both: the text the preview left out, and the structured value that was dropped.
        // Kept in the Location's own directory of outputs.
        const files = readdirSync(large.outputs, { recursive: true }).map(String)
        const json = files.find((name) => name.endsWith(`${kept!.id}.json`))!
        expect(files.filter((name) => basename(name).startsWith(kept!.id)).map((name) => basename(name)).sort()).toEqual([
          kept!.id,
          `${kept!.id}.json`,
        ])
        expect(large.settlement.structured).toBeNull()
        // 1.3 MB is over the shell's 1 MiB capture: the preview does not claim the command's whole output was kept.
        const summary = (large.settlement.content[0] as { text: string }).text.split("\n")[0]!
        expect(summary).toContain("The text as captured (the capture had already lost bytes; the text says where) is kept in")
        const structured = await Bun.file(join(large.outputs, json)).json()
        expect(ajv.validate(large.outputSchema, structured)).toBe(true)
      }, 60_000)
    })
  })
}
