// The shipped host tools over `core mcp`: the official MCP SDK client over stdio. A client that declares form
// elicitation is offered `question` and its user answers it through `elicitation/create` (choices, several choices,
// own words, declining); one that declares sampling is offered `task` and its model answers through
// `sampling/createMessage`; a client that can do neither is offered neither; a Location tool named `question` stays.
// Also the form and the reading of its answers alone.

import { afterEach, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js"
import { McpQuestions } from "../../src/mcp-server/mcp-questions"
import { IMPORTS, sandbox, type Sandbox } from "../cli/fixture"

const MAIN = join(import.meta.dir, "../../src/cli/main.ts")

const open: Array<Client> = []
afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

const connect = async (
  box: Sandbox,
  answer?: (request: ElicitRequest) => ElicitResult,
  sample?: (request: CreateMessageRequest) => CreateMessageResult,
) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "mcp", "--location", box.location],
    env: { PATH: process.env.PATH ?? "", HOME: box.home, ...box.env },
    stderr: "pipe",
  })
  const client = new Client(
    { name: "test", version: "1.0.0" },
    {
      capabilities: {
        ...(answer === undefined ? {} : { elicitation: { form: {} } }),
        ...(sample === undefined ? {} : { sampling: {} }),
      },
    },
  )
  const asked: Array<ElicitRequest> = []
  const sampled: Array<CreateMessageRequest> = []
  if (sample !== undefined) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      sampled.push(request)
      return sample(request)
    })
  }
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request)
      return answer(request)
    })
  }
  await client.connect(transport)
  open.push(client)
  return { client, asked, sampled }
}

const INPUT = {
  questions: [
    {
      question: "Which database?",
      header: "Database",
      options: [{ label: "Postgres", description: "Already in production" }, { label: "SQLite" }],
    },
    { question: "Which checks should run?", options: [{ label: "lint" }, { label: "test" }, { label: "bench" }], multiple: true },
  ],
}

const textOf = (result: { readonly [key: string]: unknown }) =>
  (result.content as ReadonlyArray<{ type: string; text?: string }>).map((part) => part.text).join("\n")

describe("question over core mcp", () => {
  test("a client that can ask its user is offered question, and its user's choices come back to the model", async () => {
    const box = sandbox()
    let checks: Array<string> = ["lint", "test"]
    const { client, asked } = await connect(box, () => ({ action: "accept", content: { answer_1: "Postgres", answer_2: checks } }))
    const { tools } = await client.listTools()
    const question = tools.find((tool) => tool.name === "question")
    expect(question?.description).toContain("Ask the user one or more questions")
    const result = await client.callTool({ name: "question", arguments: INPUT })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ answers: [["Postgres"], ["lint", "test"]] })
    expect(textOf(result)).toContain('"Which database?" = "Postgres"')
    expect(textOf(result)).toContain('"Which checks should run?" = "lint", "test"')
    expect(asked).toHaveLength(1)
    expect(asked[0]!.params.message).toBe("The agent asks:\n1. Which database?\n2. Which checks should run?")
    // A client whose answer is not among the options offered is refused by the form's schema: the model reads so.
    checks = ["lint", "rm -rf /"]
    const refused = await client.callTool({ name: "question", arguments: INPUT })
    expect(refused.isError).toBe(true)
    expect(textOf(refused)).toBe("question: The MCP client did not bring back an answer from the user; ask in your reply instead.")
  })

  test("the user's own words win over a choice; declining fails the call with a message for the model", async () => {
    const box = sandbox()
    let decline = false
    const { client } = await connect(box, () =>
      decline ? { action: "decline" } : { action: "accept", content: { answer_1: "SQLite", own_1: "  MySQL, sadly  " } },
    )
    await client.listTools()
    const own = await client.callTool({ name: "question", arguments: { questions: [INPUT.questions[0]] } })
    expect(own.structuredContent).toEqual({ answers: [["MySQL, sadly"]] })
    decline = true
    const declined = await client.callTool({ name: "question", arguments: { questions: [INPUT.questions[0]] } })
    expect(declined.isError).toBe(true)
    expect(textOf(declined)).toBe("question: The user declined to answer.")
  })

  test("a client that cannot ask its user is not offered question; a Location's own question tool stays its own", async () => {
    const plain = await connect(sandbox())
    expect((await plain.client.listTools()).tools.some((tool) => tool.name === "question" || tool.name === "task")).toBe(false)
    const called = await plain.client.callTool({ name: "question", arguments: INPUT })
    expect(called.isError).toBe(true)

    const own = `${IMPORTS}
export default Tool.make({
  description: "The Location's own question",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("from the tool file"),
})
`
    const box = sandbox({ "tools/question.ts": own })
    const { client, asked } = await connect(box, () => ({ action: "accept", content: {} }))
    const listed = (await client.listTools()).tools.filter((tool) => tool.name === "question")
    expect(listed.map((tool) => tool.description)).toEqual(["The Location's own question"])
    expect(textOf(await client.callTool({ name: "question", arguments: {} }))).toBe("from the tool file")
    expect(asked).toEqual([])
  })
})

describe("task over core mcp", () => {
  test("a client that can sample is offered task; its model's answer to the prompt is what the model reads", async () => {
    let fail = false
    const { client, sampled } = await connect(sandbox(), undefined, (request) => {
      if (fail) throw new Error("the user refused the sampling request")
      const message = request.params.messages[0]!.content as { text: string }
      return { role: "assistant", model: "test-model", content: { type: "text", text: `Done: ${message.text.length} characters read.` } }
    })
    const names = (await client.listTools()).tools.map((tool) => tool.name)
    expect(names).toContain("task")
    expect(names).not.toContain("question")
    const prompt = "Find where the retry delay is set and say its value."
    const result = await client.callTool({ name: "task", arguments: { description: "Find retry delay", prompt } })
    expect(result.isError).toBeFalsy()
    expect(textOf(result)).toBe(`Done: ${prompt.length} characters read.`)
    expect(sampled).toHaveLength(1)
    expect(sampled[0]!.params).toMatchObject({
      messages: [{ role: "user", content: { type: "text", text: prompt } }],
      includeContext: "none",
      maxTokens: 16_384,
    })
    expect(sampled[0]!.params.systemPrompt).toContain("sub-agent")

    fail = true
    const failed = await client.callTool({ name: "task", arguments: { description: "Again", prompt } })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toBe("task: The MCP client did not run the sub-agent (its sampling request failed); do the task yourself.")
  })
})

describe("the question form", () => {
  test("one choice per question (several where it allows them) and a free-text field beside each", () => {
    const form = McpQuestions.form(INPUT)
    expect(form.requestedSchema.properties).toEqual({
      answer_1: {
        type: "string",
        title: "Database",
        description: "Which database?",
        oneOf: [
          { const: "Postgres", title: "Postgres: Already in production" },
          { const: "SQLite", title: "SQLite" },
        ],
      },
      own_1: { type: "string", title: "Database: or your own answer", description: "Leave empty to use the choice above" },
      answer_2: {
        type: "array",
        title: "Question 2",
        description: "Which checks should run?",
        items: { anyOf: [{ const: "lint", title: "lint" }, { const: "test", title: "test" }, { const: "bench", title: "bench" }] },
      },
      own_2: { type: "string", title: "Question 2: or your own answer", description: "Leave empty to use the choice above" },
    })
  })

  test("reads only the options offered; nothing chosen is an empty answer", () => {
    expect(McpQuestions.answers(INPUT, { answer_1: "Oracle", answer_2: "lint" })).toEqual([[], ["lint"]])
    expect(McpQuestions.answers(INPUT, undefined)).toEqual([[], []])
    expect(McpQuestions.answers(INPUT, { answer_1: 3, own_2: "   " })).toEqual([[], []])
  })
})
