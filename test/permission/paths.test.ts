import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Fiber, Layer, PubSub, Schema } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

const rule = (action: string, resource: string, effect: "allow" | "deny" | "ask"): Agent.SourcedRule => ({
  action,
  resource,
  effect,
  source: { file: "core.json", path: `permission.${action}` },
})

/** A project with src/a.ts, a sibling outside it, a symlink escaping it, and an outputs directory. */
const world = () => {
  const root = realpathSync(tempDir())
  const project = join(root, "project")
  const outside = join(root, "outside")
  const outputs = join(root, "data", "outputs")
  mkdirSync(join(project, "src"), { recursive: true })
  mkdirSync(outside)
  mkdirSync(outputs, { recursive: true })
  writeFileSync(join(project, "src", "a.ts"), "inside")
  writeFileSync(join(outside, "secret.txt"), "outside")
  writeFileSync(join(outputs, "out_1"), "kept")
  symlinkSync(join(outside, "secret.txt"), join(project, "escape.txt"))
  return { project, outside, outputs }
}

const layerFor = (project: string, outputs: string, rules: ReadonlyArray<Agent.SourcedRule>) =>
  Permission.layer({ project, configured: { rules, agents: new Map() }, readableRoots: [outputs] }).pipe(
    Layer.provide(Approvals.layerMemory),
  )

const input = (path: string, access: "read" | "write" = "read") => ({
  sessionID: "s",
  agent: "build",
  source: { messageID: "m", callID: "c" },
  action: access === "read" ? "read" : "edit",
  path,
  access,
})

describe("Permission.authorizePath", () => {
  test("a project reached through a symlink is compared by its real path", async () => {
    const { project, outputs } = world()
    const link = join(tempDir(), "linked-project")
    symlinkSync(project, link)
    const denied = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Permission.Service).authorizePath(input("src/a.ts")).pipe(Effect.flip)
      }).pipe(Effect.provide(layerFor(link, outputs, [rule("read", "src/*", "deny")]))),
    )
    expect(denied).toMatchObject({ _tag: "Permission.Denied", resource: "src/a.ts" })
  })

  test("always never saves a pattern wider than what was approved", async () => {
    const { project } = world()
    writeFileSync(join(project, "*"), "a file named star")
    const saved = await Effect.runPromise(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const events = yield* permission.subscribe
        const fiber = yield* Effect.forkChild(permission.authorizePath(input("*", "write")))
        const asked = yield* PubSub.take(events)
        if (asked.type !== "asked") throw new Error("expected an ask")
        expect(asked.request.save).toEqual([])
        yield* permission.reply(asked.request.id, { reply: "always" })
        yield* Fiber.join(fiber)
        return yield* (yield* Approvals.Service).list(project)
      }).pipe(
        Effect.scoped,
        Effect.provide(
          Permission.layer({ project, configured: { rules: [rule("edit", "*", "ask")], agents: new Map() } }).pipe(
            Layer.provideMerge(Approvals.layerMemory),
          ),
        ),
      ),
    )
    expect(saved).toEqual([])
  })

  test("a path inside the Location is checked against the action with its relative path", async () => {
    const { project, outputs } = world()
    const resolved = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Permission.Service).authorizePath(input("src/a.ts"))
      }).pipe(Effect.provide(layerFor(project, outputs, [rule("read", "src/*", "allow"), rule("read", "src/secret*", "deny")]))),
    )
    expect(resolved).toMatchObject({ inside: true, real: join(project, "src", "a.ts") })
    const denied = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Permission.Service).authorizePath(input("src/secret.ts")).pipe(Effect.flip)
      }).pipe(Effect.provide(layerFor(project, outputs, [rule("read", "src/secret*", "deny")]))),
    )
    expect(denied).toMatchObject({ _tag: "Permission.Denied", resource: "src/secret.ts" })
  })

  test("leaving the Location, by ../ or by a symlink, needs external_directory on the real directory first", async () => {
    const { project, outside, outputs } = world()
    for (const path of ["../outside/secret.txt", "escape.txt", join(outside, "secret.txt")]) {
      const denied = await Effect.runPromise(
        Effect.gen(function* () {
          return yield* (yield* Permission.Service).authorizePath(input(path)).pipe(Effect.flip)
        }).pipe(Effect.provide(layerFor(project, outputs, [rule("external_directory", "*", "deny")]))),
      )
      expect(denied).toMatchObject({ _tag: "Permission.Denied", action: "external_directory", resource: `${outside}/*` })
    }
  })

  test("core's managed outputs may be read without asking in the session that made them, but not written", async () => {
    const { project, outputs } = world()
    const layer = layerFor(project, outputs, [rule("external_directory", "*", "deny")])
    const mine = join(ManagedOutputs.sessionDirectory(outputs, "s"), "out_1")
    const read = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Permission.Service).authorizePath(input(mine))
      }).pipe(Effect.provide(layer)),
    )
    expect(read).toMatchObject({ inside: false, readable: true })
    const write = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Permission.Service).authorizePath(input(mine, "write")).pipe(Effect.flip)
      }).pipe(Effect.provide(layer)),
    )
    expect(write).toMatchObject({ _tag: "Permission.Denied", action: "external_directory" })
    // Another session's output, and the directory that holds the sessions' outputs, are refused, asking nothing.
    for (const path of [join(ManagedOutputs.sessionDirectory(outputs, "other"), "out_2"), outputs]) {
      const refused = await Effect.runPromise(
        Effect.gen(function* () {
          return yield* (yield* Permission.Service).authorizePath(input(path)).pipe(Effect.flip)
        }).pipe(Effect.provide(layer)),
      )
      expect(refused).toMatchObject({ _tag: "Boundary.PathError", reason: "protected" })
    }
  })

  test("a tool's own path check refuses the call and the file outside is never read", async () => {
    const { project, outside, outputs } = world()
    let reads = 0
    const settlement = await Effect.runPromise(
      Effect.gen(function* () {
        // Constructed with the Location's permission service, as built-in tools are.
        const permission = yield* Permission.Service
        const reader = Tool.make({
          description: "reads a file",
          input: Schema.Struct({ path: Schema.String }),
          output: Schema.String,
          execute: (args, context) =>
            Effect.gen(function* () {
              const resolved = yield* permission.authorizePath({
                sessionID: context.sessionID,
                agent: context.agent,
                source: { messageID: context.assistantMessageID, callID: context.toolCallID },
                action: "read",
                path: args.path,
                access: "read",
              }).pipe(
                Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))),
              )
              reads++
              return yield* Effect.promise(() => Bun.file(resolved.real).text())
            }),
        })
        yield* (yield* Registry.Service).tools.register({ reader })
        const turn = yield* (yield* Settler.Service).materialize()
        return (yield* turn.settle(Kernel.call("reader", { path: join(outside, "secret.txt") }))).settlement
      }).pipe(
        Effect.scoped,
        Effect.provide(
          CoreKernel.layer({
            store: Store.layerMemory,
            outputsDirectory: outputs,
            permission: layerFor(project, outputs, [rule("external_directory", "*", "deny")]),
          }),
        ),
      ),
    )
    expect(reads).toBe(0)
    expect(settlement).toMatchObject({ status: "error", error: { kind: "denied" } })
    expect(settlement.error?.message).toContain("external_directory")
  })
})
