// Tool files and saved approvals for the permission end-to-end tests: tools that record each run, and direct
// access to the approvals in a sandbox's store (an "always" reply needs a terminal, which tests do not have).

import { realpathSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Approvals } from "../../src/store/approvals"
import { SqliteStore } from "../../src/store/sqlite-store"
import { IMPORTS, RAN, type Sandbox } from "./fixture"

/** A tool file whose default export takes `{ target }`, records through RAN that it ran, and answers `NAME target`. */
export const recording = (name: string) => `${IMPORTS}${RAN}
export default Tool.make({
  description: ${JSON.stringify(`The ${name} tool`)},
  input: Schema.Struct({ target: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.sync(() => {
    ran(${JSON.stringify(name)})
    return ${JSON.stringify(`${name} `)} + input.target
  }),
})
`

/** The Location's `core.json` holding `content` as JSON. */
export const coreJson = (content: unknown): Record<string, string> => ({ "core.json": JSON.stringify(content, null, 2) })

/** The Location's real path: approvals belong to it, and messages name files under it. */
export const realLocation = (box: Sandbox): string => realpathSync(box.location)

const withApprovals = <A>(box: Sandbox, program: Effect.Effect<A, unknown, Approvals.Service>): Promise<A> =>
  Effect.runPromise(program.pipe(Effect.provide(SqliteStore.approvalsLayer(join(box.data, "core.db")))))

/** Saves approvals in the store `core` uses in this sandbox, as an "always" reply would. */
export const saveApprovals = (
  box: Sandbox,
  action: string,
  patterns: ReadonlyArray<string>,
  project: string = realLocation(box),
): Promise<void> =>
  withApprovals(
    box,
    Effect.gen(function* () {
      yield* (yield* Approvals.Service).save(project, action, patterns)
    }),
  )

/** The approvals saved for `project` (by default the sandbox's Location), as `[action, pattern]` pairs. */
export const savedApprovals = (box: Sandbox, project: string = realLocation(box)): Promise<Array<[string, string]>> =>
  withApprovals(
    box,
    Effect.gen(function* () {
      const saved = yield* (yield* Approvals.Service).list(project)
      return saved.map((approval): [string, string] => [approval.action, approval.pattern])
    }),
  )
