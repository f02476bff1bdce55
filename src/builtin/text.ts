export * as Text from "./text"

// How the editing built-ins (write, edit, apply_patch) read and replace text files: strict UTF-8, the byte order
// mark and line-ending style kept, writes that replace a file atomically (a temp file in the same directory, then
// a rename, with the old file's mode), and the check that keeps a change from overwriting what someone else wrote
// while it was being made (between the call reading the file and replacing it). It never checks permissions:
// callers pass real paths they have already authorized, and every file operation here is pinned to them
// (../permission/pinned): a directory swapped for a symlink after the check fails the operation, never leads it
// (or a temp file) elsewhere.

import { constants, lstatSync, readdirSync } from "node:fs"
import { basename, dirname } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Json } from "../config/json"
import { Git } from "../permission/git"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { FileLock } from "./file-lock"

/**
 * node:fs/promises, loaded on first use: it costs milliseconds of start-up, and every core that settles in process
 * imports this module.
 */
const fsp = (): typeof import("node:fs/promises") => require("node:fs/promises")

export type Eol = "\n" | "\r\n"

/** A file's text with its encoding details taken out: `text` has no BOM; line endings are as in the file. */
export interface Decoded {
  readonly text: string
  readonly bom: boolean
  /** The file's dominant line ending ("\n" when it has none). */
  readonly eol: Eol
}

/** What was read, to write back only if the file is still exactly that. */
export interface Snapshot {
  readonly bytes: Uint8Array
  readonly size: bigint
  readonly mtimeNs: bigint
  readonly ino: bigint
  /** Permission bits, given to the file that replaces it. */
  readonly mode: number
  /** Its owner and group, given to the file that replaces it where core may (as root; see `prepare`). */
  readonly uid: number
  readonly gid: number
  /** Its hard links: names other than this one go on naming the file it was, with the old content. */
  readonly links: number
}

/** What a file that replaces another keeps of it: its mode, owner and group (and its links, which it cannot keep). */
export type Kept = Pick<Snapshot, "mode" | "uid" | "gid"> & Partial<Pick<Snapshot, "links">>

/** A file split into lines, each with its own terminator ("" for a last line without one). */
export interface Lines {
  readonly texts: ReadonlyArray<string>
  readonly ends: ReadonlyArray<string>
}

/** Replace `remove` lines at `at` with `insert` (line texts without terminators). */
export interface Splice {
  readonly at: number
  readonly remove: number
  readonly insert: ReadonlyArray<string>
  /**
   * For each inserted line that repeats a line of the file unchanged (a patch's context line): that line's index,
   * so it keeps its own terminator. Undefined entries (or no array) are new lines.
   */
  readonly kept?: ReadonlyArray<number | undefined>
}

/** A file read to be changed turned out not to be a regular file (one swapped in for it after it was checked). */
const NOT_REGULAR = "ENOTREGULAR"

/**
 * Opens `path` to read it as a file to change: without waiting (a FIFO put in its place would block the open, in a
 * step of a change no cancel stops), and only as a regular file.
 */
const openRegular = async (path: string) => {
  const handle = await Pinned.openFile(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const stats = await handle.stat({ bigint: true })
  if (stats.isFile()) return { handle, stats }
  await handle.close()
  throw Object.assign(new Error(`${path} is not a regular file`), { code: NOT_REGULAR })
}

// The error codes a file operation may meet in an ordinary environment; anything else is a defect.
const REASONS: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "the operation is not permitted",
  EROFS: "the file system is read-only",
  ENOSPC: "no space is left on the device",
  EDQUOT: "the disk quota is exhausted",
  EFBIG: "the file is too large",
  EISDIR: "it is a directory",
  ENOTDIR: "a component of the path is not a directory",
  ENOENT: "it, or a directory it needs, does not exist",
  ENAMETOOLONG: "the name is too long",
  ELOOP: "it goes through too many symbolic links",
  ETXTBSY: "it is a program that is running",
  EBUSY: "the file or device is busy",
  EEXIST: "it already exists",
  EXDEV: "it is on another file system",
  EMFILE: "too many files are open",
  ENFILE: "too many files are open",
  [NOT_REGULAR]: "it is no longer a regular file (a pipe, a device or another kind was put in its place)",
  [Pinned.MOVED]: "a directory on its path was replaced while it was being used, so it no longer leads where it was checked",
}

/** What to do about an operation that failed with `code`, in a sentence. */
const adviceOf = (code: string): string => {
  if (code === "ENOSPC" || code === "EDQUOT") return "free space there (or ask the user to), then try again."
  if (code === "EROFS") return "nothing on that file system can change; ask the user, or use a path elsewhere."
  if (code === "EMFILE" || code === "ENFILE") return "try again in a moment."
  return "check the path and its permissions, or use another path."
}

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/**
 * Runs one file operation; an error an ordinary environment produces (permission, read-only, missing directory,
 * full disk...) becomes a model-visible failure saying which operation on which path, anything else a defect.
 */
export const io = <A>(operation: string, shown: string, run: () => Promise<A>): Effect.Effect<A, Tool.Failure> =>
  Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
    Effect.catch((cause) => {
      if (cause instanceof TooLarge) {
        const mib = (Number(cause.message) / (1024 * 1024)).toFixed(1)
        return Effect.fail(
          new Tool.Failure({
            message:
              `${shown} is ${mib} MiB: write, edit and apply_patch change files of at most ${MAX_CHANGE_BYTES / (1024 * 1024)} MiB. ` +
              "Nothing was changed. Change it with a command (bash: sed, or a script), or in parts.",
          }),
        )
      }
      const code = codeOf(cause)
      const reason = code === undefined ? undefined : REASONS[code]
      if (reason === undefined) return Effect.die(cause)
      return Effect.fail(new Tool.Failure({ message: `Cannot ${operation} ${shown}: ${reason} (${code}). Nothing was changed; ${adviceOf(code!)}` }))
    }),
  )

const BOM = [0xef, 0xbb, 0xbf] as const
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const encoder = new TextEncoder()

/** The offset of the first byte that is not part of valid UTF-8 (only called once decoding has failed). */
const firstInvalid = (bytes: Uint8Array): number => {
  let index = 0
  while (index < bytes.length) {
    const byte = bytes[index]!
    const length = byte < 0x80 ? 1 : byte >= 0xc2 && byte <= 0xdf ? 2 : byte >= 0xe0 && byte <= 0xef ? 3 : byte >= 0xf0 && byte <= 0xf4 ? 4 : 0
    if (length === 0 || index + length > bytes.length) return index
    const second = bytes[index + 1] ?? 0
    if (length >= 2) {
      const low = byte === 0xe0 ? 0xa0 : byte === 0xf0 ? 0x90 : 0x80
      const high = byte === 0xed ? 0x9f : byte === 0xf4 ? 0x8f : 0xbf
      if (second < low || second > high) return index
      for (let next = 2; next < length; next++) {
        const continuation = bytes[index + next]!
        if (continuation < 0x80 || continuation > 0xbf) return index
      }
    }
    index += length
  }
  return bytes.length
}

/** Whether the bytes start with a UTF-8 byte order mark. */
export const hasBom = (bytes: Uint8Array): boolean =>
  bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2]

/** The line ending most of the text's line breaks use; ties go to the first break's style. */
export const eolOf = (text: string): Eol => {
  let crlf = 0
  let lf = 0
  let first: Eol | undefined
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) {
    const isCrlf = index > 0 && text.charCodeAt(index - 1) === 13
    if (isCrlf) crlf++
    else lf++
    first ??= isCrlf ? "\r\n" : "\n"
  }
  if (crlf !== lf) return crlf > lf ? "\r\n" : "\n"
  return first ?? "\n"
}

/** Every line break of `text` written as `eol`. */
export const withEol = (text: string, eol: Eol): string =>
  eol === "\n" ? text.replaceAll("\r\n", "\n") : text.replace(/\r?\n/g, "\r\n")

/** The text of UTF-8 bytes, or undefined when they are not UTF-8 text (an invalid byte, or a NUL as binary files have). */
export const probe = (bytes: Uint8Array): Decoded | undefined => {
  const bom = hasBom(bytes)
  let text: string
  try {
    text = strict.decode(bom ? bytes.subarray(BOM.length) : bytes)
  } catch {
    return undefined
  }
  return text.includes("\0") ? undefined : { text, bom, eol: eolOf(text) }
}

/**
 * Decodes a file strictly: a file that is not UTF-8 text is a failure naming the first offending byte, since
 * rewriting it as text would corrupt it.
 */
export const decode = (bytes: Uint8Array, shown: string, tool: string): Effect.Effect<Decoded, Tool.Failure> =>
  Effect.suspend(() => {
    const decoded = probe(bytes)
    if (decoded !== undefined) return Effect.succeed(decoded)
    const body = hasBom(bytes) ? bytes.subarray(BOM.length) : bytes
    const invalid = firstInvalid(body)
    const what =
      invalid < body.length
        ? `it is not valid UTF-8 text (invalid byte at offset ${invalid + bytes.length - body.length})`
        : `it contains a NUL byte (at offset ${bytes.indexOf(0)}), so it is binary, not text`
    return Effect.fail(
      new Tool.Failure({
        message: `Cannot change ${shown} with ${tool}: ${what}. ${tool} only changes UTF-8 text files; leave binary files and other encodings alone, or convert the file first.`,
      }),
    )
  })

/** The bytes of `text` as UTF-8, with a byte order mark when `bom`. */
export const encode = (text: string, bom: boolean): Uint8Array => encoder.encode(bom ? `\uFEFF${text}` : text)

/**
 * Why text a model sent (`field`) cannot be written, when it holds half of a UTF-16 surrogate pair (JSON can carry
 * one, `"\ud83d"`): no character, it would be written as U+FFFD, and as a quoted text it could match half of a
 * character in the file. Undefined for text that is whole.
 */
export const halfCharacter = (field: string, text: string): string | undefined => {
  if (text.isWellFormed()) return undefined
  const { at, unit } = Json.halfAt(text)
  return (
    `${field} holds half of a character (the UTF-16 surrogate \\u${unit} at position ${at}, without its other half), ` +
    "which is no text and cannot be written to a file. Send whole characters, and call again."
  )
}

/**
 * The ending ("/", "/." or "/..") that makes a path name a directory, or undefined. Resolving a path drops it
 * (`a.txt/` resolves to `a.txt`, `new/.` to a file `new`), so a tool that needs a file checks the path as given.
 */
export const directoryEnding = (path: string): string | undefined => /\/\.{0,2}$/.exec(path)?.[0]

/** Why a file path with a directory ending (see `directoryEnding`) is refused, and what to give instead. */
export const namesDirectory = (ending: string): string =>
  `it ends with "${ending}", so it names a directory. Give a file path (without the trailing "${ending}", or with ` +
  "a file name after it)."

/** Number of lines in a text (a final line break does not start another line; "" has none). */
export const lineCount = (text: string): number => {
  if (text === "") return 0
  let count = 1
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) count++
  return text.endsWith("\n") ? count - 1 : count
}

/** Splits text into lines, keeping each line's own terminator so that untouched lines are written back as they were. */
export const lines = (text: string): Lines => {
  const texts: Array<string> = []
  const ends: Array<string> = []
  let start = 0
  while (start < text.length) {
    const newline = text.indexOf("\n", start)
    if (newline === -1) {
      texts.push(text.slice(start))
      ends.push("")
      break
    }
    const crlf = newline > start && text.charCodeAt(newline - 1) === 13
    texts.push(text.slice(start, crlf ? newline - 1 : newline))
    ends.push(crlf ? "\r\n" : "\n")
    start = newline + 1
  }
  return { texts, ends }
}

/**
 * The terminator for lines a change adds at `at` (removing `remove` lines): the ending of the first line it
 * replaces, else of the line before it, else of the line after it, else the file's dominant one.
 */
const neighbourEnding = (original: Lines, change: Splice, eol: Eol): string => {
  const { at, remove, insert, kept } = change
  // A patch's context lines are part of the splice but not of the change: the lines it replaces are the others, and
  // a pure addition's neighbours are the context lines around the first new line.
  const context = new Set(kept?.filter((index) => index !== undefined))
  let first = -1
  let last = -1
  for (let index = at; index < at + remove; index++) {
    if (context.has(index)) continue
    if (first === -1) first = index
    last = index
  }
  const added = insert.findIndex((_, index) => kept?.[index] === undefined)
  const candidates =
    first !== -1
      ? [first, first - 1, last + 1]
      : [-1, added > 0 ? (kept?.[added - 1] ?? at - 1) : at - 1, added !== -1 ? (kept?.[added + 1] ?? at + remove) : at + remove]
  for (const index of candidates) {
    const end = index >= 0 ? original.ends[index] : undefined
    if (end !== undefined && end !== "") return end
  }
  return eol
}

/**
 * Applies splices (sorted, not overlapping) to lines. Every line that is not changed keeps its own terminator
 * (a context line a splice repeats, see `Splice.kept`, too); new lines take their neighbours' (`neighbourEnding`),
 * so a file with mixed line endings changes only where it is changed. A line that gets a line after it is given a
 * terminator if it had none, so an addition after the last line of a file without a final line break never joins
 * onto it; and a file that did not end with a line break still does not (its new last line has none).
 */
export const splice = (original: Lines, splices: ReadonlyArray<Splice>, eol: Eol): string => {
  // Alternating line text and terminator.
  const parts: Array<string> = []
  let lastEnding: string = eol
  const push = (text: string, end: string) => {
    if (parts.length > 0 && parts[parts.length - 1] === "") parts[parts.length - 1] = lastEnding
    parts.push(text, end)
    if (end !== "") lastEnding = end
  }
  let next = 0
  const keep = (until: number) => {
    for (; next < until; next++) push(original.texts[next]!, original.ends[next]!)
  }
  for (const change of splices) {
    keep(change.at)
    const added = neighbourEnding(original, change, eol)
    change.insert.forEach((line, index) => {
      const kept = change.kept?.[index]
      const own = kept === undefined ? undefined : original.ends[kept]
      push(line, own === undefined || own === "" ? added : own)
    })
    next = change.at + change.remove
  }
  keep(original.texts.length)
  const unterminated = original.ends.length > 0 && original.ends[original.ends.length - 1] === ""
  if (unterminated && parts.length > 0) parts[parts.length - 1] = ""
  return parts.join("")
}

/**
 * The line breaks of `replacement` (text with "\n" breaks) written for the file, where it replaces `old` (the
 * file's own text, its breaks as they are). Breaks between lines the replacement keeps from `old` (same lines at
 * its start or end) keep their own ending; other breaks take the ending of the first break `old` had, else
 * `lineEnd` (the ending of the line the replacement ends on), else of the line `before` it, else `eol`.
 */
export const endingsLike = (
  old: string,
  replacement: string,
  before: string,
  lineEnd: string | undefined,
  eol: Eol,
): string => {
  if (!replacement.includes("\n")) return replacement
  const oldParts = old.split("\n")
  const oldBreaks = oldParts.slice(0, -1).map((part) => (part.endsWith("\r") ? "\r\n" : "\n"))
  const oldTexts = oldParts.map((part, index) => (index < oldParts.length - 1 && part.endsWith("\r") ? part.slice(0, -1) : part))
  const parts = replacement.split("\n")
  const previous = /\r?\n$/.exec(before.slice(-2))?.[0]
  const fallback = oldBreaks[0] ?? lineEnd ?? previous ?? eol
  let head = 0
  while (head < parts.length - 1 && head < oldBreaks.length && parts[head] === oldTexts[head]) head++
  let tail = 0
  while (
    tail < parts.length - 1 - head &&
    tail < oldBreaks.length - head &&
    parts[parts.length - 1 - tail] === oldTexts[oldTexts.length - 1 - tail]
  ) tail++
  const out: Array<string> = []
  for (let index = 0; index < parts.length; index++) {
    out.push(parts[index]!)
    if (index === parts.length - 1) break
    if (index < head) out.push(oldBreaks[index]!)
    else if (index >= parts.length - 1 - tail) out.push(oldBreaks[oldBreaks.length - (parts.length - 1 - index)]!)
    else out.push(fallback)
  }
  return out.join("")
}

/**
 * The largest file write, edit and apply_patch change: they hold it whole, its text and their work on it some twenty
 * times over (an edit of a 273 MB file held 5 GB and core serve's thread 15 s).
 */
export const MAX_CHANGE_BYTES = 16 * 1024 * 1024

class TooLarge extends Error {}

/** Reads a file's bytes and the facts `unchanged` compares, from one open file. */
export const read = (path: string, shown: string): Effect.Effect<Snapshot, Tool.Failure> =>
  io("read", shown, async () => {
    const { handle, stats } = await openRegular(path)
    try {
      if (stats.size > BigInt(MAX_CHANGE_BYTES)) throw new TooLarge(String(stats.size))
      const bytes = new Uint8Array(await handle.readFile())
      const mode = Number(stats.mode & 0o7777n)
      return {
        bytes,
        size: stats.size,
        mtimeNs: stats.mtimeNs,
        ino: stats.ino,
        mode,
        uid: Number(stats.uid),
        gid: Number(stats.gid),
        links: Number(stats.nlink),
      }
    } finally {
      await handle.close()
    }
  })

const sameBytes = (left: Uint8Array, right: Uint8Array): boolean =>
  left.length === right.length && Buffer.from(left.buffer, left.byteOffset, left.length).equals(right)

/**
 * Whether the file at `path` is still what `expected` read: same inode, size and modification time, and the same
 * bytes (a same-size rewrite within the file system's timestamp granularity changes no metadata).
 */
export const unchanged = (path: string, expected: Snapshot, shown: string): Effect.Effect<boolean, Tool.Failure> =>
  io("check", shown, async () => {
    let opened
    try {
      opened = await openRegular(path)
    } catch (cause) {
      // Gone, or something other than the file that was read: changed either way.
      if (codeOf(cause) === "ENOENT" || codeOf(cause) === NOT_REGULAR) return false
      throw cause
    }
    const { handle, stats } = opened
    try {
      if (stats.ino !== expected.ino || stats.size !== expected.size || stats.mtimeNs !== expected.mtimeNs) return false
      return sameBytes(new Uint8Array(await handle.readFile()), expected.bytes)
    } finally {
      await handle.close()
    }
  })

/** The failure an edit reports when the file changed between reading it and replacing it. */
export const changed = (shown: string): Tool.Failure =>
  new Tool.Failure({
    message:
      `${shown} changed on disk while the change was being made (another program or call wrote it after this call ` +
      "read it), so nothing was written. Read it again and redo the change against its current content.",
  })

/** A temp file holding new content, in the held directory of the file it will replace (see `prepare`). */
export interface Staged {
  readonly directory: Pinned.Directory
  readonly name: string
  /** What the file it replaces had that it will not (see `notKept`): said to the model, who tells the user. */
  readonly lost: ReadonlyArray<string>
}

/**
 * What a file put in place of another by a rename does not keep of it: its owner (only root gives files away: a
 * user's edit of another's file makes it the user's, and its owner may lose access), its group (where the user is
 * not in it), its other hard links (they keep naming the old file, with the old content).
 */
const notKept = (kept: Kept, now: { readonly uid: number; readonly gid: number }): ReadonlyArray<string> => {
  const lost: Array<string> = []
  if (now.uid !== kept.uid) lost.push(`its owner (uid ${kept.uid}): it is now owned by uid ${now.uid}, and its owner may have lost access to it`)
  if (now.gid !== kept.gid) lost.push(`its group (gid ${kept.gid}): it is now in group gid ${now.gid}`)
  const others = (kept.links ?? 1) - 1
  if (others > 0) {
    lost.push(`its ${others === 1 ? "other hard link" : `${others} other hard links`}: ${others === 1 ? "that name still holds" : "those names still hold"} the old content`)
  }
  return lost
}

/** What a changed file did not keep of the one it replaced, as the editing tools' outputs carry it. */
export const NotKept = Schema.Array(Schema.String).annotate({
  description: "What the file had that the new one did not keep (its owner, its group, its other hard links): tell the user",
})

/** What a change says of a file that did not keep everything it had (`lost`), for the model to tell the user. */
export const notKeptNote = (shown: string, lost: ReadonlyArray<string> | undefined): string =>
  lost === undefined || lost.length === 0 ? "" : `\nNote: the new ${shown} did not keep ${lost.join("; nor ")}. Tell the user.`

/**
 * A temp file holding the new content, beside the file it will replace so the rename stays on one file system.
 * The directory stays held until the temp file is committed or discarded.
 */
export const prepare = (
  target: string,
  bytes: Uint8Array,
  kept: Kept | undefined,
  shown: string,
): Effect.Effect<Staged, Tool.Failure> => {
  const mode = kept?.mode
  const name = `.core-${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}.tmp`
  return io("write", shown, async () => {
    const directory = await Pinned.directory(dirname(target))
    const staged = { directory, name, lost: [] as ReadonlyArray<string> }
    let handle
    try {
      handle = await Pinned.create(directory, name, mode ?? 0o666)
    } catch (cause) {
      await directory.close()
      throw cause
    }
    try {
      await handle.writeFile(bytes)
      // An overwritten file keeps its owner and group: core run as root (a container) would otherwise hand the
      // user's file to root, and its owner could no longer read it. Only root may give a file away; anyone else
      // writes files as their own, as every editor does. Before the mode: a change of owner clears set-id bits.
      if (kept !== undefined && (kept.uid !== process.getuid?.() || kept.gid !== process.getgid?.())) {
        // Not root: the owner cannot be kept, but the group can where the user is in it (a group-shared file
        // whose group lost access when it came back in the user's own group).
        await handle.chown(kept.uid, kept.gid).catch(() => handle.chown(-1, kept.gid).catch(() => undefined))
      }
      // The umask narrowed the mode given to open; an overwritten file keeps exactly its own.
      if (mode !== undefined) await handle.chmod(mode)
      // The rename must never publish a file whose data has not reached the disk.
      await handle.datasync()
      if (kept !== undefined) staged.lost = notKept(kept, await handle.stat())
    } catch (cause) {
      await handle.close()
      await unlinkStaged(staged)
      throw cause
    }
    await handle.close()
    return staged
  })
}

const unlinkStaged = async (staged: Staged): Promise<void> => {
  // Committed already (its directory let go): nothing is left to remove.
  await Promise.resolve()
    .then(() => fsp().unlink(staged.directory.at(staged.name)))
    .catch(() => undefined)
  await staged.directory.close().catch(() => undefined)
}

/** Removes a temp file that will not be committed (it may already be gone), and lets its directory go. */
export const discard = (staged: Staged): Effect.Effect<void> => Effect.promise(() => unlinkStaged(staged))

/** Puts a prepared temp file in place of `target` (in the same directory) in one step. */
export const commit = (staged: Staged, target: string, shown: string): Effect.Effect<void, Tool.Failure> =>
  Effect.suspend(() =>
    dirname(target) === staged.directory.path
      ? io("write", shown, async () => {
          await Pinned.renameIn(staged.directory, staged.name, basename(target))
          await staged.directory.close()
        }).pipe(Effect.onError(() => discard(staged)))
      : Effect.die(new Error(`A temp file staged in ${staged.directory.path} cannot replace ${target}`)),
  )

/** Removes the file at `target`, through its directory as checked. */
export const remove = (target: string, shown: string): Effect.Effect<void, Tool.Failure> =>
  io("delete", shown, () => Pinned.remove(target))

export interface WriteOptions {
  readonly path: string
  readonly bytes: Uint8Array
  /** How the path is shown in messages. */
  readonly shown: string
  /** The mode, owner and group to give the file (an overwritten file's own); the defaults otherwise. */
  readonly kept?: Kept
  /** When set, the write happens only if the file is still exactly this. */
  readonly expected?: Snapshot
  /**
   * A file a person was not asked about, with the folders around it that were git repositories before this change
   * made any folder (Git.repositoriesAround): the names that would make a folder around it a repository with it
   * (Git.repositoryNames) are held with it while it is checked and made, and it is not made if one now would be.
   */
  readonly unasked?: ReadonlyArray<string>
}

/**
 * Replaces (or creates) a file atomically: readers see the old content or the new one, never a part. With
 * `expected`, the file is compared just before the rename and left alone if it changed.
 */
export const write = (options: WriteOptions): Effect.Effect<void, Tool.Failure> =>
  Effect.gen(function* () {
    const temp = yield* prepare(options.path, options.bytes, options.kept, options.shown)
    if (options.expected !== undefined) {
      const same = yield* unchanged(options.path, options.expected, options.shown).pipe(
        Effect.onError(() => discard(temp)),
      )
      if (!same) {
        yield* discard(temp)
        return yield* changed(options.shown)
      }
    }
    yield* commit(temp, options.path, options.shown)
  })

/**
 * Creates the directories a new file needs. Answers the ones it created, deepest first, so that a change that
 * fails later can remove them again with `removeDirectories`.
 */
export const ensureDirectory = (directory: string, shown: string): Effect.Effect<ReadonlyArray<string>, Tool.Failure> =>
  io("create the directory for", shown, () => Pinned.makeDirectories(directory))

/** Who the file at `path` is (its device and inode), or undefined where nothing is. */
export const identityOf = (path: string): string | undefined => {
  try {
    const stats = lstatSync(path, { throwIfNoEntry: false })
    return stats === undefined ? undefined : `${stats.dev}:${stats.ino}`
  } catch {
    return undefined
  }
}

/** Removes the file at `real` a change made (`made`, its identityOf): one put in its place since stays. */
export const takeOut = (real: string, made: string | undefined): Effect.Effect<void> =>
  Effect.promise(async () => {
    if (made !== undefined && identityOf(real) === made) await Pinned.remove(real).catch(() => undefined)
  })

/** Removes directories created for a change that did not happen (deepest first); ones now in use stay. */
export const removeDirectories = (directories: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.promise(async () => {
    for (const directory of directories) await Pinned.removeDirectory(directory).catch(() => undefined)
  })

/**
 * The name beside `real` that is its name in another Unicode form (é as one character, or as e and a combining
 * accent): the two look alike, yet name two files. Undefined when there is none, or the directory cannot be read.
 */
export const otherForm = (real: string): string | undefined => {
  const wanted = basename(real)
  const normal = wanted.normalize("NFC")
  // Names of ASCII alone have one form.
  if (/^[\x00-\x7f]*$/.test(wanted)) return undefined
  try {
    return readdirSync(dirname(real)).find((name) => name !== wanted && name.normalize("NFC") === normal)
  } catch {
    return undefined
  }
}

/** What a model is told of a name that is another's in another Unicode form, or "". */
export const otherFormNote = (real: string): string => {
  const other = otherForm(real)
  return other === undefined
    ? ""
    : ` A file named ${JSON.stringify(other)} is there: the same name in another Unicode form (it looks alike, and is another file); give that name exactly, as written here in JSON.`
}

/** A file's permission bits as `ls` shows them in octal, e.g. "0644". */
export const modeText = (mode: number): string => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`

/**
 * Refuses to change a file its user cannot write. A rename would replace it anyway (only the directory needs to
 * be writable), so it is checked here: a file without any write permission bit (0444, say) is read-only for
 * everyone, root included, since someone marked it so on purpose; otherwise the operating system's own access
 * check decides (mode, owner, group, ACLs). The reason names the mode and the owner.
 */
export const writable = (path: string, shown: string, tool: string): Effect.Effect<void, Tool.Failure> =>
  Effect.gen(function* () {
    const stats = yield* io("check", shown, () => fsp().stat(path))
    const refused = yield* Effect.promise(() => fsp().access(path, constants.W_OK).then(() => undefined, (cause: unknown) => codeOf(cause) ?? "EACCES"))
    if ((stats.mode & 0o222) !== 0 && refused === undefined) return
    // A read-only file system refuses whatever the mode says: said as it is, not as the file's mode.
    if (refused === "EROFS") {
      return yield* new Tool.Failure({
        message: `Cannot change ${shown} with ${tool}: ${REASONS.EROFS} (EROFS). Nothing was changed; ${adviceOf("EROFS")}`,
      })
    }
    // Writable by its mode, yet refused outright: an attribute of the file (immutable, chattr +i), which no mode change lifts.
    if (refused === "EPERM" && (stats.mode & 0o222) !== 0) {
      return yield* new Tool.Failure({
        message:
          `Cannot change ${shown} with ${tool}: the system refuses any change to it (EPERM) though its mode ` +
          `(${modeText(stats.mode)}) allows writing: it is likely marked immutable (chattr +i; lsattr shows it). ` +
          "Nothing was changed. Leave it alone, or ask the user to lift that if it should change.",
      })
    }
    const mine = process.getuid?.() === stats.uid
    return yield* new Tool.Failure({
      message:
        `Cannot change ${shown} with ${tool}: it is read-only (mode ${modeText(stats.mode)}, owner uid ${stats.uid}` +
        `${mine ? ", which is you" : ""}, group gid ${stats.gid}). Nothing was changed. Leave it alone, or ask the ` +
        "user to make it writable (chmod u+w) if it should change.",
    })
  })

/**
 * What a guarded replacement did: wrote the file (saying what of the old one the new one did not keep), or found it
 * changed since `expected` and left it alone.
 */
export type Replaced = { readonly lost: ReadonlyArray<string> } | "changed"

/**
 * Stages `options.bytes` and renames it over `options.path` only if `stillValid` holds, checked under the file's
 * commit lock (see FileLock.committing) so another core process cannot change the file between check and rename.
 * Answers "changed" (with nothing written) otherwise.
 */
const commitIf = (options: WriteOptions, stillValid: Effect.Effect<boolean, Tool.Failure>): Effect.Effect<Replaced, Tool.Failure> =>
  Effect.gen(function* () {
    const temp = yield* prepare(options.path, options.bytes, options.kept, options.shown)
    return yield* FileLock.committing(
      options.unasked !== undefined ? [options.path, ...Git.repositoryNames(options.path)] : [options.path],
      options.shown,
      Effect.gen(function* () {
        if (!(yield* stillValid)) {
          yield* discard(temp)
          return "changed" as const
        }
        const planted = options.unasked !== undefined ? Git.plantedSince(options.path, options.unasked) : undefined
        if (planted !== undefined) {
          yield* discard(temp)
          return yield* new Tool.Failure({ message: plantedMessage(options.shown, planted) })
        }
        yield* commit(temp, options.path, options.shown)
        return { lost: temp.lost }
      }),
    ).pipe(Effect.onError(() => discard(temp)))
  })

/**
 * Replaces a file atomically only if it is still exactly `expected`; "changed" when it changed since it was read,
 * for the caller to redo the change against the new content or report it.
 */
export const replace = (options: WriteOptions & { readonly expected: Snapshot }): Effect.Effect<Replaced, Tool.Failure> =>
  commitIf(options, unchanged(options.path, options.expected, options.shown))

/**
 * Why a file is not made after all: another change made at the same time (another core process's) left `planted`
 * for it to complete (Git.bare), which is a person's to make.
 */
export const plantedMessage = (shown: string, planted: string): string =>
  `Cannot create ${shown}: with a change made at the same time (another core process's), it would change ${planted}. ` +
  "Nothing was changed. A person must make that change; do not retry it."

/** Creates a file that must not exist yet; "changed" when a file appeared at `path` meanwhile. */
export const create = (options: WriteOptions): Effect.Effect<Replaced, Tool.Failure> =>
  commitIf(options, exists(options.path, options.shown).pipe(Effect.map((found) => !found)))

/** Whether anything is at `path` (a symlink counts as itself); an error other than its absence is a failure. */
export const exists = (path: string, shown: string): Effect.Effect<boolean, Tool.Failure> =>
  io("check", shown, () =>
    fsp().lstat(path).then(
      () => true,
      (cause: unknown) => {
        if (codeOf(cause) === "ENOENT") return false
        throw cause
      },
    ),
  )

/** Lines `startLine`..`endLine` (1-based) of `texts`, numbered as `N| text`, for messages that show a region. */
export const numbered = (texts: ReadonlyArray<string>, startLine: number, endLine: number): string => {
  const width = String(endLine).length
  return texts
    .slice(startLine - 1, endLine)
    .map((line, offset) => `${String(startLine + offset).padStart(width)}| ${line}`)
    .join("\n")
}
