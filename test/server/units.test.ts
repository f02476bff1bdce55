// The sidecar's pure parts: byte ranges, the token and Host checks, allowed Locations.

import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Range } from "../../src/server/range"
import { Security } from "../../src/server/security"
import { tempDir } from "../support/temp"

describe("Range.resolve", () => {
  test("a single range, an open end and a suffix are partial; the end is clamped to the content", () => {
    expect(Range.resolve("bytes=0-9", 100)).toEqual({ _tag: "Partial", start: 0, end: 9 })
    expect(Range.resolve("bytes=90-", 100)).toEqual({ _tag: "Partial", start: 90, end: 99 })
    expect(Range.resolve("bytes=-10", 100)).toEqual({ _tag: "Partial", start: 90, end: 99 })
    expect(Range.resolve("bytes=-500", 100)).toEqual({ _tag: "Partial", start: 0, end: 99 })
    expect(Range.resolve("bytes=50-5000", 100)).toEqual({ _tag: "Partial", start: 50, end: 99 })
  })

  test("a range that selects no byte cannot be satisfied, and says why", () => {
    const reason = (header: string, size: number) => {
      const resolution = Range.resolve(header, size)
      expect(resolution._tag).toBe("Unsatisfiable")
      return resolution._tag === "Unsatisfiable" ? resolution.reason : ""
    }
    expect(reason("bytes=100-", 100)).toContain("past the end")
    expect(reason("bytes=100-200", 100)).toContain("past the end")
    expect(reason("bytes=0-", 0)).toContain("the output is empty")
    const empty = reason("bytes=-0", 100)
    expect(empty).toContain("empty suffix")
    expect(empty).not.toContain("past the end")
    expect(reason("bytes=-5", 0)).toContain("empty")
    // Numbers past 2^53 as they were written: not rounded, never Infinity, a long one said by its length.
    expect(reason("bytes=9007199254740993-", 100)).toContain("starts at byte 9007199254740993, past the end")
    const long = reason(`bytes=${"9".repeat(400)}-`, 100)
    expect(long).toContain("a number of 400 digits")
    expect(long).not.toContain("Infinity")
    expect(Range.resolve(`bytes=-${"9".repeat(400)}`, 100)).toEqual({ _tag: "Partial", start: 0, end: 99 })
    expect(Range.resolve(`bytes=10-${"9".repeat(400)}`, 100)).toEqual({ _tag: "Partial", start: 10, end: 99 })
  })

  // core sends no validator an If-Range could match: a range asked for on one is ignored, as RFC 9110 says.
  test("a range with If-Range, any, is answered with the whole content; If-Range alone changes nothing", () => {
    for (const ifRange of ['"xyz"', "Wed, 21 Oct 2015 07:28:00 GMT", ""]) {
      expect(Range.resolve("bytes=0-9", 100, ifRange)).toEqual({ _tag: "Whole" })
      expect(Range.resolve("bytes=100-", 100, ifRange)).toEqual({ _tag: "Whole" })
    }
    expect(Range.resolve(undefined, 100, '"xyz"')).toEqual({ _tag: "Whole" })
  })

  test("no header, several ranges, other units, spaces inside a range and nonsense are answered with the whole content", () => {
    for (const header of [
      undefined,
      "bytes=0-1,5-6",
      "items=0-1",
      "bytes=9-3",
      "bytes=a-b",
      "bytes=",
      "bytes=-",
      "bytes=1-2-3",
      "bytes= 1 - 2",
      "bytes=1 -2",
      "bytes=+1-2",
      "garbage",
    ]) {
      expect(Range.resolve(header, 100)).toEqual({ _tag: "Whole" })
    }
    expect(Range.resolve(" BYTES = 1-2 ", 100)).toEqual({ _tag: "Partial", start: 1, end: 2 })
  })
})

describe("Security", () => {
  test("the token check accepts exactly Bearer <token>", () => {
    const check = Security.tokenChecker("s3cret")
    expect(check("Bearer s3cret")).toBe(true)
    expect(check("bearer s3cret")).toBe(true)
    expect(check("Bearer \t s3cret \t")).toBe(true)
    for (const header of [undefined, "", "Bearer", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer s3cret extra"]) {
      expect(check(header)).toBe(false)
    }
  })

  test("the token check refuses what a guesser would try: the token repeated, wrapped, recased, a character off anywhere", () => {
    const token = Security.generateToken()
    const check = Security.tokenChecker(token)
    expect(check(`Bearer ${token}`)).toBe(true)
    const near = [
      token + token,
      token + token.slice(0, 1),
      token.slice(0, -1),
      token.slice(1) + token.slice(0, 1),
      token.toUpperCase() === token ? token.toLowerCase() : token.toUpperCase(),
      // The token's characters with a high bit set (as a byte-wise comparison of truncated code units would miss).
      Array.from(token, (character) => String.fromCharCode(character.charCodeAt(0) + 0x100)).join(""),
      ...Array.from(token, (_, index) => `${token.slice(0, index)}${token[index] === "A" ? "B" : "A"}${token.slice(index + 1)}`),
    ]
    for (const sent of near) expect({ sent, accepted: check(`Bearer ${sent}`) }).toEqual({ sent, accepted: false })
    // A one-character token: its repetitions are other tokens.
    const short = Security.tokenChecker("a")
    expect([short("Bearer a"), short("Bearer aa"), short("Bearer aaaaaaaa"), short("Bearer A")]).toEqual([true, false, false, false])
    // A token that could never be used (refused at start) matches nothing.
    expect(Security.tokenChecker("")("Bearer x")).toBe(false)
  })

  test("a token that could never be sent in Authorization is refused, saying why; a usable one is not", () => {
    for (const token of ["s3cret", "a.b-c_d~e+f/g=", Security.generateToken(), "!#$%&'()*:;<>?@[]^`{|}"]) {
      expect(Security.tokenProblem(token)).toBeUndefined()
    }
    for (const [token, why] of [
      ["", "empty"],
      ["   ", "empty"],
      ["two words", "whitespace (at character 4)"],
      [" padded", "whitespace (at character 1)"],
      ["tab\there", "whitespace"],
      ["line\nbreak", "whitespace"],
      ["bell\u0007", "control or non-ASCII character (at character 5)"],
      ["caf\u00e9", "control or non-ASCII character (at character 4)"],
      ["\u4e2d\u6587", "non-ASCII"],
      ["del\u007f", "non-ASCII"],
    ] as const) {
      const problem = Security.tokenProblem(token)
      expect(problem).toContain("CORE_TOKEN")
      expect(problem).toContain(why)
    }
  })

  test("generated tokens are long and fresh each time", () => {
    const a = Security.generateToken()
    expect(a.length).toBeGreaterThanOrEqual(40)
    expect(Security.generateToken()).not.toBe(a)
  })

  test("a loopback bind accepts its own address and localhost with its port, nothing else", () => {
    const check = Security.hostChecker("127.0.0.1", 8080)
    for (const host of ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080"]) expect(check(host)).toBe(true)
    for (const host of [undefined, "127.0.0.1", "127.0.0.1:80", "evil.com:8080", "localhost.evil.com:8080", "[::1]:8080"]) {
      expect(check(host)).toBe(false)
    }
    const v6 = Security.hostChecker("::1", 8080)
    expect(v6("[::1]:8080")).toBe(true)
    expect(v6("localhost:8080")).toBe(true)
    expect(v6("127.0.0.1:8080")).toBe(false)
  })

  test("a wildcard bind accepts IP literals and localhost with its port, never a DNS name", () => {
    const check = Security.hostChecker("0.0.0.0", 8080)
    for (const host of ["192.168.1.5:8080", "localhost:8080", "[fe80::1]:8080"]) expect(check(host)).toBe(true)
    for (const host of ["evil.com:8080", "192.168.1.5:9090", "192.168.1.5"]) expect(check(host)).toBe(false)
  })

  /** A check as a server's first of that name (a server remembers where each name led: below). */
  const checkFirst = (roots: ReadonlyArray<string>, name: string) => Security.locationNames(roots).check(name)

  test("a Location must be absolute, existing, a directory, and really under a root", () => {
    const root = tempDir("core-root-")
    mkdirSync(join(root, "inside"))
    writeFileSync(join(root, "file"), "")
    const outside = tempDir("core-outside-")
    symlinkSync(outside, join(root, "escape"))
    expect(checkFirst([root], join(root, "inside"))).toEqual({ _tag: "Allowed", directory: join(root, "inside") })
    expect(checkFirst([root], root)._tag).toBe("Allowed")
    expect(checkFirst([root], "inside")._tag).toBe("Invalid")
    expect(checkFirst([root], join(root, "missing"))._tag).toBe("Invalid")
    expect(checkFirst([root], join(root, "file"))._tag).toBe("Invalid")
    expect(checkFirst([root], join(root, "escape"))._tag).toBe("Outside")
    expect(checkFirst([root], outside)._tag).toBe("Outside")
    expect(checkFirst([root], `${root}-sibling`)._tag).toBe("Invalid")
  })

  describe("named again and again while a model changes the files", () => {
    const setup = () => {
      const root = tempDir("core-root-")
      const outside = tempDir("core-outside-")
      mkdirSync(join(root, "inside"))
      const check = (name: string) => checkFirst([root], name)
      return { root, outside, inside: join(root, "inside"), check }
    }

    test("a Location removed, or replaced by another directory or by a symbolic link out of the roots, is seen at once", () => {
      const { outside, inside, check } = setup()
      expect(check(inside)._tag).toBe("Allowed")
      rmSync(inside, { recursive: true })
      expect(check(inside)).toEqual({ _tag: "Invalid", message: `X-Core-Location ${inside} does not exist` })
      writeFileSync(inside, "")
      expect(check(inside)._tag).toBe("Invalid")
      rmSync(inside)
      symlinkSync(outside, inside)
      expect(check(inside)._tag).toBe("Outside")
      rmSync(inside)
      mkdirSync(inside)
      expect(check(inside)._tag).toBe("Allowed")
      // Replaced by another directory (a new inode) that a symbolic link leads out of the roots from.
      const elsewhere = join(outside, "elsewhere")
      mkdirSync(elsewhere)
      rmSync(inside, { recursive: true })
      symlinkSync(elsewhere, inside)
      expect(check(inside)._tag).toBe("Outside")
    })

    test("a Location moved, or moved out of the roots with a symbolic link left on its way, is seen at once", () => {
      const { root, outside, check } = setup()
      mkdirSync(join(root, "parent", "project"), { recursive: true })
      const named = join(root, "parent", "project")
      expect(check(named)).toEqual({ _tag: "Allowed", directory: named })
      // The same directory, still reached by the same name, is no longer really under the root.
      renameSync(join(root, "parent"), join(outside, "parent"))
      symlinkSync(join(outside, "parent"), join(root, "parent"))
      expect(check(named)._tag).toBe("Outside")
      rmSync(join(root, "parent"))
      renameSync(join(outside, "parent"), join(root, "parent"))
      expect(check(named)).toEqual({ _tag: "Allowed", directory: named })
      // Reached through a link that now leads to the same directory moved, with a link out of the roots where it
      // was: the directory the name leads to, where it is now.
      const link = join(root, "link")
      symlinkSync(named, link)
      expect(check(link)).toEqual({ _tag: "Allowed", directory: named })
      renameSync(named, join(root, "parent", "moved"))
      rmSync(link)
      symlinkSync(join(root, "parent", "moved"), link)
      symlinkSync(outside, named)
      expect(check(link)).toEqual({ _tag: "Allowed", directory: join(root, "parent", "moved") })
      expect(check(named)._tag).toBe("Outside")
    })

    test("a directory removed and another made outside where the name leads (which may get the same inode) is refused", () => {
      const { root, outside, inside, check } = setup()
      const link = join(root, "link")
      symlinkSync(inside, link)
      for (let round = 0; round < 5; round++) {
        expect(check(link)).toEqual({ _tag: "Allowed", directory: inside })
        rmSync(inside, { recursive: true })
        const made = join(outside, `made${round}`)
        mkdirSync(made)
        rmSync(link)
        symlinkSync(made, link)
        expect(check(link)._tag).toBe("Outside")
        rmSync(link)
        mkdirSync(inside)
        symlinkSync(inside, link)
      }
    })

    test("`..` after a symbolic link is the target's parent, as the kernel reads the name", () => {
      const { root, outside, check } = setup()
      mkdirSync(join(root, "q", "inner"), { recursive: true })
      mkdirSync(join(root, "q", "b"))
      mkdirSync(join(root, "b"))
      symlinkSync(join(root, "q", "inner"), join(root, "s"))
      const named = `${join(root, "s")}/../b`
      expect(check(named)).toEqual({ _tag: "Allowed", directory: join(root, "q", "b") })
      rmSync(join(root, "b"), { recursive: true })
      symlinkSync(outside, join(root, "b"))
      expect(check(named)).toEqual({ _tag: "Allowed", directory: join(root, "q", "b") })
      rmSync(join(root, "q", "b"), { recursive: true })
      symlinkSync(outside, join(root, "q", "b"))
      expect(check(named)._tag).toBe("Outside")
    })
  })

  describe("a name served once goes on leading to the directory it first led to", () => {
    // Where no mount namespace keeps a served Location in place, a command of a Location holding it can rename it
    // away and leave a link to (or a copy of) a folder of the model's in its place: a request naming it meanwhile
    // loaded that folder's tools into core. The guard puts the Location back once the command ends.
    const setup = () => {
      const root = realpathSync(tempDir("core-root-"))
      const sub = join(root, "a", "sub")
      mkdirSync(sub, { recursive: true })
      mkdirSync(join(root, "evil"))
      return { root, sub, names: Security.locationNames([root]) }
    }

    test("renamed away with a link to another folder in its place: refused, and served again once put back", () => {
      const { root, sub, names } = setup()
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: sub })
      renameSync(sub, `${sub}.old`)
      symlinkSync(join(root, "evil"), sub)
      const refused = names.check(sub)
      expect(refused._tag).toBe("Replaced")
      expect((refused as { message: string }).message).toContain(`now leads to ${join(root, "evil")}, not to ${sub} as when first served`)
      // Written another way, the same name as the kernel reads it: refused too.
      for (const spelling of [`${sub}/`, `${sub}/.`, sub.replace("/a/", "//a/"), sub.replace("/a/", "/a/./")]) {
        expect([spelling, names.check(spelling)._tag]).toEqual([spelling, "Replaced"])
      }
      // A folder on the way renamed and linked instead: the same.
      rmSync(sub)
      renameSync(`${sub}.old`, sub)
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: sub })
      renameSync(join(root, "a"), join(root, "a.old"))
      mkdirSync(join(root, "evil", "sub"))
      symlinkSync(join(root, "evil"), join(root, "a"))
      expect(names.check(sub)._tag).toBe("Replaced")
      rmSync(join(root, "a"))
      renameSync(join(root, "a.old"), join(root, "a"))
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: sub })
    })

    test("another directory at its very path (moved there, or made again) is the same Location: served", () => {
      // To the guard too: it holds back loads of that path while a command of a Location holding it runs, and puts
      // back what the command moved there once it ends.
      const { root, sub, names } = setup()
      expect(names.check(sub)._tag).toBe("Allowed")
      renameSync(sub, `${sub}.old`)
      renameSync(join(root, "evil"), sub)
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: sub })
      rmSync(sub, { recursive: true })
      mkdirSync(sub)
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: sub })
    })

    test("each name on its own; the roots remembered from the start", () => {
      const { root, sub, names } = setup()
      const link = join(root, "link")
      symlinkSync(sub, link)
      expect(names.check(link)).toEqual({ _tag: "Allowed", directory: sub })
      // Another name for the same directory, first named after it moved: the directory it leads to then.
      renameSync(sub, join(root, "a", "moved"))
      symlinkSync(join(root, "a", "moved"), sub)
      expect(names.check(sub)).toEqual({ _tag: "Allowed", directory: join(root, "a", "moved") })
      expect(names.check(link)._tag).toBe("Replaced")
      // A root replaced by a link after the server started, before any request named it.
      const inner = join(root, "inner")
      mkdirSync(inner)
      const started = Security.locationNames([root, inner])
      renameSync(inner, `${inner}.old`)
      symlinkSync(join(root, "evil"), inner)
      expect(started.check(inner)._tag).toBe("Replaced")
      expect(Security.locationNames([root, inner]).check(inner)).toEqual({ _tag: "Allowed", directory: join(root, "evil") })
    })

    test(`at most ${Security.REMEMBERED_NAMES} names are remembered, those used least recently forgotten first`, () => {
      const { root, sub, names } = setup()
      mkdirSync(join(root, "many"))
      // Named before all the others, and again after the eleventh: used more recently than those ten.
      expect(names.check(sub)._tag).toBe("Allowed")
      // With the root, remembered from the start, two names past the bound: the root and named[0] are forgotten.
      const named = Array.from({ length: Security.REMEMBERED_NAMES }, (_, index) => join(root, "many", String(index)))
      for (const name of named) mkdirSync(name)
      for (const [index, name] of named.entries()) {
        expect(names.check(name)._tag).toBe("Allowed")
        if (index === 10) expect(names.check(sub)._tag).toBe("Allowed")
      }
      for (const name of [...named.slice(0, 2), sub]) {
        renameSync(name, `${name}.old`)
        symlinkSync(join(root, "evil"), name)
      }
      // (named[1] first: remembering named[0] anew pushes out the oldest, named[1].)
      expect(names.check(named[1]!)._tag).toBe("Replaced")
      expect(names.check(sub)._tag).toBe("Replaced")
      expect(names.check(named[0]!)).toEqual({ _tag: "Allowed", directory: join(root, "evil") })
    })
  })
})
