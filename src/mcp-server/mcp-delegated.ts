export * as McpDelegated from "./mcp-delegated"

// The shipped host tools an MCP client performs when it is the Location's one host (`core mcp`): `question` through
// form elicitation (its user answers) and `task` through sampling (its model answers the prompt). Which ones a client
// can perform follows from the capabilities it declared; performing one call is a request to the client whose
// answer becomes the call's result. No session state here (./mcp keeps which calls are its own).

import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js"
import type { HostTools } from "../host/host-tools"
import { McpQuestions } from "./mcp-questions"

/** Tokens a `task` answer may take from the client's model. */
export const TASK_MAX_TOKENS = 16_384

const TASK_SYSTEM_PROMPT =
  "You are a sub-agent given one self-contained task by another agent. Do the task as well as you can from what the " +
  "prompt says, then answer with your final result alone, in the form the prompt asks for: the other agent reads " +
  "only that answer."

/** The shipped host tools a client with `capabilities` can perform. */
export const offered = (capabilities: ClientCapabilities | undefined): ReadonlyArray<string> => [
  ...(capabilities?.elicitation?.form === undefined ? [] : ["question"]),
  ...(capabilities?.sampling === undefined ? [] : ["task"]),
]

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** Performs one delegated call through the client, along the call's own request; never rejects. */
export const perform = async (
  server: Server,
  call: HostTools.Call,
  relatedRequestId: string | number,
  note: (text: string) => void,
): Promise<HostTools.Answer> => {
  const options = { timeout: Math.max(1, call.deadline - Date.now()), relatedRequestId }
  if (call.name === "question") {
    try {
      const result = await server.elicitInput(McpQuestions.form(call.input), options)
      if (result.action !== "accept") return { error: { message: "The user declined to answer." } }
      return { output: { answers: McpQuestions.answers(call.input, result.content) } }
    } catch (error) {
      note(`core: asking the MCP client's user failed: ${messageOf(error)}\n`)
      return { error: { message: "The MCP client did not bring back an answer from the user; ask in your reply instead." } }
    }
  }
  const { prompt } = call.input as { readonly prompt: string }
  try {
    const result = await server.createMessage(
      {
        messages: [{ role: "user", content: { type: "text", text: prompt } }],
        systemPrompt: TASK_SYSTEM_PROMPT,
        includeContext: "none",
        maxTokens: TASK_MAX_TOKENS,
      },
      options,
    )
    if (result.content.type !== "text") {
      return { error: { message: `The sub-agent answered with ${result.content.type}, not text; do the task yourself.` } }
    }
    return { output: result.content.text }
  } catch (error) {
    note(`core: sampling from the MCP client failed: ${messageOf(error)}\n`)
    return { error: { message: "The MCP client did not run the sub-agent (its sampling request failed); do the task yourself." } }
  }
}
