// The AI SDK adapter against the compiled binary, driven by the SDK's own mock language model: a multi-step loop
// (list → read → edit → bash with an ask → grep and glob in one step → an image → bad input) with no glue but the
// adapter call, each result checked as the model's next prompt carries it; then needsApproval from core's check,
// a tool file changed mid-loop reaching the model at its next step, and the SDK's abort signal cancelling a running
// call on core. Also `toModelOutput` on settlements the loop does not reach: declined, structured only, a file by URL.

import { afterAll, describe, expect, test } from "bun:test"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { generateText, stepCountIs, type ModelMessage } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Core, type PermissionRequest, type Settlement } from "@core/client"
import { aiTools, toModelOutput } from "@core/client/ai"
import { binary } from "../support/binary"
import { aliveIn } from "../shell/processes"
import { IMPORTS, type Sandbox } from "../cli/fixture"
import { PNG_BASE64, project } from "./fixture"

const opened: Array<Core> = []
afterAll(async () => {
  for (const core of opened.splice(0)) await core.close()
})

const spawn = async (box: Sandbox): Promise<Core> => {
  const core = await Core.spawn({ command: await binary(), location: box.location, env: { ...process.env, ...box.env }, stderr: "ignore" })
  opened.push(core)
  return core
}

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

type Step = ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }> | string

/** A model that makes the given tool calls, one step after another, then says the last text. */
const scripted = (steps: ReadonlyArray<Step>) => {
  let index = 0
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const step = steps[Math.min(index++, steps.length - 1)]!
      if (typeof step === "string") {
        return { content: [{ type: "text", text: step }], finishReason: { unified: "stop", raw: undefined }, usage: USAGE, warnings: [] }
      }
      return {
        content: step.map((call) => ({ type: "tool-call" as const, toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.input) })),
        finishReason: { unified: "tool-calls", raw: undefined },
        usage: USAGE,
        warnings: [],
      }
    },
  })
}

/** Every tool result the model was shown in its last prompt, by call id. */
const shown = (model: MockLanguageModelV4): Map<string, any> => {
  const results = new Map<string, any>()
  for (const message of model.doGenerateCalls.at(-1)!.prompt) {
    if (message.role !== "tool") continue
    for (const part of message.content) if (part.type === "tool-result") results.set(part.toolCallId, part.output)
  }
  return results
}

describe("the AI SDK adapter", () => {
  test("a host tool the model calls is performed by onHostCall, and the model reads its answer", async () => {
    const box = project()
    const core = await spawn(box)
    await core.registerHostTools({ enable: ["question"] })
    const question = { questions: [{ question: "Which port?", options: [{ label: "8080" }, { label: "3000" }] }] }
    const model = scripted([[{ id: "c_question", name: "question", input: question }], "Using 3000."])
    const seen: Array<unknown> = []
    const result = await generateText({
      model,
      prompt: "Start the server.",
      stopWhen: stepCountIs(3),
      ...(await aiTools(core.session({ watch: false }), {
        onHostCall: (call) => {
          seen.push(call.input)
          return { output: { answers: [["3000"]] } }
        },
      })),
    })
    expect(result.text).toBe("Using 3000.")
    expect(seen).toEqual([question])
    expect(shown(model).get("c_question")).toEqual({
      type: "text",
      value: 'The user answered:\n"Which port?" = "3000"\nGo on with these answers in mind.',
    })
  })

  test("runs a host's multi-step loop through core with nothing but the adapter call", async () => {
    const box = project()
    const core = await spawn(box)
    const asks: Array<PermissionRequest> = []
    const progressed = new Set<string>()
    const model = scripted([
      [{ id: "c_list", name: "list", input: {} }],
      [{ id: "c_read", name: "read", input: { filePath: "notes.txt" } }],
      [{ id: "c_edit", name: "edit", input: { filePath: "notes.txt", oldString: "beta", newString: "BETA" } }],
      [{ id: "c_bash", name: "bash", input: { command: "cat notes.txt" } }],
      [
        { id: "c_grep", name: "grep", input: { pattern: "hello" } },
        { id: "c_glob", name: "glob", input: { pattern: "**/*.ts" } },
      ],
      [{ id: "c_image", name: "read", input: { filePath: "pixel.png" } }],
      [{ id: "c_bad", name: "read", input: { filePath: 42 } }],
      "All done.",
    ])

    const result = await generateText({
      model,
      prompt: "Tidy the notes.",
      stopWhen: stepCountIs(20),
      ...(await aiTools(core.session(), {
        onAsk: (ask) => {
          asks.push(ask)
          return "once"
        },
        onProgress: (toolCallId) => progressed.add(toolCallId),
      })),
    })

    expect(result.text).toBe("All done.")
    expect(result.steps).toHaveLength(8)
    // The tools offered are core's, with its schemas.
    const offered = model.doGenerateCalls[0]!.tools!.map((tool) => (tool.type === "function" ? tool.name : ""))
    expect(offered).toEqual(expect.arrayContaining(["list", "read", "edit", "bash", "grep", "glob"]))

    const results = shown(model)
    expect(results.get("c_list")).toMatchObject({ type: "text" })
    expect(results.get("c_list").value).toContain("notes.txt")
    expect(results.get("c_read").value).toContain("beta")
    expect(results.get("c_edit").type).not.toMatch(/^error/)
    expect(readFileSync(join(box.location, "notes.txt"), "utf8")).toBe("alpha\nBETA\ngamma\n")
    // bash asked (core.json says so); onAsk answered it mid-call, and the command ran.
    expect(asks).toEqual([expect.objectContaining({ action: "bash", resources: ["cat notes.txt"], toolCallID: "c_bash" })])
    expect(JSON.stringify(results.get("c_bash"))).toContain("BETA")
    expect(progressed.has("c_bash")).toBe(true)
    // grep and glob were called in one step, and both settled.
    expect(result.steps[4]!.toolResults.map((each) => each.toolName).sort()).toEqual(["glob", "grep"])
    expect(JSON.stringify(results.get("c_grep"))).toContain("src/app.ts")
    expect(JSON.stringify(results.get("c_glob"))).toContain("src/util.ts")
    // The image reaches the model as an image, not as base64 text.
    const image = results.get("c_image")
    expect(image.type).toBe("content")
    expect(image.value).toContainEqual(
      expect.objectContaining({ type: "file", mediaType: "image/png", data: { type: "data", data: PNG_BASE64 } }),
    )
    // Bad input is core's model-visible error, saying what to fix.
    expect(results.get("c_bad")).toMatchObject({ type: "error-text" })
    expect(results.get("c_bad").value).toContain("Invalid input for read")
  })

  test("needsApproval comes from core's check; a call approved through the SDK has its foreseen asks answered", async () => {
    const box = project()
    const core = await spawn(box)
    const session = core.session()
    const { tools, prepareStep } = await aiTools(session, { approval: true })
    const needs = (name: string, input: unknown, toolCallId: string) =>
      (tools[name]!.needsApproval as unknown as (input: unknown, options: object) => Promise<boolean>)(input, {
        toolCallId,
        messages: [],
        context: {},
      })
    expect(await needs("read", { filePath: "notes.txt" }, "c_r")).toBe(false)
    // A call core would refuse needs no approval: its settlement tells the model why.
    expect(await needs("read", { filePath: 42 }, "c_bad")).toBe(false)
    expect(await needs("bash", { command: "echo hi" }, "c_probe")).toBe(true)

    // The SDK's approval flow: the first call stops at the approval request, the second runs the approved call.
    const model = scripted([[{ id: "c_approved", name: "bash", input: { command: "echo approved" } }], "Ran it."])
    const messages: Array<ModelMessage> = [{ role: "user", content: "Say hi." }]
    const first = await generateText({ model, messages, tools, prepareStep, stopWhen: stepCountIs(5) })
    const request = first.content.find((part) => part.type === "tool-approval-request")
    expect(request).toBeDefined()
    expect(await core.settlement(session.id, "c_approved")).toBeUndefined()
    messages.push(...first.response.messages, {
      role: "tool",
      content: [{ type: "tool-approval-response", approvalId: (request as { approvalId: string }).approvalId, approved: true }],
    })
    const second = await generateText({ model, messages, tools, prepareStep, stopWhen: stepCountIs(5) })
    expect(second.text).toBe("Ran it.")
    const settlement = await core.settlement(session.id, "c_approved")
    expect(settlement?.status).toBe("success")
    expect((settlement?.structured as { stdout: string }).stdout).toBe("approved\n")
    session.close()
  })

  test("a tool changed mid-loop reaches the model at its next step", async () => {
    const box = project({
      "tools/hello.ts": `${IMPORTS}
export default Tool.make({ description: "Say hello v1", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("v1") })
`,
    })
    const core = await spawn(box)
    let changed!: () => void
    const reloaded = new Promise<void>((resolve) => (changed = resolve))
    const session = core.session({ onToolsChanged: () => changed() })
    let step = 0
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        step++
        if (step === 1) {
          writeFileSync(
            join(box.location, "tools/hello.ts"),
            `${IMPORTS}
export default Tool.make({ description: "Say hello v2", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("v2") })
`,
          )
          await reloaded
        }
        return step < 3
          ? { content: [{ type: "tool-call", toolCallId: `c_${step}`, toolName: "hello", input: "{}" }], finishReason: { unified: "tool-calls", raw: undefined }, usage: USAGE, warnings: [] }
          : { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: undefined }, usage: USAGE, warnings: [] }
      },
    })
    await generateText({ model, prompt: "hello", stopWhen: stepCountIs(5), ...(await aiTools(session)) })
    const description = (call: number) =>
      model.doGenerateCalls[call]!.tools!.find((tool) => tool.name === "hello")!
    expect((description(0) as { description?: string }).description).toBe("Say hello v1")
    expect((description(1) as { description?: string }).description).toBe("Say hello v2")
    // The call made against v1 was stale (nothing ran); the one made after the refresh ran v2.
    const results = shown(model)
    expect(results.get("c_1")).toMatchObject({ type: "error-text" })
    expect(results.get("c_1").value).toContain("changed since")
    expect(results.get("c_2")).toEqual({ type: "text", value: "v2" })
    session.close()
  })

  test("aborting generateText's signal cancels the running call on core: its processes die and it settles cancelled", async () => {
    const location = project({ "core.json": '{ "permission": { "bash": { "*": "allow" } } }' })
    const core = await spawn(location)
    const session = core.session()
    const abort = new AbortController()
    let pid = 0
    const model = scripted([[{ id: "c_sleep", name: "bash", input: { command: "echo pid $$; sleep 300" } }], "Never reached."])
    const ended = await generateText({
      model,
      prompt: "Wait a while.",
      abortSignal: abort.signal,
      stopWhen: stepCountIs(5),
      ...(await aiTools(session, {
        onProgress: (_, update) => {
          const match = /pid (\d+)/.exec(update.message)
          if (match === null || pid !== 0) return
          pid = Number(match[1])
          abort.abort()
        },
      })),
    }).then(
      () => "finished",
      (error: Error) => error.name,
    )
    expect(ended).toBe("AbortError")
    expect(pid).toBeGreaterThan(0)
    expect((await core.settlement(session.id, "c_sleep"))?.status).toBe("cancelled")
    // Numbered as the command numbered it (its own PID namespace, where it has one).
    expect(aliveIn(location.location, pid)).toBe(false)
    session.close()
  })
})

describe("toModelOutput", () => {
  const settlement = (fields: Partial<Settlement>): Settlement => ({
    tool: "report",
    callID: "c_unit",
    status: "success",
    content: [],
    structured: null,
    outputs: [],
    ...fields,
  })

  test("a declined call is execution-denied, with the reason the settlement gives", () => {
    const declined = settlement({
      status: "declined",
      content: [{ type: "text", text: "The user rejected permission to run bash: rm -rf build" }],
      error: { kind: "denied", message: "The user rejected permission to run bash: rm -rf build" },
    })
    expect(toModelOutput(declined)).toEqual({
      type: "execution-denied",
      reason: "The user rejected permission to run bash: rm -rf build",
    })
  })

  test("a success with structured output only is its JSON", () => {
    const structured = { rows: [{ id: 1, name: "a" }], truncated: false }
    expect(toModelOutput(settlement({ structured }))).toEqual({ type: "json", value: structured })
  })

  test("a file part whose uri is not a data: URI is a file by URL, with its media type and name", () => {
    const output = toModelOutput(
      settlement({
        content: [
          { type: "text", text: "The report:" },
          { type: "file", mime: "application/pdf", uri: "https://example.com/report.pdf", name: "report.pdf" },
        ],
      }),
    )
    expect(output).toEqual({
      type: "content",
      value: [
        { type: "text", text: "The report:" },
        {
          type: "file",
          mediaType: "application/pdf",
          data: { type: "url", url: new URL("https://example.com/report.pdf") },
          filename: "report.pdf",
        },
      ],
    })
  })
})
