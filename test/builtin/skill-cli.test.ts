// The `skill` built-in through the compiled binary: `core tools` shows its description listing the skills,
// `core exec skill` loads one or fails naming the skills, and `core check` reports an invalid skill, exiting 1.

import { describe, expect, test } from "bun:test"
import { core, exec, sandbox } from "../cli/fixture"

const skill = (name: string, description: string, body: string) => `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

const FILES = {
  ".claude/skills/review/SKILL.md": skill("review", "Review a change", "Read the diff, then comment."),
  ".claude/skills/review/checklist.md": "- tests\n",
}
const HOME = { "skills/global/SKILL.md": skill("global", "Used everywhere", "Be kind.") }

describe("core exec skill", () => {
  test("core tools lists skill with every skill in its description", async () => {
    const box = sandbox(FILES, HOME)
    const listed = await core(box, ["tools", "--json", "--location", box.location])
    expect(listed.code).toBe(0)
    const tool = JSON.parse(listed.stdout).find((definition: { name: string }) => definition.name === "skill")
    expect(tool.description).toContain("Available skills:\n- review: Review a change\n- global: Used everywhere\n")
    expect(tool.inputSchema.required).toEqual(["name"])
  })

  test("a skill is loaded by name, with its files; one of its files is read with file", async () => {
    const box = sandbox(FILES, HOME)
    const loaded = await exec(box, "skill", { name: "review" })
    expect(loaded.code).toBe(0)
    const text = JSON.parse(loaded.stdout).content[0].text
    expect(text).toContain('<skill name="review" directory=".claude/skills/review">\nRead the diff, then comment.\n</skill>')
    expect(text).toContain("- checklist.md (8 bytes)")
    const file = await exec(box, "skill", { name: "review", file: "checklist.md" })
    expect(JSON.parse(file.stdout).content[0].text).toBe("- tests\n")
  })

  test("an unknown skill exits 1, naming the skills there are", async () => {
    const box = sandbox(FILES, HOME)
    const unknown = await exec(box, "skill", { name: "x" })
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stdout).error).toEqual({
      kind: "failure",
      message: 'Unknown skill "x". Available skills: review, global.',
    })
  })

  test("without skills there is no skill tool: an unknown tool, exit 1", async () => {
    const box = sandbox()
    const unknown = await exec(box, "skill", { name: "x" })
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stdout).error.kind).toBe("unknown")
  })

  test("core check reports an invalid skill and exits 1; core tools warns on stderr and still lists the rest", async () => {
    const box = sandbox({ ...FILES, ".core/skills/broken/SKILL.md": "---\nname: broken\n---\n" })
    const checked = await core(box, ["check", "--location", box.location])
    expect(checked.code).toBe(1)
    expect(JSON.parse(checked.stdout).problems).toEqual([
      {
        kind: "skill",
        file: `${box.location}/.core/skills/broken/SKILL.md`,
        message: "skill not loaded: the frontmatter has no `description`",
      },
    ])
    const listed = await core(box, ["tools", "--location", box.location])
    expect(listed.code).toBe(0)
    expect(listed.stderr).toContain(".core/skills/broken/SKILL.md: skill not loaded")
    expect(listed.stdout).toContain("skill")
  })
})
