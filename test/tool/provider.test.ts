import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { Definition } from "../../src/tool/definition"
import { Provider } from "../../src/tool/provider"
import { Tool } from "../../src/tool/tool"

const tool = Tool.make({ description: "d", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("") })
const definitions = (names: ReadonlyArray<string>) => names.map((name) => Definition.of(tool, name))

describe("Provider.prepare", () => {
  test("every name core accepts suits the providers that allow words and dashes", () => {
    const all = definitions(["read", "git_status", "web-fetch", "x".repeat(64)])
    expect(Provider.prepare(all, Provider.PROFILES.anthropic)).toBe(all)
    expect(Provider.prepare(all, Provider.PROFILES.openai)).toBe(all)
  })

  test("a stricter provider gets an explicit model-compatibility error naming each offending tool", () => {
    const result = Provider.prepare(definitions(["read", "web-fetch", "apply-patch"]), Provider.PROFILES.cohere)
    expect(result).toBeInstanceOf(Provider.CompatibilityError)
    const error = result as Provider.CompatibilityError
    expect(error.provider).toBe("cohere")
    expect(error.names).toEqual(["web-fetch", "apply-patch"])
    expect(error.message).toContain('"web-fetch", "apply-patch" cannot be offered to cohere models')
  })
})
