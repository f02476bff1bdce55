export * as Indentation from "./indentation"

// How edit's tolerant line matchers indent newString: like the lines they matched, in the file's own unit (tabs or
// N spaces), so a replacement never mixes indentation styles the file did not have. Pure: lines in, text out.

export const indentOf = (line: string): string => line.slice(0, line.length - line.trimStart().length)

/** The shortest indentation among non-blank lines. */
export const commonIndent = (lines: ReadonlyArray<string>): string => {
  let shortest: string | undefined
  for (const line of lines) {
    if (line.trim() === "") continue
    const indent = indentOf(line)
    if (shortest === undefined || indent.length < shortest.length) shortest = indent
  }
  return shortest ?? ""
}

/** An indentation unit: a tab, or a number of spaces. */
type Unit = { readonly tab: true } | { readonly tab: false; readonly spaces: number }

/**
 * The unit lines are indented by: tabs when more indented lines start with a tab than with a space, else the
 * commonest step in space indentation between neighbouring lines (smaller on a tie); undefined when no line is
 * indented.
 */
const unitOf = (lines: ReadonlyArray<string>): Unit | undefined => {
  let tabbed = 0
  let spaced = 0
  const steps = new Map<number, number>()
  let previous = 0
  for (const line of lines) {
    if (line.trim() === "") continue
    const indent = indentOf(line)
    if (indent.startsWith("\t")) tabbed++
    else if (indent.startsWith(" ")) spaced++
    if (indent.includes("\t")) continue
    const step = Math.abs(indent.length - previous)
    if (step > 0) steps.set(step, (steps.get(step) ?? 0) + 1)
    previous = indent.length
  }
  if (tabbed === 0 && spaced === 0) return undefined
  if (tabbed > spaced) return { tab: true }
  let best: [number, number] | undefined
  for (const [step, seen] of steps) if (best === undefined || seen > best[1] || (seen === best[1] && step < best[0])) best = [step, seen]
  return { tab: false, spaces: best?.[0] ?? 4 }
}

/** The depth of an indentation in units, or undefined when it is not a whole number of them. */
const depthOf = (indent: string, unit: Unit): number | undefined => {
  if (unit.tab) return /^\t*$/.test(indent) ? indent.length : undefined
  if (indent.includes("\t")) return undefined
  return indent.length % unit.spaces === 0 ? indent.length / unit.spaces : undefined
}

const unitText = (unit: Unit): string => (unit.tab ? "\t" : " ".repeat(unit.spaces))
const unitName = (unit: Unit): string => (unit.tab ? "tabs" : `${unit.spaces} spaces`)

/**
 * newString for the window `[first, first + count)` of the file, matched by a tolerant matcher: indented like the
 * window rather than like oldString. Each line keeps its depth relative to oldString's least indented line, in
 * the window's unit (tabs or N spaces, as the file indents); where oldString and the file share a unit, the
 * relative indentation is kept as written. A line whose indentation is no whole number of oldString's units,
 * when the file uses another unit, cannot be converted: the match is refused rather than mixing styles.
 */
export const reindented = (
  fileLines: ReadonlyArray<string>,
  oldLines: ReadonlyArray<string>,
  newString: string,
  first: number,
  count: number,
): string | { readonly reason: string } => {
  const window = fileLines.slice(first, first + count)
  const fromBase = commonIndent(oldLines)
  const toBase = commonIndent(window)
  const newLines = newString.split("\n")
  const fileUnit = unitOf(fileLines)
  const quotedUnit = unitOf([...oldLines, ...newLines].map((line) => (line.startsWith(fromBase) ? line.slice(fromBase.length) : line)))
  const sameUnit =
    fileUnit === undefined ||
    quotedUnit === undefined ||
    (fileUnit.tab ? quotedUnit.tab : !quotedUnit.tab && quotedUnit.spaces === fileUnit.spaces)
  const out: Array<string> = []
  for (const [index, line] of newLines.entries()) {
    if (line.trim() === "") {
      out.push(line)
      continue
    }
    const indent = indentOf(line)
    const body = line.slice(indent.length)
    if (sameUnit || fileUnit === undefined || quotedUnit === undefined) {
      if (indent.startsWith(fromBase)) out.push(toBase + indent.slice(fromBase.length) + body)
      else out.push(toBase.slice(0, Math.max(0, toBase.length - (fromBase.length - indent.length))) + body)
      continue
    }
    const width = quotedUnit.tab ? 1 : quotedUnit.spaces
    const levels = indent.startsWith(fromBase)
      ? depthOf(indent.slice(fromBase.length), quotedUnit)
      : -Math.ceil((fromBase.length - indent.length) / width)
    if (levels === undefined) {
      return {
        reason:
          `line ${index + 1} of newString is indented by ${JSON.stringify(indent)}, which is not a whole number of ` +
          `the ${unitName(quotedUnit)} oldString is indented with, so it cannot be converted to the file's ` +
          `${unitName(fileUnit)}`,
      }
    }
    const unit = unitText(fileUnit)
    out.push((levels >= 0 ? toBase + unit.repeat(levels) : toBase.slice(0, Math.max(0, toBase.length + levels * unit.length))) + body)
  }
  return out.join("\n")
}
