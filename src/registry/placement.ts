export * as Placement from "./placement"

// One placement's registrations (the process, or one Location): for each name, a stack of active entries in
// registration order; the top of the stack is the effective one. It holds data only: Scope handling, validation
// and resolution across placements live in ./registry.

import type { Definition } from "../tool/definition"
import type { Tool } from "../tool/tool"

/** One name inside one registration. Identity matters: a materialization remembers the entry it advertised. */
export interface Entry {
  readonly name: string
  readonly tool: Tool.Any
  /** This entry's definition, memoised by the registry the first time it is advertised. */
  definition?: Definition.Definition
}

export class Stacks {
  readonly #stacks = new Map<string, Array<Entry>>()
  /** Kept sorted incrementally once first asked for, so a change never re-sorts every name. */
  #sortedNames: Array<string> | undefined = undefined
  /** Bumped on every change, so callers can cache what they derive from this placement. */
  version = 0

  add(entries: ReadonlyArray<Entry>): void {
    for (const entry of entries) {
      const stack = this.#stacks.get(entry.name)
      if (stack === undefined) {
        this.#stacks.set(entry.name, [entry])
        if (this.#sortedNames !== undefined) insertSorted(this.#sortedNames, entry.name)
      } else stack.push(entry)
    }
    this.version++
  }

  remove(entries: ReadonlyArray<Entry>): void {
    for (const entry of entries) {
      const stack = this.#stacks.get(entry.name)
      if (stack === undefined) continue
      const index = stack.lastIndexOf(entry)
      if (index === -1) continue
      stack.splice(index, 1)
      if (stack.length === 0) {
        this.#stacks.delete(entry.name)
        if (this.#sortedNames !== undefined) removeSorted(this.#sortedNames, entry.name)
      }
    }
    this.version++
  }

  /** The effective (latest active) entry for a name. */
  top(name: string): Entry | undefined {
    const stack = this.#stacks.get(name)
    return stack === undefined ? undefined : stack[stack.length - 1]
  }

  /** Every name with at least one active entry, sorted. The array is live: copy it to keep a snapshot. */
  names(): ReadonlyArray<string> {
    this.#sortedNames ??= [...this.#stacks.keys()].sort()
    return this.#sortedNames
  }
}

/** Index of the first element not less than `name`. */
const lowerBound = (names: ReadonlyArray<string>, name: string): number => {
  let low = 0
  let high = names.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (names[middle]! < name) low = middle + 1
    else high = middle
  }
  return low
}

const insertSorted = (names: Array<string>, name: string) => {
  names.splice(lowerBound(names, name), 0, name)
}

const removeSorted = (names: Array<string>, name: string) => {
  const index = lowerBound(names, name)
  if (names[index] === name) names.splice(index, 1)
}
