// The `skill` built-in through the kit: its description lists the skills; a call answers a skill's instructions
// and its files, or one file; an unknown skill, a file outside the skill, a binary or denied file and a rule
// denying the skill are refused, saying what to do next.

import { describe, expect, test } from "bun:test"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { harness, textOf } from "../support/builtin"
import { tempDir } from "../support/temp"

const skill = (name: string, description: string, body: string) => `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

const FILES = {
  ".claude/skills/pdf-forms/SKILL.md": skill("pdf-forms", "Fill PDF forms field by field", "# PDF forms\nRun scripts/fill.py FILE."),
  ".claude/skills/pdf-forms/scripts/fill.py": "print('filled')\n",
  ".claude/skills/pdf-forms/reference/fields.md": "Field names are case-sensitive.\n",
  ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy the app to staging", "Run make deploy."),
}

const homeWith = (files: Record<string, string>) => {
  const home = tempDir("core-skill-home-")
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(home, path, ".."), { recursive: true })
    writeFileSync(join(home, path), text)
  }
  return home
}

describe("skill", () => {
  test("a call is checked as skill on its name; an unknown one names every skill, the Location's first", async () => {
    const location = harness({ files: FILES, home: homeWith({ "skills/global/SKILL.md": skill("global", "Used everywhere", "Hi.") }) })
    const explained = await location.check("skill", { name: "deploy" })
    expect(explained.checks).toEqual([expect.objectContaining({ action: "skill" })])
    const loaded = await location.settle("skill", { name: "nope" })
    expect(loaded.settlement.error?.message).toBe('Unknown skill "nope". Available skills: deploy, pdf-forms, global.')
  })

  test("loading a skill answers its instructions, its directory and its other files", async () => {
    const location = harness({ files: FILES })
    const loaded = await location.settle("skill", { name: "pdf-forms" })
    expect(loaded.settlement.status).toBe("success")
    expect(loaded.settlement.structured).toEqual({
      name: "pdf-forms",
      directory: ".claude/skills/pdf-forms",
      instructions: "# PDF forms\nRun scripts/fill.py FILE.",
      files: [
        { path: "reference/fields.md", bytes: 32 },
        { path: "scripts/fill.py", bytes: 16 },
      ],
      moreFiles: 0,
    })
    expect(textOf(loaded.settlement)).toBe(
      [
        '<skill name="pdf-forms" directory=".claude/skills/pdf-forms">',
        "# PDF forms\nRun scripts/fill.py FILE.",
        "</skill>",
        "",
        'Files of this skill (read one with skill {"name": "pdf-forms", "file": PATH}):',
        "- reference/fields.md (32 bytes)",
        "- scripts/fill.py (16 bytes)",
      ].join("\n"),
    )
  })

  test("a file of the skill is read with file; a home skill's too, with its absolute directory", async () => {
    const home = homeWith({
      "skills/global/SKILL.md": skill("global", "Used everywhere", "See notes.md."),
      "skills/global/notes.md": "home notes\n",
    })
    const location = harness({ files: FILES, home })
    const read = await location.settle("skill", { name: "pdf-forms", file: "reference/fields.md" })
    expect(textOf(read.settlement)).toBe("Field names are case-sensitive.\n")
    const global = await location.settle("skill", { name: "global" })
    expect((global.settlement.structured as any).directory).toBe(join(home, "skills/global"))
    expect(textOf((await location.settle("skill", { name: "global", file: "notes.md" })).settlement)).toBe("home notes\n")
    // Its files are listed too, though the rest of $CORE_HOME is no tool's to show.
    expect((global.settlement.structured as any).files).toEqual([{ path: "notes.md", bytes: 11 }])
  })

  test("a home skill that leads to $CORE_HOME itself shows none of the home's files", async () => {
    const home = homeWith({ "SKILL.md": skill("home", "The whole home", "Read core.json."), "core.json": '{"token":"x"}' })
    mkdirSync(join(home, "skills"))
    symlinkSync(home, join(home, "skills/home"))
    const location = harness({ files: FILES, home })
    const loaded = await location.settle("skill", { name: "home" })
    expect(loaded.settlement.status).toBe("success")
    expect((loaded.settlement.structured as any).files).toEqual([])
    const read = await location.settle("skill", { name: "home", file: "core.json" })
    expect(read.settlement.error?.message).toMatch(/has no file core\.json/)
  })

  test("the SKILL.md is read as it is at the call", async () => {
    const location = harness({ files: FILES })
    location.write({ ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy the app to staging", "Run make release.") })
    expect((await location.settle("skill", { name: "deploy" })).settlement.structured).toMatchObject({ instructions: "Run make release." })
  })

  const refused: ReadonlyArray<[string, unknown, RegExp]> = [
    ["a near-miss name", { name: "pdf-form" }, /Unknown skill "pdf-form". Did you mean "pdf-forms"\?/],
    ["a path out of the skill", { name: "pdf-forms", file: "../deploy/SKILL.md" }, /has no file \.\.\/deploy\/SKILL\.md/],
    ["an absolute path", { name: "pdf-forms", file: "/etc/passwd" }, /has no file \/etc\/passwd/],
    ["a missing file", { name: "pdf-forms", file: "nope.md" }, /has no file nope\.md\. Load the skill without file/],
    ["a directory", { name: "pdf-forms", file: "scripts" }, /is a directory/],
    ["an empty file name", { name: "pdf-forms", file: "" }, /Give file as a path the skill lists/],
  ]
  for (const [what, input, message] of refused) {
    test(`${what} is a failure saying what to do`, async () => {
      const location = harness({ files: FILES })
      const outcome = await location.settle("skill", input)
      expect(outcome.settlement.error?.kind).toBe("failure")
      expect(outcome.settlement.error?.message).toMatch(message)
    })
  }

  test("a link in the skill leading outside it is neither listed nor read", async () => {
    const outside = tempDir("core-skill-outside-")
    writeFileSync(join(outside, "secret.txt"), "secret")
    const location = harness({ files: FILES })
    symlinkSync(join(outside, "secret.txt"), join(location.directory, ".claude/skills/pdf-forms/secret.txt"))
    symlinkSync(outside, join(location.directory, ".claude/skills/pdf-forms/out"))
    const loaded = await location.settle("skill", { name: "pdf-forms" })
    expect(JSON.stringify(loaded.settlement.structured)).not.toContain("secret")
    for (const file of ["secret.txt", "out/secret.txt"]) {
      const read = await location.settle("skill", { name: "pdf-forms", file })
      expect(read.settlement.error?.message).toMatch(/has no file/)
      expect(textOf(read.settlement)).not.toContain("secret\n")
    }
  })

  test("a binary file is refused, with its size", async () => {
    const location = harness({ files: { ...FILES, ".claude/skills/pdf-forms/logo.png": new Uint8Array([137, 80, 78, 71, 0, 1]) } })
    const read = await location.settle("skill", { name: "pdf-forms", file: "logo.png" })
    expect(read.settlement.error?.message).toMatch(/is not a text file \(6 bytes\)/)
  })

  test("a file the user's read rules deny is neither listed nor read", async () => {
    const location = harness({
      files: { ...FILES, ".claude/skills/pdf-forms/.env": "TOKEN=x" },
      rules: [{ action: "read", resource: "*.env", effect: "deny" }],
    })
    const loaded = await location.settle("skill", { name: "pdf-forms" })
    expect(JSON.stringify(loaded.settlement.structured)).not.toContain(".env")
    expect((await location.settle("skill", { name: "pdf-forms", file: ".env" })).settlement.error?.message).toMatch(/has no file/)
  })

  test("a rule denying one skill refuses it and nothing else; an ask is asked per skill", async () => {
    const location = harness({
      files: FILES,
      rules: [
        { action: "skill", resource: "deploy", effect: "deny" },
        { action: "skill", resource: "pdf-*", effect: "ask" },
      ],
    })
    expect((await location.settle("skill", { name: "deploy" })).settlement.error?.kind).toBe("denied")
    const asked = await location.settle("skill", { name: "pdf-forms" }, { reply: { reply: "once" } })
    expect(asked.asks).toEqual([{ action: "skill", resources: ["pdf-forms"], save: ["pdf-forms"] }])
    expect(asked.settlement.status).toBe("success")
  })

  test("a Location without skills has no skill tool", async () => {
    const location = harness()
    const outcome = await location.settle("skill", { name: "x" })
    expect(outcome.settlement.error?.kind).toBe("unknown")
  })

  test("malformed input is invalid input", async () => {
    const location = harness({ files: FILES })
    for (const input of [{}, { name: 3 }, { name: "deploy", file: 1 }]) {
      expect((await location.settle("skill", input)).settlement.error?.kind).toBe("invalid_input")
    }
  })
})
