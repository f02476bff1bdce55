// What the editing built-ins never do to a user's work: lose an update when two changes to one file run at once
// (in one process, and in two `core exec` processes), mix indentation styles through a tolerant match, replace a
// read-only file or open a special one, or rewrite the line endings of lines they did not change.

import { describe, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { chmodSync, chownSync, copyFileSync, existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { binary } from "../support/binary"
import { tempDir } from "../support/temp"
import { harness, textOf } from "../support/builtin"
import { exec, sandbox, settlementOf } from "../cli/fixture"

const LINES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]

describe("no lost update", () => {
  test("30 rounds of two parallel edits on different lines of one file in one process lose nothing", async () => {
    const h = harness({ files: { "a.txt": "" } })
    const path = join(h.directory, "a.txt")
    for (let round = 0; round < 30; round++) {
      writeFileSync(path, `${LINES.join("\n")}\n`)
      // A session per round: rewriting the file between rounds is someone else's change.
      const session = `ses_round_${round}`
      const [first, second] = await Promise.all([
        h.settle("edit", { filePath: "a.txt", oldString: "bravo", newString: `BRAVO ${round}` }, { session }),
        h.settle("edit", { filePath: "a.txt", oldString: "echo", newString: `ECHO ${round}` }, { session }),
      ])
      expect([first.settlement.status, second.settlement.status]).toEqual(["success", "success"])
      expect(readFileSync(path, "utf8")).toBe(
        `${LINES.map((line) => (line === "bravo" ? `BRAVO ${round}` : line === "echo" ? `ECHO ${round}` : line)).join("\n")}\n`,
      )
    }
    expect(readdirSync(h.directory)).toEqual(["a.txt"])
  })

  test("parallel write, edit and apply_patch on one file apply one after the other", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\nthree\n" } })
    await h.settle("read", { filePath: "a.txt" })
    const outcomes = await Promise.all([
      h.settle("edit", { filePath: "a.txt", oldString: "one", newString: "ONE" }),
      h.settle("apply_patch", { patchText: "*** Begin Patch\n*** Update File: a.txt\n-three\n+THREE\n*** End Patch" }),
      h.settle("edit", { filePath: "a.txt", oldString: "two", newString: "TWO" }),
    ])
    expect(outcomes.map((outcome) => outcome.settlement.status)).toEqual(["success", "success", "success"])
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("ONE\nTWO\nTHREE\n")
  })

  test("core exec processes racing to edit different lines of one file lose nothing", async () => {
    const box = sandbox({ "a.txt": "" })
    const path = join(box.location, "a.txt")
    const racers = LINES.slice(0, 4)
    // One call first creates the data directory's store, so the processes race on the file, not on creating it.
    expect(settlementOf(await exec(box, "read", { filePath: "a.txt" }))).toMatchObject({ status: "success" })
    for (let round = 0; round < 3; round++) {
      writeFileSync(path, `${LINES.join("\n")}\n`)
      const runs = await Promise.all(
        racers.map((line) => exec(box, "edit", { filePath: "a.txt", oldString: line, newString: `${line.toUpperCase()} ${round}` })),
      )
      for (const run of runs) expect(settlementOf(run)).toMatchObject({ status: "success" })
      expect(readFileSync(path, "utf8")).toBe(
        `${LINES.map((line) => (racers.includes(line) ? `${line.toUpperCase()} ${round}` : line)).join("\n")}\n`,
      )
    }
    expect(readdirSync(box.location).sort()).toEqual(["a.txt"])
  }, 60_000)
})

describe("indentation of a tolerant match", () => {
  test("a tab-indented Python file edited with space-indented oldString and newString stays tab-indented", async () => {
    const content = "def f(x):\n\tif x:\n\t\treturn 1\n\treturn 0\n"
    const h = harness({ files: { "a.py": content } })
    const { settlement } = await h.settle("edit", {
      filePath: "a.py",
      oldString: "  if x:\n    return 1",
      newString: "  if x:\n    log(x)\n    return 1",
    })
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "a.py"), "utf8")).toBe("def f(x):\n\tif x:\n\t\tlog(x)\n\t\treturn 1\n\treturn 0\n")
  })

  test("a 4-space file edited with 2-space oldString and newString stays 4-space", async () => {
    const content = "class A:\n    def run(self):\n        if ok:\n            go()\n"
    const h = harness({ files: { "a.py": content } })
    const { settlement } = await h.settle("edit", {
      filePath: "a.py",
      oldString: "def run(self):\n  if ok:\n    go()",
      newString: "def run(self):\n  if ok:\n    go()\n  else:\n    stop()",
    })
    expect(settlement.status).toBe("success")
    expect(readFileSync(join(h.directory, "a.py"), "utf8")).toBe(
      "class A:\n    def run(self):\n        if ok:\n            go()\n        else:\n            stop()\n",
    )
  })

  test("a whitespace-normalised match keeps the matched line's indentation", async () => {
    const h = harness({ files: { "a.py": "def f():\n\tx  =  1\n" } })
    const { settlement } = await h.settle("edit", { filePath: "a.py", oldString: "x = 1", newString: "x = 2" })
    expect(settlement.structured).toMatchObject({ matcher: "whitespace-normalised" })
    expect(readFileSync(join(h.directory, "a.py"), "utf8")).toBe("def f():\n\tx = 2\n")
  })

  test("newString whose indentation cannot be converted to the file's is refused, showing the matched lines", async () => {
    const content = "def f(x):\n\tif x:\n\t\treturn 1\n"
    const h = harness({ files: { "a.py": content } })
    const { settlement } = await h.settle("edit", {
      filePath: "a.py",
      oldString: "  if x:\n    return 1",
      newString: "  if x:\n     return 2",
    })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.message).toContain("found lines 2-3, but line 2 of newString is indented by")
    expect(settlement.error?.message).toContain("2| \tif x:\n3| \t\treturn 1")
    expect(readFileSync(join(h.directory, "a.py"), "utf8")).toBe(content)
  })
})

/**
 * A Location, data directory and home of the user 65534 (nobody), and `core exec` run as that user with `groups`
 * (a setpriv option); removed at the end of the run (the root holds a copy of the binary).
 */
const asNobody = async (prefix: string, groups: string) => {
  const root = tempDir(prefix)
  chmodSync(root, 0o755)
  const core = join(root, "core")
  copyFileSync(await binary(), core)
  chmodSync(core, 0o755)
  const location = join(root, "loc")
  const data = join(root, "data")
  const home = join(root, "home")
  for (const directory of [location, data, home]) {
    spawnSync("mkdir", [directory])
    chownSync(directory, 65534, 65534)
  }
  const run = (name: string, input: unknown) =>
    spawnSync(
      "setpriv",
      ["--reuid=65534", "--regid=65534", groups, core, "exec", name, "--input", JSON.stringify(input), "--location", location, "--session", "s1"],
      { env: { ...process.env, CORE_DATA_DIR: data, CORE_HOME: home, HOME: home }, encoding: "utf8" },
    )
  return { location, run }
}

describe("read-only and special files", () => {
  const patchOf = (path: string) => `*** Begin Patch\n*** Update File: ${path}\n-a\n+b\n*** End Patch`

  test("a file without write permission (0444) is refused by write, edit and apply_patch, naming mode and owner", async () => {
    const h = harness({ files: { "ro.txt": "a\n" } })
    const path = join(h.directory, "ro.txt")
    chmodSync(path, 0o444)
    await h.settle("read", { filePath: "ro.txt" })
    const calls = [
      h.settle("write", { filePath: "ro.txt", content: "b\n" }),
      h.settle("edit", { filePath: "ro.txt", oldString: "a", newString: "b" }),
      h.settle("apply_patch", { patchText: patchOf("ro.txt") }),
    ]
    for (const { settlement } of await Promise.all(calls)) {
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toMatch(/it is read-only \(mode 0444, owner uid \d+/)
    }
    expect(readFileSync(path, "utf8")).toBe("a\n")
    expect(statSync(path).mode & 0o7777).toBe(0o444)
  })

  // Its mode allows writing, so "read-only (mode 0644): chmod u+w" sent the user after a mode that was not the cause.
  test("an immutable file (chattr +i) is refused by write, edit and apply_patch, saying so, not naming its mode as the cause", async () => {
    // Where the file system keeps the attribute (tmpfs does not): the temp directory, else one beside the checkout.
    let h = harness({ files: { "fixed.txt": "a\n" } })
    let path = join(h.directory, "fixed.txt")
    let marked = spawnSync("chattr", ["+i", path], { encoding: "utf8" })
    if (marked.status !== 0) {
      const beside = mkdtempSync(join(dirname(import.meta.dir), "..", ".core-immutable-"))
      process.on("exit", () => rmSync(beside, { recursive: true, force: true }))
      h = harness({ directory: beside, files: { "fixed.txt": "a\n" } })
      path = join(h.directory, "fixed.txt")
      marked = spawnSync("chattr", ["+i", path], { encoding: "utf8" })
    }
    expect(marked.stderr).toBe("")
    expect(marked.status).toBe(0)
    try {
      await h.settle("read", { filePath: "fixed.txt" })
      for (const [name, input] of [
        ["write", { filePath: "fixed.txt", content: "b\n" }],
        ["edit", { filePath: "fixed.txt", oldString: "a", newString: "b" }],
        ["apply_patch", { patchText: patchOf("fixed.txt") }],
      ] as const) {
        const { settlement } = await h.settle(name, input)
        expect([name, settlement.status]).toEqual([name, "error"])
        expect(settlement.error?.message).toContain("likely marked immutable (chattr +i")
        expect(settlement.error?.message).not.toContain("chmod")
      }
    } finally {
      spawnSync("chattr", ["-i", path])
    }
    expect(readFileSync(path, "utf8")).toBe("a\n")
  })

  // "Cannot write d1/a.txt, d2/c.txt: its lock file … (EPERM) … check the directory's permissions": which file's,
  // and a mode that was not the cause.
  test("a patch meeting an immutable directory names the file whose lock it refused, and the attribute", async () => {
    let h = harness({ files: { "d1/a.txt": "a\n", "d2/c.txt": "c\n" } })
    let directory = join(h.directory, "d2")
    let marked = spawnSync("chattr", ["+i", directory], { encoding: "utf8" })
    if (marked.status !== 0) {
      const beside = mkdtempSync(join(dirname(import.meta.dir), "..", ".core-immutable-"))
      process.on("exit", () => rmSync(beside, { recursive: true, force: true }))
      h = harness({ directory: beside, files: { "d1/a.txt": "a\n", "d2/c.txt": "c\n" } })
      directory = join(h.directory, "d2")
      marked = spawnSync("chattr", ["+i", directory], { encoding: "utf8" })
    }
    expect(marked.status).toBe(0)
    try {
      const patchText = ["*** Begin Patch", "*** Update File: d1/a.txt", "@@", "-a", "+A", "*** Delete File: d2/c.txt", "*** End Patch"].join("\n")
      const { settlement } = await h.settle("apply_patch", { patchText })
      expect(settlement.error?.message).toContain(
        `: core could not create ${join(realpathSync(directory), ".c.txt.core-lock")}, the lock for ${join(realpathSync(directory), "c.txt")} (EPERM). ` +
          `Nothing was changed; the directory refuses new files whatever its mode: it is likely marked immutable (chattr +i; lsattr -d`,
      )
      expect(settlement.error?.message).not.toContain("permissions")
    } finally {
      spawnSync("chattr", ["-i", directory])
    }
    expect(readFileSync(join(h.directory, "d1/a.txt"), "utf8")).toBe("a\n")
    expect(readFileSync(join(h.directory, "d2/c.txt"), "utf8")).toBe("c\n")
  })

  test("a user who cannot write a file (not root) is refused, even where the directory would let a rename replace it", async () => {
    const { location, run } = await asNobody("core-nobody-", "--clear-groups")
    // Owned by root, 0644: the user 65534 may read it but not write it; the directory is theirs.
    writeFileSync(join(location, "theirs.txt"), "a\n")
    expect(JSON.parse(run("read", { filePath: "theirs.txt" }).stdout).status).toBe("success")
    for (const [name, input] of [
      ["write", { filePath: "theirs.txt", content: "b\n" }],
      ["edit", { filePath: "theirs.txt", oldString: "a", newString: "b" }],
      ["apply_patch", { patchText: patchOf("theirs.txt") }],
    ] as const) {
      const settlement = JSON.parse(run(name, input).stdout)
      expect(settlement.status).toBe("error")
      expect(settlement.error.message).toContain("it is read-only (mode 0644, owner uid 0, group gid 0)")
    }
    expect(readFileSync(join(location, "theirs.txt"), "utf8")).toBe("a\n")
    expect(statSync(join(location, "theirs.txt")).uid).toBe(0)
  }, 60_000)

  // A group-shared file (another owner, the group writing it): edited by a member, it came back in the member's own
  // group, and its owner, reading through the group, could no longer read it.
  test("a file of another owner that the user edits through its group keeps its group", async () => {
    const { location, run } = await asNobody("core-member-", "--groups=100")
    const shared = join(location, "shared.txt")
    writeFileSync(shared, "a\n")
    // Owned by daemon (uid 1) and the group 100, which the user 65534 is in and may write through.
    chownSync(shared, 1, 100)
    chmodSync(shared, 0o660)
    const edited = JSON.parse(run("edit", { filePath: "shared.txt", oldString: "a", newString: "b" }).stdout)
    expect(edited.status).toBe("success")
    expect(readFileSync(shared, "utf8")).toBe("b\n")
    expect(statSync(shared).gid).toBe(100)
    expect(statSync(shared).mode & 0o777).toBe(0o660)
    // Its owner could not be kept (only root gives a file away): the model is told, to tell the user.
    expect(statSync(shared).uid).toBe(65534)
    expect(edited.structured.notKept).toEqual([expect.stringContaining("its owner (uid 1): it is now owned by uid 65534")])
    expect(edited.content[0].text).toContain("Note: the new shared.txt did not keep its owner (uid 1)")
  }, 60_000)

  // A file with other names: a replace makes a new file under this name, and the others keep the old content. That
  // went unsaid: the result claimed the change, and the file under its other name was as before.
  test("write, edit and apply_patch say when the file they replaced has other hard links, which keep the old content", async () => {
    const h = harness({ files: { "a.txt": "a\n", "w.txt": "w\n", "p.txt": "a\n" } })
    for (const name of ["a.txt", "w.txt", "p.txt"]) linkSync(join(h.directory, name), join(h.directory, `${name}.link`))
    await h.settle("read", { filePath: "w.txt" })
    // A file of several names is asked about where one of them could be a protected file (core's directories are
    // searched for it, within a bound, which a large data directory exhausts): any such ask is approved here.
    const once = { reply: { reply: "once" } } as const
    const outcomes = {
      edit: await h.settle("edit", { filePath: "a.txt", oldString: "a", newString: "b" }, once),
      write: await h.settle("write", { filePath: "w.txt", content: "x\n" }, once),
      apply_patch: await h.settle("apply_patch", { patchText: patchOf("p.txt") }, once),
    }
    for (const [name, { settlement }] of Object.entries(outcomes)) {
      expect([name, settlement.status]).toEqual([name, "success"])
      expect([name, textOf(settlement)]).toEqual([name, expect.stringContaining("did not keep its other hard link: that name still holds the old content")])
    }
    expect((outcomes.apply_patch.settlement.structured as { files: ReadonlyArray<{ notKept?: unknown }> }).files[0]!.notKept).toHaveLength(1)
    expect(readFileSync(join(h.directory, "a.txt.link"), "utf8")).toBe("a\n")
    // A file of one name says nothing of the kind.
    const plain = await h.settle("edit", { filePath: "a.txt", oldString: "b", newString: "c" }, once)
    expect(textOf(plain.settlement)).not.toContain("did not keep")
    expect(plain.settlement.structured).not.toHaveProperty("notKept")
  })

  test("a FIFO is refused by write, edit and apply_patch without blocking", async () => {
    const h = harness()
    expect(spawnSync("mkfifo", [join(h.directory, "pipe")]).status).toBe(0)
    const outcomes = await Promise.all([
      h.settle("write", { filePath: "pipe", content: "x" }),
      h.settle("edit", { filePath: "pipe", oldString: "a", newString: "b" }),
      h.settle("apply_patch", { patchText: patchOf("pipe") }),
    ])
    expect(outcomes.map(({ settlement }) => settlement.error?.message)).toEqual([
      "Cannot write pipe: it is not a regular file (a device, socket or pipe). write only creates and replaces regular files.",
      "Cannot edit pipe: it is not a regular file. Give the path of a text file.",
      expect.stringContaining("Cannot update pipe (patch line 2): it is not a regular file (a FIFO, socket or device)."),
    ])
    expect(statSync(join(h.directory, "pipe")).isFIFO()).toBe(true)
  })

  test("a device is refused", async () => {
    const h = harness()
    const { settlement } = await h.settle("write", { filePath: "/dev/null", content: "x" }, { reply: { reply: "once" } })
    expect(settlement.error?.message).toContain("it is not a regular file")
  })
})

describe("line endings", () => {
  test("edit in a mixed file: unchanged lines keep theirs, replaced and new lines take their neighbours'", async () => {
    const h = harness({ files: { "m.txt": "a\r\nb\nc\r\nd\n" } })
    const { settlement } = await h.settle("edit", { filePath: "m.txt", oldString: "b\nc\nd", newString: "b\nC\nC2\nd" })
    expect(settlement.status).toBe("success")
    // b's LF and c's CRLF are kept for the lines kept at the ends; the new line takes the replaced region's first ending.
    expect(readFileSync(join(h.directory, "m.txt"), "utf8")).toBe("a\r\nb\nC\nC2\r\nd\n")
  })

  test("edit adding lines inside one line takes that line's ending", async () => {
    const h = harness({ files: { "m.txt": "a\nb = 1\r\nc\n" } })
    await h.settle("edit", { filePath: "m.txt", oldString: "b = 1", newString: "b = 1\nb2 = 2" })
    expect(readFileSync(join(h.directory, "m.txt"), "utf8")).toBe("a\nb = 1\r\nb2 = 2\r\nc\n")
  })
})

describe("texts", () => {
  test("edit removes read's `N: ` line numbers pasted into oldString and newString when they are right", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\nthree\n" } })
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "2: two\n3: three", newString: "2: TWO\n3: three" })
    expect(settlement.status).toBe("success")
    expect(settlement.structured).toMatchObject({ lineNumbersRemoved: true })
    expect(textOf(settlement)).toContain("The `N: ` line numbers copied from read were removed first.")
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("one\nTWO\nthree\n")
  })

  // The text occurs at lines 2 and 4: the number read showed says which. It was refused as "not found".
  test("edit takes read's line numbers as naming which of several alike places is meant", async () => {
    for (const [line, expected] of [
      [4, "alpha\nbeta\ngamma\nBETA\n"],
      [2, "alpha\nBETA\ngamma\nbeta\n"],
    ] as const) {
      const h = harness({ files: { "n.txt": "alpha\nbeta\ngamma\nbeta\n" } })
      const { settlement } = await h.settle("edit", { filePath: "n.txt", oldString: `${line}: beta`, newString: `${line}: BETA` })
      expect([line, settlement.status]).toEqual([line, "success"])
      expect(settlement.structured).toMatchObject({ lineNumbersRemoved: true, replacements: 1 })
      expect(readFileSync(join(h.directory, "n.txt"), "utf8")).toBe(expected)
    }
    // A number that names neither place is no help.
    const h = harness({ files: { "n.txt": "alpha\nbeta\ngamma\nbeta\n" } })
    const { settlement } = await h.settle("edit", { filePath: "n.txt", oldString: "3: beta", newString: "3: BETA" })
    expect(settlement.error?.message).toBe(
      "oldString without read's line numbers occurs 2 times in n.txt (at lines 2, 4), none of them at line 3, which its numbers " +
        "name. Use the numbers read shows for the place you mean, or drop them and include more surrounding lines so that " +
        "oldString matches one place.",
    )
    expect(readFileSync(join(h.directory, "n.txt"), "utf8")).toBe("alpha\nbeta\ngamma\nbeta\n")
  })

  // The line shown looked identical to what the model sent, so it retried the same way, or dropped numbers in vain.
  test("edit names the code points where oldString is in the file only in another Unicode form or with invisible characters", async () => {
    const h = harness({ files: { "nfd.txt": "un cafe\u0301 noir\n", "zw.txt": "foo\u200bbar\n" } })
    const nfd = await h.settle("edit", { filePath: "nfd.txt", oldString: "café", newString: "thé" })
    expect(nfd.settlement.error?.message).toContain(
      "oldString is in nfd.txt, but written with other code points there: the file has U+0301 (combining marks or invisible characters).",
    )
    const numbered = await h.settle("edit", { filePath: "nfd.txt", oldString: "1: un café noir", newString: "1: un thé" })
    expect(numbered.settlement.error?.message).toContain("but written with other code points there: the file has U+0301")
    expect(numbered.settlement.error?.message).not.toContain("Drop these numbers")
    const zw = await h.settle("edit", { filePath: "zw.txt", oldString: "foobar", newString: "baz" })
    expect(zw.settlement.error?.message).toContain("the file has U+200B")
    // Written as the file has them, they match.
    expect((await h.settle("edit", { filePath: "nfd.txt", oldString: "cafe\u0301", newString: "the\u0301" })).settlement.status).toBe("success")
  })

  test("edit says to drop line numbers that do not match where the text is", async () => {
    const h = harness({ files: { "a.txt": "one\ntwo\nthree\n" } })
    const { settlement } = await h.settle("edit", { filePath: "a.txt", oldString: "7: two", newString: "7: TWO" })
    expect(settlement.error?.message).toContain('oldString starts with "7: ": the line number read shows before each line')
    expect(readFileSync(join(h.directory, "a.txt"), "utf8")).toBe("one\ntwo\nthree\n")
  })

  test("no lock or temp file is left beside an edited file", async () => {
    const h = harness({ files: { "a.txt": "x\n" } })
    await h.settle("edit", { filePath: "a.txt", oldString: "x", newString: "y" })
    expect(readdirSync(h.directory)).toEqual(["a.txt"])
    expect(existsSync(join(h.directory, ".a.txt.core-lock"))).toBe(false)
  })
})

// A name in another Unicode form (café as NFD, asked for as NFC) looks the same and names another file: read offered
// it back as "Did you mean: café.txt", edit said to create it with write, and write made a second, look-alike file.
describe("a file named in another Unicode form", () => {
  test("is named exactly, as JSON writes it, by read, edit, write and apply_patch; nothing look-alike is made", async () => {
    const nfd = "cafe\u0301.txt"
    const nfc = "caf\u00e9.txt"
    const h = harness({ files: { [nfd]: "old\n" } })
    const exact = `A file named ${JSON.stringify(nfd)} is there: the same name in another Unicode form`
    const outcomes = [
      await h.settle("read", { filePath: nfc }),
      await h.settle("edit", { filePath: nfc, oldString: "old", newString: "new" }),
      await h.settle("write", { filePath: nfc, content: "new\n" }),
      await h.settle("apply_patch", { patchText: `*** Begin Patch\n*** Update File: ${nfc}\n-old\n+new\n*** End Patch` }),
      await h.settle("apply_patch", { patchText: `*** Begin Patch\n*** Add File: ${nfc}\n+new\n*** End Patch` }),
    ]
    for (const { settlement } of outcomes) {
      expect(settlement.status).toBe("error")
      expect(settlement.error?.message).toContain(exact)
    }
    expect(readdirSync(h.directory)).toEqual([nfd])
    expect(readFileSync(join(h.directory, nfd), "utf8")).toBe("old\n")
    // Named exactly, it is the file.
    expect((await h.settle("edit", { filePath: nfd, oldString: "old", newString: "new" })).settlement.status).toBe("success")
  })
})
