// `@core/tool/testing` and images: an author's tool that answers a large image gets it back resized within the
// limits with a note of both sizes, as `core exec` would print it; a small one byte-identical; a corrupt one is a
// failure settlement; `limits.image` tightens the limits as core.json's `output.image` does.

import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { settle } from "../../src/sdk/testing"
import { Tool } from "../../src/tool/tool"
import { metadata, png } from "../support/image"

/** A tool answering the PNG it is asked for, as a chart tool would: structured facts, the picture as a file part. */
const chart = Tool.make({
  description: "Draws a chart",
  input: Schema.Struct({ width: Schema.Int, height: Schema.Int, cut: Schema.optionalKey(Schema.Boolean) }),
  output: Schema.Struct({ data: Schema.String, bytes: Schema.Int }),
  execute: (input) =>
    Effect.sync(() => {
      const bytes = png(input.width, input.height, { noise: 0 })
      const kept = input.cut === true ? bytes.subarray(0, bytes.length - 40) : bytes
      return { data: kept.toString("base64"), bytes: kept.length }
    }),
  toModelOutput: ({ output }) => [{ type: "file", data: output.data, mime: "image/png", name: "chart.png" }],
})

const imageOf = (settlement: Awaited<ReturnType<typeof settle>>) => {
  const part = settlement.content.find((item) => item.type === "file") as { uri: string; mime: string; name?: string }
  return { ...part, bytes: Buffer.from(part.uri.slice(part.uri.indexOf(",") + 1), "base64") }
}

describe("images from an author's tool, through the kit", () => {
  test("a 3000×2400 chart comes back 2000×1600, lossless, with the note", async () => {
    const settlement = await settle(chart, { width: 3000, height: 2400 })
    expect(settlement.status).toBe("success")
    const image = imageOf(settlement)
    expect(await metadata(image.bytes)).toMatchObject({ width: 2000, height: 1600, format: "png" })
    expect(image).toMatchObject({ mime: "image/png", name: "chart.png" })
    expect(settlement.content[1]).toEqual({
      type: "text",
      text: expect.stringMatching(/^\[image "chart\.png" resized from 3000×2400 PNG, .+ to 2000×1600 PNG, .+\]$/),
    })
    // The structured output held the original picture's bytes: it is not sent again beside the file part.
    expect(settlement.structured).toBeNull()
  })

  test("a small chart comes back byte-identical", async () => {
    const settlement = await settle(chart, { width: 300, height: 200 })
    expect(imageOf(settlement).bytes.equals(png(300, 200, { noise: 0 }))).toBe(true)
    expect(settlement.content).toHaveLength(1)
  })

  test("a cut-short chart is a failure settlement saying why", async () => {
    const settlement = await settle(chart, { width: 300, height: 200, cut: true })
    expect(settlement.status).toBe("error")
    expect(settlement.error?.kind).toBe("failure")
    expect(settlement.error?.message).toStartWith('The image "chart.png" (PNG, ')
    expect(settlement.error?.message).toContain("cannot be decoded: it is cut short (no IEND chunk)")
  })

  test("limits.image tightens the limits", async () => {
    const settlement = await settle(chart, { width: 1200, height: 600 }, { limits: { image: { maxDimension: 300 } } })
    expect(await metadata(imageOf(settlement).bytes)).toMatchObject({ width: 300, height: 150 })
  })
})
