// An example plugin: `sqlite_query`, read-only SQL over the Location's `app.db`, through one bun:sqlite connection
// opened when the plugin installs and closed exactly once when its Scope closes (the file changes, the Location is
// let go, core ends). Copy it into a Location's `plugins/` (or `$CORE_HOME/plugins/` for every Location).
import { Plugin, Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { Database } from "bun:sqlite"
import { existsSync } from "node:fs"
import { join } from "node:path"

/** The database, relative to the Location. */
const FILE = "app.db"

const Value = Schema.Union([Schema.String, Schema.Finite, Schema.Null])

const Rows = Schema.Struct({
  columns: Schema.Array(Schema.String),
  rows: Schema.Array(Schema.Array(Value)),
})

/** A row's cell as the model reads it: text as is, numbers in decimal, NULL spelled out, blobs by size. */
const cell = (value: unknown): string | number | null =>
  value === null || typeof value === "string" || typeof value === "number"
    ? value
    : typeof value === "bigint"
      ? Number(value)
      : value instanceof Uint8Array
        ? `<${value.byteLength} bytes>`
        : String(value)

export default Plugin.make({
  install: Effect.gen(function* () {
    const { directory } = yield* Plugin.Location
    const tools = yield* Plugin.Tools
    const path = join(directory, FILE)
    if (!existsSync(path)) {
      return yield* Effect.fail(new Error(`${path} does not exist; create it, or remove plugins/sqlite.ts`))
    }
    // One connection for the Location, read-only: a query can never change the data.
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Database(path, { readonly: true })),
      (connection) => Effect.sync(() => connection.close()),
    )
    yield* tools.register({
      sqlite_query: Tool.make({
        description:
          `Run one read-only SQL query (SQLite dialect) against the project's ${FILE} and answer its rows. ` +
          "Use ? placeholders with `params` for values. List tables with: SELECT name FROM sqlite_schema WHERE type = 'table'.",
        input: Schema.Struct({
          sql: Schema.String.annotate({ description: "One SQL statement, e.g. SELECT * FROM users WHERE id = ?" }),
          params: Schema.optionalKey(Schema.Array(Value).annotate({ description: "Values for the ? placeholders, in order" })),
        }),
        output: Rows,
        execute: (input) =>
          Effect.try({
            try: () => {
              const statement = db.query(input.sql)
              const rows = statement.values(...((input.params ?? []) as Array<string | number | null>))
              return { columns: statement.columnNames, rows: rows.map((row) => row.map(cell)) }
            },
            catch: (error) =>
              new Tool.Failure({ message: `SQLite refused the query: ${error instanceof Error ? error.message : String(error)}` }),
          }),
        toModelOutput: ({ output }) =>
          output.rows.length === 0
            ? `No rows (columns: ${output.columns.join(", ") || "none"}).`
            : [output.columns.join("\t"), ...output.rows.map((row) => row.map((value) => (value === null ? "NULL" : String(value))).join("\t"))].join("\n"),
      }),
    })
  }),
})
