export * as Read from "./read"

// The read built-in: one page of a text file with line numbers, a directory's entries, or an image as file
// content. Files are streamed from the start through one bounded buffer, so the first page of a huge file costs
// one page, and a later page streams past the earlier bytes without keeping them. It never opens what the
// permission check refused, nor anything that is not a regular file (a FIFO would block).

import { constants, readdir, statSync, type Dirent } from "node:fs"
import type { FileHandle } from "node:fs/promises"
import { basename, extname, join } from "node:path"
import type { Stats } from "node:fs"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Pinned } from "../permission/pinned"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { ReadPage } from "./read-page"
import { ReadSuggestions } from "./read-suggestions"
import { ReadTracking } from "./read-tracking"
import { Text as TextFile } from "./text"

/** Lines of output per page, the footer included: a full page fits the settlement's default bound. */
export const MAX_LINES = 2_000
/** Bytes per page, counted as the page's output (numbered, and JSON-escaped in the structured output). */
export const MAX_PAGE_BYTES = 50 * 1024
/**
 * The largest image file read takes (a 12-megapixel PNG is about 35 MiB). What goes back to the model is smaller:
 * images over the image limits are resized on the way out (../output/image), whichever tool returned them.
 */
export const MAX_IMAGE_BYTES = 64 * 1024 * 1024
const FOOTER_LINES = 2
/** Room a page leaves for its footer and the other fields of the structured output. */
const RESERVE_BYTES = 1_024
/** The first read: enough for a page. Reads after it, streaming past earlier pages, take bigger steps. */
const HEAD_BYTES = 64 * 1024
const CHUNK_BYTES = 1024 * 1024
/** After a page, the rest of the file is counted for its total line count when the file is at most this big. */
const COUNT_REST_BYTES = 64 * 1024 * 1024
/**
 * A file this big is read a smaller page at a time unless the model asks for a limit: a first look at a large log
 * costs a few thousand tokens, and the page says the file's size so the model can choose offsets or grep.
 */
const LARGE_FILE_BYTES = 1024 * 1024
const LARGE_FILE_LINES = 400
const LARGE_FILE_PAGE_BYTES = 16 * 1024
/** The header of a large file's page, besides its path. */
const HEADER_BYTES = 128
/** While streaming past earlier pages, progress is reported this often. */
const PROGRESS_BYTES = 256 * 1024 * 1024

/**
 * Refused by name. Images are recognised by content instead (a PNG named .txt is an image, a text file named
 * .png is text), and PDFs are refused too: they are not returned as file content.
 */
const BINARY_EXTENSIONS = new Set(
  (
    "zip tar gz tgz bz2 xz zst 7z rar lz4 jar war ear class dex apk exe dll so dylib o a lib obj ko wasm pyc pyo " +
    "node bin iso dmg img pdf doc docx xls xlsx ppt pptx odt ods odp sqlite sqlite3 db woff woff2 ttf otf eot " +
    "mp3 mp4 m4a mov avi mkv webm flac wav ogg opus bmp tif tiff ico psd heic avif"
  ).split(" "),
)

const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { expected: "a line number of at least 1" }))

export const Input = Schema.Struct({
  filePath: Schema.String.annotate({
    description:
      "The file or directory to read, relative to the Location (the project directory the tools work in) or absolute",
  }),
  offset: Schema.optionalKey(
    Offset.annotate({ description: "The line to start at (1-based; for a directory, the entry). Default 1" }),
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { expected: "at least 1" })).annotate({
      description: `How many lines to read (default and most ${MAX_LINES}; a page may hold fewer, see its footer)`,
    }),
  ),
})

const Text = Schema.Struct({
  kind: Schema.Literal("text"),
  path: Schema.String,
  offset: Schema.Int.annotate({ description: "The first line shown (1-based)" }),
  lines: Schema.Int.annotate({ description: "How many lines are shown" }),
  content: Schema.String.annotate({
    description: "The lines shown, joined with \\n; a line longer than the cut ends with a note saying so",
  }),
  nextOffset: Schema.optionalKey(Schema.Int.annotate({ description: "Where the next page starts, when more remains" })),
  totalLines: Schema.optionalKey(Schema.Int.annotate({ description: "The file's line count, when known" })),
  bytes: Schema.optionalKey(Schema.Int.annotate({ description: "The file's size in bytes, when more remains to read" })),
})

const Directory = Schema.Struct({
  kind: Schema.Literal("directory"),
  path: Schema.String,
  offset: Schema.Int.annotate({ description: "The first entry shown (1-based)" }),
  entries: Schema.Int.annotate({ description: "How many entries are shown" }),
  content: Schema.String.annotate({
    description: "Entry names, one per line: directories first (with a trailing /), then the rest, by name",
  }),
  nextOffset: Schema.optionalKey(Schema.Int),
  totalEntries: Schema.Int,
  hidden: Schema.optionalKey(
    Schema.Int.annotate({ description: "Files left out, not counted in totalEntries, because the user's rules deny reading them or they are the user's credential stores" }),
  ),
  notUtf8: Schema.optionalKey(Schema.Int.annotate({ description: "Names that are not UTF-8, shown with U+FFFD" })),
})

const Image = Schema.Struct({
  kind: Schema.Literal("image"),
  path: Schema.String,
  mime: Schema.String,
  bytes: Schema.Int,
  data: Schema.String.annotate({ description: "The image, base64" }),
})

export const Output = Schema.Union([Text, Directory, Image])
export type Output = typeof Output.Type

const failure = (message: string) => new Tool.Failure({ message })

const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined

// ---------------------------------------------------------------------------------------------------------------
// The tool

const FOOTER_HINT = "Use offset"

const count = (total: number, unit: "line" | "entry") =>
  `${total} ${total === 1 ? unit : unit === "line" ? "lines" : "entries"}`

const size = (bytes: number): string =>
  bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`

/** The numbered lines and footer the model reads; a page of a large file that goes on first says how big it is. */
const renderText = (output: typeof Text.Type): string => {
  if (output.lines === 0) return `(${output.path} is empty)`
  const header =
    output.nextOffset === undefined || output.bytes === undefined || output.bytes <= LARGE_FILE_BYTES
      ? ""
      : `(${output.path}: ${size(output.bytes)}` +
        `${output.totalLines === undefined ? "" : `, ${count(output.totalLines, "line")}`}. Page through it with ` +
        `offset and limit, or search it with grep.)\n`
  const numbered = output.content.split("\n").map((text, index) => `${output.offset + index}: ${text}`)
  const last = output.offset + output.lines - 1
  const footer =
    output.nextOffset === undefined
      ? `(End of file: ${count(output.totalLines ?? last, "line")}.)`
      : output.totalLines === undefined
        ? `(Lines ${output.offset}-${last} shown; the file goes on. ${FOOTER_HINT}=${output.nextOffset} to read more.)`
        : `(Lines ${output.offset}-${last} of ${output.totalLines}. ${FOOTER_HINT}=${output.nextOffset} to read more.)`
  return `${header}${numbered.join("\n")}\n\n${footer}`
}

const renderDirectory = (output: typeof Directory.Type): string => {
  if (output.totalEntries === 0 && output.hidden === undefined) return `(${output.path} is an empty directory)`
  const last = output.offset + output.entries - 1
  const footer =
    output.nextOffset === undefined
      ? `(${count(output.totalEntries, "entry")}.)`
      : `(Entries ${output.offset}-${last} of ${output.totalEntries}. ${FOOTER_HINT}=${output.nextOffset} to see more.)`
  const notUtf8 =
    output.notUtf8 === undefined ? "" : `\n(${output.notUtf8} ${output.notUtf8 === 1 ? "name is" : "names are"} not UTF-8; shown with U+FFFD.)`
  return `${output.content}\n\n${footer}${output.hidden === undefined ? "" : `\n${Builtin.hiddenNote(output.hidden, "file")}`}${notUtf8}`
}

const pageBudget = (shown: string) => MAX_PAGE_BYTES - RESERVE_BYTES - ReadPage.pageBytes(shown)

const vanished = (shown: string) =>
  failure(`${shown} was removed or replaced while it was being read. Check that it still exists, then read it again.`)
const changed = (shown: string) =>
  failure(`${shown} changed while it was being read, so this page could be inconsistent. Read it again.`)

const pastEnd = (shown: string, offset: number, total: number, unit: "line" | "entry") =>
  failure(
    `offset ${offset} is past the end of ${shown}: it has ${count(total, unit)}. ` +
      (total === 0 ? "There is nothing to read." : `Use an offset from 1 to ${total}.`),
  )

/** Why opening or listing a path failed, for the model: gone or swapped since the check, or denied; else a defect. */
const unreachable = (cause: unknown, shown: string, verb: "listed" | "read"): Effect.Effect<never, Tool.Failure> => {
  const code = codeOf(cause)
  if (code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" || code === Pinned.MOVED) return Effect.fail(vanished(shown))
  if (code === "EACCES" || code === "EPERM") {
    return Effect.fail(failure(`${shown} cannot be ${verb}: the operating system denied access (${code}).`))
  }
  return Effect.die(cause)
}

/** Reads from the start of a file into `bytes` until they are full or the file ends; answers how many were read. */
const fill = async (handle: FileHandle, bytes: Buffer): Promise<number> => {
  let got = 0
  while (got < bytes.length) {
    const { bytesRead } = await handle.read(bytes, got, bytes.length - got, got)
    if (bytesRead === 0) break
    got += bytesRead
  }
  return got
}

/**
 * Entries looked at between turns of the event loop. A directory of 500,000 entries (a model makes one with `touch`)
 * was listed, filtered and sorted in one stretch of 3 s, and every session's calls and health waited for it.
 */
const ENTRIES_AT_A_TIME = 10_000

/** Lets the event loop run (the HTTP server, other calls) before going on. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The items of `items` that `keep`, looked at ENTRIES_AT_A_TIME between turns of the event loop. */
const keptInTurns = async <A>(items: ReadonlyArray<A>, keep: (item: A) => boolean): Promise<Array<A>> => {
  const kept: Array<A> = []
  for (let index = 0; index < items.length; index++) {
    if (index > 0 && index % ENTRIES_AT_A_TIME === 0) await nextTurn()
    if (keep(items[index]!)) kept.push(items[index]!)
  }
  return kept
}

/**
 * A directory's entries, listed through the directory as checked (Pinned): a directory on its path swapped since is
 * refused. A symlink is shown as a directory when it leads to one. Read by the thread pool, not core's thread.
 */
const listed = (real: string) =>
  Effect.promise(async () => {
    try {
      return await Pinned.within(real, async (held) => {
        // node:fs's callback form: node:fs/promises costs every start that loads read (test/cli/startup.test.ts).
        const entries = await new Promise<Array<Dirent>>((resolve, reject) =>
          readdir(held.at(""), { withFileTypes: true }, (error, found) => (error === null ? resolve(found) : reject(error))),
        )
        // A name that is not UTF-8 is shown with U+FFFD: its bytes, read again, say which (Bun's entries with file
        // types carry no bytes).
        const bytes = entries.some((entry) => entry.name.includes("\ufffd"))
          ? await new Promise<Array<Buffer>>((resolve, reject) =>
              readdir(held.at(""), { encoding: "buffer" }, (error, found) => (error === null ? resolve(found) : reject(error))),
            )
          : []
        const notUtf8 = new Set(bytes.flatMap((name) => (Buffer.from(name.toString("utf8")).equals(name) ? [] : [name.toString("utf8")])))
        const isDirectory = (entry: Dirent) => {
          if (entry.isDirectory()) return true
          if (!entry.isSymbolicLink()) return false
          try {
            return statSync(held.at(entry.name)).isDirectory()
          } catch {
            return false
          }
        }
        const directories = new Set(await keptInTurns(entries, isDirectory))
        return {
          entries: entries.map((entry) => ({ name: entry.name, directory: directories.has(entry), utf8: !notUtf8.has(entry.name) })),
        }
      })
    } catch (cause) {
      return { cause }
    }
  })

/**
 * Entry names as shown (Builtin.nameLine): directories first (with a trailing /), then the rest, by name. Sorted in the default order,
 * by UTF-16 code units as `<` compares them, which is native: a comparator called per comparison took 2 s for
 * 500,000 entries.
 */
const sortedNames = (entries: ReadonlyArray<{ readonly name: string; readonly directory: boolean }>): Array<string> => {
  const directories: Array<string> = []
  const files: Array<string> = []
  for (const entry of entries) (entry.directory ? directories : files).push(entry.name)
  directories.sort()
  files.sort()
  // A name holding a line feed or another control character is quoted: it would read as more entries than it is.
  return [...directories.map((name) => Builtin.nameLine(`${name}/`)), ...files.map(Builtin.nameLine)]
}

/** The entries from `offset` that fit a page: at most the limit, and within the page's bytes (one entry at least). */
const entryPage = (names: ReadonlyArray<string>, offset: number, input: typeof Input.Type, shown: string) => {
  const maxEntries = Math.min(input.limit ?? MAX_LINES, MAX_LINES - FOOTER_LINES)
  const budget = pageBudget(shown)
  const page: Array<string> = []
  let cost = 0
  for (let index = offset - 1; index < names.length && page.length < maxEntries; index++) {
    const next = ReadPage.pageBytes(names[index]!) + 1
    if (page.length > 0 && cost + next > budget) break
    page.push(names[index]!)
    cost += next
  }
  return page
}

const readImage = (handle: FileHandle, size: number, mime: string, shown: string) =>
  Effect.gen(function* () {
    if (size > MAX_IMAGE_BYTES) {
      return yield* failure(
        `${shown} is a ${mime} image of ${size} bytes, over the ${MAX_IMAGE_BYTES}-byte limit for image files. ` +
          `Use a smaller version of it (for example, scaled down with bash).`,
      )
    }
    const data = Buffer.allocUnsafe(size)
    const got = yield* Effect.promise(() => fill(handle, data))
    const after = yield* Effect.promise(() => handle.stat())
    if (got !== size || after.size !== size) return yield* changed(shown)
    return { kind: "image" as const, path: shown, mime, bytes: size, data: data.toString("base64") }
  })

/** How a text page is cut: how many lines, and how many bytes (a large file without a limit gets a smaller page). */
const textPage = (size: number, shown: string, input: typeof Input.Type) => {
  const large = input.limit === undefined && size > LARGE_FILE_BYTES
  // The footer takes two lines of the page's output (and a large file's header one more).
  const maxLines = large
    ? LARGE_FILE_LINES
    : Math.min(input.limit ?? MAX_LINES, MAX_LINES - FOOTER_LINES - (size > LARGE_FILE_BYTES ? 1 : 0))
  // A large file's header (its path, size and line count) takes room from the page.
  const budget = size > LARGE_FILE_BYTES ? pageBudget(shown) - HEADER_BYTES - ReadPage.pageBytes(shown) : pageBudget(shown)
  return { maxLines, maxBytes: large ? LARGE_FILE_PAGE_BYTES : budget }
}

const invalidText = (shown: string, line: number) =>
  failure(
    `${shown} is not valid UTF-8 text: line ${line} holds bytes that are not UTF-8. It may use another ` +
      `encoding (such as Latin-1 or UTF-16) or be binary; inspect it with bash (for example \`file\` or \`xxd\`).`,
  )

const readText = (
  handle: FileHandle,
  before: Stats,
  head: Uint8Array,
  shown: string,
  input: typeof Input.Type,
  context: Tool.Context,
  /** Records the file as looked at, before saying it is not UTF-8. */
  saw: Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    const offset = input.offset ?? 1
    const { maxLines, maxBytes } = textPage(before.size, shown, input)
    const scan = ReadPage.scanner(offset, maxLines, maxBytes)
    if (offset > 1) yield* context.progress({ message: `Reading ${shown} from line ${offset}` })
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES)
    // A byte order mark is not part of line 1.
    const bom = head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf
    let position = head.length
    let reported = PROGRESS_BYTES
    let bad = scan.feed(bom ? head.subarray(3) : head)
    let ended = head.length === 0
    while (bad === undefined && !ended) {
      if (scan.phase === "count" && before.size > COUNT_REST_BYTES) break
      const { bytesRead } = yield* Effect.promise(() => handle.read(buffer, 0, CHUNK_BYTES, position))
      if (bytesRead === 0) {
        ended = true
        break
      }
      position += bytesRead
      bad = scan.feed(buffer.subarray(0, bytesRead))
      if (scan.phase === "skip" && position >= reported) {
        reported += PROGRESS_BYTES
        yield* context.progress({ message: `Reading ${shown}: ${Math.round(position / 1e6)} MB passed` })
      }
    }
    if (bad === undefined && ended) bad = scan.end()
    if (bad !== undefined) {
      yield* saw
      return yield* invalidText(shown, bad.invalidLine)
    }
    const after = yield* Effect.promise(() => handle.stat())
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) return yield* changed(shown)

    const total = ended ? scan.total : undefined
    if (scan.page.length === 0) {
      if (total === 0 && offset === 1) {
        return { kind: "text" as const, path: shown, offset, lines: 0, content: "", totalLines: 0 }
      }
      return yield* pastEnd(shown, offset, total ?? scan.total, "line")
    }
    const page = scan.page
    const more = scan.more
    return {
      kind: "text" as const,
      path: shown,
      offset,
      lines: page.length,
      content: page.join("\n"),
      ...(more ? { nextOffset: offset + page.length, bytes: before.size } : {}),
      ...(total === undefined ? {} : { totalLines: total }),
    }
  })

/** The version of the open file, for read tracking: hashed from the first block when that was all of it. */
const seen = (handle: FileHandle, head: Uint8Array) =>
  Effect.promise(async () => {
    const stats = await handle.stat({ bigint: true })
    if (stats.size > BigInt(ReadTracking.MAX_HASH_BYTES)) return ReadTracking.versionOf(undefined, stats)
    if (stats.size === BigInt(head.length)) return ReadTracking.versionOf(head, stats)
    const bytes = Buffer.allocUnsafe(Number(stats.size))
    const got = await fill(handle, bytes)
    return ReadTracking.versionOf(bytes.subarray(0, got), stats)
  })

/** Opens a file to read: non-blocking and pinned (see readFile). */
const openToRead = (real: string, shown: string) =>
  Effect.tryPromise({
    // Non-blocking, so a FIFO swapped in after the check cannot hang the open; pinned, so a symlink swapped in
    // for the file or any directory on its path cannot lead elsewhere.
    try: () => Pinned.openFile(real, constants.O_RDONLY | constants.O_NONBLOCK),
    catch: (cause) => cause,
  }).pipe(Effect.catch((cause) => unreachable(cause, shown, "read")))

const DESCRIPTION =
  "Read a file or directory in the project. A text file comes back with 1-based line numbers (`N: text`), one " +
  `page at a time: at most ${MAX_LINES} lines of output or 50 KiB, whichever comes first (without a limit, a ` +
  `file over 1 MiB gives ${LARGE_FILE_LINES} lines or 16 KiB a page, and when more remains its page starts with ` +
  "the file's size and line count). A page that does not reach the end ends with the offset to read next. Lines " +
  `longer than ${ReadPage.MAX_LINE_CHARS} characters are cut, with a note on the line. A byte order mark is dropped and ` +
  "Windows line endings are shown without the \\r. A directory comes back as its entries (directories first, " +
  "with a trailing /), paged the same way. PNG, JPEG, GIF, WEBP and BMP images (recognised by content) come " +
  "back as images, resized when over the image limits (by default 5 MiB, 2000 px on the long side). Binary files and text that is not UTF-8 are refused. Use offset and limit to page " +
  "through large files rather than reading them whole; use grep to find the lines you need first, and glob " +
  "or list to find files."

/** The refusal of a path written as a directory ("a.txt/") that resolves to something else, if it is one. */
const notADirectory = (filePath: string, resolved: { readonly kind: string }, shown: string) => {
  // Resolving drops a trailing "/" (a.txt/ resolves to a.txt), but the path as given asks for a directory.
  const ending = TextFile.directoryEnding(filePath)
  if (ending === undefined || (resolved.kind !== "file" && resolved.kind !== "other")) return undefined
  return failure(
    `Cannot read ${filePath}: it ends with "${ending}", so it names a directory, but ${shown} is ` +
      `${resolved.kind === "file" ? "a file" : "not a directory"}. To read it, give ${shown} without the ` +
      `trailing "${ending}".`,
  )
}

const makeTool = (services: Builtin.Services) => {
  const notFound = (shown: string, real: string, inside: boolean, context: Tool.Context) =>
    Effect.flatMap(ReadSuggestions.suggestions(services, context, real, inside), (found) => {
      // A name in another Unicode form looks as the one asked for: said as such, or the model reads its own name back.
      const twin = inside ? TextFile.otherFormNote(real) : ""
      return Effect.fail(
        failure(
          twin !== ""
            ? `File not found: ${shown}.${twin}`
            : found.length === 0
              ? `File not found: ${shown}. Check the path (relative to the Location, or absolute); glob finds files by name.`
              : `File not found: ${shown}. Did you mean:\n${found.map((path) => Builtin.nameLine(Builtin.display(services.directory, path))).join("\n")}`,
        ),
      )
    })

  const readDirectory = (real: string, shown: string, input: typeof Input.Type, agent: string) =>
    Effect.gen(function* () {
      const listing = yield* listed(real)
      if ("cause" in listing) return yield* unreachable(listing.cause, shown, "listed")
      // A file whose read a rule denies is not named here either.
      const denied = Builtin.hidden(services, agent, real)
      const entries = yield* Effect.promise(() =>
        keptInTurns(listing.entries, (entry) => entry.directory || !denied(join(real, entry.name))),
      )
      const hidden = listing.entries.length - entries.length
      const notUtf8 = entries.filter((entry) => !entry.utf8).length
      const names = sortedNames(entries)
      const offset = input.offset ?? 1
      if (offset > Math.max(names.length, 1)) return yield* pastEnd(shown, offset, names.length, "entry")
      const page = entryPage(names, offset, input, shown)
      const after = offset - 1 + page.length
      return {
        kind: "directory" as const,
        path: shown,
        offset,
        entries: page.length,
        content: page.join("\n"),
        totalEntries: names.length,
        ...(after < names.length ? { nextOffset: after + 1 } : {}),
        ...(hidden === 0 ? {} : { hidden }),
        ...(notUtf8 === 0 ? {} : { notUtf8 }),
      }
    })

  const readFile = (real: string, shown: string, input: typeof Input.Type, context: Tool.Context) =>
    Effect.acquireUseRelease(
      openToRead(real, shown),
      (handle) =>
        Effect.gen(function* () {
          const before = yield* Effect.promise(() => handle.stat())
          if (!before.isFile()) return yield* vanished(shown)
          const buffer = Buffer.allocUnsafe(HEAD_BYTES)
          const { bytesRead } = yield* Effect.promise(() => handle.read(buffer, 0, HEAD_BYTES, 0))
          const head = buffer.subarray(0, bytesRead)
          // The file as the model has now looked at it, as far as read shows it: text, an image, or what it is when
          // read cannot show it (binary, not UTF-8). write and edit then take it as read; otherwise a model told to
          // read a file read cannot show was told to read it again and again.
          const saw = services.reads === undefined ? Effect.void : Effect.flatMap(seen(handle, head), (version) => ReadTracking.see(services, context, real, version))
          const image = ReadPage.IMAGE_SIGNATURES.find((signature) => signature.matches(head))
          if (image !== undefined) return yield* Effect.tap(readImage(handle, before.size, image.mime, shown), () => saw)
          const extension = extname(real).slice(1).toLowerCase()
          if (BINARY_EXTENSIONS.has(extension)) {
            yield* saw
            return yield* failure(`${shown} is a binary file (.${extension}); read shows text files, directories and images.`)
          }
          const reason = ReadPage.binaryReason(head)
          if (reason !== undefined) {
            yield* saw
            return yield* failure(`${shown} looks like a binary file (${reason}); read shows text files, directories and images.`)
          }
          const page = yield* readText(handle, before, head, shown, input, context, saw)
          yield* saw
          return page
        }).pipe(
          // A file the kernel refuses to read once open (/proc/self/mem: EIO; some /proc attributes: EINVAL) is a
          // failure the model reads, as one it cannot open is; not core's own.
          Effect.catchDefect((defect) => {
            const code = (defect as { code?: unknown } | undefined)?.code
            return typeof code === "string" && /^E[A-Z0-9]+$/.test(code)
              ? failure(`Cannot read ${shown}: the system refused to read it (${code}). It is not a file read can show.`)
              : Effect.die(defect)
          }),
        ),
      (handle) => Effect.promise(() => handle.close()),
    )

  return Builtin.tool({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: true, idempotent: true, openWorld: false },
    execute: (input, context) =>
      Effect.gen(function* () {
        const resolved = yield* Builtin.authorizePath(services, context, {
          action: "read",
          path: input.filePath,
          access: "read",
          tool: "read",
        })
        const shown = Builtin.display(services.directory, resolved.real)
        const misnamed = notADirectory(input.filePath, resolved, shown)
        if (misnamed !== undefined) return yield* misnamed
        switch (resolved.kind) {
          case "missing":
            // A managed output this session made on another host is brought from the object store they share.
            if (!resolved.inside && resolved.readable && services.outputs !== undefined) {
              const fetched = yield* services.outputs
                .fetch(resolved.real)
                .pipe(Effect.catchTag("ManagedOutputs.Unavailable", (error) => failure(error.message)))
              if (fetched) return yield* readFile(resolved.real, shown, input, context)
            }
            return yield* notFound(shown, resolved.real, resolved.inside, context)
          case "other":
            return yield* failure(
              `${shown} is not a regular file (it is a FIFO, socket or device), so it was not opened. read shows ` +
                "files, directories and images.",
            )
          case "directory":
            return yield* readDirectory(resolved.real, shown, input, context.agent)
          case "file":
            return yield* readFile(resolved.real, shown, input, context)
        }
      }),
    toModelOutput: ({ output }): string | ReadonlyArray<Tool.Content> => {
      switch (output.kind) {
        case "image":
          return [{ type: "file", data: output.data, mime: output.mime, name: basename(output.path) }]
        case "directory":
          return renderDirectory(output)
        case "text":
          return renderText(output)
      }
    },
  })
}

/** The read built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) =>
  Builtin.planned(makeTool(services), (input) =>
    Builtin.pathPlan(services, { action: "read", path: input.filePath, access: "read" }),
  )
