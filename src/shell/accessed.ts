export * as Accessed from "./accessed"

// Which files a command line reads and which it changes, from what its commands do with their operands
// (./operands: `cat` reads, `rm` changes, `cp` reads its sources and writes its target) and from its redirections
// (`< in` reads, `> out` writes), in wrapped commands and literal code too: so a user's `read` and `edit` rules on
// a path hold for `cat app.env` as they hold for the `read` tool. Pure: where each path leads is the caller's.

import { basename } from "node:path"
import type { CommandLine } from "./command-line"
import { Operands } from "./operands"
import { Runs } from "./runs"

/** A path the line names, and what it does with it. */
export interface Accessed {
  readonly word: CommandLine.Word
  /** Whether its content is read (or made readable elsewhere: a copy's source). */
  readonly reads: boolean
  /** Whether it is changed, created or removed. */
  readonly writes: boolean
  /** Changed with everything under it, when it is a directory (Operands.Operand). */
  readonly deep?: boolean
  /** A copy's or move's target: what it receives, each changed as `TARGET/NAME` when it is a directory. */
  readonly sources?: ReadonlyArray<CommandLine.Word>
}

const ofOperand = (operand: Operands.Operand): Accessed => ({
  word: operand.word,
  reads: operand.access === "read" || operand.access === "both",
  writes: operand.writes || operand.access === "write" || operand.access === "both",
  ...(operand.deep === true ? { deep: true } : {}),
  ...(operand.sources === undefined ? {} : { sources: operand.sources }),
})

/**
 * Every path the line's commands and redirections read or change (paths only named, `ls x` or `cd x`, are left
 * out), and the words of programs the file table does not know that may name a file they read (Operands.named).
 */
export const of = (parsed: CommandLine.Parsed): { readonly paths: ReadonlyArray<Accessed>; readonly named: ReadonlyArray<string> } => {
  const found: Array<Accessed> = []
  const named: Array<string> = []
  const redirect = (target: CommandLine.Word, writes: boolean) => found.push({ word: target, reads: !writes, writes })
  const visit = (words: ReadonlyArray<CommandLine.Word>) => {
    const name = basename(words[0]?.value ?? "")
    if (name === "") return
    const operands = Operands.isFileCommand(name) ? Operands.of(name, words) : Operands.guessed(name, words)
    for (const operand of operands) {
      const accessed = ofOperand(operand)
      if (accessed.reads || accessed.writes) found.push(accessed)
    }
    named.push(...Operands.named(name, words))
    for (const inner of Runs.of(words).commands) visit(inner)
  }
  for (const command of parsed.commands) {
    if (command.kind !== "command") continue
    for (const each of command.redirects) redirect(each.target, each.writes)
    visit(command.words)
  }
  for (const { redirect: each } of parsed.statements) redirect(each.target, each.writes)
  return { paths: found, named }
}
