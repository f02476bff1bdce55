export * as Placement from "./placement"

// One placement's registrations (the process, or one Location): for each name, a stack of active entries in
// registration order; the top of the stack is the effective one. It holds data only: Scope handling, validation
// and resolution across placements live in ./registry.

import type { Tool } from "../tool/tool"

/** One name inside one registration. Identity matters: a materialization remembers the entry it advertised. */
export interface Entry {
  readonly name: string
  readonly tool: Tool.Any
}

export class Table {
  readonly #stacks = new Map<string, Array<Entry>>()
  #sortedNames: ReadonlyArray<string> | undefined = undefined
  /** Bumped on every change, so callers can cache what they derive from this placement. */
  version = 0

  add(entries: ReadonlyArray<Entry>): void {
    for (const entry of entries) {
      const stack = this.#stacks.get(entry.name)
      if (stack === undefined) {
        this.#stacks.set(entry.name, [entry])
        this.#sortedNames = undefined
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
        this.#sortedNames = undefined
      }
    }
    this.version++
  }

  /** The effective (latest active) entry for a name. */
  top(name: string): Entry | undefined {
    const stack = this.#stacks.get(name)
    return stack === undefined ? undefined : stack[stack.length - 1]
  }

  /** Every name with at least one active entry, sorted. */
  names(): ReadonlyArray<string> {
    this.#sortedNames ??= [...this.#stacks.keys()].sort()
    return this.#sortedNames
  }
}
