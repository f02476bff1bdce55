export * as McpQuestions from "./mcp-questions"

// The shipped `question` host tool as an MCP client performs it: its questions as one elicitation form (each a
// single or multiple choice among its options, with a free-text field beside it), and the form's content read back
// as the tool's answers. Pure: asking and answering is the session's (./mcp).

import type { ElicitRequestFormParams } from "@modelcontextprotocol/sdk/types.js"

interface Question {
  readonly question: string
  readonly header?: string
  readonly options: ReadonlyArray<{ readonly label: string; readonly description?: string }>
  readonly multiple?: boolean
}

const questionsOf = (input: unknown): ReadonlyArray<Question> => (input as { questions: ReadonlyArray<Question> }).questions

const choiceKey = (index: number) => `answer_${index + 1}`
const ownKey = (index: number) => `own_${index + 1}`

/** The elicitation form asking the questions of a `question` call's input (valid against its input schema). */
export const form = (input: unknown): ElicitRequestFormParams => {
  const questions = questionsOf(input)
  const properties: Record<string, ElicitRequestFormParams["requestedSchema"]["properties"][string]> = {}
  for (const [index, entry] of questions.entries()) {
    const title = entry.header ?? `Question ${index + 1}`
    const choices = entry.options.map((option) => ({
      const: option.label,
      title: option.description === undefined ? option.label : `${option.label}: ${option.description}`,
    }))
    properties[choiceKey(index)] =
      entry.multiple === true
        ? { type: "array", title, description: entry.question, items: { anyOf: choices } }
        : { type: "string", title, description: entry.question, oneOf: choices }
    properties[ownKey(index)] = { type: "string", title: `${title}: or your own answer`, description: "Leave empty to use the choice above" }
  }
  const listed = questions.map((entry, index) => `${index + 1}. ${entry.question}`).join("\n")
  return {
    mode: "form",
    message: questions.length === 1 ? `The agent asks: ${questions[0]!.question}` : `The agent asks:\n${listed}`,
    requestedSchema: { type: "object", properties },
  }
}

/** The answers the form's content gives, one list per question: the user's own words, else the options chosen. */
export const answers = (input: unknown, content: Readonly<Record<string, unknown>> | undefined): ReadonlyArray<ReadonlyArray<string>> =>
  questionsOf(input).map((entry, index) => {
    const own = content?.[ownKey(index)]
    if (typeof own === "string" && own.trim() !== "") return [own.trim()]
    const labels = new Set(entry.options.map((option) => option.label))
    const chosen = content?.[choiceKey(index)]
    const picked = Array.isArray(chosen) ? chosen : chosen === undefined ? [] : [chosen]
    return picked.filter((label): label is string => typeof label === "string" && labels.has(label))
  })
