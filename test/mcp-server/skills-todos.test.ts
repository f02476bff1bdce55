// `core mcp` with the official MCP SDK client over stdio: the Location's skills as prompts (listed, got, refused
// when unknown or denied, announced with list_changed when a skill is added), and the skill, todowrite and todoread
// tools called as any tool.

import { afterEach, describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { PromptListChangedNotificationSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { sandbox, type Sandbox } from "../cli/fixture"
import { connectStdio } from "./stdio-client"


const skill = (name: string, description: string, body: string) => `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

const open: Array<Client> = []
afterEach(async () => {
  for (const client of open.splice(0)) await client.close()
})

const connect = (box: Sandbox) => connectStdio(box, open)

const textOf = (result: { readonly [key: string]: unknown }) =>
  (result.content as ReadonlyArray<{ type: string; text?: string }>).map((part) => part.text ?? "").join("\n")

const SKILLS = {
  ".claude/skills/review/SKILL.md": skill("review", "Review a change", "Read the diff, then comment."),
  ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy to staging", "Run make deploy."),
}

describe("core mcp: skills as prompts", () => {
  test("prompts/list offers the Location's and the home's skills; prompts/get answers the instructions", async () => {
    const box = sandbox(SKILLS, { "skills/global/SKILL.md": skill("global", "Everywhere", "Be kind.") })
    const client = await connect(box)
    expect(client.getServerCapabilities()?.prompts).toEqual({ listChanged: true })
    expect((await client.listPrompts()).prompts).toEqual([
      { name: "deploy", description: "Deploy to staging" },
      { name: "review", description: "Review a change" },
      { name: "global", description: "Everywhere" },
    ])
    expect(await client.getPrompt({ name: "review" })).toEqual({
      description: "Review a change",
      messages: [{ role: "user", content: { type: "text", text: "Read the diff, then comment." } }],
    })
  })

  test("an unknown prompt is an error naming the prompts there are; a skill a rule denies is not offered", async () => {
    const box = sandbox({ ...SKILLS, "core.json": JSON.stringify({ permission: { skill: { "*": "allow", deploy: "deny" } } }) })
    const client = await connect(box)
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(["review"])
    await expect(client.getPrompt({ name: "nope" })).rejects.toThrow('Unknown prompt "nope"; the prompts are: review')
    await expect(client.getPrompt({ name: "deploy" })).rejects.toThrow("Unknown prompt")
  })

  test("a Location without skills has no prompts and no skill tool", async () => {
    const client = await connect(sandbox())
    expect((await client.listPrompts()).prompts).toEqual([])
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain("skill")
    await expect(client.getPrompt({ name: "x" })).rejects.toThrow("this Location has no skills")
  })

  test("a skill added while serving is announced (prompts and tools list_changed) and offered", async () => {
    const box = sandbox(SKILLS)
    const client = await connect(box)
    const prompts = new Promise<void>((resolve) => client.setNotificationHandler(PromptListChangedNotificationSchema, async () => resolve()))
    const tools = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()))
    mkdirSync(join(box.location, ".opencode/skill/release"), { recursive: true })
    writeFileSync(join(box.location, ".opencode/skill/release/SKILL.md"), skill("release", "Cut a release", "Tag it."))
    await Promise.all([prompts, tools])
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(["deploy", "release", "review"])
    const listed = (await client.listTools()).tools.find((tool) => tool.name === "skill")
    expect(listed?.description).toContain("- release: Cut a release")
    expect(textOf(await client.callTool({ name: "skill", arguments: { name: "release" } }))).toContain("Tag it.")
  })
})

describe("core mcp: skill, todowrite and todoread as tools", () => {
  test("skill loads a skill; an unknown one is a tool error naming the skills", async () => {
    const client = await connect(sandbox(SKILLS))
    const listed = (await client.listTools()).tools.find((tool) => tool.name === "skill")
    expect(listed?.description).toContain("- deploy: Deploy to staging\n- review: Review a change")
    const loaded = await client.callTool({ name: "skill", arguments: { name: "deploy" } })
    expect(loaded.isError).toBeFalsy()
    expect(textOf(loaded)).toContain("Run make deploy.")
    const unknown = await client.callTool({ name: "skill", arguments: { name: "nope" } })
    expect(unknown.isError).toBe(true)
    expect(textOf(unknown)).toContain("Available skills: deploy, review")
  })

  test("todowrite then todoread in the MCP session; a malformed list is a tool error", async () => {
    const client = await connect(sandbox())
    const written = await client.callTool({ name: "todowrite", arguments: { todos: [{ content: "Ship", status: "in_progress" }] } })
    expect(textOf(written)).toBe("Todo list updated: 1 item (1 in_progress)\n1. [>] Ship (medium)")
    const read = await client.callTool({ name: "todoread", arguments: {} })
    expect(read.structuredContent).toEqual({ todos: [{ content: "Ship", status: "in_progress", priority: "medium" }] })
    const bad = await client.callTool({ name: "todowrite", arguments: { todos: [{ content: "x", status: "started" }] } })
    expect(bad.isError).toBe(true)
    expect(textOf(bad)).toContain("Invalid input for todowrite")
  })
})
