export * as HtmlConvert from "./html-convert"

// An HTML page as webfetch answers it: markdown (turndown, which parses with a real DOM, domino, so malformed HTML
// parses as a browser would; links and images made absolute against the page's URL), the text a reader sees (a
// walk of the same DOM), or the HTML as sent. Scripts, styles, embedded frames and what the markup itself hides are
// dropped, and links that would run code are text. Loaded lazily:
// start-up never evaluates the DOM.

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

const OPTIONS: TurndownService.Options = {
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
  emDelimiter: "_",
  hr: "---",
}
/**
 * Whether an element is hidden from a reader by its own markup (`hidden`, an inline `display: none` or
 * `visibility: hidden`): left out, so a page cannot put words before a model that a person viewing it never sees.
 * (Stylesheets are not applied: what they hide still shows.)
 */
const hiddenByMarkup = (element: { getAttribute: (name: string) => string | null }): boolean =>
  element.getAttribute("hidden") !== null || /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)/i.test(element.getAttribute("style") ?? "")

/** A link a reader's click would run as code rather than follow (`javascript:`, `vbscript:`, `data:`): kept as text. */
const RUNS = /^\s*(?:javascript|vbscript|data):/i

/** What markdown leaves out besides DROPPED: the title (answered apart) and form controls. */
const REMOVED = [...DROPPED, "title", "link", "meta", "button", "input", "select", "textarea"]

/** A link destination as turndown writes one: parentheses and angle brackets escaped, spaces in <...>. */
const destination = (value: string): string => {
  const escaped = value.replace(/([<>()])/g, "\\$1")
  return escaped.includes(" ") ? `<${escaped}>` : escaped
}

const titlePart = (node: TurndownService.Node): string => {
  const title = (node.getAttribute("title") ?? "").replace(/(\n+\s*)+/g, "\n")
  return title === "" ? "" : ` "${title.replace(/"/g, '\\"')}"`
}

/**
 * How many characters making links and images absolute may add to a page, in all. Each relative link grows by the
 * page's URL, which its server chooses (a redirect to a path thousands of characters long): 340,000 links in a 5 MB
 * page made a gigabyte of markdown. Past this, they are left as the page wrote them, and the page says so.
 */
export const MAX_ABSOLUTE_GROWTH = 1024 * 1024

/**
 * A page as markdown: turndown parses it once (with domino) and writes links and images made absolute against
 * the page's URL, as far as MAX_ABSOLUTE_GROWTH allows. A converter per call, since its rules hold the URL.
 */
const markdownOf = (html: string, url: string): string => {
  let growth = 0
  let left = 0
  const absolute = (value: string | null): string => {
    if (value === null) return ""
    if (!URL.canParse(value, url)) return value
    const href = new URL(value, url).href
    if (growth + Math.max(0, href.length - value.length) > MAX_ABSOLUTE_GROWTH) {
      left++
      return value
    }
    growth += Math.max(0, href.length - value.length)
    return href
  }
  const service = new TurndownService(OPTIONS)
  service.remove(REMOVED as unknown as TurndownService.Filter)
  // A rule, not `remove`: turndown's own rules (a paragraph's) come before what it removes.
  service.addRule("hidden", { filter: (node) => node.nodeType === 1 && hiddenByMarkup(node), replacement: () => "" })
  service.addRule("codeLink", { filter: (node) => node.nodeName === "A" && RUNS.test(node.getAttribute("href") ?? ""), replacement: (content) => content })
  service.addRule("absoluteLink", {
    filter: (node) => node.nodeName === "A" && (node.getAttribute("href") ?? "") !== "" && !RUNS.test(node.getAttribute("href") ?? ""),
    replacement: (content, node) => `[${content}](${destination(absolute((node as TurndownService.Node).getAttribute("href")))}${titlePart(node as TurndownService.Node)})`,
  })
  service.addRule("absoluteImage", {
    filter: "img",
    replacement: (_content, node) => {
      const element = node as TurndownService.Node
      const src = absolute(element.getAttribute("src"))
      if (src === "") return ""
      const alt = service.escape((element.getAttribute("alt") ?? "").replace(/(\n+\s*)+/g, "\n"))
      return `![${alt}](${destination(src)}${titlePart(element)})`
    },
  })
  const markdown = service.turndown(html).trim()
  return left === 0
    ? markdown
    : `${markdown}\n\n(${left} more links and images are left as the page wrote them, relative to the page's URL.)`
}

/**
 * The page's title, parsed apart (a few bytes) so markdown needs only turndown's own parse of the page: what lies
 * between the first `<title…>` and the `</title>` after it. Found by three searches, not one pattern: a server sends
 * the page, and `<title[^>]*>([\s\S]*?)<\/title>` read to the end from every `<title` (minutes for a page of them).
 */
const titleFrom = (html: string): string | undefined => {
  const start = html.search(/<title/i)
  if (start === -1) return undefined
  // A later `<title` finds no `>` or `</title>` that this one does not: the first one alone decides.
  const opened = html.indexOf(">", start + "<title".length)
  if (opened === -1) return undefined
  const closing = /<\/title>/gi
  closing.lastIndex = opened + 1
  const closed = closing.exec(html)
  if (closed === null) return undefined
  const title = domino.createDocument(`<title>${html.slice(opened + 1, closed.index)}</title>`).title.replace(/\s+/g, " ").trim()
  return title === "" ? undefined : title
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

/**
 * How deep a page's elements may nest to be converted. The parser takes time quadratic in the depth (10,000 levels
 * 0.5 s, 30,000 4.3 s, 100,000 most of a minute) and the converters walk the tree recursively (markdown overflows
 * the stack near 8,000): a page past this is refused before it is parsed (`tooDeep`).
 */
export const MAX_NESTING = 5_000

/** Elements that hold nothing (void): never open. */
const VOID = new Set("area base br col embed hr img input keygen link meta param source track wbr".split(" "))
/**
 * Elements whose end a parser implies when the next one of their kind (or a block) starts: not counted, so a long
 * list of unclosed `<li>` or `<p>` is not taken for depth. (Nested under a scope boundary they do nest, up to a few
 * times the count: a page past that still has the converter's budget.)
 */
const IMPLIED_END = new Set("p li dt dd option optgroup tr td th thead tbody tfoot colgroup caption rb rt rp rtc html head body".split(" "))
/** Elements whose content is text to the parser, up to their own end tag: no tag inside them counts. */
const RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"])
/**
 * HTML's "special" elements: an end tag closing an element above one of these is ignored by the parser (`<span><div>
 * </span>` closes nothing), so the count does not close through them either.
 */
const SPECIAL = new Set(
  (
    "address applet area article aside base basefont bgsound blockquote body br button caption center col colgroup dd " +
    "details dir div dl dt embed fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header " +
    "hgroup hr html iframe img input keygen li link listing main marquee menu meta nav noembed noframes noscript object " +
    "ol p param plaintext pre script search section select source style summary table tbody td template textarea tfoot " +
    "th thead title tr track ul wbr xmp mi mo mn ms mtext annotation-xml foreignobject desc"
  ).split(" "),
)
/** Where an end tag of a special element stops looking for its element ("in scope", in HTML's words). */
const SCOPE_BOUNDARY = new Set("applet caption html table td th marquee object template mi mo mn ms mtext annotation-xml foreignobject desc title".split(" "))
/** Elements that, started inside SVG or MathML, break out of it into HTML (where `/>` closes nothing). */
const BREAKOUT = new Set(
  (
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li listing menu meta " +
    "nobr ol p pre ruby s small span strong strike sub sup table tt u ul var font"
  ).split(" "),
)
/** How far down the open elements an end tag is matched; past that it is taken to close nothing (counting high). */
const END_TAG_REACH = 128
/**
 * A comment as HTML ends one (`<!-->` and `<!--->` are whole; `--!>` ends one too), a bogus comment (`<!…>`,
 * `<?…>`, `</…>` not starting with a letter), or a start or end tag with its name (up to a space, `/` or `>`).
 */
const TAG = /<!--(?:>|->|[\s\S]*?(?:--!?>|$))|<[!?][^>]*>?|<\/(?![A-Za-z])[^>]*>?|<(\/?)([A-Za-z][^\s/>]*)((?:"[^"]*"|'[^']*'|[^'">])*?)>/g

/**
 * Whether a page's tags nest deeper than MAX_NESTING, read as a parser reads them without building anything, and
 * counting high where unsure (never low by more than a few times, so no page hides its depth): `/>` closes only a
 * void element, or one of SVG or MathML that does not break out of it; an end tag closes the open elements down to
 * the nearest of its name, unless what lies between stops it as it stops a parser (a scope boundary for a special
 * element's end tag, any special element for another's: `<span><div></span>` closes nothing), or that one lies
 * deeper than END_TAG_REACH; elements whose end is implied are not counted. Linear in the page.
 */
export const tooDeep = (html: string): boolean => {
  const open: Array<string> = []
  const counts = new Map<string, number>()
  /** How many of the open elements are `svg` or `math` (foreign content, where `/>` closes an element). */
  let foreign = 0
  let raw: string | undefined
  const pop = () => {
    const closed = open.pop()!
    counts.set(closed, counts.get(closed)! - 1)
    if (closed === "svg" || closed === "math") foreign--
  }
  TAG.lastIndex = 0
  for (let match = TAG.exec(html); match !== null; match = TAG.exec(html)) {
    const [, end, tag, attributes] = match
    if (tag === undefined) continue
    const name = tag.toLowerCase()
    if (raw !== undefined) {
      if (end === "/" && name === raw) raw = undefined
      continue
    }
    if (name === "plaintext") return false
    if (VOID.has(name) || IMPLIED_END.has(name)) continue
    if (end === "/") {
      if ((counts.get(name) ?? 0) === 0) continue
      // Down to the nearest open element of the name, within reach: a special one's through anything but a scope
      // boundary, any other's through no special element.
      const stops = SPECIAL.has(name) ? SCOPE_BOUNDARY : SPECIAL
      let depth = open.length - 1
      while (depth >= 0 && open.length - depth <= END_TAG_REACH && open[depth] !== name && !stops.has(open[depth]!)) depth--
      if (depth < 0 || open[depth] !== name) continue
      while (open.length > depth) pop()
      continue
    }
    if (foreign > 0 && attributes!.endsWith("/") && !BREAKOUT.has(name)) continue
    if (RAW_TEXT.has(name)) {
      raw = name
      continue
    }
    open.push(name)
    counts.set(name, (counts.get(name) ?? 0) + 1)
    if (name === "svg" || name === "math") foreign++
    if (open.length > MAX_NESTING) return true
  }
  return false
}

/** An HTML page in the asked format: markdown (turndown), text (what a reader sees), or the HTML as sent. */
export const convert = (html: string, url: string, format: WebPage.Format): Converted => {
  if (format === "html") return { content: html }
  if (format === "markdown") {
    const title = titleFrom(html)
    const content = markdownOf(html, url)
    return title === undefined ? { content } : { content, title }
  }
  const document = domino.createDocument(html)
  const title = titleOf(document)
  const body = document.body ?? document.documentElement
  for (const element of Array.from(body.querySelectorAll(DROPPED.join(",")))) element.remove()
  for (const element of Array.from(body.querySelectorAll("[hidden],[style]"))) if (hiddenByMarkup(element)) element.remove()
  const content = textOf(document)
  return title === undefined ? { content } : { content, title }
}
