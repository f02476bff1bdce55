export * as Bash from "./bash"

// The `bash` built-in: runs one command line through the shell producer after checking it command by command
// (../shell/command): `external_directory` for a workdir or paths outside the Location, `edit` for files it
// changes and `read` for files it reads (./line-files: the same rules on a path as the file tools meet), then
// `bash` on every command the line runs (asking once for those not yet allowed), and last what cannot be known
// from the text, asked every time. Nothing is spawned before every check passes. The
// command gets an explicit environment without core's secrets. It returns the complete capture; bounding what the
// model sees is the settlement's job.

import { basename, dirname, resolve, sep } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Boundary } from "../permission/boundary"
import { Credentials } from "../permission/credentials"
import { Git } from "../permission/git"
import type { Permission } from "../permission/permission"
import { Protected } from "../permission/protected"
import { Rule } from "../permission/rule"
import { Refusal } from "../tool/refusal"
import { CommandLine } from "../shell/command-line"
import { CommandChecks } from "../shell/command-checks"
import { Shell } from "../shell/shell"
import { Starter } from "../shell/starter"
import { Supervised } from "../shell/supervised"
import { WorkTree } from "../shell/work-tree"
import { Turn } from "../settlement/turn"
import * as Internal from "../tool/internal"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { LineFiles } from "./line-files"
import { Running } from "./running"

const NAME = "bash"

const Gap = Schema.Struct({
  offset: Schema.Int.annotate({ description: "Byte offset in the stream where the bytes not kept start" }),
  length: Schema.Int.annotate({ description: "How many bytes were not kept" }),
})

const Captured = Schema.Struct({
  bytes: Schema.Int.annotate({ description: "Every byte the stream carried" }),
  kept: Schema.Int.annotate({ description: "The bytes kept (the first and last parts)" }),
  complete: Schema.Boolean.annotate({ description: "Whether every byte was kept and the stream was read to its end" }),
  gap: Schema.optionalKey(Gap),
  unread: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description:
        "The stream was still held open, by a process that left the command's process group, when the command " +
        "ended: what it wrote after that was not read",
    }),
  ),
})

/** The input, with the longest `timeoutMs` a call may ask for (`shell.maxTimeoutMs`). */
const inputOf = (maxTimeoutMs: number) =>
  Schema.Struct({
    command: Schema.String.annotate({ description: "The bash command line to run, e.g. `bun test --timeout 60000 test/a.test.ts`" }),
    description: Schema.optionalKey(
      Schema.String.annotate({ description: "A few words saying what the command does, shown to whoever approves it" }),
    ),
    workdir: Schema.optionalKey(
      Schema.String.annotate({ description: "The directory to run in, relative to the project root or absolute (default: the project root)" }),
    ),
    timeoutMs: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: maxTimeoutMs })).annotate({
        description: "Wall-clock limit in milliseconds",
      }),
    ),
  })
export const Input = inputOf(Shell.DEFAULT_MAX_TIMEOUT_MS)
export type Input = typeof Input.Type

export const Output = Schema.Struct({
  exitCode: Schema.NullOr(Schema.Int),
  signal: Schema.NullOr(Schema.String),
  outOfMemory: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description: "Set when the kernel's OOM killer ended a process while the command ran: the system ran out of memory",
    }),
  ),
  supervisorCrashed: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The signal the command's supervisor crashed with, where everything the command started ended with it (most " +
        "likely the command filled its bound of processes and threads)",
    }),
  ),
  timedOut: Schema.Boolean,
  timeout: Schema.optionalKey(
    Schema.Struct({ kind: Schema.Literals(["wall", "inactivity"]), ms: Schema.Int }),
  ),
  stdout: Schema.String,
  stderr: Schema.String,
  output: Schema.String.annotate({ description: "stdout and stderr, joined in the order their chunks reached core" }),
  capture: Schema.Struct({ stdout: Captured, stderr: Captured, output: Captured }),
  durationMs: Schema.Int,
  killed: Schema.optionalKey(
    Schema.Array(Schema.Struct({ pid: Schema.Int, name: Schema.String })).annotate({
      description: "Processes still running when the command ended, timed out or was cancelled, which were killed",
    }),
  ),
  survivors: Schema.optionalKey(
    Schema.Array(Schema.Int).annotate({ description: "Processes of the command that could not be killed" }),
  ),
  undone: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Core's own configuration the command changed (core.json, tools/, plugins/, .core/), undone once it ended",
    }),
  ),
  undoneKeptIn: Schema.optionalKey(
    Schema.String.annotate({ description: "Where what the command had left there was moved, for a person to look at" }),
  ),
  unchecked: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Set when core could not search what the command left for the git repositories it made (more than it searches, or a folder it cannot list): what that means (the folders are refused until a person has looked)",
    }),
  ),
  sandboxed: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Paths the output says were refused that core's OS sandbox keeps out of commands' reach",
    }),
  ),
  ruled: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Paths the output says were refused that the user's read or edit rules keep from commands (read as empty, or read-only)",
    }),
  ),
  stores: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Paths the output says were refused that lie in a credential store, which core's OS sandbox keeps from every command",
    }),
  ),
})
export type Output = typeof Output.Type

const { count } = Builtin

const describe = (limits: Shell.Limits, sandboxed: boolean): string =>
  [
    "Runs a bash command line in the project directory and returns its output and exit status.",
    "",
    "- Runs `bash -c COMMAND` in `workdir` (default: the project root). stdin is closed, so nothing can answer a " +
      "prompt: pass non-interactive flags (`--yes`, `-y`, `--no-pager`, `CI=1`).",
    "- The result is stdout and stderr joined in the order their chunks reached core, then `Exit code N`. The two " +
      "are separate pipes and most programs buffer stdout when it is not a terminal, so stderr can come before " +
      "stdout printed earlier; add `2>&1` where the exact order matters. A non-zero exit code is a normal result, " +
      "not an error; 127 means the command was not found. Binary data is shown as a line saying so.",
    `- Each stream is captured up to ${count(limits.maxCaptureBytes)} bytes (first and last halves). A result over ` +
      "2,000 lines or 50 KiB is shown as about 8 KiB, mostly its end, with the whole kept for the read tool: " +
      "filter large output (grep, head, tail).",
    `- Timeout: ${count(limits.timeoutMs)} ms by default; set \`timeoutMs\` for up to ${count(limits.maxTimeoutMs)} ms.` +
      (limits.inactivityTimeoutMs === undefined
        ? ""
        : ` A command that prints nothing for ${count(limits.inactivityTimeoutMs)} ms is stopped.`),
    "- When the line ends, times out or is cancelled, every process it started is killed, background and detached " +
      "ones too (`&`, `nohup`, `setsid`).",
    ...(sandboxed
      ? [
          "- OS sandbox: writes only in the project, temp and approved directories; reads elsewhere only system " +
            "and PATH directories and tools' own config under the home (never its credentials); files the read rules deny read as empty. core.json, tools/, plugins/ and .core/ are core's own configuration: commands " +
            "cannot change them (what a command creates there is removed when it ends); ask the person instead.",
        ]
      : []),
    "- Every command in the line needs permission on its own, including those after `&&`, `;`, `|`, inside " +
      "`$(...)` and in literal `bash -c '...'` or `eval` code. A workdir, a path (`/x`, `~/x`, `../x`, `if=/x`) or a " +
      "redirection target outside the project needs access to that directory first; a redirection that " +
      "writes a file (`>`, `>>`) also needs permission to edit it.",
    "- Whatever cannot be known from the text is asked about every time, even where commands are allowed: a line " +
      "bash cannot parse, a command named by an expansion (`$CMD`), code in a variable or in another language " +
      "(`eval \"$X\"`, `python -c`, `node -e`, `| sh`, `xargs`, `$((a))`), and paths or redirection targets " +
      "holding expansions (`cat $HOME/x`, `> \"$OUT\"`). Write such paths out literally (`~/x` is fine).",
    "- The command sees core's environment without core's secrets, with PAGER=cat, GIT_PAGER=cat, " +
      "GIT_TERMINAL_PROMPT=0, TERM=dumb and no editor (GIT_EDITOR, EDITOR and VISUAL are false: give git -m).",
    "- To read, search or change files, prefer the file tools (read, glob, grep, edit, write) to cat, find, sed or echo.",
  ].join("\n")

const marker = (gap: Shell.Result["output"]["gap"]): string =>
  gap === undefined ? "" : `\n[… ${count(gap.length)} bytes not kept …]\n`

const captured = (capture: Shell.Result["output"], unread: boolean) => ({
  text: capture.gap === undefined ? capture.text : `${capture.head}${marker(capture.gap)}${capture.tail}`,
  report: {
    bytes: capture.seen,
    kept: capture.kept,
    complete: capture.gap === undefined && !unread,
    ...(capture.gap === undefined ? {} : { gap: capture.gap }),
    ...(unread ? { unread: true as const } : {}),
  },
})

const outputOf = (result: Shell.Result): Output => {
  const stdout = captured(result.stdout, result.unread.includes("stdout"))
  const stderr = captured(result.stderr, result.unread.includes("stderr"))
  const output = captured(result.output, result.unread.length > 0)
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    ...(result.outOfMemory === true ? { outOfMemory: true as const } : {}),
    ...(result.supervisorCrashed === undefined ? {} : { supervisorCrashed: result.supervisorCrashed }),
    timedOut: result.timedOut !== undefined,
    ...(result.timedOut === undefined ? {} : { timeout: result.timedOut }),
    stdout: stdout.text,
    stderr: stderr.text,
    output: output.text,
    capture: { stdout: stdout.report, stderr: stderr.report, output: output.report },
    durationMs: Math.round(result.durationMs),
    ...(result.killed.length === 0 ? {} : { killed: result.killed.map(({ pid, name }) => ({ pid, name })) }),
    ...(result.survivors.length === 0 ? {} : { survivors: [...result.survivors] }),
    ...(result.undone.length === 0 ? {} : { undone: [...result.undone] }),
    ...(result.undoneKeptIn === undefined ? {} : { undoneKeptIn: result.undoneKeptIn }),
    ...(result.unchecked === undefined ? {} : { unchecked: result.unchecked }),
    ...(result.refused === undefined || result.refused.length === 0 ? {} : { sandboxed: [...result.refused] }),
    ...(result.ruled === undefined || result.ruled.length === 0 ? {} : { ruled: [...result.ruled] }),
    ...(result.stores === undefined || result.stores.length === 0 ? {} : { stores: [...result.stores] }),
  }
}

/** How many refused paths the sandbox line names. */
const SANDBOXED_NAMED = 3

const sandboxedLine = (paths: ReadonlyArray<string>): string =>
  `${paths.slice(0, SANDBOXED_NAMED).join(", ")}${paths.length > SANDBOXED_NAMED ? " and more" : ""}: kept out by ` +
  `core's sandbox; the user can grant ${paths.length === 1 ? "it" : "them"} in core.json (shell.allowRead or shell.allowWrite; ` +
  "a socket to connect to, shell.sockets)."

const storesLine = (paths: ReadonlyArray<string>): string =>
  `${paths.slice(0, SANDBOXED_NAMED).join(", ")}${paths.length > SANDBOXED_NAMED ? " and more" : ""}: in a credential ` +
  "store (keys, tokens, passwords), which core's sandbox keeps from every command. Do not try to read it another " +
  "way; work without it, or tell the user what needs it."

/** A login shell in a command line: `bash -l`, `bash -lc`, `bash --login`. */
const LOGIN_SHELL = /(?:^|[\s;&|(`])(?:\S*\/)?bash\s+(?:-[A-Za-z]*l[A-Za-z]*|--login)(?=\s|$)/

/**
 * The login files of `stores` that only bash, starting as a login shell the line runs (`bash -lc`), said it could
 * not read: its start, not the command, reached for them. One a program of the command named too (`cat ~/.profile`)
 * is not, nor one where the line starts no login shell (`bash ~/.profile` runs it as a script).
 */
const loginFilesOf = (stores: ReadonlyArray<string>, output: string, command: string): ReadonlyArray<string> => {
  if (!LOGIN_SHELL.test(command)) return []
  const lines = output.split("\n")
  return stores.filter((path) => {
    if (!Credentials.STARTUP.includes(basename(path))) return false
    const naming = lines.filter((line) => line.includes(path))
    const starting = (line: string) => line === `bash: ${path}: Permission denied`
    return naming.length > 0 && naming.every(starting)
  })
}

/** What the model is told of those: nothing it did, nothing to work around. */
const loginLine = (paths: ReadonlyArray<string>): string =>
  `${paths.join(", ")}: the user's login ${paths.length === 1 ? "file" : "files"}, which a login shell (bash -l) reads ` +
  `as it starts and core's sandbox keeps from every command (login files often hold tokens). The shell went on without ` +
  `${paths.length === 1 ? "it" : "them"} and kept the PATH the command was given. To start without that message, use ` +
  "bash -c rather than bash -lc."

const ruledLine = (paths: ReadonlyArray<string>): string =>
  `${paths.slice(0, SANDBOXED_NAMED).join(", ")}${paths.length > SANDBOXED_NAMED ? " and more" : ""}: the user's rules ` +
  `keep ${paths.length === 1 ? "it" : "them"} from commands (a file they deny reading reads as empty; one they deny changing is read-only). ` +
  "Do not try to reach the same result another way; ask the user if it must change."

/** How the system words a move or link refused across file systems (EXDEV), as programs print it. */
const CROSS_DEVICE = /Invalid cross-device link|EXDEV|cross-device link not permitted/

/**
 * What to do when a move or link into another directory was refused: the system refuses one between two file
 * systems, or two mounts of one (in the sandbox, each place a command may write is a mount of its own).
 */
const CROSS_DEVICE_LINE =
  "A move or link into another directory was refused (EXDEV): the system refuses one between two file systems or " +
  "two mounts (in core's sandbox, the Location, the temporary folder and each granted folder is one). Copy, then " +
  "remove the original instead (mv does so by itself; for git mv, mv then git add -A on both paths)."

/**
 * How git says it could not write its config, where core keeps it read-only: EBUSY on the rename over a mount, else
 * the mount's or Landlock's refusal.
 */
const GIT_CONFIG_KEPT =
  /could not (write|lock) config file [^\n]*: (Device or resource busy|Read-only file system|Permission denied)|Update of config-file failed/

/** What to do about it: the change is the user's to make, git having said so in its own words. */
const GIT_CONFIG_LINE =
  "Core keeps git's config files read-only to commands (a key in them can run code when the user next runs git, " +
  "outside the sandbox), so git could not change its config (git remote add, branch -u or --set-upstream, " +
  "submodule init, config): what needed it did not happen, whatever git printed after. Ask the user to run it."

/**
 * How git says a branch was renamed, copied or deleted though the branch's section of its config could not be
 * changed with it (git rewrites the config for every such change, the branch's section or none).
 */
const GIT_BRANCH_DONE = /Branch is (renamed|copied), but update of config-file failed/
/** How git says it deleted a branch, then (or before: stdout and stderr interleave) that its config could not follow. */
const GIT_BRANCH_DELETED = /^Deleted branch /m

/** What that means: the branch itself changed; only its settings, if it had any, did not follow. */
const GIT_BRANCH_LINE =
  "Core keeps git's config files read-only to commands (a key in them can run code when the user next runs git, " +
  "outside the sandbox), so git could not update the branch's section of its config: the branch itself was renamed, " +
  "copied or deleted as git said (a rename still exits 128), and only its settings there (the upstream it tracks, if " +
  "any) were left as they were. Do not run it again; if it tracked an upstream, ask the user to set it."

/** What to do when the system ran out of memory as a command ran. */
const LESS_MEMORY = "Use less memory at once (a smaller input, fewer jobs in parallel, streaming rather than loading it whole)."

/** What a command whose process (not the command itself) the OOM killer ended is told. */
const OUT_OF_MEMORY_LINE =
  `The system ran out of memory while the command ran, and the kernel ended a process (a "Killed" above is one). ${LESS_MEMORY}`

const killedLine = (killed: NonNullable<Output["killed"]>): string =>
  `Killed ${killed.length} process${killed.length === 1 ? "" : "es"} still running: ${Shell.named(killed)}`

const status = (output: Output, limits: Shell.Limits): string => {
  if (output.timeout !== undefined) {
    const killed = "the command and every process it started were killed"
    return output.timeout.kind === "wall"
      ? `Timed out after ${count(output.timeout.ms)} ms (the wall-clock limit): ${killed}. Set \`timeoutMs\` for ` +
          `more time (default ${count(limits.timeoutMs)} ms, at most ${count(limits.maxTimeoutMs)} ms) or split the work.`
      : `Timed out after ${count(output.timeout.ms)} ms without output (the inactivity limit): ${killed}. Make the ` +
          "command print progress or split the work."
  }
  if (output.outOfMemory === true && output.signal === "SIGKILL") {
    return `Killed by SIGKILL: the system ran out of memory, and the kernel ended the command's largest process. ${LESS_MEMORY}`
  }
  if (output.supervisorCrashed !== undefined) {
    return (
      `Killed by SIGKILL: core's supervisor of the command stopped (${output.supervisorCrashed}), and every process ` +
      `the command started was ended with it, most likely because the command filled its bound of ` +
      `${count(Starter.PROCESSES)} processes and threads. Start fewer at once; its exit code is not known.`
    )
  }
  if (output.signal !== null) return `Killed by ${output.signal}`
  if (output.exitCode === 127) return "Exit code 127 (command not found)"
  if (output.exitCode === 126) return "Exit code 126 (not executable)"
  return `Exit code ${output.exitCode}`
}

/**
 * Characters no text a program prints for a person holds, beyond a stray one: control characters other than tab,
 * line and page ends, backspace, bell and escape (colours, progress bars). Bytes that are not UTF-8 (U+FFFD) are no
 * sign: text in Latin-1 (café, Größe) is full of them.
 */
const CONTROL = /[\u0000-\u0006\u000e-\u001a\u001c-\u001f\u007f]/g
/** A line is binary data when it holds a NUL, or control characters past this share of it (and more than one). */
const CONTROL_SHARE = 0.05
const REPLACEMENT = /\ufffd/g

/** What marks a line between two of binary data as more of it: any control character but tab and carriage return, or U+FFFD. */
const UNTEXTUAL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/

/** A line beside binary data shorter than this, mostly U+FFFD, is a piece of it (see `binaryBeside`). */
const SHORT_PIECE = 48
const PIECE_REPLACED_SHARE = 0.15

const binaryLine = (line: string): boolean => {
  if (line.includes("\u0000")) return true
  const controls = line.match(CONTROL)?.length ?? 0
  return controls > 1 && controls > line.length * CONTROL_SHARE
}

/**
 * Whether a line beside binary data is a piece of it, cut off where a byte happened to be a line feed: a control
 * character (but a tab, a carriage return, a bell, a backspace or an escape: colours and progress bars are text), or
 * a short line of which bytes that were not UTF-8 make a good part.
 */
const binaryBeside = (line: string): boolean => {
  CONTROL.lastIndex = 0
  if (CONTROL.test(line)) return true
  return line.length < SHORT_PIECE && (line.match(REPLACEMENT)?.length ?? 0) > line.length * PIECE_REPLACED_SHARE
}

/**
 * `output` as the model reads it: each run of lines that are binary data (a `cat` of an executable, an image, a
 * compressed file) is one line saying so, about how large it was and how to look at it; text lines stay. A byte that
 * was not UTF-8 was read as U+FFFD (three bytes in UTF-8): counted as the one byte it was. The structured output keeps
 * every character.
 */
const withoutBinary = (output: string): string => {
  CONTROL.lastIndex = 0
  if (!CONTROL.test(output)) return output
  const lines = output.split("\n")
  const core = lines.map(binaryLine)
  // The line just before or after binary data joins it where it looks like a piece of it (one line on each side,
  // never a chain: one line of binary data must not hide the text after it); then a line between two of them that
  // is not plain text.
  const beside = core.map((isBinary, index) => isBinary || ((core[index - 1] === true || core[index + 1] === true) && binaryBeside(lines[index]!)))
  const binary = beside.map(
    (isBinary, index) => isBinary || (beside[index - 1] === true && beside[index + 1] === true && UNTEXTUAL.test(lines[index]!)),
  )
  const shown: Array<string> = []
  let run = 0
  const flush = () => {
    if (run === 0) return
    shown.push(
      `[binary data, about ${count(run)} bytes, not shown: make text of it with a command (file, xxd | head, ` +
        "strings | head) or send it to a file]",
    )
    run = 0
  }
  for (const [index, line] of lines.entries()) {
    if (binary[index]) {
      run += Buffer.byteLength(line) - 2 * (line.match(REPLACEMENT)?.length ?? 0) + (index < lines.length - 1 ? 1 : 0)
      continue
    }
    flush()
    shown.push(line)
  }
  flush()
  return shown.join("\n")
}

/** The model's view: the interleaved output, how it ended, what was killed, then any capture loss in plain words. */
export const text =
  (limits: Shell.Limits) =>
  (output: Output, command = ""): string => {
    const lines = [output.output === "" ? "(no output)" : withoutBinary(output.output).replace(/\n$/, ""), "", status(output, limits)]
    if (output.killed !== undefined) lines.push(killedLine(output.killed))
    const streams = [
      ["stdout", output.capture.stdout],
      ["stderr", output.capture.stderr],
      ["stdout and stderr together", output.capture.output],
    ] as const
    for (const [name, capture] of streams) {
      if (capture.gap === undefined) continue
      lines.push(`${name}: ${count(capture.bytes)} bytes, the middle ${count(capture.gap.length)} bytes were not kept`)
    }
    for (const [name, capture] of streams.slice(0, 2)) {
      if (capture.unread === undefined) continue
      lines.push(`${name}: still held open by a process core could not end; output after the command ended was not read`)
    }
    if (output.survivors !== undefined) {
      lines.push(`Could not kill ${output.survivors.length} process(es) of the command: ${output.survivors.join(", ")}`)
    }
    if (output.sandboxed !== undefined) lines.push(sandboxedLine(output.sandboxed))
    if (output.ruled !== undefined) lines.push(ruledLine(output.ruled))
    if (output.outOfMemory === true && output.signal !== "SIGKILL") lines.push(OUT_OF_MEMORY_LINE)
    if (output.stores !== undefined) {
      const login = loginFilesOf(output.stores, output.output, command)
      const others = output.stores.filter((path) => !login.includes(path))
      if (others.length > 0) lines.push(storesLine(others))
      if (login.length > 0) lines.push(loginLine(login))
    }
    if (output.exitCode !== 0 && CROSS_DEVICE.test(output.output)) lines.push(CROSS_DEVICE_LINE)
    if (GIT_CONFIG_KEPT.test(output.output)) {
      const branch = GIT_BRANCH_DONE.test(output.output) || (GIT_BRANCH_DELETED.test(output.output) && /Update of config-file failed/.test(output.output))
      lines.push(branch ? GIT_BRANCH_LINE : GIT_CONFIG_LINE)
    }
    if (output.undone !== undefined) {
      const kept = output.undoneKeptIn === undefined ? "" : ` and kept in ${output.undoneKeptIn} for the person`
      const git = output.undone.filter(isGitPlace)
      const own = output.undone.filter((path) => !isGitPlace(path))
      if (own.length > 0) {
        lines.push(
          `Undone: ${own.join(", ")}. The command changed core's own configuration, which changes only with a ` +
            `person's approval: what it wrote there was taken out${kept}, and what it moved away or changed put back. ` +
            "Ask the person to make that change.",
        )
      }
      if (git.length > 0) {
        lines.push(
          `Undone: ${git.join(", ")}. git runs these for the user outside the sandbox (hooks, its config, a .git ` +
            `that points elsewhere), so a command may not make or replace them: they were taken out${kept}.` +
            (git.some((path) => path.endsWith(`${sep}.git`))
              ? " What the command put in place of the repository went too; the repository is back where it was if it was still in the Location whole."
              : "") +
            (git.some((path) => path.endsWith(`${sep}.git${sep}config`))
              ? " The repository's objects, refs, index and files stay; without its config, a clone's remote and " +
                "upstream are gone: ask the person to add what it needs (git remote add origin URL)."
              : ""),
        )
      }
    }
    if (output.unchecked !== undefined) lines.push(output.unchecked)
    return lines.join("\n")
  }

/** Whether an undone path is one of git's (in a `.git`, or a HEAD that made the Location a bare repository). */
const isGitPlace = (path: string): boolean =>
  /(?:^|\/)\.git(?:\/|$)/.test(path) ||
  basename(path) === "HEAD" ||
  // In a bare repository (`git init --bare`): its hooks, config, info/attributes.
  Git.isGitDirectory(dirname(path)) ||
  Git.isGitDirectory(dirname(dirname(path)))

/** Variables a command never sees besides core's secrets (Shell.secrets): those that would move `cd` where its checks did not look. */
const WITHHELD = ["CDPATH", "OLDPWD"]

/**
 * Set for every command: nothing can answer a prompt or page through output, and no terminal is attached. No editor
 * either: `git commit` without `-m` opened vim, which waited for a person until the call timed out; with `false`,
 * git says at once to give the message with -m or -F.
 */
const NON_INTERACTIVE = {
  PAGER: "cat",
  GIT_PAGER: "cat",
  GIT_TERMINAL_PROMPT: "0",
  TERM: "dumb",
  GIT_EDITOR: "false",
  GIT_SEQUENCE_EDITOR: "false",
  EDITOR: "false",
  VISUAL: "false",
}

/** The whole environment of a command: core's current one, less its secrets and what is withheld, plus the non-interactive defaults. */
const environment = (): Record<string, string | undefined> => {
  const env: Record<string, string | undefined> = { ...Shell.withoutSecrets(process.env), ...NON_INTERACTIVE }
  for (const name of WITHHELD) delete env[name]
  return env
}

const spawnFailure = (error: Shell.SpawnError): string => {
  switch (error.code) {
    case "EMOVED":
    case "EUNSEARCHED":
    case "EUNCOVERED":
      return error.message
    case "E2BIG":
      return "The command is too long for the system to run (E2BIG). Write it to a script file and run that file instead."
    case "EMFILE":
    case "ENFILE":
    case "EAGAIN":
    case "ENOMEM":
      return `${error.message}. The system is short of processes, files or memory: wait a moment and try again.`
    default:
      return `${error.message}. Check that bash can run here.`
  }
}

/** The directories outside the Location this call was approved to use: its external_directory checks and written files. */
const approved = (directory: string, needs: Needs): ReadonlyArray<string> => [
  ...[...needs.external].map((pattern) => pattern.slice(0, -2)),
  ...[...needs.written].filter((path) => !Boundary.isWithin(directory, path)).map(dirname),
]

/** `<dir>/*` may be saved as it is only when the directory itself holds no wildcard character. */
const savable = (pattern: string): ReadonlyArray<string> => (/[*?]/.test(pattern.slice(0, -2)) ? [] : [pattern])

const lastLine = (tail: string): string => {
  const lines = tail.split("\n").filter((line) => line.trim() !== "")
  return (lines[lines.length - 1] ?? "").slice(0, 200)
}

/**
 * What a command line needs before it runs, found from its text alone: nothing is asked, run or told to the model.
 * Both `execute` and the explaining plan start here.
 */
interface Needs {
  readonly workdir: Boundary.Resolved
  /** `external_directory` on the directories outside the Location that the workdir and known paths lie in. */
  readonly external: ReadonlySet<string>
  /** Files a redirection writes, by known path: each is checked as an edit (outside: external_directory first). */
  readonly written: ReadonlySet<string>
  /**
   * Paths in core's data directory the line only reads: checked as reads, which refuse them (no tool or command
   * reads it; asking a person to approve an edit of it would grant nothing).
   */
  readonly secrets: ReadonlySet<string>
  /** Files the line reads, as the `read` rules name them (relative inside the Location, absolute outside). */
  readonly reads: ReadonlySet<string>
  /** Files a redirection writes whose path cannot be known: checked as an edit of the text written. */
  readonly edits: ReadonlySet<string>
  /** Core's own configuration (Protected): targets of changes after a `cd`, whose place the text cannot tell. */
  readonly unsure: ReadonlySet<string>
  /**
   * Whether the line may change a path known only when it runs, as a whole (a script it writes; without the OS
   * keeping core's configuration, anything it cannot read): then every opaque check is protected too.
   */
  readonly unknownChange: boolean
  /** The commands (their checks' resources) that may change a path known only when they run: theirs is protected. */
  readonly unknownChanges: ReadonlySet<string>
  /** The commands the line runs, checked by their text. */
  readonly plain: ReadonlyArray<CommandChecks.Check>
  /** What cannot be known from the text: asked every time. */
  readonly opaque: ReadonlyArray<CommandChecks.Check>
  readonly unparsed: string | undefined
  /** Whether the OS keeps core's configuration from the commands (Shell.guarded): when not, `written` is unconfined. */
  readonly guarded: boolean
}

/** A process's own view of /proc, by its text: what is under it differs for the command and for core. */
const PROCESS_VIEW = /^\/proc\/(self|thread-self|\d+)(\/|$)/
const PROCESS_VIEW_WHY = "it changes a path in a process's own view of /proc, which core cannot look up for the command"

/** How many places a line's moves may leave it in before its relative changes are asked of a person instead. */
const MAX_PLACES = 16

/**
 * The directories other than `workdir` a line may run a command in after its moves (`targets`, in order): each
 * literal `cd`, `pushd` or `env -C` target, from every place the line may be in by then (a move that fails leaves it
 * where it was), as the system walks it and, where it holds `..`, as bash's `cd` reads it (the logical path: `cd
 * link/..` is where it started). Undefined where one move's target is not in the text (`cd $D`, `cd t*`, `cd -`,
 * `popd`, `cd` alone) or they are more than MAX_PLACES.
 */
const placesOf = (targets: ReadonlyArray<CommandLine.Word | null>, workdir: string): ReadonlyArray<string> | undefined => {
  const places = new Set([workdir])
  for (const target of targets) {
    // A pattern (`cd t*`) names the folder bash finds when it runs: not placed from the text.
    if (target === null || target.value === undefined || target.glob) return undefined
    for (const from of [...places]) {
      const physical = CommandChecks.locate(target, from)
      if (physical === undefined) return undefined
      places.add(physical)
      if (/(^|\/)\.\.(\/|$)/.test(target.value) && !target.tilde) places.add(resolve(from, target.value))
    }
    if (places.size > MAX_PLACES) return undefined
  }
  places.delete(workdir)
  return [...places]
}

/** The longest command bash can be given (one argument: Linux's MAX_ARG_STRLEN less its terminating NUL). */
const MAX_COMMAND_BYTES = 128 * 1024 - 1

const needsOf = Effect.fnUntraced(function* (
  directory: string,
  input: Input,
  roots: Protected.Roots,
  /** Whether the OS keeps core's configuration from the commands (Shell.guarded); when not, these checks alone do. */
  guarded: boolean,
  /** Whether the agent's `read` rules deny a file by its real path; undefined when none denies anything. */
  readDenied?: (real: string) => boolean,
  /** Whether its `edit` rules deny one; undefined when none denies anything. */
  editDenied?: (real: string) => boolean,
) {
  const command = input.command
  // bash is given the line as one argument, which Linux holds to 128 KiB (MAX_ARG_STRLEN, its NUL included): a
  // longer one cannot run, and is refused before it is read (reading a line costs time in step with its length).
  const bytes = Buffer.byteLength(command)
  if (bytes > MAX_COMMAND_BYTES) {
    return yield* new Tool.Failure({
      message:
        `The command is ${bytes} bytes: bash is given it as one argument, which the system holds to ${MAX_COMMAND_BYTES} ` +
        "bytes, so it cannot run. Write it to a script file and run that file instead.",
    })
  }
  const workdir = yield* Boundary.resolve({ location: directory, path: input.workdir ?? "." }).pipe(
    Effect.catchTag("Boundary.PathError", (error) => Effect.fail(new Tool.Failure({ message: error.message }))),
  )
  const parsed = yield* CommandLine.parse(command)
  const found = CommandChecks.checks(parsed)
  // A line that runs nothing the grammar names (a comment, arithmetic) is still checked, as itself.
  const checks: ReadonlyArray<CommandChecks.Check> =
    found.length > 0 ? found : [{ resource: command.trim(), save: /[*?]/.test(command) ? undefined : command.trim() }]

  // Paths that cannot be known are already opaque checks; the known ones are checked here. A file a
  // redirection writes is checked as an edit (which asks external_directory itself when outside).
  const external = new Set<string>()
  if (workdir.pattern !== undefined) external.add(workdir.pattern)
  const written = new Set<string>()
  const secrets = new Set<string>()
  const edits = new Set<string>()
  // Core's own configuration (Protected): a path a command may change that leads there (or holds it), or into
  // core's data directory, is checked as an edit of it, which is then always asked of a person.
  const unsure = new Set<string>()
  // What cannot be known from the text (a line the grammar cannot read whole, `printf x 1<>core.json`; a command
  // named by an expansion, `$c y core.json`; git given a command to run, `git -c core.fsmonitor=… status`) may change
  // any path: without the OS keeping core's configuration, that is a change known only when it runs.
  const unknownChange = CommandChecks.scriptWrites(parsed) || (!guarded && found.some((check) => check.opaque !== undefined && check.reads !== true))
  // Each command of the line that may (`echo x > $TMPDIR/f` beside a `cat $TMPDIR/g`, which only reads).
  const unknownChanges = new Set<string>()
  const targets = CommandChecks.directoryChanges(parsed)
  const unplaced = CommandChecks.unplacedMoves(parsed)
  const moves = targets.length > 0 || unplaced
  // Where else a relative path may lead once the line moved (undefined: not from the text, and then such a path is
  // asked of a person). Not placed at all where a `cd` leads by what ran before it: a link the line makes (the disk
  // as checked does not hold it yet), `shopt -s cdable_vars`, find's -execdir (./placesOf for the rest).
  const places = !moves ? [] : unplaced || LineFiles.makesLinks(parsed) ? undefined : placesOf(targets, workdir.real)
  // The commands changing a path through a process's own view of /proc, with why: asked as ones changing a path
  // not known.
  const viewed = new Map<string, string>()
  // Without the OS keeping core's configuration, the git commands writing files in the work tree the line does not
  // name (`git checkout .`, `git reset --hard`), with why: asked of a person as a change of it. Those writing only
  // the paths they name are checked as changes of those paths.
  const rewrites = new Map<string, string>()
  const named: Array<CommandChecks.Path> = []
  for (const found of guarded ? [] : WorkTree.of(parsed)) {
    if ("whole" in found.writes) rewrites.set(found.owner, found.writes.whole)
    else for (const word of found.writes.paths) named.push({ word, writes: false, owner: found.owner, readsOnly: false, unknown: undefined, access: "write" })
  }
  /** Checks `path` of the line as naming `absolute` (one of the places it may lead). */
  const checkAt = Effect.fnUntraced(function* (path: CommandChecks.Path, absolute: string, changes: boolean) {
    const resolved = yield* Effect.result(Boundary.resolve({ location: directory, path: absolute }))
    // Through a process's own view of /proc (`/proc/self/cwd/core.json`, a link to `/proc/self/fd/0`) it leads
    // where core, another process, cannot look for the command: a change there is one of a path not known.
    if (changes && resolved._tag === "Success" && resolved.success.perProcess) {
      viewed.set(path.owner, PROCESS_VIEW_WHY)
      return
    }
    const secret = resolved._tag === "Success" && Protected.secretToCommands(roots, resolved.success.real)
    // Only read, by what the command is (`cat`, `ls`) or by what its table says this operand is (a copy's source).
    if (secret && !path.writes && (!changes || path.access === "read" || path.access === "none")) {
      secrets.add(absolute)
      return
    }
    // A glob of names in a folder (`*.txt`) changes the entries it names, not every one the folder holds.
    const globbed = CommandChecks.lastGlob(path.word)
    const options = { encloses: !guarded, enclosesCode: !guarded }
    const kept =
      resolved._tag === "Success" &&
      ((changes &&
        (globbed === undefined
          ? Protected.change(roots, resolved.success.real, options)
          : Protected.changeMatching(roots, resolved.success.real, globbed, options)) !== undefined) ||
        secret)
    if ((path.writes || kept) && resolved._tag === "Success") {
      written.add(absolute)
      return
    }
    // A path that cannot be resolved (a loop, a file used as a directory) is judged by where it is written.
    const pattern =
      resolved._tag === "Success"
        ? resolved.success.pattern
        : Boundary.isWithin(directory, absolute)
          ? undefined
          : `${dirname(absolute)}${sep}*`
    if (pattern !== undefined) external.add(pattern)
    if (path.writes) edits.add(Builtin.display(directory, absolute))
  })
  for (const path of [...CommandChecks.paths(parsed), ...named]) {
    // Written by what its table says this operand is (`sort -o FILE`), or by a command not known to only read.
    const changes = CommandChecks.changes(path)
    if (path.unknown !== undefined) {
      if (path.writes) edits.add(path.word.text)
      if (changes) unknownChanges.add(path.owner)
      continue
    }
    if (changes && moves && !Protected.anchored(path.word.value)) {
      // Checked where it leads from every place the line may be in, as the operand of a command run there.
      if (places === undefined) unsure.add(path.word.text)
      else {
        for (const place of places) {
          const absolute = CommandChecks.locate(path.word, place)
          if (absolute === undefined) unsure.add(path.word.text)
          else yield* checkAt(path, absolute, changes)
        }
      }
    }
    const absolute = CommandChecks.locate(path.word, workdir.real)
    if (absolute === undefined) continue
    yield* checkAt(path, absolute, changes)
  }
  // Any other word that may name a file a command changes (CommandChecks.mentioned: an argument of a program not in
  // the file table, an option's value such as `of=x`), naming a protected place: `git checkout core.json`.
  for (const word of CommandChecks.mentioned(parsed)) {
    if (!word.writes && word.readsOnly) continue
    if (word.unknown !== undefined) {
      if (word.writes) unknownChanges.add(word.owner)
      continue
    }
    const absolute = CommandChecks.locate(word.word, workdir.real)
    if (absolute !== undefined && PROCESS_VIEW.test(absolute)) viewed.set(word.owner, PROCESS_VIEW_WHY)
    else if (absolute !== undefined && Protected.named(roots, absolute)) written.add(absolute)
  }
  // The files the line reads or changes by what its commands do: each meets the `read` or `edit` rules on its path.
  const files = yield* LineFiles.of({
    directory,
    workdir: workdir.real,
    parsed,
    ...(readDenied === undefined ? {} : { readDenied }),
    ...(editDenied === undefined ? {} : { editDenied }),
  })
  for (const path of files.written) written.add(path)
  if (files.viewed) viewed.set(command.trim(), PROCESS_VIEW_WHY)
  // There a relative path may name a descriptor (`> fd/0` in /dev reopens what `0<` opened to read).
  if (workdir.perProcess || /^\/(dev|proc)(\/|$)/.test(workdir.real)) {
    viewed.set(command.trim(), `it runs in ${workdir.real}, where a relative path may name one of its descriptors`)
  }
  return {
    workdir,
    external,
    reads: files.reads,
    written,
    secrets,
    edits,
    unsure,
    unknownChange,
    unknownChanges: new Set([...unknownChanges, ...viewed.keys()]),
    plain: checks.filter((check) => check.opaque === undefined && !viewed.has(check.resource) && !rewrites.has(check.resource)),
    opaque: [
      ...[...rewrites].map(([resource, why]): CommandChecks.Check => ({ resource, save: undefined, opaque: why, protected: WorkTree.WHAT })),
      ...checks.filter((check) => check.opaque !== undefined),
      ...[...viewed]
        .filter(([resource]) => !checks.some((check) => check.opaque !== undefined && check.resource === resource))
        .map(([resource, why]): CommandChecks.Check => ({ resource, save: undefined, opaque: why })),
    ],
    unparsed: parsed.unparsed,
    guarded,
  } satisfies Needs
})

/**
 * The `bash` checks of a line: its plain commands (an "always" saves the prefixes of those actually asked about,
 * never of commands in the same line already allowed) and what cannot be known (asked every time, saving
 * nothing); whichever holds a denied resource comes first, so nobody is asked in vain.
 */
const commandChecks = Effect.fnUntraced(function* (services: Builtin.Services, agent: string, needs: Needs) {
  const { plain, opaque } = needs
  const all = [...plain, ...opaque]
  const variants = all.flatMap((check) => check.variants ?? [])
  const decisions = yield* services.permission
    .explain({ agent, action: NAME, resources: all.map((check) => check.resource).concat(variants) })
  const decisionOf = new Map(decisions.map((decision) => [decision.resource, decision]))
  // Another spelling of a command (its flags apart, its quotes undone, git's options left out: CommandChecks.Check)
  // that a rule of its own denies or asks about meets that rule, as the spelling written would: a rule that also
  // matches the command as written (a catch-all a later rule overrode for it) is not one of its own.
  const stricter = (check: CommandChecks.Check, effect: "deny" | "ask") =>
    (check.variants ?? []).filter((variant) => {
      const decision = decisionOf.get(variant)
      return decision?.effect === effect && decision.rule !== undefined && !Rule.matches(decision.rule.resource, check.resource)
    })
  const denied = all.flatMap((check) => stricter(check, "deny"))
  // Asked as written, each time (an "always" saves nothing: no pattern of the spelling written says what was
  // approved); a person's own approval of the spelling written stands.
  const askedAs = plain.filter((check) => {
    const own = decisionOf.get(check.resource)
    return own?.effect === "allow" && own.approvedBy === undefined && stricter(check, "ask").length > 0
  })
  const asked = new Set(decisions.filter((decision) => decision.effect === "ask").map((decision) => decision.resource))
  const save = [
    ...new Set(plain.flatMap((check) => (asked.has(check.resource) && check.save !== undefined ? [check.save] : []))),
  ]
  const checks: Array<Permission.Check> = []
  if (denied.length > 0) checks.push({ action: NAME, resources: denied, save: [] })
  if (plain.length > 0) checks.push({ action: NAME, resources: plain.map((check) => check.resource), save })
  if (askedAs.length > 0) checks.push({ action: NAME, resources: askedAs.map((check) => check.resource), save: [], ask: true })
  // What plants code the user's own programs run is asked of a person each time, as core's configuration is.
  const planted = opaque.filter((check) => check.protected !== undefined)
  if (planted.length > 0) {
    checks.push({ action: NAME, resources: planted.map((check) => check.resource), save: [], ask: true, protected: planted[0]!.protected! })
  }
  // What cannot be known is asked each time; of a person where it may change a path known only when it runs.
  const unknown = opaque.filter((check) => check.protected === undefined)
  const changing = (check: CommandChecks.Check) => needs.unknownChange || needs.unknownChanges.has(check.resource)
  const unsure = unknown.filter(changing)
  if (unsure.length > 0) {
    checks.push({ action: NAME, resources: unsure.map((check) => check.resource), save: [], ask: true, protected: Protected.UNKNOWN_TARGET })
  }
  const reading = unknown.filter((check) => !changing(check))
  if (reading.length > 0) checks.push({ action: NAME, resources: reading.map((check) => check.resource), save: [], ask: true })
  const deniedOpaque = decisions.some(
    (decision) => decision.effect === "deny" && opaque.some((check) => check.resource === decision.resource),
  )
  return deniedOpaque ? checks.reverse() : checks
})

const externalCheck = (needs: Needs): ReadonlyArray<Permission.Check> =>
  needs.external.size === 0
    ? []
    : [{ action: "external_directory", resources: [...needs.external], save: [...needs.external].flatMap(savable) }]

const readCheck = (needs: Needs): ReadonlyArray<Permission.Check> =>
  needs.reads.size === 0
    ? []
    : [{ action: "read", resources: [...needs.reads], save: [...needs.reads].filter((resource) => !/[*?]/.test(resource)) }]

const editCheck = (needs: Needs): ReadonlyArray<Permission.Check> => [
  ...(needs.edits.size === 0 ? [] : [{ action: "edit", resources: [...needs.edits], save: [] }]),
  ...(needs.unsure.size === 0
    ? []
    : [{ action: "edit", resources: [...needs.unsure], save: [], ask: true as const, protected: Protected.AFTER_CD }]),
]

/**
 * The checks a line makes, in order: `external_directory` for the workdir and outside paths (`outside`, made
 * before the workdir is looked at), then (`inside`) the files its redirections write as edits, the edits of paths
 * that cannot be known, and the commands. `execute` makes exactly these, and the plan explains exactly these.
 */
const checksOf = Effect.fnUntraced(function* (services: Builtin.Services, agent: string, needs: Needs) {
  // Refused as a read of core's data directory is, before anything is asked.
  yield* Effect.forEach([...needs.secrets], (path) => Builtin.pathPlan(services, { action: "read", path, access: "read", command: true }))
  const written = yield* Effect.forEach([...needs.written], (path) =>
    Builtin.pathPlan(services, { action: "edit", path, access: "write", ...(needs.guarded ? {} : { unconfined: true as const }) }),
  )
  // Leaving the Location is asked once per directory: a written file's own external_directory check is dropped
  // when the line's outside paths already ask it.
  const asked = new Set(needs.external)
  const edits = written.flat().filter((check) => {
    if (check.action !== "external_directory") return true
    const fresh = check.resources.some((resource) => !asked.has(resource))
    for (const resource of check.resources) asked.add(resource)
    return fresh
  })
  return {
    outside: externalCheck(needs),
    inside: [...merged(edits), ...readCheck(needs), ...editCheck(needs), ...(yield* commandChecks(services, agent, needs))],
  }
})

/**
 * Plain checks of one action asked together: one ask for the files a line changes (`rm *.log` names each match),
 * not one per file. Checks asked every time, or of core's configuration, stay apart, each as it is.
 */
const merged = (checks: ReadonlyArray<Permission.Check>): ReadonlyArray<Permission.Check> => {
  const out: Array<Permission.Check | { readonly action: string; readonly resources: Set<string>; readonly save: Set<string> }> = []
  const plain = new Map<string, { readonly action: string; readonly resources: Set<string>; readonly save: Set<string> }>()
  for (const check of checks) {
    if (check.ask === true || check.protected !== undefined) {
      out.push(check)
      continue
    }
    const known = plain.get(check.action)
    if (known === undefined) {
      const entry = { action: check.action, resources: new Set(check.resources), save: new Set(check.save) }
      plain.set(check.action, entry)
      out.push(entry)
      continue
    }
    for (const resource of check.resources) known.resources.add(resource)
    for (const pattern of check.save) known.save.add(pattern)
  }
  return out.map((check) =>
    check.resources instanceof Set ? { action: check.action, resources: [...check.resources], save: [...check.save] } : (check as Permission.Check),
  )
}

/** The checks a call would make, in order, for explaining it (Builtin.planned). */
const plan = (services: Builtin.Services) => (input: Input, agent: string) =>
  Effect.gen(function* () {
    const needs = yield* needsOf(
      services.directory,
      input,
      services.permission.protectedRoots,
      services.shell.guarded,
      Builtin.readDenied(services, agent),
      Builtin.editDenied(services, agent),
    )
    const { outside, inside } = yield* checksOf(services, agent, needs)
    return [...outside, ...inside]
  })

/** A denied line ran in no part: the refusal says so, so the model does not look for what did. */
const nothingRan = (denied: Refusal.Denied) =>
  Effect.fail(new Refusal.Denied({ action: denied.action, resource: denied.resource, message: `${denied.message} ${Refusal.NOTHING_RAN}` }))

const makeTool = (services: Builtin.Services) => {
  const { directory, shell } = services
  const limits = shell.limits
  return Builtin.tool({
    description: describe(limits, shell.sandbox.active),
    input: inputOf(limits.maxTimeoutMs),
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    toModelOutput: ({ input, output }) => text(limits)(output, input.command),
    execute: (input, context) =>
      Effect.gen(function* () {
        const command = input.command
        if (command.trim() === "") {
          return yield* new Tool.Failure({ message: "The command is empty. Give a bash command line to run, e.g. `ls -la`." })
        }
        if (command.includes("\0")) {
          return yield* new Tool.Failure({ message: "The command contains a NUL byte, which no process can be given. Remove it and try again." })
        }

        const readDenied = Builtin.readDenied(services, context.agent)
        const editDenied = Builtin.editDenied(services, context.agent)
        const needs = yield* needsOf(directory, input, services.permission.protectedRoots, shell.guarded, readDenied, editDenied)
        const { workdir } = needs
        const { outside, inside } = yield* checksOf(services, context.agent, needs)
        const metadata = { tool: NAME, command, ...(input.description === undefined ? {} : { description: input.description }) }
        const unknown = needs.opaque.map((entry) => `${entry.resource}: ${entry.opaque}`)
        const extra = (checked: Permission.Check) =>
          checked.ask === true ? { unknown } : needs.unparsed === undefined ? {} : { unparsed: needs.unparsed }
        // A rule denying anything the line touches refuses it before anyone is asked about the rest.
        yield* Builtin.refuseDenied(services, context, [...outside, ...inside]).pipe(Effect.catchTag("Permission.Denied", nothingRan))
        for (const checked of outside) yield* Builtin.authorize(services, context, [checked], { ...metadata, ...extra(checked) })

        // Only now, so that nothing is told about a directory outside the Location before it may be looked at.
        const shown = Builtin.display(directory, workdir.real)
        if (!workdir.exists) {
          return yield* new Tool.Failure({
            message: `The workdir ${shown} does not exist. Create it first, or run in an existing directory.`,
          })
        }
        if (workdir.kind !== "directory") {
          return yield* new Tool.Failure({
            message: `The workdir ${shown} is not a directory. Give the directory to run in (perhaps ${Builtin.display(directory, dirname(workdir.real))}).`,
          })
        }
        for (const checked of inside) yield* Builtin.authorize(services, context, [checked], { ...metadata, ...extra(checked) })

        const result = yield* shell
          .run({
            argv: [shell.shell, "-c", command],
            cwd: workdir.real,
            env: environment(),
            owner: context.sessionID,
            onWait: context.progress({
              message:
                `Waiting to start: ${Builtin.count(Supervised.MAX_RUNNING)} commands are running in this core, the most it ` +
                "runs at once (half its open-file limit); this one starts when one of them ends.",
            }),
            sandbox: {
              location: directory,
              approved: approved(directory, needs),
              // A protected check that passed was a person's approval, for this call, to change core's configuration.
              configuration: [...outside, ...inside].some((check) => check.protected !== undefined),
              // The other Locations this core serves: their configuration is no more the command's to change.
              others: services.permission.protectedRoots.others?.() ?? [],
              ...(services.permission.protectedRoots.others === undefined ? {} : { servedNow: services.permission.protectedRoots.others }),
              // What the agent's read rules deny is covered for every program the line runs, not only those the
              // operand table knows (where the kernel can: Shell.Sandbox).
              ...(readDenied === undefined ? {} : { readDenied }),
              // And what its edit rules deny is read-only to every program, whatever the line's text shows.
              ...(editDenied === undefined ? {} : { editDenied }),
            },
            ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
            onProgress: (update) =>
              context.progress({
                message: lastLine(update.tail),
                metadata: { tail: update.tail, bytes: update.bytes, elapsedMs: Math.round(update.elapsedMs) },
              }),
          })
          .pipe(
            Running.inTurn(context, limits.maxRunning),
            Effect.catchTag("Shell.SpawnError", (error) => Effect.fail(new Tool.Failure({ message: spawnFailure(error) }))),
          )
        return outputOf(result)
      }),
  })
}

/** The bash built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) => {
  const tool = makeTool(services)
  // A preview of a cut capture says the kept text is the text as captured, not the command's whole output.
  Internal.reportsCaptureLoss<typeof Output.Encoded>(tool, (output) => !output.capture.output.complete)
  // Its execute goes on preparing (the line parsed, the sandbox and guard set up) and ends the turn itself.
  return Turn.keeps(Builtin.planned(tool, plan(services)))
}
