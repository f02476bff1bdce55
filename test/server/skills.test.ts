// Skills in the sidecar, in process with the watch on: a skill added, changed, broken or removed under a Location's
// skills folders, or under CORE_HOME's, registers `skill` afresh (older turns get stale for it) and emits
// tools.changed naming the SKILL.md; an invalid one is a diagnostic event; a Location's tools/skill.ts keeps
// winning. Every wait is on an event.

import { describe, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { IMPORTS, inProcess } from "./support"

const skill = (name: string, description: string, body = "Do it.") => `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

const put = (root: string, path: string, text: string) => {
  mkdirSync(join(root, path, ".."), { recursive: true })
  writeFileSync(join(root, path), text)
}

const descriptionOf = (definitions: Array<{ name: string; description: string }>) =>
  definitions.find((definition) => definition.name === "skill")?.description

describe("skills in the sidecar", () => {
  test("a skill added to a Location without skills brings the skill tool, announced as tools.changed", async () => {
    const sidecar = await inProcess({}, { watch: true })
    const events = await sidecar.events()
    expect(descriptionOf((await sidecar.turn()).definitions)).toBeUndefined()
    put(sidecar.box.location, ".claude/skills/review/SKILL.md", skill("review", "Review a change"))
    const changed = await events.until("tools.changed")
    expect(changed.data).toEqual({ reason: "tools", files: [join(sidecar.box.location, ".claude/skills/review/SKILL.md")] })
    const { turnID, definitions } = await sidecar.turn()
    expect(descriptionOf(definitions)).toContain("- review: Review a change")
    expect((await sidecar.settle(turnID, { name: "skill", input: { name: "review" } })).body.status).toBe("success")
    await events.close()
  })

  test("a changed description registers skill afresh: older turns get stale for it; removing the last skill removes the tool", async () => {
    const sidecar = await inProcess({ ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy v1") }, { watch: true })
    const events = await sidecar.events()
    const old = await sidecar.turn()
    put(sidecar.box.location, ".core/skills/deploy/SKILL.md", skill("deploy", "Deploy v2"))
    await events.until("tools.changed")
    const stale = await sidecar.settle(old.turnID, { name: "skill", input: { name: "deploy" } })
    expect(stale.body.error.kind).toBe("stale")
    expect(descriptionOf((await sidecar.turn()).definitions)).toContain("- deploy: Deploy v2")

    rmSync(join(sidecar.box.location, ".core/skills/deploy"), { recursive: true })
    await events.until("tools.changed")
    expect(descriptionOf((await sidecar.turn()).definitions)).toBeUndefined()
    await events.close()
  })

  test("a skill broken while serving is a diagnostic event; the skills that load stay", async () => {
    const sidecar = await inProcess(
      { ".claude/skills/review/SKILL.md": skill("review", "Review"), ".claude/skills/lint/SKILL.md": skill("lint", "Lint") },
      { watch: true },
    )
    const events = await sidecar.events()
    put(sidecar.box.location, ".claude/skills/lint/SKILL.md", "no frontmatter\n")
    const diagnostic = await events.until("diagnostic")
    expect(diagnostic.data.file).toBe(join(sidecar.box.location, ".claude/skills/lint/SKILL.md"))
    expect(diagnostic.data.message).toContain("no frontmatter")
    await events.until("tools.changed")
    const description = descriptionOf((await sidecar.turn()).definitions)
    expect(description).toContain("- review: Review")
    expect(description).not.toContain("- lint")
    await events.close()
  })

  test("a skill added under CORE_HOME reaches the Location", async () => {
    const sidecar = await inProcess({ ".claude/skills/review/SKILL.md": skill("review", "Review") }, { watch: true })
    const events = await sidecar.events()
    put(sidecar.box.home, "skills/global/SKILL.md", skill("global", "From the home"))
    await events.until("tools.changed")
    expect(descriptionOf((await sidecar.turn()).definitions)).toContain("- review: Review\n- global: From the home")
    await events.close()
  })

  test("a Location's tools/skill.ts keeps winning after the skills change", async () => {
    const own = `${IMPORTS}
export default Tool.make({ description: "My own skill tool", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("mine") })
`
    const sidecar = await inProcess({ "tools/skill.ts": own, ".claude/skills/review/SKILL.md": skill("review", "Review") }, { watch: true })
    const events = await sidecar.events()
    expect(descriptionOf((await sidecar.turn()).definitions)).toBe("My own skill tool")
    put(sidecar.box.location, ".claude/skills/lint/SKILL.md", skill("lint", "Lint"))
    await events.until("tools.changed")
    const { turnID, definitions } = await sidecar.turn()
    expect(descriptionOf(definitions)).toBe("My own skill tool")
    expect((await sidecar.settle(turnID, { name: "skill", input: {} })).body.structured).toBe("mine")
    await events.close()
  })
})
