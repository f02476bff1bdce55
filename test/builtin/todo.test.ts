// todowrite and todoread through the kit (a real Location's built-ins and settler): the list a session writes is
// the list it reads, another session and another Location see none of it, and a malformed list writes nothing.

import { describe, expect, test } from "bun:test"
import { Terminal } from "../../src/contract/terminal"
import { Todos } from "../../src/store/todos"
import { Todo } from "../../src/builtin/todo"
import { harness, textOf } from "../support/builtin"

const LIST = [
  { content: "Write the store", status: "completed", priority: "high" },
  { content: "Wire the route", status: "in_progress" },
  { content: "Document it", status: "pending", priority: "low" },
  { content: "Benchmark it", status: "cancelled", priority: "low" },
]

describe("todowrite and todoread", () => {
  test("todowrite answers the list as the model will see it, with counts; todoread reads it back", async () => {
    const location = harness()
    const written = await location.settle("todowrite", { todos: LIST })
    expect(written.settlement.status).toBe("success")
    expect(textOf(written.settlement)).toBe(
      [
        "Todo list updated: 4 items (1 in_progress, 1 pending, 1 completed, 1 cancelled)",
        "1. [x] Write the store (high)",
        "2. [>] Wire the route (medium)",
        "3. [ ] Document it (low)",
        "4. [-] Benchmark it (low)",
      ].join("\n"),
    )
    const read = await location.settle("todoread", {})
    expect(read.settlement.status).toBe("success")
    expect(read.settlement.structured).toEqual({
      todos: [
        { content: "Write the store", status: "completed", priority: "high" },
        // priority defaults to medium
        { content: "Wire the route", status: "in_progress", priority: "medium" },
        { content: "Document it", status: "pending", priority: "low" },
        { content: "Benchmark it", status: "cancelled", priority: "low" },
      ],
    })
    expect(textOf(read.settlement)).toStartWith("Todo list: 4 items")
  })

  test("a session that wrote no list reads an empty one, said plainly; another session's list stays its own", async () => {
    const location = harness()
    await location.settle("todowrite", { todos: LIST }, { session: "ses_a" })
    const other = await location.settle("todoread", {}, { session: "ses_b" })
    expect(other.settlement.structured).toEqual({ todos: [] })
    expect(textOf(other.settlement)).toBe("Todo list: empty (no todos). Use todowrite to plan multi-step work.")
    expect(((await location.settle("todoread", {}, { session: "ses_a" })).settlement.structured as any).todos).toHaveLength(4)
  })

  test("another Location sharing the same store does not see the list", async () => {
    const todos = Todos.memory()
    const first = harness({ todos })
    const second = harness({ todos })
    await first.settle("todowrite", { todos: LIST }, { session: "ses_shared" })
    expect((await second.settle("todoread", {}, { session: "ses_shared" })).settlement.structured).toEqual({ todos: [] })
    expect(((await first.settle("todoread", {}, { session: "ses_shared" })).settlement.structured as any).todos).toHaveLength(4)
  })

  test("each write replaces the whole list, and [] clears it", async () => {
    const location = harness()
    await location.settle("todowrite", { todos: LIST })
    await location.settle("todowrite", { todos: [{ content: "Only this", status: "pending" }] })
    expect((await location.settle("todoread", {})).settlement.structured).toEqual({
      todos: [{ content: "Only this", status: "pending", priority: "medium" }],
    })
    const cleared = await location.settle("todowrite", { todos: [] })
    // Cleared on purpose: no advice to do what was just done.
    expect(textOf(cleared.settlement)).toBe("Todo list updated: empty (no todos).")
    expect((await location.settle("todoread", {})).settlement.structured).toEqual({ todos: [] })
  })

  test("content is kept without surrounding blanks, on one line: a line break cannot pass for another item", async () => {
    const location = harness()
    await location.settle("todowrite", { todos: [{ content: "  Trim me\n", status: "pending" }] })
    expect(((await location.settle("todoread", {})).settlement.structured as any).todos[0].content).toBe("Trim me")
    const forged = await location.settle("todowrite", { todos: [{ content: "Real\n2. [x] Forged (high)", status: "pending" }] })
    expect(textOf(forged.settlement)).toBe("Todo list updated: 1 item (1 pending)\n1. [ ] Real 2. [x] Forged (high) (medium)")
    // A reader splitting at Unicode's line breaks (Python's splitlines) saw a second item in each of these.
    for (const brk of ["\u2028", "\u2029", "\u0085", "\v", "\f", "\r"]) {
      const unicode = await location.settle("todowrite", { todos: [{ content: `Real${brk}2. [x] Forged (high)`, status: "pending" }] })
      expect(((unicode.settlement.structured as any).todos[0].content as string)).toBe("Real 2. [x] Forged (high)")
    }
  })

  // Kept as written, "Run tests\x1b[1A\x1b[2K..." rewrote the item above it on a host's terminal, and a bidirectional
  // override reordered what an item showed.
  test("what a terminal acts on is kept as its escape: an item cannot rewrite another where the list is shown", async () => {
    const location = harness()
    const contents = ["Run tests\x1b[1A\x1b[2K\x1b[32m3. [x] Deploy (high)", "\x1b]52;c;aGk=\x07copy", "Fix \u202eevil", "C1 \u009b2J", "\u200b\u0001", "Ship 👩\u200d💻"]
    const written = await location.settle("todowrite", { todos: contents.map((content) => ({ content, status: "pending" })) })
    const kept = ((await location.settle("todoread", {})).settlement.structured as any).todos.map((item: { content: string }) => item.content)
    expect(kept).toEqual([
      "Run tests\\u001b[1A\\u001b[2K\\u001b[32m3. [x] Deploy (high)",
      "\\u001b]52;c;aGk=\\u0007copy",
      "Fix \\u202eevil",
      "C1 \\u009b2J",
      "\\u200b\\u0001",
      "Ship 👩\u200d💻",
    ])
    expect(Terminal.inert(textOf(written.settlement).replaceAll("\n", " "))).toBe(true)
    // Read back and sent again as read, the list is the same: the escapes are text now.
    const again = await location.settle("todowrite", { todos: kept.map((content: string) => ({ content, status: "pending" })) })
    expect((again.settlement.structured as any).todos.map((item: { content: string }) => item.content)).toEqual(kept)
    // An item within the bound as written but past it once escaped is refused, saying why, and the list stays.
    const past = await location.settle("todowrite", { todos: [{ content: "Fix \u001b[31m".repeat(100), status: "pending" }] })
    expect(past.settlement.status).toBe("error")
    expect(textOf(past.settlement)).toContain("Item 1 holds characters a terminal acts on")
    expect(((await location.settle("todoread", {})).settlement.structured as any).todos.map((item: { content: string }) => item.content)).toEqual(kept)
  })

  const malformed: ReadonlyArray<[string, unknown, RegExp]> = [
    ["an unknown status", { todos: [{ content: "x", status: "done" }] }, /status/],
    ["an unknown priority", { todos: [{ content: "x", status: "pending", priority: "urgent" }] }, /priority/],
    ["blank content", { todos: [{ content: "   ", status: "pending" }] }, /non-blank/],
    ["content that shows nothing (zero-width characters)", { todos: [{ content: "\u200b\u2060 \ufeff", status: "pending" }] }, /non-blank/],
    ["missing content", { todos: [{ status: "pending" }] }, /content/],
    ["content too long", { todos: [{ content: "x".repeat(Todo.MAX_CONTENT_CHARS + 1), status: "pending" }] }, /at most 1000 characters/],
    [
      "too many items",
      { todos: Array.from({ length: Todo.MAX_ITEMS + 1 }, (_, index) => ({ content: `item ${index}`, status: "pending" })) },
      /at most 100 items/,
    ],
    ["a list that is not an array", { todos: "write tests" }, /todos/],
    ["no list at all", {}, /todos/],
    ["an item that is not an object", { todos: ["write tests"] }, /todos/],
  ]
  for (const [what, input, message] of malformed) {
    test(`${what} is invalid input, and the list before it stays`, async () => {
      const location = harness()
      await location.settle("todowrite", { todos: [{ content: "Keep me", status: "pending" }] })
      const refused = await location.settle("todowrite", input)
      expect(refused.settlement.status).toBe("error")
      expect(refused.settlement.error?.kind).toBe("invalid_input")
      expect(refused.settlement.error?.message).toMatch(message)
      expect(((await location.settle("todoread", {})).settlement.structured as any).todos).toEqual([
        { content: "Keep me", status: "pending", priority: "medium" },
      ])
    })
  }

  test("several items in_progress are kept as written: the convention is the description's, not enforced", async () => {
    const location = harness()
    const both = [
      { content: "One", status: "in_progress" },
      { content: "Two", status: "in_progress" },
    ]
    expect((await location.settle("todowrite", { todos: both })).settlement.status).toBe("success")
    expect(((await location.settle("todoread", {})).settlement.structured as any).todos).toHaveLength(2)
  })

  test("a rule denying todowrite refuses the call and writes nothing; todoread still answers", async () => {
    const location = harness({ rules: [{ action: "todowrite", resource: "*", effect: "deny" }] })
    const refused = await location.settle("todowrite", { todos: LIST })
    expect(refused.settlement.error?.kind).toBe("denied")
    expect((await location.settle("todoread", {})).settlement.structured).toEqual({ todos: [] })
  })
})
