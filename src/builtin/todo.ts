export * as Todo from "./todo"

// The `todowrite` and `todoread` built-ins: a session's todo list, kept per (Location, sessionID) in the store
// (see ../store/todos), so it outlives the process and a host can show it. todowrite replaces the whole list and
// answers it as the model will see it again; its input is checked (statuses, priorities, non-blank bounded text,
// a bounded number of items) before anything is written. Each is checked as its action as a whole.

import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Terminal } from "../contract/terminal"
import { Todos } from "../store/todos"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"

/** Items a list holds at most. */
export const MAX_ITEMS = 100
/** Characters an item's content holds at most. */
export const MAX_CONTENT_CHARS = 1_000

/**
 * Every break a reader may split lines at (Unicode's: U+2028, U+2029, NEL, vertical tab and form feed besides CR and
 * LF), with the spaces around it: one item is one line wherever it is shown.
 */
const LINE_BREAKS = /\s*[\r\n\v\f\u0085\u2028\u2029]+\s*/g

const Content = Schema.String.check(
  // Something to read: not only spaces, nor only characters that show nothing (zero-width ones).
  Schema.isPattern(/[^\s\u200b-\u200d\u2060\ufeff]/, { expected: "non-blank text" }),
  Schema.isMaxLength(MAX_CONTENT_CHARS, { expected: `at most ${MAX_CONTENT_CHARS} characters` }),
).annotate({ description: `What to do, in a short imperative sentence (at most ${MAX_CONTENT_CHARS} characters)` })

const InputItem = Schema.Struct({
  content: Content,
  status: Todos.Status.annotate({
    description: "pending (not started), in_progress (being worked on now), completed, or cancelled (no longer needed)",
  }),
  priority: Schema.optionalKey(Todos.Priority.annotate({ description: "high, medium or low (default medium)" })),
})

export const WriteInput = Schema.Struct({
  todos: Schema.Array(InputItem)
    .check(Schema.isMaxLength(MAX_ITEMS, { expected: `at most ${MAX_ITEMS} items` }))
    .annotate({ description: "The whole updated list, in order; it replaces the previous one ([] clears it)" }),
})

export const ReadInput = Schema.Struct({})

export const Output = Schema.Struct({
  todos: Schema.Array(Todos.Item).annotate({ description: "The session's list, in order" }),
})
export type Output = typeof Output.Type

const MARKS: Record<Todos.Status, string> = { pending: "[ ]", in_progress: "[>]", completed: "[x]", cancelled: "[-]" }
const ORDER: ReadonlyArray<Todos.Status> = ["in_progress", "pending", "completed", "cancelled"]

/**
 * The list as the model reads it: one line per item, and the counts per status. An empty list read says how to
 * start one (`hint`); one just cleared says only that it is empty.
 */
export const render = (todos: ReadonlyArray<Todos.Item>, heading: string, hint = ""): string => {
  if (todos.length === 0) return `${heading}: empty (no todos).${hint}`
  const counts = ORDER.flatMap((status) => {
    const count = todos.filter((item) => item.status === status).length
    return count === 0 ? [] : [`${count} ${status}`]
  })
  const lines = todos.map((item, index) => `${index + 1}. ${MARKS[item.status]} ${item.content} (${item.priority})`)
  return [`${heading}: ${todos.length} item${todos.length === 1 ? "" : "s"} (${counts.join(", ")})`, ...lines].join("\n")
}

const WRITE_DESCRIPTION = `Create or update the todo list of this session, to plan and track multi-step work.

- Send the whole list every time: it replaces the previous one, in order ([] clears it).
- Each item: content (a short imperative sentence), status (pending, in_progress, completed, cancelled), priority (high, medium, low; default medium).
- Keep exactly one item in_progress while you work; mark an item completed as soon as it is done, and cancelled when it is no longer needed.
- Use it for tasks of three or more steps, or when the user gives several tasks; skip it for a single trivial step.
- At most ${MAX_ITEMS} items of at most ${MAX_CONTENT_CHARS} characters. The host shows the list to the user.`

const READ_DESCRIPTION =
  "Read the todo list of this session, as todowrite last wrote it (an empty list when none was written). " +
  "Use it to check what is left before choosing the next step."

/** The tools, keeping lists in `todos` under the Location `directory`. */
export const make = (services: { readonly directory: string; readonly todos: Todos.Interface }) => {
  const keyOf = (context: Tool.Context): Todos.Key => ({ location: services.directory, sessionID: context.sessionID })
  const todowrite = Builtin.tool({
    description: WRITE_DESCRIPTION,
    input: WriteInput,
    output: Output,
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
    toModelOutput: ({ output }) => render(output.todos, "Todo list updated"),
    execute: (input, context) =>
      Effect.gen(function* () {
        const todos = input.todos.map(
          // One line per item, so a line break in one cannot pass for another item where the list is shown, and
          // shown as it is: what a terminal acts on (an escape moving the cursor up to rewrite the item above, a
          // bidirectional override, a control) kept as its escape (`\u001b`), as core shows any text it did not write.
          (item): Todos.Item => ({
            content: Terminal.inline(item.content.trim().replace(LINE_BREAKS, " ")),
            status: item.status,
            priority: item.priority ?? "medium",
          }),
        )
        // Kept within the bound it was checked against: an item the model sends back as it read it is taken again.
        const long = todos.findIndex((item) => item.content.length > MAX_CONTENT_CHARS)
        if (long !== -1) {
          return yield* new Tool.Failure({
            message:
              `Item ${long + 1} holds characters a terminal acts on (escape sequences, controls or invisible marks), ` +
              `kept as their escapes (\\u001b): it would be ${todos[long]!.content.length} characters, over the ` +
              `${MAX_CONTENT_CHARS} an item holds. Write it without them, or shorter; the list was not changed.`,
          })
        }
        yield* services.todos.write(keyOf(context), todos).pipe(Effect.orDie)
        return { todos } satisfies Output
      }),
  })
  const todoread = Builtin.tool({
    description: READ_DESCRIPTION,
    input: ReadInput,
    output: Output,
    annotations: { readOnly: true, idempotent: true, openWorld: false },
    toModelOutput: ({ output }) => render(output.todos, "Todo list", " Use todowrite to plan multi-step work."),
    execute: (_input, context) =>
      Effect.map(services.todos.read(keyOf(context)).pipe(Effect.orDie), (todos): Output => ({ todos })),
  })
  return { todowrite, todoread }
}
