// edit's matcher chain: each matcher's positive case, its refusal of ambiguous matches, the refusal of spans far
// larger than oldString, replaceAll's reach, and the closest region offered when nothing matches.

import { describe, expect, test } from "bun:test"
import { Match } from "../../src/builtin/match"

const found = (input: Match.Input) => {
  const outcome = Match.find(input)
  if (outcome._tag !== "Found") throw new Error(`expected a match, got ${JSON.stringify(outcome)}`)
  return { ...outcome, result: Match.apply(input.content, outcome.spans) }
}

describe("exact", () => {
  test("replaces the one exact occurrence, even inside a line", () => {
    const outcome = found({ content: "let x = 1\nlet y = 2\n", oldString: "y = 2", newString: "y = 3" })
    expect(outcome.matcher).toBe("exact")
    expect(outcome.result).toBe("let x = 1\nlet y = 3\n")
    expect(outcome.spans.map((span) => span.line)).toEqual([2])
  })

  test("several exact occurrences are ambiguous, with their line numbers", () => {
    const outcome = Match.find({ content: "a()\nb()\na()\n\na()\n", oldString: "a()", newString: "c()" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "exact", lines: [1, 3, 5] })
  })

  test("replaceAll replaces every exact occurrence", () => {
    const outcome = found({ content: "a()\nb()\na()\n", oldString: "a()", newString: "c()", replaceAll: true })
    expect(outcome.result).toBe("c()\nb()\nc()\n")
    expect(outcome.spans).toHaveLength(2)
  })

  test("an empty oldString matches nothing", () => {
    expect(Match.find({ content: "abc", oldString: "", newString: "x" })).toMatchObject({ _tag: "NotFound" })
  })
})

describe("trimmed-line-ends", () => {
  test("matches lines whose ends differ only in whitespace", () => {
    const outcome = found({ content: "one  \ntwo\t\nthree\n", oldString: "one\ntwo", newString: "ONE\nTWO" })
    expect(outcome.matcher).toBe("trimmed-line-ends")
    expect(outcome.result).toBe("ONE\nTWO\nthree\n")
  })

  test("a quoted final line break replaces the line's break too", () => {
    const outcome = found({ content: "a\nb  \nc", oldString: "b\n", newString: "B\n" })
    expect(outcome.result).toBe("a\nB\nc")
  })

  test("refuses two candidates", () => {
    const outcome = Match.find({ content: "a  \nb\na \nb\n", oldString: "a\nb", newString: "x" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "trimmed-line-ends", lines: [1, 3] })
  })
})

describe("indentation-flexible", () => {
  test("matches the same lines at another indentation and re-indents newString to the file's", () => {
    const content = "class A {\n    run() {\n        go()\n    }\n}\n"
    const outcome = found({
      content,
      oldString: "run() {\n    go()\n}",
      newString: "run() {\n    stop()\n    go()\n}",
    })
    expect(outcome.matcher).toBe("indentation-flexible")
    expect(outcome.result).toBe("class A {\n    run() {\n        stop()\n        go()\n    }\n}\n")
  })

  test("refuses two candidates at different indentations", () => {
    const outcome = Match.find({ content: "  foo()\n  bar()\n    foo()\n    bar()\n", oldString: "foo()\nbar()", newString: "x" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "indentation-flexible", lines: [1, 3] })
  })
})

describe("re-indenting to the file's unit", () => {
  test("converts a 2-space quote into a tab-indented file's tabs, depth for depth", () => {
    const outcome = found({
      content: "def f():\n\tif x:\n\t\tgo()\n",
      oldString: "if x:\n  go()",
      newString: "if x:\n  go()\n  if y:\n    stop()",
    })
    expect(outcome.result).toBe("def f():\n\tif x:\n\t\tgo()\n\t\tif y:\n\t\t\tstop()\n")
  })

  test("refuses a line that is not a whole number of the quote's units, naming it", () => {
    const outcome = Match.find({ content: "def f():\n\tif x:\n\t\tgo()\n", oldString: "if x:\n  go()", newString: "if x:\n   go()" })
    expect(outcome).toMatchObject({ _tag: "Unindentable", startLine: 2, endLine: 3 })
    expect(outcome._tag === "Unindentable" && outcome.reason).toContain('line 2 of newString is indented by "   "')
  })
})

describe("whitespace-normalised", () => {
  test("matches lines that differ in runs of spaces and tabs", () => {
    const outcome = found({ content: "const  x =\t1;\nnext\n", oldString: "const x = 1;", newString: "const x = 2;" })
    expect(outcome.matcher).toBe("whitespace-normalised")
    expect(outcome.result).toBe("const x = 2;\nnext\n")
  })

  test("refuses two candidates", () => {
    const outcome = Match.find({ content: "a  b\nc\na   b\nc", oldString: "a b\nc", newString: "x" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "whitespace-normalised", lines: [1, 3] })
  })

  test("refuses a match with far more characters than oldString", () => {
    const content = `a${" ".repeat(1000)}b\n`
    const outcome = Match.find({ content, oldString: "a b", newString: "c" })
    expect(outcome._tag).toBe("NotFound")
    if (outcome._tag !== "NotFound") return
    expect(outcome.refused).toEqual([{ matcher: "whitespace-normalised", line: 1, lines: 1, chars: 1002 }])
  })
})

describe("escape-normalised", () => {
  test("reads \\n, \\t and \\\" written literally, in oldString and newString", () => {
    const content = 'say("hi")\n\tdone\n'
    const outcome = found({ content, oldString: 'say(\\"hi\\")\\n\\tdone', newString: 'say(\\"bye\\")\\n\\tdone' })
    expect(outcome.matcher).toBe("escape-normalised")
    expect(outcome.result).toBe('say("bye")\n\tdone\n')
  })

  test("refuses two candidates", () => {
    const outcome = Match.find({ content: "x\ny\nx\ny\n", oldString: "x\\ny", newString: "z" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "escape-normalised", lines: [1, 3] })
  })
})

describe("block-anchors", () => {
  const block = (name: string, middle: ReadonlyArray<string>) => [`function ${name}() {`, ...middle.map((line) => `  ${line}`), "}"]

  test("matches a block by its first and last lines when the middle is similar", () => {
    const content = [...block("go", ["const a = 1", "const b = 2", "return a + b"]), ""].join("\n")
    const outcome = found({
      content,
      oldString: block("go", ["const a = 1", "const b = 3", "return a + b"]).join("\n"),
      newString: "function go() {\n  return 3\n}",
    })
    expect(outcome.matcher).toBe("block-anchors")
    expect(outcome.result).toBe("function go() {\n  return 3\n}\n")
  })

  test("does not take a block whose middle is unlike oldString's", () => {
    const content = block("go", ["completely", "unrelated", "statements"]).join("\n")
    const outcome = Match.find({ content, oldString: block("go", ["const a = 1", "return a"]).join("\n"), newString: "x" })
    expect(outcome._tag).toBe("NotFound")
  })

  test("refuses two similar blocks", () => {
    const content = [...block("go", ["one()", "two()"]), ...block("go", ["one()", "two()"])].join("\n")
    const outcome = Match.find({ content, oldString: block("go", ["one()", "two(x)"]).join("\n"), newString: "x" })
    expect(outcome).toEqual({ _tag: "Ambiguous", matcher: "block-anchors", lines: [1, 5] })
  })

  test("refuses a block far longer than oldString (more than 1.5× its lines + 3)", () => {
    const junk = Array.from({ length: 20 }, (_, index) => `  step${index}()`)
    const content = ["begin {", ...junk, "} end", ""].join("\n")
    const outcome = Match.find({ content, oldString: "begin {\n  step0()\n} end", newString: "x" })
    expect(outcome._tag).toBe("NotFound")
    if (outcome._tag !== "NotFound") return
    expect(outcome.refused).toHaveLength(1)
    expect(outcome.refused[0]).toMatchObject({ matcher: "block-anchors", line: 1, lines: 22 })
  })

  test("takes a block just within the bound", () => {
    // oldString has 4 lines: at most floor(1.5 × 4) + 3 = 9 lines may match.
    const content = ["begin {", "  a()", "  b()", "  c()", "  d()", "  e()", "  f()", "  g()", "} end"].join("\n")
    const outcome = found({ content, oldString: "begin {\n  a()\n  b() c() d() e() f() g()\n} end", newString: "x" })
    expect(outcome.matcher).toBe("block-anchors")
    expect(outcome.result).toBe("x")
  })
})

describe("replaceAll and the tolerant matchers", () => {
  test("without an exact occurrence a single tolerant match is still replaced", () => {
    const outcome = found({ content: "a  \nb\n", oldString: "a\nb", newString: "c", replaceAll: true })
    expect(outcome.matcher).toBe("trimmed-line-ends")
    expect(outcome.result).toBe("c\n")
  })

  test("never replaces several tolerant matches", () => {
    const outcome = Match.find({ content: "a  \nb\na \nb\n", oldString: "a\nb", newString: "c", replaceAll: true })
    expect(outcome).toMatchObject({ _tag: "Ambiguous", matcher: "trimmed-line-ends" })
  })
})

describe("no match", () => {
  test("answers the most similar region of the file", () => {
    const content = ["import x", "", "const total = compute(items)", "log(total)", "", "export default total"].join("\n")
    const outcome = Match.find({ content, oldString: "const totals = computeAll(items)\nlog(totals)", newString: "x" })
    expect(outcome._tag).toBe("NotFound")
    if (outcome._tag !== "NotFound") return
    expect(outcome.closest).toMatchObject({ startLine: 3, endLine: 4 })
    expect(outcome.closest!.similarity).toBeGreaterThan(0.5)
    expect(outcome.refused).toEqual([])
  })

  test("considers only the file's real lines, not the empty text after its final line break", () => {
    const last = Match.find({ content: "keep\nold line\n", oldString: "old line\nnot in the file", newString: "x" })
    expect(last).toMatchObject({ _tag: "NotFound", closest: { startLine: 1, endLine: 2 } })
    const short = Match.find({ content: "alpha\n", oldString: "alphabet\ngamma\ndelta", newString: "x" })
    expect(short).toMatchObject({ _tag: "NotFound", closest: { startLine: 1, endLine: 1 } })
  })

  test("a whitespace-only oldString has no similar region, and is only ever matched exactly", () => {
    for (const content of ["abc\n", "a\n\nb\n", "abc"]) {
      for (const oldString of [" ", "\t", "  \n", "\n\n\n"]) {
        expect(Match.find({ content, oldString, newString: "x" })).toEqual({ _tag: "NotFound", closest: undefined, refused: [] })
      }
    }
    expect(Match.find({ content: "a\n\n\nb\n", oldString: "\n\n\n", newString: "\n\n" })).toMatchObject({
      _tag: "Found",
      matcher: "exact",
      spans: [{ start: 1, end: 4, line: 1 }],
    })
  })

  test("similarity is 1 for equal texts and lower for different ones", () => {
    expect(Match.similarity("a  b\nc", "a b\nc")).toBe(1)
    expect(Match.similarity("function a()", "class B {}")).toBeLessThan(0.3)
  })
})

// A long quote of a line the file repeats thousands of times made every window a candidate for the line matchers:
// 14 s of processor for a 5 KB edit on the thread every call of a core serve shares. They compare MATCH_BUDGET
// lines at most, then stop, saying which stopped; an exact quote is still found at once.
describe("the tolerant matchers' budget", () => {
  const content = "  }\n".repeat(200_000)

  test("a long quote of a much repeated line stops the matchers within the budget, naming the one that stopped", () => {
    for (const [oldString, stopped] of [
      ["  }\n".repeat(1000) + "  x", "trimmed-line-ends"],
      ["    }\n".repeat(1000) + "  x", "indentation-flexible"],
    ] as const) {
      const outcome = Match.find({ content, oldString, newString: "y" })
      expect(outcome).toMatchObject({ _tag: "NotFound", stopped })
    }
  })

  test("an exact quote in the same file is found; an ordinary quote stops nothing", () => {
    const marked = `${content}  the one line\n${content}`
    expect(Match.find({ content: marked, oldString: "  }\n  the one line\n", newString: "y" })).toMatchObject({ _tag: "Found", matcher: "exact" })
    const outcome = Match.find({ content: "a\nb\nc\n", oldString: "x\ny", newString: "z" })
    expect(outcome._tag).toBe("NotFound")
    expect(outcome).not.toHaveProperty("stopped")
  })
})

// Long lines cost as much as many: a quote of 1,000 lines of 9,000 characters matching nothing in a file of 2,000
// lines of 7,000 held the thread every call shares for ten seconds (the closest-region search and block-anchors
// counted lines, each costing its length). Both now count characters.
describe("long lines", () => {
  test("a long quote of long lines, or a block with a long middle, that matches nothing is answered at once", () => {
    const content = `${"a".repeat(7_000)}\n`.repeat(2_000)
    const oldString = `${"b".repeat(9_000)}\n`.repeat(1_000) + "a"
    const started = performance.now()
    const outcome = Match.find({ content, oldString, newString: "y" })
    expect(outcome._tag).toBe("NotFound")
    const blocks = `first\n${`${"c".repeat(5_000)}\n`.repeat(500)}last\n`
    const anchored = Match.find({ content: blocks.repeat(40), oldString: `first\n${"d".repeat(400_000)}\nlast`, newString: "y" })
    expect(anchored._tag).toBe("NotFound")
    // A few long lines among many empty ones: the lines compared are costed as they are, not by the quote's average.
    const uneven = Match.find({
      content: "abc\n".repeat(200_000),
      oldString: `${Array.from({ length: 1_000 }, (_, index) => Array.from({ length: 1_000 }, (_, at) => String.fromCharCode(97 + ((index * 7919 + at * 104_729) % 26))).join("")).join("\n")}${"\n".repeat(99_000)}`,
      newString: "y",
    })
    expect(uneven._tag).toBe("NotFound")
    expect(performance.now() - started).toBeLessThan(3_000)
  })

  test("the closest region of an ordinary file is found as before", () => {
    const content = ["alpha()", "beta()", "gamma(1, 2)", "delta()", "epsilon()"].join("\n") + "\n"
    const outcome = Match.find({ content, oldString: "beta()\ngamma(1, 3)", newString: "x" })
    expect(outcome).toMatchObject({ _tag: "NotFound", closest: { startLine: 2, endLine: 3 } })
  })
})
