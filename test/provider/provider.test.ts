// The provider mappings (DESIGN §14): every built-in, example tool and example plugin's tool, through each provider, produces tools
// that the provider's published rules (./rules, written independently of the mappings) accept; what a provider
// cannot express is a model-compatibility error naming tool, construct and provider; openai-strict arguments are
// normalised back so null means absent; settlements become each provider's tool-result block.

import { describe, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Host } from "../../src/host/host"
import { Provider } from "../../src/provider/provider"
import { OpenAiStrict } from "../../src/provider/openai-strict"
import { Registry } from "../../src/registry/registry"
import type { Settlement } from "../../src/contract/settlement"
import { Definition } from "../../src/tool/definition"
import { Tool } from "../../src/tool/tool"
import { sandbox } from "../cli/fixture"
import * as Rules from "./rules"

const ROOT = join(import.meta.dir, "../..")
const source = (path: string) => readFileSync(join(ROOT, path), "utf8")

/**
 * The catalog of a Location holding this repository's example tools, the one `core init` writes, and the example
 * plugin (with the database it opens).
 */
const examples = async (): Promise<ReadonlyArray<Definition.Definition>> => {
  const box = sandbox({
    "tools/hash.ts": source("tools/hash.ts"),
    "tools/text.ts": source("tools/text.ts"),
    "tools/wc.ts": source("tools/wc.ts"),
    "tools/example.ts": source("build/example/example.ts"),
    "plugins/sqlite.ts": source("examples/plugins/sqlite.ts"),
  })
  new Database(join(box.location, "app.db")).close()
  const environment = { dataDir: box.data, home: box.home }
  const program = Effect.gen(function* () {
    const prepared = yield* Host.prepare(environment, box.location)
    return yield* Effect.map(Registry.Service, (registry) => registry.capture().definitions).pipe(
      Effect.provide(Host.catalogLayer(environment, prepared)),
    )
  })
  return Effect.runPromise(Effect.scoped(program) as Effect.Effect<ReadonlyArray<Definition.Definition>>)
}

const catalog = await examples()

const BUILTINS = ["read", "write", "edit", "apply_patch", "glob", "grep", "list", "bash", "webfetch", "todowrite", "todoread"]
const EXAMPLES = ["example", "hash", "text_identifier", "text_slug", "wc", "sqlite_query"]

const validate = (provider: Provider.Name, tool: any): Array<string> => {
  switch (provider) {
    case "openai":
      return Rules.openai(tool, false)
    case "openai-strict":
      return Rules.openai(tool, true)
    case "anthropic":
      return Rules.anthropic(tool)
    case "gemini":
      return Rules.gemini(tool)
  }
}

const prepared = (definitions: ReadonlyArray<Definition.Definition>, provider: Provider.Name) => {
  const result = Provider.prepare(definitions, provider)
  if (result._tag === "Failure") throw new Error(result.failure.message)
  return result.success
}

const definitionOf = (name: string, input: Schema.Codec<any, any>) =>
  Definition.of(Tool.make({ description: `The ${name} tool`, input, output: Schema.String, execute: () => Effect.succeed("") }), name)

describe("every built-in and example tool through every provider", () => {
  test("the catalog holds the built-ins, the example tools and the example plugin's tool", () => {
    const names = catalog.map((definition) => definition.name)
    for (const name of [...BUILTINS, ...EXAMPLES]) expect(names).toContain(name)
  })

  for (const provider of Provider.NAMES) {
    test(`${provider}: every tool is accepted and keeps its name and description, in catalog order`, () => {
      const { tools } = prepared(catalog, provider)
      expect(tools).toHaveLength(catalog.length)
      tools.forEach((tool: any, index) => {
        expect([catalog[index]!.name, validate(provider, tool)]).toEqual([catalog[index]!.name, []])
        expect(tool.name).toBe(catalog[index]!.name)
        expect(tool.description).toBe(catalog[index]!.description)
      })
    })
  }

  test("the validators catch what the providers refuse in core's own schemas", () => {
    // Without the mapping, the definitions break the rules the issue measured: optional properties outside
    // `required` (OpenAI strict), numeric bounds (Anthropic strict), root additionalProperties (Gemini).
    const raw = catalog.filter((definition) => BUILTINS.includes(definition.name))
    const asOpenAi = raw.map((definition) => ({ type: "function", name: definition.name, description: "", parameters: definition.inputSchema, strict: true }))
    expect(asOpenAi.filter((tool) => Rules.openai(tool, true).length > 0).length).toBeGreaterThanOrEqual(6)
    const asAnthropic = raw.map((definition) => ({ name: definition.name, input_schema: definition.inputSchema, strict: true }))
    expect(asAnthropic.filter((tool) => Rules.anthropic(tool).length > 0).length).toBeGreaterThanOrEqual(3)
    const asGemini = raw.map((definition) => ({ name: definition.name, parameters: definition.inputSchema }))
    expect(asGemini.filter((tool) => Rules.gemini(tool).length > 0)).toHaveLength(raw.length)
  })

  test("constraints a dialect lacks move into the description, where the model still reads them", () => {
    const bash = (provider: Provider.Name) => prepared(catalog, provider).tools.find((tool: any) => tool.name === "bash") as any
    expect(bash("anthropic").input_schema.properties.timeoutMs).toEqual({
      type: "integer",
      description: "Wall-clock limit in milliseconds (at least 1, at most 600000)",
    })
    // OpenAI strict keeps numeric bounds, and says optional as nullable.
    expect(bash("openai-strict").parameters.properties.timeoutMs).toMatchObject({ type: ["integer", "null"], minimum: 1, maximum: 600000 })
    expect(bash("openai-strict").parameters.required).toEqual(["command", "description", "workdir", "timeoutMs"])
    expect(bash("gemini").parameters).not.toHaveProperty("additionalProperties")
  })

  test("preparing the same catalog again answers the same tools", () => {
    expect(prepared(catalog, "gemini").tools).toBe(prepared(catalog, "gemini").tools)
  })
})

describe("a tool a provider cannot express is a model-compatibility error at preparation", () => {
  const record = definitionOf("tags", Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) }))

  test("a record is refused by openai-strict, anthropic and gemini, naming tool, construct and provider", () => {
    for (const provider of ["openai-strict", "anthropic", "gemini"] as const) {
      const result = Provider.prepare([catalog[0]!, record], provider)
      expect(result._tag).toBe("Failure")
      const error = (result as { failure: Provider.CompatibilityError }).failure
      expect(error).toBeInstanceOf(Provider.CompatibilityError)
      expect(error.provider).toBe(provider)
      expect(error.problems).toEqual([
        expect.objectContaining({ tool: "tags", path: "labels", construct: "a record (an object whose keys are not listed in advance)" }),
      ])
      expect(error.message).toContain(`1 tool cannot be offered to ${provider} models (tags)`)
      expect(error.message).toContain("tags: input `labels` is a record")
    }
    // Plain openai takes any JSON Schema.
    expect(Provider.prepare([record], "openai")._tag).toBe("Success")
  })

  test("gemini refuses a recursive schema and a parameter name with a dash; every problem of every tool is listed", () => {
    interface Node {
      readonly name: string
      readonly children: ReadonlyArray<Node>
    }
    const NodeSchema: Schema.Codec<Node> = Schema.Struct({
      name: Schema.String,
      children: Schema.Array(Schema.suspend((): Schema.Codec<Node> => NodeSchema)),
    }).annotate({ identifier: "Node" })
    const tree = definitionOf("tree", Schema.Struct({ root: NodeSchema }))
    const dashed = definitionOf("dashed", Schema.Struct({ "file-path": Schema.String }))
    const result = Provider.prepare([tree, dashed], "gemini")
    const error = (result as { failure: Provider.CompatibilityError }).failure
    expect(error.problems.map((problem) => [problem.tool, problem.path, problem.construct])).toEqual([
      ["tree", "root", "a recursive schema (Node contains itself)"],
      ["dashed", "file-path", 'the parameter name "file-path"'],
    ])
    expect(error.message).toContain("2 tools cannot be offered to gemini models (tree, dashed)")
    // Anthropic refuses the recursion too; openai-strict allows recursive $refs.
    expect(Provider.lint([tree], "anthropic").map((problem) => problem.construct)).toEqual(["a recursive schema (Node contains itself)"])
    expect(Provider.lint([tree, dashed], "openai-strict")).toEqual([])
    expect(Rules.openai(prepared([tree], "openai-strict").tools[0] as any, true)).toEqual([])
  })

  test("gemini refuses a value that can only be null", () => {
    const nothing = definitionOf("nothing", Schema.Struct({ value: Schema.Null }))
    expect(Provider.lint([nothing], "gemini").map((problem) => [problem.path, problem.construct])).toEqual([
      ["value", "a value that can only be null"],
    ])
  })

  test("a value of any type and a tuple are refused by openai-strict and gemini", () => {
    const loose = definitionOf("loose", Schema.Struct({ value: Schema.Unknown, pair: Schema.Tuple([Schema.String, Schema.Finite]) }))
    for (const provider of ["openai-strict", "gemini"] as const) {
      expect(Provider.lint([loose], provider).map((problem) => [problem.path, problem.construct])).toEqual([
        ["value", "a value of any type"],
        ["pair", "a tuple (array items typed by position)"],
      ])
    }
  })

  test("the shapes that can be expressed pass every validator: unions, classes, literals, nested optionals", () => {
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Finite, y: Schema.Finite }) {}
    const rich = definitionOf(
      "rich",
      Schema.Struct({
        shape: Schema.Union([
          Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Finite.check(Schema.isGreaterThan(0)) }),
          Schema.Struct({ kind: Schema.Literal("box"), corner: Point, size: Schema.optionalKey(Schema.Int) }),
        ]),
        from: Point,
        to: Schema.optionalKey(Point),
        label: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(20)))),
        count: Schema.Literals([1, 2, 3]),
        tags: Schema.optionalKey(Schema.Array(Schema.String).check(Schema.isMinLength(2))),
      }),
    )
    for (const provider of Provider.NAMES) {
      const [tool] = prepared([rich], provider).tools
      expect([provider, validate(provider, tool)]).toEqual([provider, []])
    }
    const gemini = prepared([rich], "gemini").tools[0] as any
    expect(gemini.parameters.properties.label).toMatchObject({ type: "string", nullable: true })
    expect(gemini.parameters.properties.count.description).toContain("one of 1, 2, 3")
  })
})

describe("openai-strict arguments are normalised back before decoding", () => {
  const definition = definitionOf(
    "search",
    Schema.Struct({
      query: Schema.String,
      limit: Schema.optionalKey(Schema.Int),
      note: Schema.NullOr(Schema.String),
      filter: Schema.optionalKey(
        Schema.Struct({ path: Schema.optionalKey(Schema.String), kinds: Schema.Array(Schema.Struct({ name: Schema.String, depth: Schema.optionalKey(Schema.Int) })) }),
      ),
      shape: Schema.optionalKey(
        Schema.Union([
          Schema.Struct({ kind: Schema.Literal("a"), size: Schema.optionalKey(Schema.Int) }),
          Schema.Struct({ kind: Schema.Literal("b"), size: Schema.NullOr(Schema.Int) }),
        ]),
      ),
    }),
  )
  const normalize = OpenAiStrict.normalizer(definition)

  test("null for an optional property means absent, at every depth; a nullable required property keeps its null", () => {
    expect(normalize({ query: "x", limit: null, note: null, filter: null, shape: null })).toEqual({ query: "x", note: null })
    expect(
      normalize({ query: "x", limit: 3, note: "n", filter: { path: null, kinds: [{ name: "a", depth: null }, { name: "b", depth: 2 }] } }),
    ).toEqual({ query: "x", limit: 3, note: "n", filter: { kinds: [{ name: "a" }, { name: "b", depth: 2 }] } })
  })

  test("a union branch is chosen by its constant: null is absent in one branch and a value in the other", () => {
    expect(normalize({ query: "x", note: null, shape: { kind: "a", size: null } })).toEqual({ query: "x", note: null, shape: { kind: "a" } })
    expect(normalize({ query: "x", note: null, shape: { kind: "b", size: null } })).toEqual({
      query: "x",
      note: null,
      shape: { kind: "b", size: null },
    })
  })

  // The first object branch that could take some of the keys was taken: its optional keys' nulls went, the other
  // branch's stayed, and a valid input was refused as invalid.
  test("an untagged union's branch is chosen by the keys the model sent (strict mode sends them all)", () => {
    const input = Schema.Struct({
      v: Schema.Union([
        Schema.Struct({ a: Schema.String, b: Schema.optionalKey(Schema.String) }),
        Schema.Struct({ c: Schema.String, d: Schema.optionalKey(Schema.String) }),
        Schema.Struct({ url: Schema.String, note: Schema.optionalKey(Schema.String), depth: Schema.optionalKey(Schema.Int) }),
      ]),
    })
    const pick = OpenAiStrict.normalizer(definitionOf("pick", input))
    expect(pick({ v: { a: "x", b: null } })).toEqual({ v: { a: "x" } })
    expect(pick({ v: { c: "x", d: null } })).toEqual({ v: { c: "x" } })
    expect(pick({ v: { c: "x", d: "y" } })).toEqual({ v: { c: "x", d: "y" } })
    expect(pick({ v: { url: "u", note: null, depth: null } })).toEqual({ v: { url: "u" } })
    for (const sent of [{ v: { c: "x", d: null } }, { v: { url: "u", note: null, depth: 2 } }]) {
      expect(Schema.decodeUnknownExit(input)(pick(sent))._tag).toBe("Success")
    }
  })

  test("what the schema would refuse is passed on unchanged, for decoding to judge", () => {
    expect(normalize("not an object")).toBe("not an object")
    expect(normalize({ query: 1, extra: null })).toEqual({ query: 1, extra: null })
  })

  test("the prepared turn normalises by tool name and leaves other providers' arguments alone", () => {
    const strict = prepared([definition], "openai-strict")
    expect(strict.normalize("search", { query: "x", limit: null, note: null })).toEqual({ query: "x", note: null })
    expect(strict.normalize("unknown", { limit: null })).toEqual({ limit: null })
    expect(prepared([definition], "openai").normalize("search", { limit: null })).toEqual({ limit: null })
  })
})

describe("a settlement as each provider's tool-result block", () => {
  const PNG = "iVBORw0KGgo="
  const PDF = Buffer.from("%PDF-1.4").toString("base64")
  const settlement = (overrides: Partial<Settlement.Info>): Settlement.Info => ({
    tool: "read",
    callID: "call_1",
    status: "success",
    content: [],
    structured: null,
    outputs: [],
    ...overrides,
  })
  const media = settlement({
    content: [
      { type: "text", text: "an image and a document" },
      { type: "file", mime: "image/png", uri: `data:image/png;base64,${PNG}`, name: "a.png" },
      { type: "file", mime: "application/pdf", uri: `data:application/pdf;base64,${PDF}`, name: "a.pdf" },
    ],
  })
  const structuredOnly = settlement({ tool: "wc", structured: { lines: 3, words: 5 } })
  const failed = settlement({
    status: "error",
    content: [{ type: "text", text: "File not found: a.ts" }],
    error: { kind: "failure", message: "File not found: a.ts" },
  })

  test("openai: a function_call_output, text alone as a string, media as input_image and input_file", () => {
    expect(Provider.result("openai", media)).toEqual({
      type: "function_call_output",
      call_id: "call_1",
      output: [
        { type: "input_text", text: "an image and a document" },
        { type: "input_image", image_url: `data:image/png;base64,${PNG}` },
        { type: "input_file", filename: "a.pdf", file_data: `data:application/pdf;base64,${PDF}` },
      ],
    })
    expect(Provider.result("openai-strict", structuredOnly)).toEqual({
      type: "function_call_output",
      call_id: "call_1",
      output: '{"lines":3,"words":5}',
    })
    expect(Provider.result("openai", failed)).toMatchObject({ output: "File not found: a.ts" })
  })

  test("anthropic: a tool_result with text, image and document blocks, is_error on errors only", () => {
    expect(Provider.result("anthropic", media)).toEqual({
      type: "tool_result",
      tool_use_id: "call_1",
      content: [
        { type: "text", text: "an image and a document" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: PDF }, title: "a.pdf" },
      ],
    })
    expect(Provider.result("anthropic", structuredOnly)).toEqual({
      type: "tool_result",
      tool_use_id: "call_1",
      content: [{ type: "text", text: '{"lines":3,"words":5}' }],
    })
    expect(Provider.result("anthropic", failed)).toMatchObject({ is_error: true, content: [{ type: "text", text: "File not found: a.ts" }] })
    const declined = settlement({ status: "declined", content: [{ type: "text", text: "stopped" }] })
    expect(Provider.result("anthropic", declined)).toMatchObject({ is_error: true })
  })

  test("anthropic: a file type it cannot take is named in a text block rather than dropped", () => {
    const zip = settlement({ content: [{ type: "file", mime: "application/zip", uri: "data:application/zip;base64,UEsDBA==", name: "a.zip" }] })
    expect(Provider.result("anthropic", zip)).toMatchObject({
      content: [{ type: "text", text: expect.stringContaining('[file "a.zip" (application/zip)') }],
    })
  })

  test("gemini: a functionResponse with output or error, and inline media in its parts", () => {
    expect(Provider.result("gemini", media)).toEqual({
      functionResponse: {
        id: "call_1",
        name: "read",
        response: { output: "an image and a document" },
        parts: [
          { inlineData: { mimeType: "image/png", data: PNG } },
          { inlineData: { mimeType: "application/pdf", data: PDF } },
        ],
      },
    })
    expect(Provider.result("gemini", failed)).toEqual({
      functionResponse: { id: "call_1", name: "read", response: { error: "File not found: a.ts" } },
    })
  })
})
