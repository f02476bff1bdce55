export * as Turns from "./turns"

// The turns a Location's hosts have materialized, by turn id: each kept until it goes unused for the idle period or
// until `max` newer turns exist (the least recently used goes first). A host whose turn is gone materializes again.
// Recency is the Map's insertion order (a use moves the turn to the end), so expiry only ever looks at the front.

export const MAX_TURNS = 1_000
export const IDLE_MS = 30 * 60 * 1000

interface Entry<A> {
  readonly value: A
  used: number
}

export interface Options {
  readonly max?: number
  readonly idleMs?: number
  /** The clock, in epoch milliseconds. */
  readonly now?: () => number
}

export class Cache<A> {
  private readonly entries = new Map<string, Entry<A>>()
  private readonly max: number
  private readonly idleMs: number
  private readonly now: () => number

  constructor(options: Options = {}) {
    this.max = options.max ?? MAX_TURNS
    this.idleMs = options.idleMs ?? IDLE_MS
    this.now = options.now ?? Date.now
  }

  get size(): number {
    return this.entries.size
  }

  /** Keeps the value `make` builds for a fresh turn id, and answers it. */
  add(make: (id: string) => A): A {
    const now = this.now()
    this.expire(now)
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!)
    const id = `turn_${crypto.randomUUID().replaceAll("-", "")}`
    const value = make(id)
    this.entries.set(id, { value, used: now })
    return value
  }

  /** The turn's value, marking it used; undefined when unknown, evicted or idle too long. */
  get(id: string): A | undefined {
    const entry = this.entries.get(id)
    if (entry === undefined) return undefined
    const now = this.now()
    if (now - entry.used > this.idleMs) {
      this.expire(now)
      return undefined
    }
    entry.used = now
    this.entries.delete(id)
    this.entries.set(id, entry)
    return entry.value
  }

  /** Drops idle turns from the front (least recently used first). */
  private expire(now: number): void {
    for (const [id, entry] of this.entries) {
      if (now - entry.used <= this.idleMs) return
      this.entries.delete(id)
    }
  }
}
