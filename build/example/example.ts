// An example tool: core registers the default export of tools/example.ts as "example". Try it with
//   core exec example --input '{"values":[3,1,2]}'
// and test it with `core test` (or `bun test`). Replace it with your own; `core init` never overwrites it.
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

const Summary = Schema.Struct({
  count: Schema.Finite,
  sum: Schema.Finite,
  mean: Schema.Finite,
  median: Schema.Finite,
  min: Schema.Finite,
  max: Schema.Finite,
})

export default Tool.make({
  description:
    "Summarise a list of numbers: count, sum, mean, median, minimum and maximum. Use it rather than doing the " +
    "arithmetic yourself. Give the numbers as a JSON array, not as text.",
  input: Schema.Struct({
    values: Schema.Array(Schema.Finite).annotate({ description: "The numbers to summarise, e.g. [3, 1, 2]" }),
  }),
  output: Summary,
  execute: (input) =>
    Effect.gen(function* () {
      if (input.values.length === 0) {
        return yield* new Tool.Failure({ message: "There are no values to summarise; give at least one number." })
      }
      const sorted = [...input.values].sort((a, b) => a - b)
      const sum = sorted.reduce((total, value) => total + value, 0)
      const middle = Math.floor(sorted.length / 2)
      return {
        count: sorted.length,
        sum,
        mean: sum / sorted.length,
        median: sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2,
        min: sorted[0]!,
        max: sorted[sorted.length - 1]!,
      }
    }),
  toModelOutput: ({ output: summary }) =>
    `${summary.count} values: mean ${summary.mean}, median ${summary.median}, min ${summary.min}, ` +
    `max ${summary.max}, sum ${summary.sum}`,
})
