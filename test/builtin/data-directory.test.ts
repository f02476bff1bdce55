// core's data directory is no tool's to read but for a session's own managed outputs (docs/permissions.md): a walk
// of grep, glob or list over a folder that holds it (a Location at $HOME, ~/.local) leaves out every file in it,
// other sessions' outputs and what core took out of its configuration alike, as `read` of one is refused; a search
// given the session's own output folder still finds its lines, and another session is refused it, by read too.

import { beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { core, type Sandbox, sandbox, settlementOf } from "../cli/fixture"
import { binary } from "../support/binary"

const OTHER = "OTHER_SESSION_LINE"
const UNDONE = "UNDONE_TOOL_LINE"

beforeAll(async () => {
  await binary()
}, 300_000)

/** A Location whose data directory lies inside it, as `~/.local/share/core` lies in a Location at `$HOME`. */
const holding = (): Sandbox => {
  const box = sandbox({ "notes.txt": `${OTHER} is not here\n` })
  const data = join(box.location, ".local/share/core")
  mkdirSync(data, { recursive: true })
  return { ...box, data, env: { ...box.env, CORE_DATA_DIR: data } }
}

const call = (box: Sandbox, name: string, input: unknown, session: string) =>
  core(box, ["exec", name, "--input", JSON.stringify(input), "--location", box.location, "--session", session])

const text = (settlement: { content: ReadonlyArray<{ type: string; text?: string }> }) =>
  settlement.content.map((part) => part.text ?? "").join("\n")

/** Session A's command prints more than its preview holds: the path of the managed output the rest is kept in. */
const keptBySessionA = async (box: Sandbox): Promise<string> => {
  const made = settlementOf(
    await call(box, "bash", { command: `for i in $(seq 1 4000); do echo ${OTHER}_$i; done`, description: "print" }, "sesA"),
  )
  // The preview names where the whole text is kept, and says to search it with grep.
  const kept = /filePath "([^"]+)"/.exec(text(made))?.[1]
  expect(kept).toStartWith(join(box.data, "outputs"))
  return kept!
}

describe("grep, glob and list leave out core's data directory", () => {
  test("another session's managed output and the taken-out files are never shown, by line or by name", async () => {
    const box = holding()
    // Session A's command prints more than its preview holds: the rest is kept as a managed output in the data dir.
    const made = settlementOf(
      await call(box, "bash", { command: `for i in $(seq 1 4000); do echo ${OTHER}_$i; done`, description: "print" }, "sesA"),
    )
    expect(made.status).toBe("success")
    expect(made.outputs.length).toBeGreaterThan(0)
    // What core took out of its configuration, kept for a person.
    const undone = join(box.data, "undone", "0001", "tools")
    mkdirSync(undone, { recursive: true })
    writeFileSync(join(undone, "evil.ts"), `export const x = "${UNDONE}"\n`)

    // A line the preview left out (lines 501 on), and the taken-out file's.
    const grep = settlementOf(await call(box, "grep", { pattern: `${OTHER}_150[0-9]$|${UNDONE}` }, "sesB"))
    expect(grep.status).toBe("success")
    expect(text(grep)).toStartWith("No matches")
    expect(JSON.stringify(grep.structured)).not.toContain(".local/share/core")
    // The same from the folder above, as a search of ~/.local would be.
    const above = settlementOf(await call(box, "grep", { pattern: `${UNDONE}|${OTHER}_1500$`, path: ".local" }, "sesB"))
    expect(above.status).toBe("success")
    expect(text(above)).toStartWith("No matches")

    for (const pattern of ["**/*", "**/*.ts", "**/out_*"]) {
      const glob = settlementOf(await call(box, "glob", { pattern }, "sesB"))
      expect(glob.status).toBe("success")
      expect(JSON.stringify(glob.structured)).not.toContain("share/core")
    }
    const listed = settlementOf(await call(box, "list", { path: ".local" }, "sesB"))
    expect(listed.status).toBe("success")
    expect(JSON.stringify(listed.structured)).not.toContain("undone")
    expect(JSON.stringify(listed.structured)).not.toContain("outputs")
    expect(text(listed)).toContain("not shown: the user's rules, credential stores, the system's secrets or core's own directories")

    // Not even the session that made the output finds it by walking the Location.
    const own = settlementOf(await call(box, "grep", { pattern: `${OTHER}_1500$` }, "sesA"))
    expect(text(own)).toStartWith("No matches")
  }, 60_000)

  test("the session's own output folder, given as the path, is searched as before", async () => {
    const box = holding()
    const kept = await keptBySessionA(box)
    for (const path of [kept, dirname(kept)]) {
      const found = settlementOf(await call(box, "grep", { pattern: `${OTHER}_1500$`, path }, "sesA"))
      expect(found.status).toBe("success")
      expect(text(found)).toContain(`${OTHER}_1500`)
      // Another session given the same place is refused, as before.
      const refused = settlementOf(await call(box, "grep", { pattern: `${OTHER}_1500$`, path }, "sesB"))
      expect(refused.status).not.toBe("success")
      expect(text(refused)).not.toContain(`:${OTHER}_1500`)
    }
    // read too: the data directory lying in the Location makes another session's output no more its own.
    const read = settlementOf(await call(box, "read", { filePath: kept, offset: 1500, limit: 1 }, "sesB"))
    expect(read.status).not.toBe("success")
    expect(text(read)).toContain("only in the session that made them")
    expect(text(read)).not.toContain(`${OTHER}_1500`)
    expect(settlementOf(await call(box, "read", { filePath: kept, offset: 1500, limit: 1 }, "sesA")).status).toBe("success")
  }, 60_000)

  test("edit and apply_patch, which read the file they change, are refused another session's output before asking", async () => {
    const box = holding()
    const kept = await keptBySessionA(box)
    const before = readFileSync(kept, "utf8")
    // A near match would quote the lines around it; a match would change the output another session reads back.
    const edits = [
      call(box, "edit", { filePath: kept, oldString: `${OTHER}_1500\n${OTHER}_15X1`, newString: "forged" }, "sesB"),
      call(box, "edit", { filePath: kept, oldString: `${OTHER}_1500\n`, newString: "forged\n" }, "sesB"),
      call(box, "apply_patch", { patchText: `*** Begin Patch\n*** Update File: ${kept}\n@@\n-${OTHER}_1500\n+forged\n*** End Patch` }, "sesB"),
    ]
    for (const result of await Promise.all(edits)) {
      const settlement = settlementOf(result)
      expect(settlement.status).toBe("error")
      expect(text(settlement)).toContain("only in the session that made them")
      expect(text(settlement)).not.toContain(`${OTHER}_1499`)
      expect(text(settlement)).not.toContain(`${OTHER}_1501`)
    }
    expect(readFileSync(kept, "utf8")).toBe(before)
  }, 60_000)
})
