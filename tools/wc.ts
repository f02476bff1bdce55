// A tool with a structured output and `toModelOutput`, failing with `Tool.Failure` when it cannot answer.
// Paths are relative to the Location this tools/ folder belongs to.
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { realpathSync } from "node:fs"
import { isAbsolute, relative, resolve, sep } from "node:path"

const root = realpathSync(resolve(import.meta.dir, ".."))

/** The path relative to the project root, or undefined when it (or what a symlink points to) is outside. */
const inside = (path: string): string | undefined => {
  const within = relative(root, path)
  return within === ".." || within.startsWith(`..${sep}`) || isAbsolute(within) ? undefined : within
}

const Counts = Schema.Struct({
  path: Schema.String,
  lines: Schema.Finite,
  words: Schema.Finite,
  bytes: Schema.Finite,
})

export default Tool.make({
  description:
    "Count the lines, words and bytes of a text file in this project (like `wc`). The path is relative to the " +
    "project root; files outside the project are refused.",
  input: Schema.Struct({
    path: Schema.String.annotate({ description: "File path relative to the project root, e.g. README.md" }),
  }),
  output: Counts,
  execute: (input) =>
    Effect.gen(function* () {
      const requested = resolve(root, input.path)
      const outside = new Tool.Failure({ message: `${input.path} is outside the project; give a path inside it.` })
      const path = inside(requested)
      if (path === undefined) return yield* outside
      const real = yield* Effect.try({ try: () => realpathSync(requested), catch: () => undefined }).pipe(
        Effect.orElseSucceed(() => undefined),
      )
      if (real === undefined) {
        return yield* new Tool.Failure({ message: `File not found: ${input.path}. Check the path (relative to the project root).` })
      }
      // A symlink inside the project may point outside it.
      if (inside(real) === undefined) return yield* outside
      const file = Bun.file(real)
      const text = yield* Effect.tryPromise({ try: () => file.text(), catch: () => undefined }).pipe(
        Effect.orElseSucceed(() => undefined),
      )
      if (text === undefined) {
        return yield* new Tool.Failure({ message: `${input.path} cannot be read as a text file (is it a directory?).` })
      }
      return {
        path,
        lines: text.length === 0 ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
        words: text.split(/\s+/).filter((word) => word.length > 0).length,
        bytes: file.size,
      }
    }),
  toModelOutput: ({ output: counts }) => `${counts.path}: ${counts.lines} lines, ${counts.words} words, ${counts.bytes} bytes`,
})
