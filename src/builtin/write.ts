export * as Write from "./write"

// The `write` built-in: creates a file or replaces one's whole content. Replacing keeps what the model cannot
// see in the text it sends (the byte order mark, CRLF line endings, the file's mode), and happens atomically,
// so a failure leaves the old file (or no file) rather than a part of the new one.

import { dirname } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Git } from "../permission/git"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { FileLock } from "./file-lock"
import { ReadTracking } from "./read-tracking"
import { Stopping } from "../settlement/stopping"
import { Text } from "./text"

export const Input = Schema.Struct({
  filePath: Schema.String.annotate({
    description: "The file to write: relative to the Location (the project directory the tools work in), or absolute",
  }),
  content: Schema.String.annotate({ description: "The file's complete new content" }),
})

export const Output = Schema.Struct({
  path: Schema.String.annotate({ description: "The file written, relative to the Location when inside it" }),
  created: Schema.Boolean.annotate({ description: "true when the file did not exist before" }),
  lines: Schema.Finite,
  bytes: Schema.Finite,
  lineEnding: Schema.Literals(["lf", "crlf"]),
  bom: Schema.Boolean,
  replaced: Schema.optionalKey(
    Schema.Struct({ lines: Schema.Finite, bytes: Schema.Finite }).annotate({
      description: "What the file held before it was overwritten",
    }),
  ),
  notKept: Schema.optionalKey(Text.NotKept),
})
export type Output = typeof Output.Type

/** The lines of content that is not UTF-8 text, by its line feeds (a last line without one counts too). */
const linesIn = (bytes: Uint8Array): number => {
  let count = 0
  for (const byte of bytes) if (byte === 0x0a) count++
  return bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? count + 1 : count
}

const DESCRIPTION = `Write a file: create it, or replace its whole content.

- Missing parent directories are created.
- An existing file must have been read in this session, and not changed since; otherwise nothing is written. Read-only and special files are refused.
- Replacing a file keeps its line endings (a CRLF file stays CRLF even if content uses \\n), its byte order mark and its mode; the answer says what it replaced.
- The write is atomic: the file holds either its old content or the new one, never a part.
- To change part of a file, use edit or apply_patch: they send only the change.`

const describe = (output: Output): string => {
  const size = `${output.lines} line${output.lines === 1 ? "" : "s"}, ${output.bytes} byte${output.bytes === 1 ? "" : "s"}`
  if (output.created) return `Created ${output.path} (${size}).`
  // What the file was written with (the old file's conventions, or the content's own): not always what it kept.
  const kept = [output.lineEnding === "crlf" ? "CRLF line endings" : undefined, output.bom ? "a byte order mark" : undefined]
    .filter((item) => item !== undefined)
    .join(" and ")
  const before =
    output.replaced === undefined
      ? ""
      : `; it held ${output.replaced.lines} line${output.replaced.lines === 1 ? "" : "s"}, ${output.replaced.bytes} byte${output.replaced.bytes === 1 ? "" : "s"}`
  return `Overwrote ${output.path} (${size}${before}${kept === "" ? "" : `; written with ${kept}`}).${Text.notKeptNote(output.path, output.notKept)}`
}

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
    toModelOutput: ({ output }) => describe(output),
    execute: (input, context) =>
      Effect.gen(function* () {
        const half = Text.halfCharacter("content", input.content)
        if (half !== undefined) return yield* new Tool.Failure({ message: `${half} Nothing was written.` })
        const { resolved, shown, asked } = yield* Builtin.authorizeChange(services, context, { tool: "write", path: input.filePath, reads: false })
        if (resolved.kind === "directory") {
          return yield* new Tool.Failure({
            message: `Cannot write ${shown}: it is a directory. Give the path of a file, such as ${shown}/name.txt.`,
          })
        }
        if (resolved.kind === "other") {
          return yield* new Tool.Failure({
            message: `Cannot write ${shown}: it is not a regular file (a device, socket or pipe). write only creates and replaces regular files.`,
          })
        }
        return yield* FileLock.retried(
          [resolved.real],
          () => attempt(services, context, input, resolved.real, shown, asked),
          () => Text.changed(shown),
        )
      }),
  })

/**
 * One try at the write: FileLock.CHANGED when another process changed or created the file between reading and
 * renaming. `asked`: a person approved it as a protected change (else a new file that another change made at the
 * same time turns into a git repository's is not made: Text.create).
 */
const attempt = (
  services: Builtin.Services,
  context: Tool.Context,
  input: typeof Input.Type,
  real: string,
  shown: string,
  asked: boolean,
): Effect.Effect<Output | typeof FileLock.CHANGED, Tool.Failure> =>
  Effect.gen(function* () {
    const exists = yield* Text.exists(real, shown)
    // A new file beside one of the same name in another Unicode form would be a second, look-alike file.
    const twin = exists ? "" : Text.otherFormNote(real)
    if (twin !== "") return yield* new Tool.Failure({ message: `Cannot create ${shown}:${twin} Nothing was changed.` })
    let text = input.content
    let bom = false
    let snapshot: Text.Snapshot | undefined
    let replaced: { lines: number; bytes: number } | undefined
    if (exists) {
      snapshot = yield* ReadTracking.readToChange(services, context, { path: real, shown, tool: "write", unseen: "refuse" })
      // The old file's conventions apply only if it was text; a binary file is simply replaced.
      const old = Text.probe(snapshot.bytes)
      replaced = { lines: old === undefined ? linesIn(snapshot.bytes) : Text.lineCount(old.text), bytes: snapshot.bytes.length }
      if (old !== undefined) {
        bom = old.bom
        if (old.text.includes("\n")) text = Text.withEol(text, old.eol)
      }
    }
    if (text.startsWith("\uFEFF")) {
      text = text.slice(1)
      bom = true
    }
    const bytes = Text.encode(text, bom)
    const written = text
    const kept = bom
    // Made in full or not at all, and answered: a cancel meanwhile neither stops it nor hides that it was made.
    return yield* Effect.uninterruptible(
      Effect.gen(function* () {
        // The repositories around a new file before its folders are made: one its folders would complete is not made.
        const repositories = asked || exists ? undefined : Git.repositoriesAround(real)
        const created = exists ? [] : yield* Text.ensureDirectory(dirname(real), shown)
        const outcome = yield* (
          snapshot === undefined
            ? Text.create({ path: real, bytes, shown, ...(repositories === undefined ? {} : { unasked: repositories }) })
            : Text.replace({ path: real, bytes, shown, kept: snapshot, expected: snapshot })
        ).pipe(Effect.onError(() => Text.removeDirectories(created)))
        if (outcome === "changed") {
          yield* Text.removeDirectories(created)
          return FileLock.CHANGED
        }
        if (!asked && !exists) {
          const made = Text.identityOf(real)
          const became = yield* Builtin.becameProtected(services, real, shown)
          if (became !== undefined) {
            yield* Text.takeOut(real, made)
            yield* Text.removeDirectories(created)
            return yield* new Tool.Failure({
              message: `${became} It was taken out again: nothing was changed. A person must make that change; do not retry it.`,
            })
          }
        }
        yield* ReadTracking.see(services, context, real, yield* ReadTracking.written(real, bytes))
        return yield* Stopping.finished({
          path: shown,
          created: !exists,
          lines: Text.lineCount(written),
          bytes: bytes.length,
          lineEnding: written.includes("\r\n") && Text.eolOf(written) === "\r\n" ? ("crlf" as const) : ("lf" as const),
          bom: kept,
          ...(replaced === undefined ? {} : { replaced }),
          ...(outcome.lost.length === 0 ? {} : { notKept: outcome.lost }),
        })
      }),
    )
  })

/** The write built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) =>
  Builtin.planned(makeTool(services), (input) =>
    Builtin.pathPlan(services, { action: "edit", path: input.filePath, access: "write" }),
  )
