export * as HtmlChild from "./html-child"

// The process webfetch converts HTML in (started by ./html-converter): one page at a time, each order answered with
// what it came to, until its parent goes. Markup nested past HtmlConvert.MAX_NESTING is refused before it is
// parsed; the converters walk the document recursively, so deeper trees the count missed overflow the stack, which
// is answered alike.

import { Native } from "../shell/native"
import { HtmlConvert } from "./html-convert"
import type { HtmlConverter } from "./html-converter"

const SIGKILL = 9

const outcomeOf = ({ html, url, format }: HtmlConverter.Order): HtmlConverter.Outcome => {
  // Refused before the parser, whose time grows with the square of the depth, spends the budget on it.
  if (HtmlConvert.tooDeep(html)) return { kind: "deep" }
  try {
    return { kind: "converted", converted: HtmlConvert.convert(html, url, format) }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (error instanceof RangeError && /call stack/i.test(message)) return { kind: "deep" }
    return { kind: "failed", message }
  }
}

export const main = (): void => {
  // Dies with its parent, even in the middle of a conversion (when it would not see the channel close): a parent
  // killed with -9 leaves no converter at work. Then, should the parent be gone already, it goes now.
  const parent = process.ppid
  Native.prctl(Native.PR_SET_PDEATHSIG, SIGKILL)
  if (Native.getppid() !== parent) process.exit(0)
  process.on("message", (order: HtmlConverter.Order) => process.send?.(outcomeOf(order)))
  // Its parent gone (or ending it): nothing is left to convert for.
  process.on("disconnect", () => process.exit(0))
}
