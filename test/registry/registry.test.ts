import { describe, expect, test } from "bun:test"
import { Effect, Exit, Schema, Scope } from "effect"
import { Registry } from "../../src/registry/registry"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"

const named = (label: string, checksPermissions = false) =>
  Tool.make({
    description: `tool ${label}`,
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.succeed(label),
    checksPermissions,
  })

const open = () => Scope.make()
const close = (scope: Scope.Closeable) => Scope.close(scope, Exit.void)

/** Registers `record` into a new scope of the Location registry and returns that scope. */
const registerScoped = (tools: Registry.Tools, record: Record<string, Tool.Any>) =>
  Effect.gen(function* () {
    const scope = yield* open()
    yield* tools.register(record).pipe(Scope.provide(scope))
    return scope
  })

/** What `name` currently resolves to, by running it through a fresh turn. */
const current = (name: string) =>
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const resolution = registry.capture().resolve(name)
    return resolution._tag === "Found" ? Tool.isTool(resolution.tool) && resolution.tool : undefined
  })

describe("Registry registration", () => {
  test("the latest active registration of a name wins, and closing it reveals the previous one", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const [a, b, c] = [named("a"), named("b"), named("c")]
        const first = yield* registerScoped(tools, { t: a })
        const second = yield* registerScoped(tools, { t: b })
        const third = yield* registerScoped(tools, { t: c })
        expect(yield* current("t")).toBe(c)
        yield* close(second) // closing a middle registration changes nothing visible
        expect(yield* current("t")).toBe(c)
        yield* close(third)
        expect(yield* current("t")).toBe(a)
        yield* close(first)
        expect(yield* current("t")).toBeUndefined()
      }),
    ))

  test("three registrations closed oldest first reveal the newest remaining one", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const [a, b, c] = [named("a"), named("b"), named("c")]
        const scopes = [
          yield* registerScoped(tools, { t: a }),
          yield* registerScoped(tools, { t: b }),
          yield* registerScoped(tools, { t: c }),
        ]
        yield* close(scopes[0]!)
        expect(yield* current("t")).toBe(c)
        yield* close(scopes[2]!)
        expect(yield* current("t")).toBe(b)
        yield* close(scopes[1]!)
        expect(yield* current("t")).toBeUndefined()
      }),
    ))

  test("an invalid name fails the whole register call and registers nothing", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const error = yield* tools.register({ good: named("g"), "bad name": named("b") }).pipe(Effect.flip)
        expect(error).toBeInstanceOf(Registry.RegistrationError)
        expect(error.reason).toBe("invalid_name")
        expect(error.name).toBe("bad name")
        expect(error.message).toContain("bad name")
        expect(yield* current("good")).toBeUndefined()
      }),
    ))

  test("a value not made by Tool.make is refused and nothing is registered", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const real = named("real")
        const lookAlike = Object.freeze(Object.create(Object.getPrototypeOf(real))) as Tool.Any
        const error = yield* tools.register({ ok: real, fake: lookAlike }).pipe(Effect.flip)
        expect(error.reason).toBe("not_a_tool")
        expect(error.name).toBe("fake")
        expect(yield* current("ok")).toBeUndefined()
        const notObject = yield* tools.register(null as never).pipe(Effect.flip)
        expect(notObject.reason).toBe("invalid_record")
      }),
    ))

  test("mutating the record after register changes nothing", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const [a, b] = [named("a"), named("b")]
        const record: Record<string, Tool.Any> = { t: a }
        yield* tools.register(record)
        record.t = b
        record.extra = b
        expect(yield* current("t")).toBe(a)
        expect(yield* current("extra")).toBeUndefined()
      }),
    ))

  test("registering into a closed scope fails and leaves nothing behind", () =>
    Kernel.run(
      Effect.gen(function* () {
        const { tools } = yield* Registry.Service
        const scope = yield* open()
        yield* close(scope)
        const error = yield* tools.register({ t: named("a") }).pipe(Scope.provide(scope), Effect.flip)
        expect(error.reason).toBe("scope_closed")
        expect(yield* current("t")).toBeUndefined()
      }),
    ))

  test("Location registrations take precedence over application registrations", () =>
    Kernel.run(
      Effect.gen(function* () {
        const application = yield* Registry.Application
        const location = yield* Registry.Service
        const [app, loc] = [named("app"), named("loc")]
        yield* application.tools.register({ t: app, only_app: app })
        expect(yield* current("t")).toBe(app)
        const scope = yield* registerScoped(location.tools, { t: loc })
        expect(yield* current("t")).toBe(loc)
        expect(yield* current("only_app")).toBe(app)
        yield* close(scope)
        expect(yield* current("t")).toBe(app)
      }),
    ))
})

describe("Registry catalogs", () => {
  test("definitions are listed in sorted name order across placements", () =>
    Kernel.run(
      Effect.gen(function* () {
        const application = yield* Registry.Application
        const location = yield* Registry.Service
        yield* application.tools.register({ zeta: named("z"), alpha: named("a") })
        yield* location.tools.register({ mid: named("m"), alpha: named("a2") })
        const { definitions } = location.capture()
        expect(definitions.map((definition) => definition.name)).toEqual(["alpha", "mid", "zeta"])
        expect(definitions[0]!.description).toBe("tool a2")
      }),
    ))

  test("a catalog is reused while nothing changes, and rebuilt after a change", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ a: named("a") })
        const first = location.capture()
        expect(location.capture()).toBe(first)
        yield* location.tools.register({ b: named("b") })
        expect(location.capture()).not.toBe(first)
        expect(location.capture().definitions.map((definition) => definition.name)).toEqual(["a", "b"])
      }),
    ))

  test("the same name yields the identical definition object every turn", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        const tool = named("a")
        yield* location.tools.register({ a: tool })
        const before = location.capture().definitions[0]
        yield* location.tools.register({ other: named("o") })
        expect(location.capture().definitions.find((definition) => definition.name === "a")).toBe(before)
      }),
    ))

  test("rules that wholly deny an action hide its tools; edit, write and apply_patch share the edit action", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        // Tools that check each resource themselves, as built-in file and shell tools do.
        yield* location.tools.register({
          edit: named("e", true),
          write: named("w", true),
          apply_patch: named("p", true),
          bash: named("b", true),
          read: named("r", true),
        })
        const names = (rules: Parameters<typeof location.capture>[0]) =>
          location.capture(rules).definitions.map((definition) => definition.name)
        expect(names([{ action: "edit", resource: "*", effect: "deny" }])).toEqual(["bash", "read"])
        // A deny on some resources only does not hide the tool: it may still be allowed elsewhere.
        expect(names([{ action: "bash", resource: "rm *", effect: "deny" }])).toContain("bash")
        // The last matching rule decides: a later allow for part of the resources keeps it.
        expect(
          names([
            { action: "*", resource: "*", effect: "deny" },
            { action: "read", resource: "src/*", effect: "allow" },
          ]),
        ).toEqual(["read"])
        // A hidden tool is unknown to that turn.
        const catalog = location.capture([{ action: "bash", resource: "*", effect: "deny" }])
        expect(catalog.resolve("bash")._tag).toBe("Unknown")
      }),
    ))

  test("a catalog is kept per rules while nothing registers: capturing with and without rules in turn builds neither again", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ deploy: named("d"), other: named("o") })
        const rules = [{ action: "deploy", resource: "*", effect: "deny" }] as const
        const ruled = location.capture(rules)
        const unruled = location.capture()
        expect(location.capture(rules)).toBe(ruled)
        expect(location.capture()).toBe(unruled)
        expect(ruled.definitions.map((definition) => definition.name)).toEqual(["other"])
        expect(unruled.definitions.map((definition) => definition.name)).toEqual(["deploy", "other"])
        // Other rules (even equal ones) are another catalog; a registration makes every catalog anew.
        expect(location.capture([...rules])).not.toBe(ruled)
        yield* location.tools.register({ third: named("t") })
        const after = location.capture(rules)
        expect(after).not.toBe(ruled)
        expect(after.definitions.map((definition) => definition.name)).toEqual(["other", "third"])
        expect(location.capture().resolve("third")._tag).toBe("Found")
      }),
    ))

  test("a tool checked as a whole is hidden exactly when its call would be denied", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ deploy: named("d"), other: named("o") })
        const names = (rules: Parameters<typeof location.capture>[0]) =>
          location.capture(rules).definitions.map((definition) => definition.name)
        // Only "prod" is allowed, but a call is checked on "*": it would be denied, so it is not offered.
        expect(
          names([
            { action: "deploy", resource: "*", effect: "deny" },
            { action: "deploy", resource: "prod", effect: "allow" },
          ]),
        ).toEqual(["other"])
        expect(names([{ action: "deploy", resource: "*", effect: "ask" }])).toEqual(["deploy", "other"])
      }),
    ))

  test("an unadvertised name is unknown, with the nearest advertised names suggested", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ weather: named("w"), read: named("r"), write: named("x") })
        const resolution = location.capture().resolve("wether")
        expect(resolution).toEqual({ _tag: "Unknown", name: "wether", suggestions: ["weather"] })
        const none = location.capture().resolve("zzzzzzzzzz")
        expect(none._tag === "Unknown" && none.suggestions).toEqual([])
      }),
    ))
})

describe("Registry stale rejection", () => {
  test("re-registering the same tool object makes an older turn's name stale", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        const tool = named("a")
        yield* location.tools.register({ t: tool })
        const turn = location.capture()
        expect(turn.resolve("t")._tag).toBe("Found")
        yield* location.tools.register({ t: tool })
        expect(turn.resolve("t")).toEqual({ _tag: "Stale", name: "t" })
        expect(location.capture().resolve("t")._tag).toBe("Found")
      }),
    ))

  test("closing an overlay that reveals an older registration makes the turn stale", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ t: named("base") })
        const overlay = yield* registerScoped(location.tools, { t: named("overlay") })
        const turn = location.capture()
        yield* close(overlay)
        expect(turn.resolve("t")._tag).toBe("Stale")
      }),
    ))

  test("a Location tool that now shadows an application tool makes the older turn stale", () =>
    Kernel.run(
      Effect.gen(function* () {
        const application = yield* Registry.Application
        const location = yield* Registry.Service
        yield* application.tools.register({ t: named("app") })
        const turn = location.capture()
        yield* location.tools.register({ t: named("loc") })
        expect(turn.resolve("t")._tag).toBe("Stale")
      }),
    ))

  test("a removed registration is stale for the turn that advertised it", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        const scope = yield* registerScoped(location.tools, { t: named("a") })
        const turn = location.capture()
        yield* close(scope)
        expect(turn.resolve("t")._tag).toBe("Stale")
        expect(location.capture().resolve("t")._tag).toBe("Unknown")
      }),
    ))

  test("changes to other names leave a turn's names valid", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        yield* location.tools.register({ t: named("a") })
        const turn = location.capture()
        yield* location.tools.register({ u: named("u") })
        expect(turn.resolve("t")._tag).toBe("Found")
        expect(turn.resolve("u")._tag).toBe("Unknown")
      }),
    ))
})

describe("Registry scale", () => {
  test("registering and closing many scopes keeps the registry consistent", () =>
    Kernel.run(
      Effect.gen(function* () {
        const location = yield* Registry.Service
        const tool = named("x")
        const scopes: Array<Scope.Closeable> = []
        for (let index = 0; index < 2_000; index++) scopes.push(yield* registerScoped(location.tools, { [`t${index}`]: tool }))
        expect(location.capture().definitions).toHaveLength(2_000)
        for (const scope of scopes.filter((_, index) => index % 2 === 0)) yield* close(scope)
        expect(location.capture().definitions).toHaveLength(1_000)
        expect(location.capture().resolve("t1")._tag).toBe("Found")
        expect(location.capture().resolve("t0")._tag).toBe("Unknown")
      }),
    ))
})
