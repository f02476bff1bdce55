// Reading sed command lines for what they may run (src/shell/sed.ts): every way GNU sed takes a script, every form of
// address and command that runs a command or touches a file, scripts that cannot be read, and the everyday scripts
// that do neither, which stay checkable by rules. The `e` scripts below that GNU sed accepts were run with it, and ran
// their `echo`; the others (a jump to no label, `1!!e`) count as running all the same, as sed's own checks are not.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect } from "effect"
import { CommandChecks } from "../../src/shell/command-checks"
import { CommandLine } from "../../src/shell/command-line"
import { Sed } from "../../src/shell/sed"
import { inChild } from "../support/in-child"

const opaque = async (line: string) =>
  CommandChecks.checks(await Effect.runPromise(CommandLine.parse(line)))
    .filter((check) => check.opaque !== undefined)
    .map((check) => check.resource)

describe("Sed.runs: how sed is given its script", () => {
  const running: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["the first operand", ["e echo hi", "f"]],
    ["-e", ["-e", "e echo hi", "f"]],
    ["-e attached", ["-ee echo hi", "f"]],
    ["-e in a cluster", ["-nee echo hi", "f"]],
    ["-e in a cluster, then its value", ["-ne", "e echo hi", "f"]],
    ["--expression=", ["--expression=e echo hi", "f"]],
    ["--expression, then its value", ["--expression", "e echo hi", "f"]],
    ["an abbreviated --expression", ["--ex=e echo hi", "f"]],
    ["a second -e", ["-e", "s/a/b/", "-e", "e echo hi", "f"]],
    ["a script in a file (-f)", ["-f", "script.sed", "f"]],
    ["a script in a file (-f attached)", ["-fscript.sed", "f"]],
    ["a script in a file (--file=)", ["--file=script.sed", "f"]],
    ["a script in a file (--fi)", ["--fi", "script.sed", "f"]],
    ["a script on stdin (-f -)", ["-f", "-", "f"]],
    ["an option this reader does not know", ["--frobnicate", "s/a/b/", "f"]],
    ["an ambiguous abbreviation", ["--s", "s/a/b/", "f"]],
    ["a word only known when the line runs", [undefined as unknown as string, "f"]],
  ]
  for (const [how, args] of running) {
    test(`${how}: may run`, () => expect(Sed.runs(args)).toBe(true))
  }

  const plain: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["the first operand", ["s/a/b/g", "f"]],
    ["-n and a script", ["-n", "1,5p", "f"]],
    ["-i with a suffix that looks like -e", ["-ie", "s/a/b/", "f"]],
    ["-i.bak", ["-i.bak", "s/a/b/", "f"]],
    ["-E and -e twice", ["-E", "-e", "s/a+/b/", "-e", "s/c/d/", "f"]],
    ["--in-place=", ["--in-place=.orig", "s/a/b/", "f"]],
    ["-l with a value", ["-l", "80", "l", "f"]],
    ["files that look like commands after -e", ["-e", "p", "e", "w"]],
    ["after --", ["-n", "--", "p", "-e"]],
    ["no script at all (the usage)", ["--version"]],
  ]
  for (const [how, args] of plain) {
    test(`${how}: runs nothing`, () => expect(Sed.runs(args)).toBe(false))
  }
})

describe("Sed.scriptRuns: what a script does", () => {
  const running = [
    "e echo hi",
    "e",
    "1e echo hi",
    "1 e echo hi",
    "$e echo hi",
    "1~1e echo hi",
    "0,/x/e echo hi",
    "1,+2e echo hi",
    "1,~2e echo hi",
    "/x/e echo hi",
    "/x/I e echo hi",
    "/x/Me echo hi",
    "\\,x,e echo hi",
    "\\%x%I,\\%y%e echo hi",
    "/x/,/y/ !e echo hi",
    "1!!e echo hi",
    "$!N;e echo hi",
    "p;e echo hi",
    "1{e echo hi\n}",
    "1{p;e echo hi}",
    "y/x/y/;e echo hi",
    "s/a/b/e",
    "s/a/b/ge",
    "s|a|b|e",
    "s/a\\/b/c/e",
    "s/a/b\\/c/w out",
    "s/a/b/w out",
    "w out",
    "W out",
    "r in",
    "R in",
    "1R in",
    "/x/w out",
    "# a comment\ne echo hi",
    "a text\ne echo hi",
    "a\\\nline one\\\nline two\ne echo hi",
    ":a;e echo hi",
    "b end;e echo hi",
    "q5;e echo hi",
    // Cannot be read: cut short, or not sed this reader knows.
    "s/a/b",
    "s/a",
    "/x",
    "1,",
    "s",
    "k",
    "s/a/b/gX",
    "pq",
  ]
  for (const script of running) {
    test(`${JSON.stringify(script)}: may run`, () => expect(Sed.scriptRuns(script)).toBe(true))
  }

  const plain = [
    "",
    "p",
    "1,5p",
    "s/hello/world/g",
    "s|/usr|/opt|g",
    "s/a\\/b/c/",
    "s/x/\\n/g",
    "s/[0-9]\\+/N/2",
    "s/e/w/",
    "/^#/d",
    "1d;$d",
    "/foo/,/bar/{s/x/y/;p}",
    "y/abc/xyz/",
    ":a;N;$!ba;s/\\n/ /g",
    "$a\\\nlast line, e and w inside",
    "1i header with e w r",
    "10q",
    "l 80",
    "=",
    "/x/I,/y/M d",
    "1~2d",
    "0,/x/s//y/",
    "/start/,+3p",
    "# e comment\np",
    "n;d",
    "s/a/b/ ; s/c/d/",
  ]
  for (const script of plain) {
    test(`${JSON.stringify(script)}: runs nothing`, () => expect(Sed.scriptRuns(script)).toBe(false))
  }
})

describe("sed in a command line", () => {
  test("every way of giving sed a script that runs something is opaque: asked, whatever the rules", async () => {
    for (const line of [
      "sed 'e rm -rf x' f",
      "sed --expression='e rm -rf x' f",
      "sed '-ee rm -rf x' f",
      "sed -nee\\ rm\\ x f",
      "sed -f s.sed f",
      "sed --file=s.sed f",
      "sed '1~1e rm x' f",
      "sed '\\,x,e rm x' f",
      "sed '/x/I e rm x' f",
      "sed 's/a/b/e' f",
      "sed \"$SCRIPT\" f",
    ]) {
      expect({ line, opaque: await opaque(line) }).toEqual({ line, opaque: [line] })
    }
  })

  test("everyday sed is not opaque", async () => {
    for (const line of ["sed -n 1,5p f", "sed 's/hello/world/g' f", "sed -i.bak -e 's/a/b/' -e '/^#/d' f", "sed -E 's/(a|b)+/c/' f"]) {
      expect({ line, opaque: await opaque(line) }).toEqual({ line, opaque: [] })
    }
  })

  // A model writes the script: reading it must not backtrack. The regular expressions this reader replaced took 18 s
  // on 4,000 spaces, and gave up after a second, answering "runs nothing", on `s#` and 60 backslashes before an
  // `s/a/b/e`. No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("hostile scripts are read in one pass, and what they run is found", async () => {
    expect(
      await inChild(`
        import { Sed } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/sed.ts"))}
        console.log(JSON.stringify([
          Sed.scriptRuns(" ".repeat(200_000) + "e"),
          Sed.scriptRuns("\\n".repeat(200_000) + "x"),
          Sed.scriptRuns("s#" + "\\\\".repeat(60) + "\\n s/a/b/e"),
          Sed.scriptRuns("/" + "\\\\".repeat(100_000)),
          Sed.scriptRuns("s/".repeat(100_000)),
          Sed.scriptRuns("p;".repeat(100_000) + "e echo hi"),
          Sed.scriptRuns(";".repeat(100_000) + "\\n".repeat(100_000) + "p"),
        ]))
        `),
    ).toEqual([true, false, true, true, true, true, false])
  }, 30_000)
})
