export * as InputText from "./input-text"

import { readFileSync } from "node:fs"

// The text of `--input`: an argument, or (`-`) standard input, read once per process: `core exec --input -` may
// read it while looking for a `core serve` to forward to (./forward) and then settle in process after all, which
// must see the same text. And whether its bytes were UTF-8: bytes that are not reach a program as U+FFFD each, and
// a call would then run on other text than was given (a file written with U+FFFD where its bytes were).

export interface Text {
  readonly text: string
  /** Whether the bytes were UTF-8 (or could not be looked at: then the text stands as read). */
  readonly utf8: boolean
}

let stdin: Promise<Text> | undefined

/** Everything on stdin, read on first use and kept. */
const readStdin = (): Promise<Text> =>
  (stdin ??= Bun.stdin.bytes().then((bytes) => {
    try {
      return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes), utf8: true }
    } catch {
      return { text: new TextDecoder().decode(bytes), utf8: false }
    }
  }))

/**
 * Whether the argument that reads as `decoded` came as UTF-8: looked at in /proc/self/cmdline, the arguments as
 * their bytes, only when it holds U+FFFD (which UTF-8 may hold as well).
 */
const argumentUtf8 = (decoded: string): boolean => {
  if (!decoded.includes("\uFFFD")) return true
  let cmdline: Buffer
  try {
    cmdline = readFileSync("/proc/self/cmdline")
  } catch {
    return true
  }
  const fatal = new TextDecoder("utf-8", { fatal: true })
  for (let start = 0; start < cmdline.length; ) {
    const end = cmdline.indexOf(0, start)
    const bytes = cmdline.subarray(start, end === -1 ? cmdline.length : end)
    start = end === -1 ? cmdline.length : end + 1
    // The argument itself, or `--input=` and it.
    if (!bytes.toString("utf8").endsWith(decoded)) continue
    try {
      fatal.decode(bytes)
    } catch {
      return false
    }
  }
  return true
}

/** The text `--input` gives (`raw` its value): itself, or stdin's for `-`. */
export const read = async (raw: string): Promise<Text> => (raw === "-" ? readStdin() : { text: raw, utf8: argumentUtf8(raw) })
