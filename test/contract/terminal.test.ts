import { describe, expect, test } from "bun:test"
import { Terminal } from "../../src/contract/terminal"

/** Every character a terminal acts on but tab and line feed: ESC, BEL, CR, DEL, C1 (CSI U+009B), separators, bidi. */
const ACTED_ON = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
/** A hostile line: clear the screen, write the clipboard (OSC 52), conceal what follows, a C1 CSI, a bidi override. */
const HOSTILE = "a\u001b[2J\u001b]52;c;cHduZWQ=\u0007\u001b[8m\r\u009b2K\u202egnp.exe\u2066b\u2028c"

describe("Terminal", () => {
  test("quoted is a JSON string that parses back to the text, with nothing a terminal acts on left raw", () => {
    const shown = Terminal.quoted(HOSTILE)
    expect(shown).not.toMatch(ACTED_ON)
    expect(JSON.parse(shown)).toBe(HOSTILE)
    expect(shown).toContain("\\u009b2K")
    expect(shown).toContain("\\u202e")
  })

  test("pretty and json keep the JSON a parser reads, inert on a terminal", () => {
    const value = { text: HOSTILE, nested: [HOSTILE] }
    const shown = Terminal.pretty(value)
    expect(shown).not.toMatch(ACTED_ON)
    expect(JSON.parse(shown)).toEqual(value)
    expect(JSON.parse(Terminal.json(JSON.stringify(value)))).toEqual(value)
  })

  test("inline keeps one line: breaks as spaces, every other control escaped", () => {
    const shown = Terminal.inline(HOSTILE)
    expect(shown).not.toMatch(ACTED_ON)
    expect(shown).not.toContain("\n")
    expect(shown).toContain("\\u001b[2J")
    expect(Terminal.inline("one\r\ntwo\nthree\u2029four\tfive")).toBe("one two three four\tfive")
  })

  test("block keeps its lines, every line after the first indented, so none passes for a line of core's", () => {
    expect(Terminal.block(`x${HOSTILE}\ny`)).not.toMatch(ACTED_ON)
    expect(Terminal.block("first\nsecond")).toBe("first\n  second")
    expect(Terminal.block("boom\ncore: call tool=read status=success")).toBe("boom\n  core: call tool=read status=success")
    expect(Terminal.warning(`tools/x\u001b[2J.ts: failed`)).toBe("core: warning: tools/x\\u001b[2J.ts: failed")
  })

  test("shown leaves inert text as it is and quotes the rest", () => {
    expect(Terminal.shown("git status *")).toBe("git status *")
    expect(Terminal.shown("/tmp/a b/*")).toBe("/tmp/a b/*")
    expect(Terminal.shown("x\u001b[2Ky")).toBe('"x\\u001b[2Ky"')
    expect(Terminal.shown("x\ny")).toBe('"x\\ny"')
    expect(Terminal.shown("x\u202ey")).toBe('"x\\u202ey"')
    // Shown as nothing, so that one name passes for another: each is named.
    expect(Terminal.shown("ba\u200bsh")).toBe('"ba\\u200bsh"')
    for (const hidden of ["\u00ad", "\u034f", "\u180e", "\u2060", "\u3164", "\ufeff", "\u{e0062}"]) expect(Terminal.inert(`a${hidden}b`)).toBe(false)
    // Every other format character, and what shows as nothing though it is none: variation selectors (which can
    // carry text unseen), Mongolian's, Khmer's inherent vowels, the braille blank.
    for (const hidden of [
      "\ufe00", "\ufe0e", "\u{e0100}", "\u{e01ef}", "\u180b", "\u180f", "\u17b4", "\u17b5", "\u2800", "\u206a", "\u206f",
      "\ufff9", "\ufffb", "\u{1d173}", "\u{1bca0}", "\u{13430}", "\u{110bd}", "\u0600", "\u06dd", "\u070f", "\u0890", "\u08e2",
      "\u{e0000}", "\u{e0002}", "\u{e001f}", "\u{e0080}", "\u{e0fff}", "\u2065", "\ufff0",
    ]) {
      expect([hidden, Terminal.inert(`a${hidden}b`)]).toEqual([hidden, false])
      expect(JSON.parse(Terminal.quoted(`a${hidden}b`))).toBe(`a${hidden}b`)
      expect(Terminal.quoted(`a${hidden}b`)).toMatch(/^"a(\\u[0-9a-f]{4})+b"$/)
    }
    // An emoji's presentation selector stays, as the joiners do.
    expect(Terminal.inline("\u2764\ufe0f done")).toBe("\u2764\ufe0f done")
    // A tag character (two UTF-16 units) is escaped as JSON has it: the text parses back as it was.
    expect(JSON.parse(Terminal.quoted("ba\u{e0062}sh"))).toBe("ba\u{e0062}sh")
    expect(Terminal.quoted("ba\u{e0062}sh")).toBe('"ba\\udb40\\udc62sh"')
    // Joiners that emoji and scripts are written with stay as they are.
    expect(Terminal.inline("👨\u200d👩\u200d👧 می\u200cخواهم")).toBe("👨\u200d👩\u200d👧 می\u200cخواهم")
    expect(Terminal.inert("tab\tis fine")).toBe(true)
  })
})
