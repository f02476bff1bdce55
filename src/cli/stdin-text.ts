export * as StdinText from "./stdin-text"

// Standard input, read once per process: `core exec --input -` may read it while looking for a `core serve` to
// forward to (./forward) and then settle in process after all, which must see the same text.

let text: Promise<string> | undefined

/** Everything on stdin, read on first use and kept. */
export const read = (): Promise<string> => (text ??= Bun.stdin.text())
