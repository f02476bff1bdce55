// MCP servers' tools go through the same provider pass as core's own: real servers from npm (everything,
// filesystem) and a draft-07 schema as zod-to-json-schema writes it come out of each mapping with no `$schema`,
// `definitions` or `$id`, references that resolve, and (for anthropic) `default` said in words; every tool a
// mapping accepts passes that provider's published rules (./rules).

import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { ProviderDialect } from "../../src/provider/provider-dialect"
import { Provider } from "../../src/provider/provider"
import type { Definition } from "../../src/tool/definition"
import { EVERYTHING, FILESYSTEM, turn, withLocation } from "../mcp-client/support"
import * as Rules from "./rules"

/** Every key anywhere in a JSON value, and every `$ref`. */
const scan = (value: unknown, keys = new Set<string>(), refs = new Set<string>()) => {
  if (Array.isArray(value)) for (const item of value) scan(item, keys, refs)
  else if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      keys.add(key)
      if (key === "$ref" && typeof child === "string") refs.add(child)
      // A property's name is not a keyword.
      if (key === "properties" && typeof child === "object" && child !== null) {
        for (const schema of Object.values(child)) scan(schema, keys, refs)
      } else scan(child, keys, refs)
    }
  }
  return { keys, refs }
}

const rulesOf = (provider: Provider.Name, tool: any): Array<string> =>
  provider === "anthropic" ? Rules.anthropic(tool) : provider === "gemini" ? Rules.gemini(tool) : Rules.openai(tool, provider === "openai-strict")

/** A tool as a draft-07 generator writes it: `$schema`, `definitions`, refs into them, `default`. */
const DRAFT_07 = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    query: { type: "string", description: "What to find", default: "all" },
    range: { $ref: "#/definitions/Range" },
  },
  required: ["query", "range"],
  additionalProperties: false,
  definitions: {
    Range: { type: "object", properties: { from: { type: "integer" }, to: { type: "integer" } }, required: ["from", "to"], additionalProperties: false },
  },
}

describe("MCP servers' schemas through the provider mappings", () => {
  test("a draft-07 schema comes out in core's dialect: no $schema or definitions, references to $defs", () => {
    const canonical = ProviderDialect.canonical(DRAFT_07)
    const { keys, refs } = scan(canonical)
    expect(keys.has("$schema")).toBe(false)
    expect(keys.has("definitions")).toBe(false)
    expect([...refs]).toEqual(["#/$defs/Range"])
    expect(Object.keys(canonical.$defs as object)).toEqual(["Range"])
    // Values stay as they were: a default is data, not a schema.
    expect((canonical.properties as any).query.default).toBe("all")
    // The original is untouched (it still checks the server's input).
    expect(DRAFT_07.$schema).toBeDefined()
  })

  test("the tools of real MCP servers map for every provider with no $schema, definitions or dangling $ref; anthropic says default in words", async () => {
    const definitions = await withLocation(
      (directory) => ({ mcp: { every: { command: [EVERYTHING, "stdio"] }, fs: { command: [FILESYSTEM, directory] } } }),
      () =>
        Effect.gen(function* () {
          return (yield* turn).definitions.filter((definition) => /^(every|fs)_/.test(definition.name))
        }),
    )
    expect(definitions.length).toBeGreaterThan(10)
    for (const provider of Provider.NAMES) {
      let mapped = 0
      for (const definition of definitions) {
        const prepared = Provider.prepare([definition as Definition.Definition], provider)
        // What a provider cannot express is a compatibility error at preparation, never a tool it would refuse.
        if (prepared._tag === "Failure") continue
        mapped++
        const tool = prepared.success.tools[0] as any
        expect({ provider, tool: definition.name, broken: rulesOf(provider, tool) }).toEqual({ provider, tool: definition.name, broken: [] })
        const { keys, refs } = scan(tool)
        expect(keys.has("$schema")).toBe(false)
        expect(keys.has("definitions")).toBe(false)
        if (provider === "anthropic") expect(keys.has("default")).toBe(false)
        const schema = tool.input_schema ?? tool.parameters ?? tool.function?.parameters ?? tool.inputSchema
        for (const ref of refs) expect(Object.keys(schema?.$defs ?? {})).toContain(ref.replace("#/$defs/", ""))
      }
      expect(mapped).toBeGreaterThan(definitions.length / 2)
    }
  }, 60_000)

  test("for anthropic, a draft-07 tool's default moves into its description and its references resolve", () => {
    const definition = {
      name: "srv_find",
      description: "Finds things",
      inputSchema: ProviderDialect.canonical(DRAFT_07),
    } as unknown as Definition.Definition
    const prepared = Provider.prepare([definition], "anthropic")
    if (prepared._tag === "Failure") throw new Error(prepared.failure.message)
    const tool = prepared.success.tools[0] as any
    expect(Rules.anthropic(tool)).toEqual([])
    expect(tool.input_schema.properties.query).toEqual({ type: "string", description: 'What to find (default "all")' })
    expect(tool.input_schema.properties.range).toEqual({ $ref: "#/$defs/Range" })
    expect(tool.input_schema.$defs.Range.properties.from).toEqual({ type: "integer" })
    expect("$schema" in tool.input_schema).toBe(false)
  })
})
