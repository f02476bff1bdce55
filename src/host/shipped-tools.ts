export * as ShippedTools from "./shipped-tools"

// The host tools core ships ready-made, which a host enables by name (`POST /v1/host-tools { "enable": [...] }`):
// `question` (ask the user questions with options) and `task` (run a sub-agent on a prompt). Only their
// definitions and how the model reads their answers live here; the host performs them (./host-tools).

import type * as Schema from "effect/Schema"
import type { Tool } from "../tool/tool"

/** A host tool's definition as a host registers it (the shape of `POST /v1/host-tools`'s `tools`). */
export interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, Schema.Json>>
  readonly outputSchema?: Readonly<Record<string, Schema.Json>>
  readonly timeoutMs?: number
  readonly annotations?: Tool.Annotations
}

/** A shipped definition, with how the model reads its output. */
export interface Shipped extends Definition {
  readonly toModelOutput: (input: unknown, output: unknown) => string
}

const QUESTION_DESCRIPTION = `Ask the user one or more questions and wait for their answers.

Use it when you need the user's decision to go on: an ambiguous request, a choice between approaches, a preference \
you cannot infer, or a confirmation before something hard to undo. Do not use it for what you can find out yourself \
by reading code or running tools, and do not ask what the user already told you.

- Ask up to 4 questions at once; each has 2 to 6 options the user picks from.
- Put the option you recommend first and end its label with " (Recommended)".
- Set "multiple": true when several options may be chosen together.
- The user can always answer in their own words instead of picking an option: do not add an "Other" option.

The answer lists, per question in order, the labels the user picked (or their own text).`

const TASK_DESCRIPTION = `Start a sub-agent on a self-contained task and wait for its final answer.

Use it for work that needs many steps of its own and whose result you can use as a summary: searching a large \
codebase for something you cannot find in one or two searches, researching a question, or carrying out a well \
defined change in parallel with your own work. Do not use it to read one known file or to run one command: do that \
yourself.

- The sub-agent sees none of this conversation: put everything it needs in "prompt" (the goal, the files or names \
you know, what to return and in what form).
- "description" is a short label of 3 to 5 words for the user.
- Several tasks can run at once: call the tool several times in one step.
- The answer is the sub-agent's final message, which the user does not see: tell the user what matters in it.`

/** `question`'s answer: per question, in order, the labels the user chose or their own words. */
const questionOutput = {
  type: "object",
  properties: {
    answers: {
      type: "array",
      description: "One entry per question, in order: the labels the user picked, or their own text",
      items: { type: "array", items: { type: "string" } },
    },
  },
  required: ["answers"],
  additionalProperties: false,
} as const

const question: Shipped = {
  name: "question",
  description: QUESTION_DESCRIPTION,
  inputSchema: {
    type: "object",
    properties: {
      questions: {
        type: "array",
        description: "The questions to ask, in the order the user sees them",
        minItems: 1,
        maxItems: 4,
        items: {
          type: "object",
          properties: {
            question: { type: "string", minLength: 1, description: "The complete question, ending with a question mark" },
            header: { type: "string", maxLength: 30, description: "A very short label for the question (a few words)" },
            options: {
              type: "array",
              description: "The choices the user picks from",
              minItems: 2,
              maxItems: 6,
              items: {
                type: "object",
                properties: {
                  label: { type: "string", minLength: 1, description: "The choice as the user sees it (1 to 5 words)" },
                  description: { type: "string", description: "What choosing it means, or its trade-off" },
                },
                required: ["label"],
                additionalProperties: false,
              },
            },
            multiple: { type: "boolean", description: "Whether the user may pick several options (default false)" },
          },
          required: ["question", "options"],
          additionalProperties: false,
        },
      },
    },
    required: ["questions"],
    additionalProperties: false,
  },
  outputSchema: questionOutput,
  annotations: { readOnly: true },
  toModelOutput: (input, output) => {
    const questions = (input as { questions: ReadonlyArray<{ question: string }> }).questions
    const answers = (output as { answers: ReadonlyArray<ReadonlyArray<string>> }).answers
    const lines = questions.map((entry, index) => {
      const answer = answers[index]
      const said = answer === undefined || answer.length === 0 ? "(no answer)" : answer.map((text) => JSON.stringify(text)).join(", ")
      return `${JSON.stringify(entry.question)} = ${said}`
    })
    return `The user answered:\n${lines.join("\n")}\nGo on with these answers in mind.`
  },
}

const task: Shipped = {
  name: "task",
  description: TASK_DESCRIPTION,
  inputSchema: {
    type: "object",
    properties: {
      description: { type: "string", minLength: 1, maxLength: 80, description: "A short label of the task (3 to 5 words)" },
      prompt: { type: "string", minLength: 1, description: "Everything the sub-agent needs to do the task, and what to answer" },
      subagent_type: {
        type: "string",
        description: "The kind of sub-agent to start, when the host offers several; leave it out for the default",
      },
    },
    required: ["description", "prompt"],
    additionalProperties: false,
  },
  outputSchema: { type: "string", description: "The sub-agent's final answer" },
  annotations: { openWorld: true },
  toModelOutput: (_, output) => output as string,
}

/** The shipped host tools, by name. */
export const BY_NAME: ReadonlyMap<string, Shipped> = new Map([question, task].map((shipped) => [shipped.name, shipped]))

export const NAMES: ReadonlyArray<string> = [...BY_NAME.keys()]
