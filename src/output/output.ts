export * as Output from "./output"

// The one generic bounding boundary (DESIGN §2 law 10): turns a call's projected output into what goes back to
// the model, with one bound for the model-facing text and the structured JSON together. What does not fit is kept
// in full as one managed output per settlement: the text a preview replaces, a structured value that had to be
// dropped (`structured` is then null, never a preview), media over the media limit. If keeping fails, bounding
// fails: never a lossy success. Past the bound on what outputs may take (ManagedOutputs.NotKept: a session's share,
// the disk's free space), the answer is the preview alone, saying the rest was not kept and why.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Tool } from "../tool/tool"
import { Bound } from "./bound"
import { Image } from "./image"
import { ManagedOutputs } from "./managed-outputs"

export const DEFAULT_MAX_MEDIA_BYTES = 5 * 1024 * 1024
/**
 * The most file parts one output shows inline, and the longest name or media type one shown inline may have: past
 * them a file is kept aside as one over the media limit is (a server's 250,000 empty file parts made a settlement of
 * 37 MB, each part within the limit).
 */
export const MAX_INLINE_FILES = 32
export const MAX_INLINE_NAME = 255

/** A model-facing part as it appears in a settlement (DESIGN §5). */
export const Part = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("file"),
    mime: Schema.String,
    uri: Schema.String,
    name: Schema.optionalKey(Schema.String),
  }),
])
export type Part = typeof Part.Type

/** A reference to a managed output. */
export const Ref = Schema.Struct({ id: Schema.String, bytes: Schema.Number })
export type Ref = typeof Ref.Type

export interface Limits extends Bound.Limits {
  readonly maxMediaBytes: number
  /** What one session's managed outputs may hold (ManagedOutputs.DEFAULT_MAX_SESSION_BYTES unless set). */
  readonly maxSessionBytes?: number
  /** What an image part may be before it is resized (./image). */
  readonly image: Image.Limits
}

export const DEFAULT_LIMITS: Limits = {
  maxLines: Bound.DEFAULT_MAX_LINES,
  maxBytes: Bound.DEFAULT_MAX_BYTES,
  maxMediaBytes: DEFAULT_MAX_MEDIA_BYTES,
  image: Image.DEFAULT_LIMITS,
}

export interface Projected {
  readonly content: ReadonlyArray<Tool.Content>
  readonly structured: unknown
  /** Set when a producer's capture already lost bytes: a preview then says the text is kept as captured. */
  readonly lossy?: boolean
  /** The Location the call ran in: what does not fit is kept where its tools, and no other Location's, can read it. */
  readonly location?: string
  /** The session of the call: with a Location, its tools read what is kept only in calls of this session. */
  readonly session?: string
}

export interface Bounded {
  readonly content: ReadonlyArray<Part>
  readonly structured: unknown
  readonly outputs: ReadonlyArray<Ref>
}

export interface Interface {
  readonly limits: Limits
  /**
   * Every image part of a call's content within the image limits (./image), tightened by `tighter` (a provider's
   * own) where given; the rest as it came. Runs before `bound`, so an image resized to fit stays inline.
   */
  readonly images: (
    content: ReadonlyArray<Tool.Content>,
    tighter?: Partial<Image.Limits>,
  ) => Effect.Effect<ReadonlyArray<Tool.Content>, Image.Refused>
  readonly bound: (projected: Projected) => Effect.Effect<Bounded, ManagedOutputs.RetentionError>
}

export class Service extends Context.Service<Service, Interface>()("core/Output") {}

/** Limits as configured: any may be left out (the default holds), the image's each on its own. */
export type Settings = Partial<Omit<Limits, "image">> & { readonly image?: Partial<Image.Limits> }

export const layer = (limits: Settings = {}): Layer.Layer<Service, never, ManagedOutputs.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const managed = yield* ManagedOutputs.Service
      const resolved: Limits = {
        maxLines: Math.max(Bound.MIN_MAX_LINES, limits.maxLines ?? DEFAULT_LIMITS.maxLines),
        maxBytes: Math.max(Bound.MIN_MAX_BYTES, limits.maxBytes ?? DEFAULT_LIMITS.maxBytes),
        previewBytes: limits.previewBytes ?? Bound.DEFAULT_PREVIEW_BYTES,
        maxSessionBytes: limits.maxSessionBytes ?? ManagedOutputs.DEFAULT_MAX_SESSION_BYTES,
        maxMediaBytes: limits.maxMediaBytes ?? DEFAULT_LIMITS.maxMediaBytes,
        image: {
          maxBytes: Math.max(Image.MIN_MAX_BYTES, limits.image?.maxBytes ?? Image.DEFAULT_MAX_BYTES),
          maxDimension: Math.max(Image.MIN_MAX_DIMENSION, limits.image?.maxDimension ?? Image.DEFAULT_MAX_DIMENSION),
        },
      }
      const images = (content: ReadonlyArray<Tool.Content>, tighter?: Partial<Image.Limits>) =>
        Image.normalizeAll(content, Image.tighter(resolved.image, tighter))

      // An image was already fitted to the image limits: where they are set to allow more than the media limit,
      // they decide (an image resized to fit them stays inline).
      const maxImageBytes =
        limits.image?.maxBytes === undefined ? resolved.maxMediaBytes : Math.max(resolved.maxMediaBytes, resolved.image.maxBytes)
      const fileFits = (part: Tool.Content & { type: "file" }) =>
        base64Size(part.data) <= (part.mime.startsWith("image/") ? maxImageBytes : resolved.maxMediaBytes) &&
        part.mime.length <= MAX_INLINE_NAME &&
        (part.name === undefined || part.name.length <= MAX_INLINE_NAME)
      /**
       * Which of `content`'s file parts are shown inline (the rest are kept aside): each within its own limit
       * (fileFits), in order while they take at most MAX_INLINE_FILES parts and the largest media limit together
       * (two files of 5 MiB are 10 MiB in the model's context); or undefined when every one is.
       */
      const inlineOf = (content: ReadonlyArray<Tool.Content>): ReadonlySet<Tool.Content> | undefined => {
        let shown: Set<Tool.Content> | undefined
        let files = 0
        let media = 0
        for (const [index, part] of content.entries()) {
          if (part.type !== "file") continue
          const size = base64Size(part.data)
          const inline = fileFits(part) && files < MAX_INLINE_FILES && media + size <= maxImageBytes
          if (inline) {
            files++
            media += size
          }
          if (inline && shown !== undefined) shown.add(part)
          else if (!inline && shown === undefined) shown = new Set(content.slice(0, index).filter((earlier) => earlier.type === "file"))
        }
        return shown
      }
      const within = (bytes: number, lines: number) => bytes <= resolved.maxBytes && lines <= resolved.maxLines

      /**
       * Whether nothing needs bounding: the common case, answered without writing anything. The model-facing text
       * and the structured JSON share one budget; a structured-only output's text is its JSON. Answers the JSON
       * too when it was made, so bounding an oversized output serialises it once.
       */
      const measure = (projected: Projected): { readonly fits: boolean; readonly json: string | undefined } => {
        let bytes = 0
        let lines = 0
        let textParts = 0
        let files = false
        for (const part of projected.content) {
          if (part.type === "file") {
            if (!fileFits(part)) return { fits: false, json: undefined }
            files = true
            continue
          }
          if (textParts++ > 0) bytes += 1 // the line break that joins text parts
          bytes += Bound.byteLength(part.text)
          if (bytes > resolved.maxBytes) return { fits: false, json: undefined }
          lines += Bound.countLines(part.text, resolved.maxLines)
        }
        if (files && inlineOf(projected.content) !== undefined) return { fits: false, json: undefined }
        const structured = projected.structured
        if (structured === null || structured === undefined || repeatsText(structured, projected.content)) {
          return { fits: within(bytes, lines), json: undefined }
        }
        // Beside content, the structured JSON is compact: its bytes count, and it has no line breaks to count.
        // Alone, it is the text the model reads, indented: its lines count too.
        const json = projected.content.length === 0 ? structuredText(structured) : JSON.stringify(structured)
        bytes += Bound.byteLength(json)
        if (projected.content.length === 0) lines += Bound.countLines(json, resolved.maxLines)
        return { fits: within(bytes, lines), json }
      }

      const asParts = (content: ReadonlyArray<Tool.Content>): Array<Part> =>
        content.map((part) => {
          if (part.type === "text") return { type: "text", text: part.text }
          const name = part.name === undefined ? {} : { name: part.name }
          return { type: "file", mime: part.mime, uri: `data:${part.mime};base64,${part.data}`, ...name }
        })

      // Untraced on purpose: this runs on every call, and a span costs more than the fast path itself.
      const bound = (projected: Projected): Effect.Effect<Bounded, ManagedOutputs.RetentionError> => {
        const measured = measure(projected)
        return measured.fits
          ? Effect.succeed({ content: asParts(projected.content), structured: projected.structured ?? null, outputs: [] })
          : boundOversized(projected, measured.json)
      }

      const boundOversized = Effect.fn("Output.boundOversized")(function* (projected: Projected, measuredJson: string | undefined) {
        const structured = projected.structured ?? null
        // A structured-only output reaches the model as its JSON: that text is bounded like any other.
        const structuredOnly = projected.content.length === 0 && structured !== null
        const contentIn: ReadonlyArray<Tool.Content> = structuredOnly
          ? [{ type: "text", text: measuredJson ?? structuredText(structured) }]
          : projected.content

        // Files over the media limit are kept and become a note, which then counts as text like the rest.
        const id = ManagedOutputs.newID()
        const paths = managed.paths(id, projected.location, projected.session)
        const oversizedFiles: Array<Tool.Content & { type: "file" }> = []
        const inline = inlineOf(contentIn)
        const partsWith = (where: (n: number) => string) => {
          oversizedFiles.length = 0
          return contentIn.map((part): Tool.Content => {
            if (part.type === "text" || inline === undefined || inline.has(part)) return part
            oversizedFiles.push(part)
            const shown = `${cut(part.name ?? "file")} (${cut(part.mime)}, ${base64Size(part.data)} bytes)`
            const why =
              (part.name?.length ?? 0) > MAX_INLINE_NAME || part.mime.length > MAX_INLINE_NAME
                ? `has a name or media type longer than the ${MAX_INLINE_NAME} characters a file shown inline may have`
                : fileFits(part)
                  ? `is past what one output shows inline (${MAX_INLINE_FILES} files, ${maxImageBytes} bytes of them together)`
                  : `is larger than the inline media limit of ${resolved.maxMediaBytes} bytes`
            return { type: "text", text: `[${shown} ${why}; ${where(oversizedFiles.length)}.]` }
          })
        }
        let parts = partsWith((n) => `it is kept in ${paths.file(n)}`)
        let fullText = joinTexts(parts)
        const textBytes = Bound.byteLength(fullText)
        const textLines = Bound.countLines(fullText, resolved.maxLines)
        const previewText = !within(textBytes, textLines)
        // A string output shown as its own text costs the model nothing more: counted once, kept while the text is.
        const sameAsText = repeatsText(structured, projected.content)
        const structuredJson =
          structured === null || structuredOnly || sameAsText ? undefined : (measuredJson ?? JSON.stringify(structured))
        const keepStructured = sameAsText
          ? !previewText
          : structuredJson !== undefined && within(textBytes + Bound.byteLength(structuredJson), textLines)

        if (!previewText && keepStructured && oversizedFiles.length === 0) {
          return { content: asParts(projected.content), structured, outputs: [] }
        }
        const written = yield* managed
          .write(
            {
              ...(previewText ? { text: fullText } : {}),
              // The structured value dropped, as JSON (DESIGN §5: `?part=structured` is it whole). A structured-only
              // output's text is that JSON, kept once; a string's JSON is its text quoted, made from it when read.
              ...(structuredOnly && typeof structured !== "string" ? { structured: previewText ? "text" : fullText } : {}),
              ...((structuredOnly || sameAsText) && typeof structured === "string" && !keepStructured ? { structured: "quoted" } : {}),
              ...(structuredJson !== undefined && !keepStructured ? { structured: structuredJson } : {}),
              files: oversizedFiles.map((part) => Buffer.from(part.data, "base64")),
            },
            id,
            projected.location,
            projected.session,
            resolved.maxSessionBytes,
          )
          .pipe(Effect.catchTag("ManagedOutputs.NotKept", (refused) => Effect.succeed(refused)))
        const notKept = written instanceof ManagedOutputs.NotKept ? written.message : undefined
        let preview = previewText
        if (notKept !== undefined && oversizedFiles.length > 0) {
          // The notes said where the media were kept: they were not. Longer, they may now take the text past the
          // bound: it is then a preview, as any text past it.
          parts = partsWith(() => `it was not kept: ${notKept}`)
          fullText = joinTexts(parts)
          preview ||= !within(Bound.byteLength(fullText), Bound.countLines(fullText, resolved.maxLines))
        }
        const content: Array<Part> = []
        if (preview) {
          // All text shares one budget: it becomes one preview, in the place of the first text part.
          const text = Bound.preview(fullText, resolved, {
            id,
            path: paths.text,
            lossy: projected.lossy === true,
            unshared: !(written instanceof ManagedOutputs.NotKept) && written.unshared !== undefined,
            ...(notKept === undefined ? {} : { notKept }),
          })
          let placed = false
          for (const part of parts) {
            if (part.type === "file") content.push(...asParts([part]))
            else if (!placed) {
              content.push({ type: "text", text })
              placed = true
            }
          }
        } else if (!structuredOnly) {
          content.push(...asParts(parts))
        }
        return {
          content,
          structured: keepStructured ? structured : null,
          outputs: written instanceof ManagedOutputs.NotKept ? [] : [{ id: written.id, bytes: written.bytes }],
        }
      })

      return Service.of({ limits: resolved, images, bound })
    }),
  )

/** A file's name or media type as its note shows it: at most MAX_INLINE_NAME characters. */
const cut = (text: string): string => (text.length <= MAX_INLINE_NAME ? text : `${text.slice(0, MAX_INLINE_NAME)}…`)

/** Whether `structured` is a string output that is the content's one text part itself. */
const repeatsText = (structured: unknown, content: ReadonlyArray<Tool.Content>): boolean =>
  typeof structured === "string" && content.length === 1 && content[0]!.type === "text" && content[0]!.text === structured

/** The JSON a structured-only output is shown as: indented, so its lines can be read a range at a time. */
const structuredText = (structured: unknown): string =>
  typeof structured === "string" ? structured : JSON.stringify(structured, null, 2)

/** All text parts as one text (they share one budget). */
const joinTexts = (content: ReadonlyArray<Tool.Content>): string => {
  const texts = content.filter((part) => part.type === "text")
  return texts.length === 1 ? texts[0]!.text : texts.map((part) => part.text).join("\n")
}

const base64Size = (data: string): number => {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0
  return Math.floor((data.length * 3) / 4) - padding
}
