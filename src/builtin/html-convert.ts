export * as HtmlConvert from "./html-convert"

// An HTML page as webfetch answers it: markdown (turndown over a real DOM, domino, so malformed HTML parses as a
// browser would), the text a reader sees, or the HTML as sent. Links and images are made absolute against the
// page's URL; scripts, styles and embedded frames are dropped. Loaded lazily: start-up never evaluates the DOM.

import domino, { type DomDocument, type DomNode } from "@mixmark-io/domino"
import TurndownService from "turndown"
import type { WebPage } from "./web-page"

/** Elements whose content is never page text. */
const DROPPED = ["script", "style", "noscript", "template", "iframe", "object", "embed", "canvas", "svg", "head"] as const

/** Elements that start a new line in the text format. */
const LINES = new Set("br dd div dt figcaption li option summary tr".split(" "))
/** Elements set apart by a blank line in the text format. */
const PARAGRAPHS = new Set(
  (
    "address article aside blockquote details dl fieldset figure footer form h1 h2 h3 h4 h5 h6 header hr main nav " +
    "ol p pre section table ul"
  ).split(" "),
)

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
  emDelimiter: "_",
  hr: "---",
})
turndown.remove([...DROPPED, "link", "meta", "button", "input", "select", "textarea"] as unknown as TurndownService.Filter)

/** Parses a page and makes its links and images absolute against where it was fetched from. */
const parse = (html: string, url: string): DomDocument => {
  const document = domino.createDocument(html)
  for (const [selector, attribute] of [["a[href]", "href"], ["img[src]", "src"]] as const) {
    for (const element of Array.from(document.querySelectorAll(selector))) {
      const value = element.getAttribute(attribute)!
      if (URL.canParse(value, url)) element.setAttribute(attribute, new URL(value, url).href)
    }
  }
  return document
}

/** The page's title, when it has one. */
const titleOf = (document: DomDocument): string | undefined => {
  const title = document.title.replace(/\s+/g, " ").trim()
  return title === "" ? undefined : title
}

/** The page's text: what a reader sees, a line per block and a blank line between paragraphs. */
const textOf = (document: DomDocument): string => {
  const out: Array<string> = []
  // How many line breaks end the text so far: a block asks for one or two, never adding to those already there.
  let breaks = 2
  const breakTo = (count: number) => {
    while (breaks < count) {
      out.push("\n")
      breaks++
    }
  }
  const walk = (node: DomNode, preformatted: boolean) => {
    if (node.nodeType === 3) {
      const text = preformatted ? (node.nodeValue ?? "") : (node.nodeValue ?? "").replace(/\s+/g, " ")
      const trimmed = breaks > 0 && !preformatted ? text.trimStart() : text
      if (trimmed === "") return
      out.push(trimmed)
      breaks = 0
      return
    }
    if (node.nodeType !== 1) return
    const name = node.localName
    if ((DROPPED as ReadonlyArray<string>).includes(name)) return
    const lines = PARAGRAPHS.has(name) ? 2 : LINES.has(name) ? 1 : 0
    breakTo(lines)
    for (const child of Array.from(node.childNodes)) walk(child, preformatted || name === "pre")
    breakTo(lines)
  }
  walk(document.body ?? document.documentElement, false)
  return out
    .join("")
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .trim()
}

export interface Converted {
  readonly content: string
  readonly title?: string
}

/** An HTML page in the asked format: markdown (turndown), text (what a reader sees), or the HTML as sent. */
export const convert = (html: string, url: string, format: WebPage.Format): Converted => {
  if (format === "html") return { content: html }
  const document = parse(html, url)
  const title = titleOf(document)
  const body = document.body ?? document.documentElement
  for (const element of Array.from(body.querySelectorAll(DROPPED.join(",")))) element.remove()
  const content = format === "text" ? textOf(document) : turndown.turndown(body as unknown as TurndownService.Node).trim()
  return title === undefined ? { content } : { content, title }
}
