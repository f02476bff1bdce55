export * as Output from "./output"

// The one generic bounding boundary (DESIGN §2 law 10): turns a call's projected output into what goes back to
// the model. Oversized text and structured output are kept in full as managed outputs and replaced by previews;
// media stays inline up to the media limit. If keeping fails, bounding fails: never a lossy success.

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Tool } from "../tool/tool"
import { Bound } from "./bound"
import { ManagedOutputs } from "./managed"

export const DEFAULT_MAX_MEDIA_BYTES = 5 * 1024 * 1024

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
}

export const DEFAULT_LIMITS: Limits = {
  maxLines: Bound.DEFAULT_MAX_LINES,
  maxBytes: Bound.DEFAULT_MAX_BYTES,
  maxMediaBytes: DEFAULT_MAX_MEDIA_BYTES,
}

export interface Projected {
  readonly content: ReadonlyArray<Tool.Content>
  readonly structured: unknown
}

export interface Bounded {
  readonly content: ReadonlyArray<Part>
  readonly structured: unknown
  readonly outputs: ReadonlyArray<Ref>
}

export interface Interface {
  readonly limits: Limits
  readonly bound: (projected: Projected) => Effect.Effect<Bounded, ManagedOutputs.RetentionError>
}

export class Service extends Context.Service<Service, Interface>()("core/Output") {}

export const layer = (limits: Partial<Limits> = {}): Layer.Layer<Service, never, ManagedOutputs.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const managed = yield* ManagedOutputs.Service
      const resolved: Limits = {
        maxLines: Math.max(Bound.MIN_MAX_LINES, limits.maxLines ?? DEFAULT_LIMITS.maxLines),
        maxBytes: Math.max(Bound.MIN_MAX_BYTES, limits.maxBytes ?? DEFAULT_LIMITS.maxBytes),
        maxMediaBytes: limits.maxMediaBytes ?? DEFAULT_LIMITS.maxMediaBytes,
      }

      const fileFits = (part: Tool.Content & { type: "file" }) => base64Size(part.data) <= resolved.maxMediaBytes
      const textFits = (text: string) => !Bound.exceeds(text, resolved)
      const structuredText = (structured: unknown) =>
        typeof structured === "string" ? structured : JSON.stringify(structured, null, 2)

      /** Whether nothing needs bounding: the common case, answered without allocating or writing anything. */
      const fits = (projected: Projected): boolean => {
        let textParts = 0
        for (const part of projected.content) {
          if (part.type === "file") {
            if (!fileFits(part)) return false
          } else {
            textParts++
            if (!textFits(part.text)) return false
          }
        }
        // Parts that fit alone may not fit together (they share one budget).
        if (textParts > 1 && !textFits(joinTexts(projected.content))) return false
        const structured = projected.structured
        return structured === null || structured === undefined || textFits(structuredText(structured))
      }

      const asParts = (content: ReadonlyArray<Tool.Content>): Array<Part> =>
        content.map((part) => {
          if (part.type === "text") return { type: "text", text: part.text }
          const name = part.name === undefined ? {} : { name: part.name }
          return { type: "file", mime: part.mime, uri: `data:${part.mime};base64,${part.data}`, ...name }
        })

      // Untraced on purpose: this runs on every call, and a span costs more than the fast path itself.
      const bound = (projected: Projected): Effect.Effect<Bounded, ManagedOutputs.RetentionError> =>
        fits(projected)
          ? Effect.succeed({ content: asParts(projected.content), structured: projected.structured ?? null, outputs: [] })
          : boundOversized(projected)

      const boundOversized = Effect.fn("Output.boundOversized")(function* (projected: Projected) {
        const outputs: Array<Ref> = []
        const keep = Effect.fnUntraced(function* (data: string | Uint8Array) {
          const reference = yield* managed.write(data)
          outputs.push({ id: reference.id, bytes: reference.bytes })
          return reference
        })

        // Files over the media limit are kept and become a note, which then counts as text like the rest.
        const parts: Array<Tool.Content> = []
        for (const part of projected.content) {
          if (part.type === "text" || fileFits(part)) {
            parts.push(part)
            continue
          }
          const size = base64Size(part.data)
          const reference = yield* keep(Buffer.from(part.data, "base64"))
          parts.push({
            type: "text",
            text:
              `[${part.name ?? "file"} (${part.mime}, ${size} bytes) is larger than the inline media limit of ` +
              `${resolved.maxMediaBytes} bytes; it is kept as ${reference.id} at ${reference.path}.]`,
          })
        }

        // All text shares one budget: when too large together it is kept whole and becomes one preview, in the
        // place of the first text part.
        const fullText = joinTexts(parts)
        let textPreview: { readonly full: string; readonly preview: string } | undefined
        if (!textFits(fullText)) {
          const reference = yield* keep(fullText)
          textPreview = { full: fullText, preview: Bound.preview(fullText, resolved, reference) }
        }
        const content: Array<Part> = []
        let textPlaced = false
        for (const part of parts) {
          if (part.type === "file") content.push(...asParts([part]))
          else if (textPreview === undefined) content.push({ type: "text", text: part.text })
          else if (!textPlaced) content.push({ type: "text", text: textPreview.preview })
          if (part.type === "text") textPlaced = true
        }

        let structured = projected.structured
        if (structured !== null && structured !== undefined) {
          const text = structuredText(structured)
          if (!textFits(text)) {
            // The same text as the content needs no second copy.
            if (textPreview !== undefined && textPreview.full === text) structured = textPreview.preview
            else structured = Bound.preview(text, resolved, yield* keep(text))
          }
        }
        return { content, structured: structured ?? null, outputs }
      })

      return Service.of({ limits: resolved, bound })
    }),
  )

/** All text parts as one text (they share one budget). */
const joinTexts = (content: ReadonlyArray<Tool.Content>): string => {
  const texts = content.filter((part) => part.type === "text")
  return texts.length === 1 ? texts[0]!.text : texts.map((part) => part.text).join("\n")
}

const base64Size = (data: string): number => {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0
  return Math.floor((data.length * 3) / 4) - padding
}
