// Tools the tests use, written once: the echo tool in process, and as the files tests write into a Location's tools/
// the echo tool, the gate tool (which waits at a Latch until the test releases it) and the wait tool (which waits
// until its call is cancelled). A test says only how its copy differs, through options; what it asserts
// about a tool (its description, its input schema, its answer, whether a run is recorded) stays visible there.

import { Effect, Schema } from "effect"
import { Tool } from "../../src/tool/tool"
import type { Latch } from "./latch"

/** The imports every tool file in these tests starts with. */
export const IMPORTS = `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\n`

/**
 * Lets a tool file record that it ran: `ran("name")` appends the name to `<location>/ran.log`, so a test can
 * count executions across processes.
 */
export const RAN = `import { appendFileSync } from "node:fs"
import { join as joinPath } from "node:path"
const ran = (name: string) => appendFileSync(joinPath(import.meta.dir, "..", "ran.log"), name + "\\n")
`

/** What a tool reports before it answers or waits: `context.progress`'s argument. */
export interface Progress {
  readonly message: string
  readonly metadata?: Record<string, unknown>
}

/** The statements of a tool's body that record its run (through RAN). */
const records = (record: string | undefined): string => (record === undefined ? "" : `    ran(${JSON.stringify(record)})\n`)

/** The statements of a tool's body that report `progress`, in order. */
const reports = (progress: Progress | ReadonlyArray<Progress> | undefined): string =>
  (progress === undefined ? [] : Array.isArray(progress) ? progress : [progress])
    .map((each) => `    yield* context.progress(${JSON.stringify(each)})\n`)
    .join("")

export interface EchoOptions {
  /** The description the model reads (default "Echo text back"). */
  readonly description?: string
  /** Records each run as `ran(record)`, counted by `runs(box, record)`. */
  readonly record?: string
  /** Progress reported before answering. */
  readonly progress?: Progress | ReadonlyArray<Progress>
  /** Input fields besides `text`, as Schema source: `times: Schema.optionalKey(Schema.Int)`. */
  readonly fields?: string
  /** The answer, an expression over `input` (default `input.text`). */
  readonly answer?: string
}

/**
 * The echo tool's `Tool.make({ ... })` expression, for a file of several tools: it needs IMPORTS before it (and RAN
 * when it records).
 */
export const echoDefinition = (options: EchoOptions = {}): string => `Tool.make({
  description: ${JSON.stringify(options.description ?? "Echo text back")},
  input: Schema.Struct({ text: Schema.String${options.fields === undefined ? "" : `, ${options.fields}`} }),
  output: Schema.String,
  execute: (input, context) => Effect.gen(function* () {
${records(options.record)}${reports(options.progress)}    return ${options.answer ?? "input.text"}
  }),
})`

/** An echo whose input may say how many `times` to repeat the text (at most 3, so a fuzzer's numbers stay small). */
export const REPEATING: EchoOptions = {
  fields: "times: Schema.optionalKey(Schema.Int)",
  answer: "input.text.repeat(Math.min(input.times ?? 1, 3))",
}

/** A tool file whose default export answers the text it is given (`{ text }`). */
export const echoTool = (options: EchoOptions = {}): string =>
  `${IMPORTS}${options.record === undefined ? "" : RAN}export default ${echoDefinition(options)}\n`

export interface GateOptions {
  /** Records each run, before waiting, as `ran(record)`, counted by `runs(box, record)`. */
  readonly record?: string
  /** Progress reported before waiting. */
  readonly progress?: Progress | ReadonlyArray<Progress>
  /** What it answers once through the gate (default "opened"). */
  readonly answer?: string
}

/**
 * A tool file whose default export (input `{}`) waits at `latch` until the test releases it, then answers.
 * Cancelling the call ends the wait.
 */
export const gateTool = (latch: Pick<Latch.Interface, "url">, options: GateOptions = {}): string => `${IMPORTS}${
  options.record === undefined ? "" : RAN
}export default Tool.make({
  description: "Wait until the gate opens",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: (_, context) => Effect.gen(function* () {
${records(options.record)}${reports(options.progress)}    yield* Effect.promise((signal) => fetch(${JSON.stringify(latch.url)}, { signal }).then((response) => response.text()))
    return ${JSON.stringify(options.answer ?? "opened")}
  }),
})
`

export interface WaitOptions {
  /** The description the model reads (default "Wait until cancelled"). */
  readonly description?: string
  /** Records each run, before waiting, as `ran(record)`, counted by `runs(box, record)`. */
  readonly record?: string
  /** Progress reported before waiting. */
  readonly progress?: Progress | ReadonlyArray<Progress>
  /** The tool's annotations: `{ readOnly: true }`. */
  readonly annotations?: Record<string, boolean>
}

/** A tool file whose default export (input `{}`) never answers: it runs until its call is cancelled or core ends. */
export const waitTool = (options: WaitOptions = {}): string => `${IMPORTS}${options.record === undefined ? "" : RAN}export default Tool.make({
  description: ${JSON.stringify(options.description ?? "Wait until cancelled")},
  input: Schema.Struct({}),
  output: Schema.String,
${options.annotations === undefined ? "" : `  annotations: ${JSON.stringify(options.annotations)},\n`}  execute: (_, context) => Effect.gen(function* () {
${records(options.record)}${reports(options.progress)}    return yield* Effect.never
  }),
})
`

/** The echo tool in process: answers the text it is given, after `prefix`. */
export const echo = (prefix = "") =>
  Tool.make({
    description: "Echo text back",
    input: Schema.Struct({ text: Schema.String }),
    output: Schema.String,
    execute: (input) => Effect.succeed(`${prefix}${input.text}`),
  })
