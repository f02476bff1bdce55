// One rule per path, whichever tool reaches it, through the compiled binary: a `read` rule denying `*.env` holds
// for every way a hostile model gets `bash` to read the file (and an `edit` rule for every way to change it), the
// refusal says nothing in the line ran, and `core check bash` shows the same check. Every denied line is refused
// before anything runs: the secret never reaches stdout and no file the line would write appears.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { core, exec, type Sandbox, sandbox, settlementOf } from "../cli/fixture"
import { binary } from "../support/binary"
import { harness } from "../support/builtin"

const SECRET = "TOKEN=s3cr3t-one-rule"

const READ_DENIED = JSON.stringify({ permission: { "*": "allow", read: { "*.env": "deny" } } })

/** A Location holding `app.env` (and `sub/deep.env`) under a rule denying reads of `*.env`. */
const secrets = (): Sandbox => {
  const box = sandbox({
    "core.json": READ_DENIED,
    "app.env": `${SECRET}\n`,
    "sub/deep.env": `${SECRET}\n`,
    "notes.txt": "hello\n",
  })
  symlinkSync(join(box.location, "app.env"), join(box.location, "alias.txt"))
  return box
}

beforeAll(async () => {
  await binary()
}, 300_000)

describe("bash meets the read rules of the files it reads", () => {
  // Every line reads app.env (or sub/deep.env) somehow; some would also write a file, which must not appear.
  const LINES: ReadonlyArray<readonly [string, string?]> = [
    ["cat app.env"],
    ["cat ./app.env"],
    ["cat *.env"],
    ["cat app.e*"],
    ["cat a??.env"],
    ["cat sub/*"],
    ["head -1 app.env"],
    ["tail -n 1 app.env"],
    ["grep TOKEN app.env"],
    ["sed -n p app.env"],
    ["cat < app.env"],
    ["wc -c app.env; cat notes.txt"],
    ["echo start > started.txt; cat app.env", "started.txt"],
    ["cat alias.txt"],
    ["cp app.env copy.txt", "copy.txt"],
    ["ln app.env hard.txt", "hard.txt"],
    ["mv app.env moved.txt", "moved.txt"],
    ["nice cat app.env"],
    ["bash -c 'cat app.env'"],
    ["cd sub && cat deep.env"],
    ["diff app.env notes.txt"],
    ["tee out.txt < app.env", "out.txt"],
    // Programs core has no table for: a word naming an existing file is a read of it.
    ["base64 app.env"],
    ["sort app.env"],
    ["awk '{print}' app.env"],
    ["od -c app.env"],
    ["dd if=app.env of=dd.txt", "dd.txt"],
    ["env cat app.env"],
    ["cut --output-delimiter=: -c1- app.env"],
    ["git show HEAD:app.env"],
    ["git cat-file -p :app.env"],
    ["exec 3< app.env; cat <&3"],
    ["X=$(cat app.env); echo $X"],
    ["cat ap[p].env"],
    ["cat ./sub/../app.env"],
    // A directory read whole holds the files under it.
    ["grep -r TOKEN ."],
    ["grep -rn TOKEN sub"],
    ["cp -r sub copied", "copied"],
  ]

  test("every spelling is refused as denied, naming the user's rule, before anything in the line runs", async () => {
    const box = secrets()
    for (const [command, planted] of LINES) {
      const result = await exec(box, "bash", { command })
      const settlement = settlementOf(result)
      expect([command, settlement.status, settlement.error?.kind]).toEqual([command, "error", "denied"])
      expect(result.stdout).not.toContain("s3cr3t")
      const message = settlement.error!.message
      expect(message).toContain("user's rule")
      expect(message).toContain("Nothing in the command line ran.")
      expect(message).toContain("Do not try to reach the same result another way.")
      expect(message).toContain('rule "read": "*.env" → deny')
      expect(message).not.toMatch(/retry|choose another|turn this|allow it/)
      if (planted !== undefined) expect([command, existsSync(join(box.location, planted))]).toEqual([command, false])
    }
    expect(readFileSync(join(box.location, "app.env"), "utf8")).toBe(`${SECRET}\n`)
  }, 120_000)

  test("files the rule does not name still read as before", async () => {
    const box = secrets()
    const settlement = settlementOf(await exec(box, "bash", { command: "cat notes.txt; ls" }))
    expect(settlement.status).toBe("success")
    // `ls` only names files: their names are not what a read rule keeps.
    expect((settlement.structured as { stdout: string }).stdout).toContain("hello")
  })

  test("core check bash shows the read check and denies, running nothing", async () => {
    const box = secrets()
    const result = await core(box, ["check", "bash", "--input", JSON.stringify({ command: "cat app.env" }), "--location", box.location])
    expect(result.code).toBe(0)
    const explained = JSON.parse(result.stdout) as { decision: string; checks: Array<{ action: string; decision: string; resources: Array<{ resource: string }> }> }
    expect(explained.decision).toBe("deny")
    const read = explained.checks.find((check) => check.action === "read")
    expect(read).toMatchObject({ decision: "deny", resources: [{ resource: "app.env" }] })
  })
})

describe("bash meets the edit rules of the files it changes", () => {
  test("rm, touch, truncate, a copy's target, sed -i and a redirection of a file edit denies are refused", async () => {
    const box = sandbox({
      "core.json": JSON.stringify({ permission: { "*": "allow", edit: { "keep.txt": "deny" } } }),
      "keep.txt": "kept\n",
      "other.txt": "other\n",
    })
    mkdirSync(join(box.location, "d"))
    const lines = [
      "rm keep.txt",
      "rm -f ./keep.txt",
      "rm -fr keep.txt",
      "touch keep.txt",
      "truncate -s 0 keep.txt",
      "cp other.txt keep.txt",
      "mv other.txt keep.txt",
      "sed -i s/kept/gone/ keep.txt",
      "echo gone > keep.txt",
      "rm kee?.txt",
      "chmod 000 keep.txt",
    ]
    for (const command of lines) {
      const settlement = settlementOf(await exec(box, "bash", { command }))
      expect([command, settlement.status, settlement.error?.kind]).toEqual([command, "error", "denied"])
      expect(settlement.error!.message).toContain("Nothing in the command line ran.")
    }
    expect(readFileSync(join(box.location, "keep.txt"), "utf8")).toBe("kept\n")
    expect(existsSync(join(box.location, "other.txt"))).toBe(true)
    // Changing another file is not touched by the rule.
    expect(settlementOf(await exec(box, "bash", { command: "rm other.txt" })).status).toBe("success")
  }, 120_000)

  test("a folder whose files edit denies is changed neither through the folder nor by commands writing an output file", async () => {
    const box = sandbox({
      "core.json": JSON.stringify({ permission: { "*": "allow", edit: { "keep/*": "deny" } } }),
      "keep/a.txt": "kept\n",
      "keep/deep/b.txt": "kept\n",
      "x": "x\n",
    })
    const lines = [
      // Into the folder: the name made there is changed.
      "cp x keep",
      "mv x keep",
      "cp -t keep x",
      "cp --target-directory=keep x",
      "cp x* keep",
      // The folder whole: each file under it the rule denies is changed.
      "rm -r keep",
      "rm -rf keep/deep",
      "chmod -R 000 keep",
      "find keep -delete",
      "find keep -name a.txt -exec truncate -s0 {} \\;",
      // Programs that write an output file.
      "dd if=x of=keep/a.txt",
      "sort -o keep/a.txt x",
      "shuf -o keep/a.txt x",
      "iconv -f utf8 -t utf8 -o keep/a.txt x",
      "uniq x keep/a.txt",
      "gzip keep/a.txt",
      "rsync x keep/",
      "mkfifo keep/f",
      // Moving there first, however written.
      "builtin cd keep; echo gone > a.txt",
      "command cd keep && echo gone > a.txt",
      "env -C keep tee a.txt <<< gone",
      "env --chdir=keep sh -c 'echo gone > a.txt'",
      // Options as getopt takes them: any start of a long one, short ones grouped.
      "sed --in s/kept/gone/ keep/a.txt",
      "sort --out=keep/a.txt x",
      "cp --target=keep x",
      "rm --recur keep",
      "cp -vt keep x",
      "install -Dt keep x",
      "sort -uo keep/a.txt x",
      "sort -uokeep/a.txt x",
      // find searches . without a start point.
      "find -name a.txt -delete",
      // Through a link the line makes first.
      "ln -s keep k && echo gone > k/a.txt",
      "ln -s keep/a.txt l; echo gone >> l",
      // An output option of a program outside the table (git diff and log write there).
      "git diff --output=keep/a.txt",
      "git log -1 --outp keep/a.txt",
    ]
    for (const command of lines) {
      const settlement = settlementOf(await exec(box, "bash", { command }))
      expect([command, settlement.status, settlement.error?.kind]).toEqual([command, "error", "denied"])
    }
    expect(readFileSync(join(box.location, "keep/a.txt"), "utf8")).toBe("kept\n")
    expect(readFileSync(join(box.location, "keep/deep/b.txt"), "utf8")).toBe("kept\n")
    expect(existsSync(join(box.location, "keep/x"))).toBe(false)
    // Reading them, writing to stdout, and changing what the rule does not name still run.
    for (const command of ["gzip -c keep/a.txt", "sort keep/a.txt", "find keep -name '*.txt'", "cp x y", "rm -r nothere || true"]) {
      expect([command, settlementOf(await exec(box, "bash", { command })).status]).toEqual([command, "success"])
    }
  }, 180_000)
})

// edit and an apply_patch update read the file they change: a hunk that does not match shows its nearest lines, a
// match shows a diff, and a move carries the text where it can be read. So the read rule holds for them too, as for
// bash's `mv` and `sed -i`; a patch that only adds or deletes reads nothing.
describe("edit and apply_patch meet the read rules of the files they change", () => {
  const patch = (body: string) => ({ patchText: `*** Begin Patch\n${body}*** End Patch` })

  test("an edit, an update, a move and an update through a link are refused as denied, showing nothing", async () => {
    const box = secrets()
    const calls: ReadonlyArray<readonly [string, unknown]> = [
      ["edit", { filePath: "app.env", oldString: "TOKEN=\nX", newString: "q" }],
      ["edit", { filePath: "app.env", oldString: "TOKEN", newString: "T" }],
      ["edit", { filePath: "alias.txt", oldString: "nothing like it", newString: "q" }],
      ["apply_patch", patch("*** Update File: app.env\n@@\n-no such line\n+x\n")],
      ["apply_patch", patch("*** Update File: app.env\n*** Move to: leaked.txt\n")],
      ["apply_patch", patch("*** Update File: notes.txt\n@@\n-hello\n+hi\n*** Update File: sub/deep.env\n@@\n-x\n+y\n")],
      ["apply_patch", patch("*** Update File: alias.txt\n*** Move to: copy.txt\n")],
    ]
    for (const [name, input] of calls) {
      const result = await exec(box, name, input)
      const settlement = settlementOf(result)
      expect([name, input, settlement.error?.kind]).toEqual([name, input, "denied"])
      expect(settlement.error?.message).toMatch(/read on "(app|sub\/deep)\.env"/)
      expect(result.stdout).not.toContain("s3cr3t")
    }
    expect(readFileSync(join(box.location, "app.env"), "utf8")).toBe(`${SECRET}\n`)
    expect(readFileSync(join(box.location, "notes.txt"), "utf8")).toBe("hello\n")
    expect(existsSync(join(box.location, "leaked.txt"))).toBe(false)
    expect(existsSync(join(box.location, "copy.txt"))).toBe(false)
  })

  test("core check edit shows the read check before the edit; an add or a delete reads nothing and is not refused", async () => {
    const box = secrets()
    const checked = await core(box, ["check", "edit", "--location", box.location, "--input", JSON.stringify({ filePath: "app.env", oldString: "a", newString: "b" })])
    const checks = (JSON.parse(checked.stdout) as { checks: ReadonlyArray<{ action: string; decision: string }> }).checks
    expect(checks.map(({ action, decision }) => [action, decision])).toEqual([
      ["read", "deny"],
      ["edit", "allow"],
    ])
    const added = settlementOf(await exec(box, "apply_patch", patch("*** Add File: new.env\n+A=1\n")))
    expect(added.status).toBe("success")
    const deleted = settlementOf(await exec(box, "apply_patch", patch("*** Delete File: new.env\n")))
    expect(deleted.status).toBe("success")
    expect(existsSync(join(box.location, "new.env"))).toBe(false)
  })

  test("nothing of a denied file is told: not its size to a write over it, nor its lines to a delete", async () => {
    const box = secrets()
    writeFileSync(join(box.location, "app.env"), "A=1\nB=2\nC=3\n")
    const written = settlementOf(await exec(box, "write", { filePath: "app.env", content: "X=1\n" }))
    expect(written.status).toBe("error")
    expect(written.error?.message).toBe(
      "app.env already exists, and the rules deny reading it, so write cannot replace content no one showed you. Nothing was changed. Ask the user to change it if it must change.",
    )
    const deleted = settlementOf(await exec(box, "apply_patch", patch("*** Delete File: app.env\n")))
    expect(deleted.status).toBe("success")
    expect(JSON.stringify(deleted.content)).toContain("D app.env")
    expect(JSON.stringify(deleted.content)).not.toMatch(/app\.env \(-3\)|"removed":3/)
    expect(JSON.stringify(deleted.structured)).not.toContain('"removed":3')
    // A file the rules let it read still says what a delete took.
    const notes = settlementOf(await exec(box, "apply_patch", patch("*** Delete File: notes.txt\n")))
    expect(JSON.stringify(notes.content)).toContain("D notes.txt (-1)")
  })
})

describe("tools that show many files leave out those whose read is denied", () => {
  const text = (settlement: { content: ReadonlyArray<{ type: string; text?: string }> }) =>
    settlement.content.map((part) => part.text ?? "").join("\n")

  test("list names none of them and says how many it left out", async () => {
    const box = secrets()
    const settlement = settlementOf(await exec(box, "list", {}))
    expect(settlement.status).toBe("success")
    const shown = text(settlement)
    expect(shown).not.toContain(".env")
    expect(shown).toContain("notes.txt")
    expect(shown).toContain("2 files not shown: the user's rules, credential stores, the system's secrets or core's own directories, which no tool reads.")
    const structured = settlement.structured as { total: number; hidden: number; entries: Array<{ path: string }> }
    expect(structured.hidden).toBe(2)
    expect(structured.entries.map((entry) => entry.path).join(" ")).not.toContain(".env")
    // core.json and notes.txt (ripgrep's walk follows no symlink): the files shown are all the total counts.
    expect(structured.total).toBe(2)
  })

  test("glob names none of them, even asked for by their own pattern", async () => {
    const box = secrets()
    for (const pattern of ["**/*.env", "*", "**/*", "app.env", "sub/deep.env"]) {
      const settlement = settlementOf(await exec(box, "glob", { pattern }))
      expect([pattern, settlement.status]).toEqual([pattern, "success"])
      // The answer echoes the pattern given, and names nothing else of them.
      expect([pattern, /app\.env|deep\.env/.test(text(settlement).replaceAll(pattern, ""))]).toEqual([pattern, false])
      expect(JSON.stringify((settlement.structured as { files: unknown }).files)).not.toContain(".env")
    }
    const settlement = settlementOf(await exec(box, "glob", { pattern: "**/*.env" }))
    expect(settlement.structured).toMatchObject({ files: [], total: 0, hidden: 2 })
  })

  test("grep shows no line of them, counts none of their matches, and refuses one asked for by name", async () => {
    const box = secrets()
    for (const input of [{ pattern: "TOKEN" }, { pattern: "s3cr3t", include: "*.env" }, { pattern: ".", path: "sub" }]) {
      const result = await exec(box, "grep", input)
      const settlement = settlementOf(result)
      expect([input, settlement.status]).toEqual([input, "success"])
      expect(result.stdout).not.toContain(SECRET)
      expect(result.stdout.replace(`"include": "*.env"`, "").replace("matching *.env", "")).not.toContain(".env")
      expect(settlement.structured).toMatchObject({ matches: 0, files: 0 })
    }
    const named = settlementOf(await exec(box, "grep", { pattern: "TOKEN", path: "app.env" }))
    expect(named.error?.kind).toBe("denied")
    expect(named.error?.message).toContain('read on "app.env"')
    expect(JSON.stringify(named)).not.toContain("s3cr3t")
    // Other files are searched as before.
    expect(settlementOf(await exec(box, "grep", { pattern: "hello" })).structured).toMatchObject({ matches: 1, files: 1 })
  })

  test("read of a directory names none of them", async () => {
    const box = secrets()
    const settlement = settlementOf(await exec(box, "read", { filePath: "." }))
    expect(settlement.status).toBe("success")
    expect(text(settlement)).not.toContain("app.env")
    expect(text(settlement)).toContain("notes.txt")
    expect(text(settlement)).toContain("1 file not shown")
  })
})

describe("bash asks about the files a line changes together", () => {
  test("rm of a pattern matching many files asks one edit, naming each, then runs", async () => {
    const h = harness({
      files: Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`logs/${index}.log`, "x"])),
      rules: [{ action: "edit", resource: "*", effect: "ask" }],
    })
    const outcome = await h.settle("bash", { command: "rm logs/*.log" }, { reply: { reply: "once" } })
    expect(outcome.settlement.status).toBe("success")
    const edits = outcome.asks.filter((ask) => ask.action === "edit")
    expect(edits).toHaveLength(1)
    expect(edits[0]!.resources).toHaveLength(50)
    expect(existsSync(join(h.directory, "logs/0.log"))).toBe(false)
  })
})
