// The title webfetch gives a page converted to markdown: taken from the first <title> and the </title> after it, the
// way the pattern it replaced took it, and found at once in a hostile page full of <title, where that pattern read to
// the end from each one.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { HtmlConvert } from "../../src/builtin/html-convert"
import { inChild } from "../support/in-child"

const title = (html: string) => HtmlConvert.convert(html, "https://example.test/", "markdown").title

describe("HtmlConvert.convert's markdown title", () => {
  test("is the first title element's text, whitespace folded", () => {
    expect(title("<html><head><title>The  Guide\n</title></head><body><p>x</p></body></html>")).toBe("The Guide")
    expect(title('<TITLE lang="en">Upper</TITLE>')).toBe("Upper")
    expect(title("<title>First</title><title>Second</title>")).toBe("First")
    expect(title("<title>A &amp; B</title>")).toBe("A & B")
    expect(title("<titles>Not quite</title>")).toBe("Not quite")
    expect(title("<title>Unclosed")).toBeUndefined()
    expect(title("<title")).toBeUndefined()
    expect(title("</title><title>")).toBeUndefined()
    expect(title("<title>   </title>")).toBeUndefined()
    expect(title("<p>No title</p>")).toBeUndefined()
  })

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("a hostile page of many <title is answered at once, and rightly", async () => {
    expect(
      await inChild(`
        import { HtmlConvert } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/html-convert.ts"))}
        const title = (html) => HtmlConvert.convert(html, "https://example.test/", "markdown").title ?? null
        console.log(JSON.stringify([
          title("<title>".repeat(100_000)),
          title("<title".repeat(100_000)),
          title("<title>" + "</titl".repeat(100_000) + "</title>").length,
        ]))
        `),
    ).toEqual([null, null, 600_000])
  }, 30_000)
})
