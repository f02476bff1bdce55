// `core tools` end to end (DESIGN §6): the catalog a model would be offered, as a table or as definitions with
// JSON Schema derived from each tool's Effect schemas.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Builtins } from "../../src/builtin/builtins"
import { echoDefinition } from "../support/tools"
import { core, IMPORTS, own, sandbox } from "./fixture"

const plain = (description: string) => echoDefinition({ description })

interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: Record<string, any>
  readonly outputSchema: Record<string, any>
}

/** The definitions of the test's own tools, in advertised order (built-ins left out). */
const definitionsOf = (stdout: string) => {
  const definitions = JSON.parse(stdout) as Array<Definition>
  const names = own(definitions.map((definition) => definition.name))
  return definitions.filter((definition) => names.includes(definition.name))
}

/** Location tools z, m, m_zz, m_aa (declared out of order) and the application tool b. */
const catalog = () =>
  sandbox(
    {
      "tools/z.ts": `${IMPORTS}export default ${plain("Last by name")}\n`,
      "tools/m.ts": `${IMPORTS}
export const zz = ${plain("Declared first")}
export default ${plain("The middle one.\nIt has a second line the table leaves out.")}
export const aa = ${plain("Declared last")}
export const VERSION = "1.0"
`,
    },
    { "tools/b.ts": `${IMPORTS}export default ${plain("From the application")}\n` },
  )

describe("core tools", () => {
  test("prints one row per tool, in advertised order, with the first line of each description", async () => {
    const box = catalog()
    const result = await core(box, ["tools", "--location", box.location])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    const all = result.stdout.trimEnd().split("\n")
    const names = own(all.map((row) => row.split(/\s+/)[0]!))
    const rows = all.filter((row) => names.includes(row.split(/\s+/)[0]!))
    expect(rows.map((row) => row.split(/\s+/)[0])).toEqual(["b", "m", "m_aa", "m_zz", "z"])
    expect(rows[1]).toMatch(/^m\s+The middle one\.$/)
    expect(rows[0]).toMatch(/^b\s+From the application$/)
    expect(result.stdout).not.toContain("second line")
  })

  // A description is its author's (an MCP server's, a plugin's), a file name may be the model's (a folder not yet
  // served): neither may drive the terminal, nor forge a line of core's own on stderr.
  test("a description's or a failed file's controls show escaped, on one line", async () => {
    const box = sandbox({
      "tools/d.ts": `${IMPORTS}export default ${plain("Fine\u001b]52;c;cHduZWQ=\u0007\u001b[2K\rfake\u202e")}\n`,
      "tools/x\u001b[2J\ncore: call tool=read status=success.ts": "export default 1\n",
    })
    const result = await core(box, ["tools", "--location", box.location])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^d\s+Fine\\u001b\]52;c;cHduZWQ=\\u0007\\u001b\[2K fake\\u202e$/m)
    expect(result.stdout + result.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/)
    expect(result.stderr).toContain("core: warning: ")
    expect(result.stderr).toContain("x\\u001b[2J\n  core: call tool=read status=success.ts")
    expect(result.stderr.split("\n").filter((line) => line.startsWith("core: call"))).toEqual([])
    // As JSON, the same description, inert: JSON.stringify leaves C1 controls and bidi overrides as they are.
    const json = await core(box, ["tools", "--json", "--location", box.location])
    expect(json.stdout).not.toMatch(/[\u007f-\u009f\u202a-\u202e]/)
    expect(JSON.parse(json.stdout).find((definition: Definition) => definition.name === "d").description).toContain("fake\u202e")
  })

  test("--json prints the definitions in the same order with exactly name, description, inputSchema and outputSchema", async () => {
    const box = catalog()
    const result = await core(box, ["tools", "--json", "--location", box.location])
    expect(result.code).toBe(0)
    const definitions = definitionsOf(result.stdout)
    expect(definitions.map((definition) => definition.name)).toEqual(["b", "m", "m_aa", "m_zz", "z"])
    for (const definition of definitions) {
      expect(Object.keys(definition).sort()).toEqual(["description", "inputSchema", "name", "outputSchema"])
    }
    expect(definitions[1]!.description).toBe("The middle one.\nIt has a second line the table leaves out.")
    expect(definitions[1]!.inputSchema).toMatchObject({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    })
    expect(definitions[1]!.outputSchema).toEqual({ type: "string" })
  })

  test("derives JSON Schema from the wire side of the schemas, with annotations and optional keys", async () => {
    const box = sandbox({
      "tools/search.ts": `${IMPORTS}
export default Tool.make({
  description: "Search a file",
  input: Schema.Struct({
    path: Schema.String.annotate({ description: "File to search, relative to the project" }),
    limit: Schema.optionalKey(Schema.Finite),
    since: Schema.NumberFromString,
    mode: Schema.Literals(["exact", "fuzzy"]),
  }),
  output: Schema.Array(Schema.Struct({ line: Schema.Finite, at: Schema.DateFromString })),
  execute: () => Effect.succeed([]),
})
`,
    })
    const result = await core(box, ["tools", "--json", "--location", box.location])
    expect(result.code).toBe(0)
    const [search] = definitionsOf(result.stdout)
    const input = search!.inputSchema
    expect(input.type).toBe("object")
    expect(input.properties.path).toMatchObject({ type: "string", description: "File to search, relative to the project" })
    expect(input.properties.limit).toMatchObject({ type: "number" })
    expect(input.properties.since).toMatchObject({ type: "string" })
    expect(input.properties.mode.enum ?? input.properties.mode.anyOf?.map((branch: { const: string }) => branch.const)).toEqual([
      "exact",
      "fuzzy",
    ])
    expect([...input.required].sort()).toEqual(["mode", "path", "since"])
    const output = search!.outputSchema
    expect(output.type).toBe("array")
    expect(output.items.properties.at).toMatchObject({ type: "string" })
  })

  test("puts a named schema used twice into $defs once and refers to it from both places", async () => {
    const box = sandbox({
      "tools/route.ts": `${IMPORTS}
const Point = Schema.Struct({ x: Schema.Finite, y: Schema.Finite }).annotate({ identifier: "Point" })
export default Tool.make({
  description: "Plan a route between two points",
  input: Schema.Struct({ from: Point, to: Point }),
  output: Schema.String,
  execute: () => Effect.succeed("straight ahead"),
})
`,
    })
    const result = await core(box, ["tools", "--json", "--location", box.location])
    expect(result.code).toBe(0)
    const [route] = definitionsOf(result.stdout)
    const input = route!.inputSchema
    expect(input.properties.from).toEqual({ $ref: "#/$defs/Point" })
    expect(input.properties.to).toEqual({ $ref: "#/$defs/Point" })
    expect(Object.keys(input.$defs)).toEqual(["Point"])
    expect(input.$defs.Point).toMatchObject({
      type: "object",
      properties: { x: { type: "number" }, y: { type: "number" } },
      required: ["x", "y"],
    })
  })

  test("a tool that takes an empty input struct advertises an object input schema", async () => {
    const box = sandbox({
      "tools/now.ts": `${IMPORTS}
export default Tool.make({
  description: "The current time",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed(new Date(0).toISOString()),
})
`,
    })
    const result = await core(box, ["tools", "--json", "--location", box.location])
    expect(result.code).toBe(0)
    const [now] = definitionsOf(result.stdout)
    // Tool inputs are always JSON objects, and providers require an object schema for tool parameters.
    expect(now!.inputSchema.type).toBe("object")
  })

  test("a Location without tools of its own offers the built-ins, in the table and with --json", async () => {
    const box = sandbox()
    const builtins = [...Builtins.NAMES].sort()
    const table = await core(box, ["tools", "--location", box.location])
    expect(table.code).toBe(0)
    expect(table.stdout.trimEnd().split("\n").map((row) => row.split(/\s+/)[0])).toEqual(builtins)
    const json = await core(box, ["tools", "--json", "--location", box.location])
    expect(json.code).toBe(0)
    expect((JSON.parse(json.stdout) as Array<Definition>).map((definition) => definition.name)).toEqual(builtins)
  })

  test("the Location defaults to the current directory", async () => {
    const box = catalog()
    const result = await core(box, ["tools", "--json"], { cwd: box.location })
    expect(result.code).toBe(0)
    expect(definitionsOf(result.stdout).map((definition) => definition.name)).toContain("m_aa")
  })

  for (const { name, args, says } of [
    { name: "an unknown flag", args: ["--verbose"], says: "--verbose" },
    { name: "an unexpected argument", args: ["extra"], says: 'unexpected argument "extra"' },
    { name: "a missing --location", args: ["--location", "/nonexistent/core-location"], says: "does not exist" },
  ]) {
    test(`${name} is a usage error: exit 2, a message on stderr, nothing on stdout`, async () => {
      const box = catalog()
      const extra = args[0] === "--location" ? [] : ["--location", box.location]
      const result = await core(box, ["tools", ...args, ...extra])
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("core tools")
      expect(result.stderr).toContain(says)
    })
  }

  test("a --location that is a file is a usage error", async () => {
    const box = catalog()
    const result = await core(box, ["tools", "--location", join(box.location, "tools/z.ts")])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("is not a directory")
  })
})
