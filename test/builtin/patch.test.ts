// The apply_patch format's parser on its own: each malformed section is refused naming the patch line and what was
// expected there; a well-formed patch gives its operations in order (sections, moves, hunks with End of File).

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import * as Result from "effect/Result"
import { Patch } from "../../src/builtin/patch"
import { inChild } from "../support/in-child"

const refusal = (...lines: ReadonlyArray<string>) => {
  const parsed = Patch.parse(lines.join("\n"))
  if (Result.isSuccess(parsed)) throw new Error(`expected a refusal, parsed ${JSON.stringify(parsed.success)}`)
  return parsed.failure
}

describe("Patch.parse", () => {
  test("a section marker without a path is refused at its line", () => {
    expect(refusal("*** Begin Patch", "*** Add File:", "+a", "*** End Patch")).toEqual({
      line: 2,
      message: 'Line 2: "*** Add File:" needs a file path after it.',
    })
    expect(refusal("*** Begin Patch", "*** Update File: a.txt", "*** Move to:", "*** End Patch").message).toBe(
      'Line 3: "*** Move to:" needs a file path after it.',
    )
  })

  test("a deleted file with lines, a hunk with none, and a patch with no sections are refused", () => {
    expect(refusal("*** Begin Patch", "*** Delete File: a.txt", "+x", "*** End Patch").message).toBe(
      'Line 3: expected the next "*** " section after "*** Delete File: a.txt" (a deleted file has no lines), found "+x".',
    )
    expect(refusal("*** Begin Patch", "*** Update File: a.txt", "@@", "@@", "-x", "*** End Patch").message).toBe(
      'Line 3: the hunk has no lines; give context (" "), removed ("-") or added ("+") lines after "@@".',
    )
    expect(refusal("*** Begin Patch", "*** End Patch").message).toBe(
      'Line 2: the patch changes no files: add "*** Add File:", "*** Update File:" or "*** Delete File:" sections.',
    )
  })

  test("anything after the end marker is refused", () => {
    expect(refusal("*** Begin Patch", "*** Delete File: a.txt", "*** End Patch", "", "more")).toEqual({
      line: 5,
      message: 'Line 5: expected nothing after "*** End Patch", found "more".',
    })
  })

  test("a well-formed patch gives its sections in order, with moves, headers and End of File", () => {
    const parsed = Patch.parse(
      [
        "*** Begin Patch",
        "*** Add File: new.txt",
        "+one",
        "",
        "+two",
        "*** Update File: old.txt",
        "*** Move to: moved.txt",
        "@@ function f() {",
        " keep",
        "-gone",
        "+come",
        "*** End of File",
        "",
        "*** Delete File: gone.txt",
        "*** End Patch",
      ].join("\n"),
    )
    expect(Result.isSuccess(parsed)).toBe(true)
    if (Result.isFailure(parsed)) return
    expect(parsed.success).toEqual([
      { _tag: "Add", path: "new.txt", line: 2, lines: ["one", "", "two"] },
      {
        _tag: "Update",
        path: "old.txt",
        line: 6,
        moveTo: "moved.txt",
        hunks: [
          { line: 8, header: "function f() {", old: ["keep", "gone"], new: ["keep", "come"], context: [0, undefined], endOfFile: true },
        ],
      },
      { _tag: "Delete", path: "gone.txt", line: 14 },
    ])
  })
})

// The model writes the patch: a hunk header's closing `@@` is found without trying each space of a long run before it
// (seconds for 100,000). No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
describe("hunk headers a model makes long", () => {
  const header = (line: string) => {
    const parsed = Patch.parse(["*** Begin Patch", "*** Update File: a.txt", line, "-x", "+y", "*** End Patch"].join("\n"))
    if (!Result.isSuccess(parsed)) throw new Error(parsed.failure.message)
    const [operation] = parsed.success
    return operation?._tag === "Update" ? operation.hunks[0]?.header : undefined
  }

  test("a closing @@ and the spaces before it are dropped, as before", () => {
    expect(header("@@ function f() {")).toBe("function f() {")
    expect(header("@@ function f() { \t@@")).toBe("function f() {")
    expect(header("@@ f@@")).toBe("f")
    expect(header("@@ a @@ b")).toBe("a @@ b")
  })

  test("a long hostile header is read at once, and rightly", async () => {
    expect(
      await inChild(`
        import { Patch } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/patch.ts"))}
        const header = (line) => Patch.parse(["*** Begin Patch", "*** Update File: a.txt", line, "-x", "+y", "*** End Patch"].join("\\n")).success[0].hunks[0].header
        console.log(JSON.stringify([
          header("@@ a" + " ".repeat(200_000) + "b@@x").length,
          header("@@ a" + " ".repeat(200_000) + "@@").length,
        ]))
        `),
    ).toEqual([200_005, 1])
  }, 30_000)
})

// A hunk was looked for window by window, each line compared (and normalised again) once per window it is in: a
// hunk of a thousand lines of `}` in a file of 200,000 took a minute of processor. Now each comparison is one pass.
describe("Patch.seek", () => {
  const naive = (lines: ReadonlyArray<string>, pattern: ReadonlyArray<string>, from: number, compare: (line: string) => string) => {
    for (let start = from; start + pattern.length <= lines.length; start++) {
      if (pattern.every((line, offset) => compare(lines[start + offset]!) === compare(line))) return start
    }
    return -1
  }

  test("finds what a window-by-window search finds, from every start, on many small random files", () => {
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    const pick = () => ["a", "a ", "b", " a"][Math.floor(random() * 4)]!
    for (let round = 0; round < 2_000; round++) {
      const lines = Array.from({ length: Math.floor(random() * 12) }, pick)
      const pattern = Array.from({ length: 1 + Math.floor(random() * 4) }, pick)
      for (let from = 0; from <= lines.length; from++) {
        // The strictest comparison that finds any place decides, as seek's order of comparisons says.
        const expected = [(line: string) => line, (line: string) => line.trimEnd(), (line: string) => line.trim()]
          .map((compare) => naive(lines, pattern, from, compare))
          .find((at) => at !== -1) ?? -1
        expect({ lines, pattern, from, at: Patch.seek(lines, pattern, from, false) }).toEqual({ lines, pattern, from, at: expected })
      }
    }
  })

  test("a long hunk of a line the file repeats thousands of times is looked for in one pass per comparison", () => {
    const lines = Array.from({ length: 200_000 }, () => "  }")
    expect(Patch.seek(lines, [...Array.from({ length: 1_000 }, () => "  }"), "  x"], 0, false)).toBe(-1)
    expect(Patch.seek([...lines, "  x"], [...Array.from({ length: 1_000 }, () => "}"), "x"], 0, false)).toBe(199_000)
  })
})
