export * as Write from "./write"

// The `write` built-in: creates a file or replaces one's whole content. Replacing keeps what the model cannot
// see in the text it sends (the byte order mark, CRLF line endings, the file's mode), and happens atomically,
// so a failure leaves the old file (or no file) rather than a part of the new one.

import { dirname } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
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
})
export type Output = typeof Output.Type

const DESCRIPTION = `Write a file: create it, or replace its whole content.

- Missing parent directories are created.
- Replacing a file keeps its line endings (a CRLF file stays CRLF even if content uses \\n), its UTF-8 byte order mark and its permissions; only the text changes.
- The write is atomic: the file holds either its old content or the new one, never a part.
- To change part of an existing file, use edit (one replacement) or apply_patch (several places or files) instead: they send only the change, and the file is written only if it did not change while the edit was being made. Read a file before replacing it, so that nothing in it is lost.`

const describe = (output: Output): string => {
  const size = `${output.lines} line${output.lines === 1 ? "" : "s"}, ${output.bytes} byte${output.bytes === 1 ? "" : "s"}`
  if (output.created) return `Created ${output.path} (${size}).`
  const kept = [output.lineEnding === "crlf" ? "CRLF line endings" : undefined, output.bom ? "byte order mark" : undefined]
    .filter((item) => item !== undefined)
    .join(" and ")
  return `Overwrote ${output.path} (${size}${kept === "" ? "" : `; kept its ${kept}`}).`
}

const makeTool = (services: Builtin.Services) =>
  Tool.make({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    toModelOutput: ({ output }) => describe(output),
    execute: (input, context) =>
      Effect.gen(function* () {
        const ending = Text.directoryEnding(input.filePath)
        if (ending !== undefined) {
          return yield* new Tool.Failure({ message: `Cannot write ${input.filePath}: ${Text.namesDirectory(ending)}` })
        }
        const resolved = yield* Builtin.authorizePath(services, context, {
          action: "edit",
          path: input.filePath,
          access: "write",
          tool: "write",
        })
        const shown = Builtin.display(services.directory, resolved.real)
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
        let text = input.content
        let bom = false
        let mode: number | undefined
        if (resolved.exists) {
          const snapshot = yield* Text.read(resolved.real, shown)
          mode = snapshot.mode
          // The old file's conventions apply only if it was text; a binary file is simply replaced.
          const old = Text.probe(snapshot.bytes)
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
        const created = resolved.exists ? [] : yield* Text.ensureDirectory(dirname(resolved.real), shown)
        yield* Text.write({ path: resolved.real, bytes, shown, ...(mode === undefined ? {} : { mode }) }).pipe(
          Effect.onError(() => Text.removeDirectories(created)),
        )
        return {
          path: shown,
          created: !resolved.exists,
          lines: Text.lineCount(text),
          bytes: bytes.length,
          lineEnding: text.includes("\r\n") && Text.eolOf(text) === "\r\n" ? ("crlf" as const) : ("lf" as const),
          bom,
        }
      }),
  })

/** The write built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) =>
  Builtin.planned(makeTool(services), (input) =>
    Builtin.pathPlan(services, { action: "edit", path: input.filePath, access: "write" }),
  )
