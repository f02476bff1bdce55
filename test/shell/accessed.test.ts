// What a command line does with the files it names (Accessed.of over the operand table): read, changed, both,
// or only named; so the read and edit rules meet each file as the file tools would.

import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Accessed } from "../../src/shell/accessed"
import { CommandLine } from "../../src/shell/command-line"

const accessed = async (text: string) =>
  Accessed.of(await Effect.runPromise(CommandLine.parse(text))).paths.map(
    (path) => `${path.word.value ?? path.word.text}:${path.reads ? "r" : ""}${path.writes ? "w" : ""}`,
  )

const named = async (text: string) => Accessed.of(await Effect.runPromise(CommandLine.parse(text))).named

describe("Accessed.of", () => {
  test.each([
    ["cat a b", ["a:r", "b:r"]],
    ["head -n 5 a", ["a:r"]],
    ["grep -e x -f pats a", ["pats:r", "a:r"]],
    ["rm -rf a b", ["a:w", "b:w"]],
    ["touch -r ref a", ["a:w"]],
    ["cp a b dest", ["a:r", "b:r", "dest:w"]],
    ["cp -t dest a b", ["dest:w", "a:r", "b:r"]],
    ["mv a dest", ["a:rw", "dest:w"]],
    ["ln -s target link", ["target:r", "link:w"]],
    ["sed -n p a", ["a:r"]],
    ["sed -i s/x/y/ a", ["a:rw"]],
    ["chmod 600 a", ["a:w"]],
    ["ls a; stat b; du c; cd d", []],
    ["find . -name x -fprint out", ["out:w"]],
    ["cat < in > out", ["in:r", "out:w"]],
    ["sudo cat a", ["a:r"]],
    ["bash -c 'cat a'", ["a:r"]],
    ["echo $(cat a)", ["a:r"]],
  ] as const)("%s", async (line, expected) => {
    expect(await accessed(line)).toEqual([...expected])
  })

  test("a program outside the table offers every literal word, an option's value and a revision's path", async () => {
    expect(await named("base64 -w0 a")).toEqual(["-w0", "0", "a"])
    expect(await named("base64 if=a")).toEqual(["if=a", "a"])
    // dd is in the table: what if= names is read, what of= names changed.
    expect(await named("dd if=a of=b")).toEqual([])
    expect(await accessed("dd if=a of=b")).toEqual(["a:r", "b:w"])
    expect(await named("git show HEAD:a.env")).toEqual(["show", "HEAD:a.env", "a.env"])
    // awk's program is not a file; programs that name no file offer nothing; the table's own commands neither.
    expect(await named("awk '{print}' a")).toEqual(["a"])
    expect(await named("echo a; printf a; cat a")).toEqual([])
  })
})
