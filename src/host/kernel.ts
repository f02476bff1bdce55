export * as Kernel from "./kernel"

// The settlement kernel without a Location's discovery or built-ins: application and Location registries, the
// settler, bounding with managed outputs, permissions and a given store. `@core/tool/testing`, tests and
// benchmarks register their tools themselves; the edges (cli, server) add discovery and built-ins on top. It
// must not import built-ins, configuration files or any edge: the author kit ships it.

import * as Layer from "effect/Layer"
import { ManagedOutputs } from "../output/managed-outputs"
import { Output } from "../output/output"
import { Permission } from "../permission/permission"
import { Registry } from "../registry/registry"
import { Hooks } from "../settlement/hooks"
import { Settler } from "../settlement/settler"
import { Approvals } from "../store/approvals"
import type { Store } from "../store/store"

export interface Options<E> {
  readonly store: Layer.Layer<Store.Service, E>
  readonly outputsDirectory: string
  readonly limits?: Output.Settings
  /** Who decides permissions; by default core's defaults (everything allowed) with approvals in memory. */
  readonly permission?: Layer.Layer<Permission.Service>
}

/** The kernel's services, with managed outputs kept in `outputsDirectory` and settlements in `store`. */
export const layer = <E>(options: Options<E>) =>
  Settler.layer.pipe(
    Layer.provideMerge(
      options.permission ?? Permission.layer({ project: options.outputsDirectory }).pipe(Layer.provide(Approvals.layerMemory)),
    ),
    Layer.provideMerge(Registry.layer),
    Layer.provideMerge(Registry.applicationLayer),
    Layer.provideMerge(Output.layer(options.limits)),
    Layer.provideMerge(ManagedOutputs.layer({ directory: options.outputsDirectory })),
    Layer.provideMerge(options.store),
    // Where plugins installed over the kernel add their hooks; the settler meets them.
    Layer.provideMerge(Hooks.layer()),
  )
