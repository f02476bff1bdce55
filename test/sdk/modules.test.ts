import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import * as Effect from "effect"
import { EFFECT_MODULES } from "../../src/author/effect-modules"
import { expectedSpecifiers, render } from "../../src/author/generate"
import { Modules } from "../../src/author/modules"

const EFFECT_ROOT = join(import.meta.dir, "../../node_modules/effect")

describe("Modules", () => {
  test("the generated module table matches the installed effect package (run `bun run generate` if not)", async () => {
    const current = await Bun.file(join(import.meta.dir, "../../src/author/effect-modules.ts")).text()
    expect(current).toBe(render(expectedSpecifiers(EFFECT_ROOT)))
    expect(Object.keys(EFFECT_MODULES)).toContain("effect/Schema")
  })

  test("the served effect barrel has every export of the real one, resolving to the same instances", () => {
    const barrel = Modules.barrel()
    expect(Object.keys(barrel).sort()).toEqual(Object.keys(Effect).sort())
    const schema = barrel.Schema as typeof Effect.Schema
    expect(schema.Struct).toBe(Effect.Schema.Struct)
    expect(schema.String).toBe(Effect.Schema.String)
    expect((barrel.Effect as typeof Effect.Effect).succeed).toBe(Effect.Effect.succeed)
    expect(barrel.pipe).toBe(Effect.pipe)
    expect("Struct" in schema).toBe(true)
    expect(Object.keys(barrel.Option as object)).toEqual(Object.keys(Effect.Option))
  })

  test("serves effect, its modules and @core/tool, and nothing internal", () => {
    expect(Modules.isServed("effect")).toBe(true)
    expect(Modules.isServed("effect/Stream")).toBe(true)
    expect(Modules.isServed("effect/http")).toBe(true)
    expect(Modules.isServed("@core/tool")).toBe(true)
    expect(Modules.isServed("effect/internal/effect")).toBe(false)
    expect(Modules.isServed("@core/internal")).toBe(false)
  })
})

describe("Runtime imports", () => {
  test("runtime code imports Effect modules by path, never the effect barrel (which would initialise them all)", async () => {
    const offenders: Array<string> = []
    for await (const file of new Bun.Glob("src/**/*.ts").scan({ cwd: join(import.meta.dir, "../..") })) {
      const source = await Bun.file(join(import.meta.dir, "../..", file)).text()
      if (/from\s+"effect"/.test(source)) offenders.push(file)
    }
    expect(offenders).toEqual([])
  })
})
