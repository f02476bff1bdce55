// A real settlement kernel on a temp data directory for library tests: application and Location registries,
// the settler, bounding with managed outputs on disk, and a store (in memory unless a path is given).

import { afterAll, beforeAll } from "bun:test"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Kernel } from "../../src/host/kernel"
import { ManagedOutputs } from "../../src/output/managed-outputs"
import { Output } from "../../src/output/output"
import { Permission } from "../../src/permission/permission"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Store } from "../../src/store/store"
import { tempDir } from "./temp"

export interface Options {
  readonly dataDir?: string
  readonly durable?: boolean
  readonly limits?: Output.Settings
}

export type Services =
  | Settler.Service
  | Registry.Service
  | Registry.Application
  | Output.Service
  | ManagedOutputs.Service
  | Store.Service
  | Permission.Service

export const layer = (options: Options = {}) => {
  const dataDir = options.dataDir ?? tempDir()
  const store = options.durable === true ? SqliteStore.layer(join(dataDir, "core.db")) : Store.layerMemory
  return Kernel.layer({
    store,
    outputsDirectory: join(dataDir, "outputs"),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  })
}

/** The settle paths law tests run on: the immediate path where it applies, and the fiber path alone. */
export const PATHS = ["immediate", "fibers"] as const
export type Path = (typeof PATHS)[number]

let path: Path = "immediate"

/** Settles on `which` path in the tests of the enclosing describe (`run` and `onPath` follow it). */
export const settleOn = (which: Path) => {
  beforeAll(() => {
    path = which
  })
  afterAll(() => {
    path = "immediate"
  })
}

/** `program` settling on the path of the running tests. */
export const onPath = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.provideService(program, Settler.Immediately, path === "immediate")

/** Runs a scoped program on a fresh kernel. */
export const run = <A, E>(program: Effect.Effect<A, E, Services | import("effect").Scope.Scope>, options: Options = {}) =>
  Effect.runPromise(onPath(Effect.scoped(program)).pipe(Effect.provide(layer(options))) as Effect.Effect<A, E>)

let counter = 0

/** A call with fresh ids. */
export const call = (name: string, input: unknown, overrides: Partial<Settler.Call> = {}): Settler.Call => ({
  sessionID: "ses_test",
  agent: "build",
  assistantMessageID: "msg_test",
  toolCallID: `call_${++counter}`,
  name,
  input,
  ...overrides,
})

/** The store's key for `call` in the kernel's Location (its permission service's project, as the settler keys it). */
export const keyOf = (call: Settler.Call) =>
  Effect.gen(function* () {
    return { ...call, location: (yield* Permission.Service).project } satisfies Store.Key
  })

/**
 * The memory store answering each operation after a yield to the scheduler, as a remote one answers later. A copy
 * of its service, so it carries no `Store.Now`: every operation goes through these Effects.
 */
export const laterStore: Layer.Layer<Store.Service> = Layer.effect(
  Store.Service,
  Effect.gen(function* () {
    const real = yield* Store.Service
    const after = <A, E>(effect: Effect.Effect<A, E>) => Effect.yieldNow.pipe(Effect.andThen(effect))
    return Store.Service.of({
      ...real,
      lookup: (key) => after(real.lookup(key)),
      begin: (key, tool, agent, details) => after(real.begin(key, tool, agent, details)),
      settle: (key, settlement, expected) => after(real.settle(key, settlement, expected)),
      fail: (key, reason) => after(real.fail(key, reason)),
    })
  }),
).pipe(Layer.provide(Store.layerMemory))
