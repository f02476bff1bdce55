// A tool with a structured output and `toModelOutput`, failing with `Tool.Failure` when it cannot answer.
// Paths are relative to the Location this tools/ folder belongs to.
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
import { isAbsolute, relative, resolve } from "node:path"

const root = resolve(import.meta.dir, "..")

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
      const absolute = resolve(root, input.path)
      const inside = relative(root, absolute)
      if (inside.startsWith("..") || isAbsolute(inside)) {
        return yield* new Tool.Failure({ message: `${input.path} is outside the project; give a path inside it.` })
      }
      const file = Bun.file(absolute)
      if (!(yield* Effect.promise(() => file.exists()))) {
        return yield* new Tool.Failure({ message: `File not found: ${input.path}. Check the path (relative to the project root).` })
      }
      const text = yield* Effect.promise(() => file.text())
      return {
        path: inside,
        lines: text.length === 0 ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
        words: text.split(/\s+/).filter((word) => word.length > 0).length,
        bytes: file.size,
      }
    }),
  toModelOutput: (counts) => `${counts.path}: ${counts.lines} lines, ${counts.words} words, ${counts.bytes} bytes`,
})
