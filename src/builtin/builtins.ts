export * as Builtins from "./builtins"

// Registers the built-in tools into a Location's placement, through the same `Tools` view every contributor
// uses. They are registered before the Location's own `tools/*.ts`, so a Location tool of the same name wins
// (latest registration), and they live as long as the Location's scope.

import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ManagedOutputs } from "../output/managed-outputs"
import { Permission } from "../permission/permission"
import { Registry } from "../registry/registry"
import { Shell } from "../shell/shell"
import { Reads } from "../store/reads"
import { Todos } from "../store/todos"
import type { Tool } from "../tool/tool"
import { ApplyPatch } from "./apply-patch"
import { Bash } from "./bash"
import { Builtin } from "./builtin"
import { Edit } from "./edit"
import { Glob } from "./glob"
import { Grep } from "./grep"
import { List } from "./list"
import { ReadTracking } from "./read-tracking"
import { Read } from "./read"
import { Todo } from "./todo"
import { WebFetch } from "./webfetch"
import { Write } from "./write"

/** The built-ins' names, in the order they are registered. */
export const NAMES = ["read", "write", "edit", "apply_patch", "glob", "grep", "list", "bash", "webfetch", "todowrite", "todoread"] as const

export type Name = (typeof NAMES)[number]

/** Every built-in, by the name it is registered under. */
export const make = (services: Builtin.Services): Readonly<Record<Name, Tool.Any>> => ({
  read: Read.make(services),
  write: Write.make(services),
  edit: Edit.make(services),
  apply_patch: ApplyPatch.make(services),
  glob: Glob.make(services),
  grep: Grep.make(services),
  list: List.make(services),
  bash: Bash.make(services),
  webfetch: WebFetch.make(services),
  ...Todo.make({ directory: services.directory, todos: services.todos ?? Todos.memory() }),
})

/**
 * Registers the built-ins into the Location registry for the life of the layer. What sessions read is kept in the
 * `Reads` service when one is provided (the durable store), else in memory for the life of the layer; todo lists
 * likewise in the `Todos` service.
 */
export const layer: Layer.Layer<never, never, Registry.Service | Permission.Service | Shell.Service> = Layer.effectDiscard(
  Effect.gen(function* () {
    const registry = yield* Registry.Service
    const permission = yield* Permission.Service
    const shell = yield* Shell.Service
    const reads = Option.getOrElse(yield* Effect.serviceOption(Reads.Service), Reads.memory)
    const todos = Option.getOrElse(yield* Effect.serviceOption(Todos.Service), Todos.memory)
    const readBeforeWrite = yield* ReadTracking.Required
    const outputs = Option.getOrUndefined(yield* Effect.serviceOption(ManagedOutputs.Service))
    yield* registry.tools
      .register(
        make({ directory: permission.project, permission, shell, reads, todos, readBeforeWrite, ...(outputs === undefined ? {} : { outputs }) }),
      )
      .pipe(Effect.orDie)
  }),
)
