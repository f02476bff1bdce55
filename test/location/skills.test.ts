// Finding skills and reading their SKILL.md: the frontmatter a skill needs (name, description) in the forms
// skills are written in, what is refused and said, which skill wins a name, and what never counts as a skill's
// file (a path leading out of its directory).

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Skills } from "../../src/location/skills"
import { tempDir } from "../support/temp"
import { inChild } from "../support/in-child"

const skill = (name: string, description: string, body = "Do it.") => `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

const put = (root: string, files: Record<string, string>) => {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return realpathSync(root)
}

describe("Skills.parse", () => {
  test("reads plain, quoted and block values, ignores other keys and nested values, and keeps the body", () => {
    const text = [
      "\uFEFF---",
      "name: pdf-forms",
      "# a comment",
      "description: >",
      "  Fill PDF forms:",
      "  field by field.",
      "license: MIT",
      "allowed-tools: Read, Grep",
      "metadata:",
      "  version: 2",
      "  tags:",
      "    - pdf",
      "---",
      "",
      "# Filling forms",
      "Use scripts/fill.py.",
    ].join("\r\n")
    expect(Skills.parse(text)).toEqual({
      _tag: "Parsed",
      parsed: { name: "pdf-forms", description: "Fill PDF forms: field by field.", body: "# Filling forms\nUse scripts/fill.py." },
    })
    expect(Skills.parse(skill("a", '"Quoted: with \\"escapes\\""'))).toMatchObject({ parsed: { description: 'Quoted: with "escapes"' } })
    expect(Skills.parse(skill("a", "'It''s single'"))).toMatchObject({ parsed: { description: "It's single" } })
    expect(Skills.parse(skill("a", "Plain: with a colon"))).toMatchObject({ parsed: { description: "Plain: with a colon" } })
    expect(Skills.parse("---\nname: a\ndescription: |\n  line one\n  line two\n---\n")).toMatchObject({
      parsed: { description: "line one\nline two", body: "" },
    })
  })

  const invalid: ReadonlyArray<[string, string, RegExp]> = [
    ["no frontmatter", "# Just markdown\n", /no frontmatter/],
    ["an unclosed frontmatter", "---\nname: a\ndescription: b\n", /not closed/],
    ["a line that is not key: value", "---\nname: a\n- item\ndescription: b\n---\n", /line 3 is not `key: value`/],
    ["no name", "---\ndescription: b\n---\n", /no `name`/],
    ["no description", "---\nname: a\n---\n", /no `description`/],
    ["an empty description", "---\nname: a\ndescription: \"\"\n---\n", /`description` is empty/],
    ["a name with capitals", skill("PDF", "x"), /not a skill name/],
    ["a name with a double hyphen", skill("a--b", "x"), /not a skill name/],
    ["a name too long", skill("a".repeat(65), "x"), /not a skill name/],
    ["a name given twice", "---\nname: a\nname: b\ndescription: x\n---\n", /given twice/],
    ["a description that is a list", "---\nname: a\ndescription:\n  - x\n---\n", /must be text/],
    ["an unterminated quote", "---\nname: a\ndescription: \"open\n---\n", /must be text/],
    ["a description too long", skill("a", "x".repeat(1025)), /1025 characters/],
  ]
  for (const [what, text, message] of invalid) {
    test(`${what} is refused, saying so`, () => {
      const result = Skills.parse(text)
      expect(result._tag).toBe("Invalid")
      if (result._tag === "Invalid") expect(result.message).toMatch(message)
    })
  }
})

describe("Skills.discover", () => {
  test("finds the Location's skills in every folder and the home's, the Location's winning a name", () => {
    const location = put(tempDir("core-skills-loc-"), {
      ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy the app"),
      ".claude/skills/review/SKILL.md": skill("review", "Review a change"),
      ".opencode/skill/release/SKILL.md": skill("release", "Cut a release"),
      ".opencode/skills/lint/SKILL.md": skill("lint", "Lint"),
      ".claude/skills/notes.md": "not a skill directory",
      ".claude/skills/empty/README.md": "no SKILL.md",
    })
    const home = put(tempDir("core-skills-home-"), {
      "skills/deploy/SKILL.md": skill("deploy", "The home's deploy"),
      "skills/global/SKILL.md": skill("global", "Everywhere"),
    })
    const found = Skills.discover(location, home)
    expect(found.diagnostics).toEqual([])
    expect(found.skills.map((each) => [each.name, each.description, each.scope])).toEqual([
      ["deploy", "Deploy the app", "location"],
      ["lint", "Lint", "location"],
      ["release", "Cut a release", "location"],
      ["review", "Review a change", "location"],
      ["global", "Everywhere", "home"],
    ])
  })

  test("an invalid skill is a diagnostic naming its file; the others load", () => {
    const location = put(tempDir("core-skills-loc-"), {
      ".claude/skills/good/SKILL.md": skill("good", "Good"),
      ".claude/skills/bad/SKILL.md": "---\nname: bad\n---\n",
    })
    const found = Skills.discover(location, tempDir("core-skills-home-"))
    expect(found.skills.map((each) => each.name)).toEqual(["good"])
    expect(found.diagnostics).toEqual([
      { file: join(location, ".claude/skills/bad/SKILL.md"), message: "skill not loaded: the frontmatter has no `description`" },
    ])
  })

  test("two different skills of one name in the Location: the first folder's is used, the other reported", () => {
    const location = put(tempDir("core-skills-loc-"), {
      ".core/skills/deploy/SKILL.md": skill("deploy", "Core's"),
      ".claude/skills/deploy/SKILL.md": skill("deploy", "Claude's"),
      ".opencode/skill/deploy/SKILL.md": skill("deploy", "Core's"),
    })
    const found = Skills.discover(location, tempDir("core-skills-home-"))
    expect(found.skills.map((each) => each.description)).toEqual(["Core's"])
    // The copy with the same text is not a clash; the different one is.
    expect(found.diagnostics).toHaveLength(1)
    expect(found.diagnostics[0]!.file).toBe(join(location, ".claude/skills/deploy/SKILL.md"))
    expect(found.diagnostics[0]!.message).toContain(join(location, ".core/skills/deploy/SKILL.md"))
  })

  test("a Location skill whose directory leads outside the Location is not loaded; a home skill may be a link", () => {
    const outside = put(tempDir("core-skills-out-"), { "SKILL.md": skill("escape", "Outside") })
    const location = put(tempDir("core-skills-loc-"), {})
    mkdirSync(join(location, ".claude/skills"), { recursive: true })
    symlinkSync(outside, join(location, ".claude/skills/escape"))
    const home = put(tempDir("core-skills-home-"), {})
    mkdirSync(join(home, "skills"))
    symlinkSync(outside, join(home, "skills/linked"))
    const found = Skills.discover(location, home)
    expect(found.skills.map((each) => [each.name, each.scope, each.directory])).toEqual([["escape", "home", outside]])
    expect(found.diagnostics[0]!.message).toMatch(/leads outside the Location/)
  })

  test("a skill's files leave out its SKILL.md and whatever leads outside its directory", () => {
    const secret = put(tempDir("core-skills-secret-"), { "key.txt": "secret" })
    const location = put(tempDir("core-skills-loc-"), {
      ".core/skills/deploy/SKILL.md": skill("deploy", "Deploy"),
      ".core/skills/deploy/reference/steps.md": "1. build",
      ".core/skills/deploy/scripts/run.sh": "echo hi",
    })
    symlinkSync(join(secret, "key.txt"), join(location, ".core/skills/deploy/key.txt"))
    symlinkSync(secret, join(location, ".core/skills/deploy/secrets"))
    symlinkSync("reference/steps.md", join(location, ".core/skills/deploy/steps-link.md"))
    const [deploy] = Skills.discover(location, tempDir("core-skills-home-")).skills
    expect(Skills.files(deploy!, () => false)).toEqual({
      files: [
        { path: "steps-link.md", bytes: 8 },
        { path: "reference/steps.md", bytes: 8 },
        { path: "scripts/run.sh", bytes: 7 },
      ],
      more: 0,
    })
  })
})

// A SKILL.md in a project may be written by a model, and its frontmatter lines are read by hand: the patterns they
// replaced tried every split of a line's spaces (cubic: minutes for 10,000) or every space before a `#`.
describe("Skills.parse reads frontmatter lines in one pass", () => {
  test("key lines and trailing comments read as before", () => {
    const description = (line: string) => {
      const parsed = Skills.parse(`---\nname: a\n${line}\n---\n`)
      return parsed._tag === "Parsed" ? parsed.parsed.description : parsed.message
    }
    expect(description("description:   Fill forms.  \t")).toBe("Fill forms.")
    expect(description("description:\tFill forms")).toBe("Fill forms")
    expect(description("description: Fill # forms")).toBe("Fill")
    expect(description("description: Fill#forms")).toBe("Fill#forms")
    expect(description("description: Fill \t # a # b")).toBe("Fill")
    expect(description("description: a\r b")).toBe('frontmatter line 3 is not `key: value`: "description: a\\r b"')
    expect(description("description:Fill")).toBe('frontmatter line 3 is not `key: value`: "description:Fill"')
    // There but empty: said so, not that there is none.
    expect(description("description:")).toBe("the frontmatter's `description` is empty: say when the skill applies")
    expect(description("description: \t ")).toBe("the frontmatter's `description` is empty: say when the skill applies")
  })

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("long hostile lines are read at once, and rightly", async () => {
    expect(
      await inChild(`
        import { Skills } from ${JSON.stringify(join(import.meta.dir, "../../src/location/skills.ts"))}
        const spaces = " ".repeat(100_000)
        const few = " ".repeat(500)
        const read = (line) => {
          const parsed = Skills.parse("---\\nname: a\\n" + line + "\\n---\\n")
          return parsed._tag === "Parsed" ? parsed.parsed.description : parsed.message.slice(0, 40)
        }
        console.log(JSON.stringify([
          read("description:" + spaces + "x" + few + "y" + spaces),
          read("description:" + spaces + "x" + spaces + "\\u2028:"),
          read("description: x" + " #".repeat(100_000) + "\\n  y\\u2028z"),
          read("description: x" + spaces + "#"),
        ]))
        `),
    ).toEqual(["x" + " ".repeat(500) + "y", 'frontmatter line 3 is not `key: value`: ', "the description has 200005 characters; a", "x"])
  }, 30_000)
})
