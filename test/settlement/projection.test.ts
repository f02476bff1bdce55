// What a tool's author is told when toModelOutput answers something that is not content: the part, what is wrong
// with it and the shape expected; bytes in a file part's `data` name the base64 string the contract carries.

import { describe, expect, test } from "bun:test"
import { settle } from "@core/tool/testing"
import { Effect, Schema } from "effect"
import { Projection } from "../../src/settlement/projection"
import { Tool } from "../../src/tool/tool"
import { png } from "../support/image"

const PNG = new Uint8Array(png(2, 2))

const imageTool = (data: unknown) =>
  Tool.make({
    description: "An image",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.succeed("drawn"),
    toModelOutput: () => [{ type: "file", data, mime: "image/png" }] as never,
  })

describe("Projection.problemOf", () => {
  test("bytes in a file part's data: the part, the kind of bytes, and the base64 string expected", () => {
    for (const [bytes, kind] of [
      [PNG, "Uint8Array"],
      [Buffer.from(PNG), "Buffer"],
      [PNG.buffer, "ArrayBuffer"],
    ] as const) {
      const problem = Projection.problemOf([{ type: "text", text: "a chart" }, { type: "file", data: bytes, mime: "image/png" }])
      expect(problem).toBe(
        `part 1: a file part's data is bytes (${kind}), but it must be a base64 string: data: Buffer.from(bytes).toString("base64")`,
      )
    }
  })

  test("other non-content: the part and the shape expected", () => {
    expect(Projection.problemOf([{ type: "video" }])).toStartWith('part 0 has type "video" (each part is { type: "text", text }')
    expect(Projection.problemOf([42])).toStartWith("part 0 is a number (")
    expect(Projection.problemOf({ type: "text", text: "x" })).toStartWith("an Object, not a string or an array of parts")
    expect(Projection.problemOf([{ type: "file", data: 7, mime: "image/png" }])).toContain("data: a base64 string")
  })
})

describe("a settled call whose toModelOutput gives a file part bytes", () => {
  test("is invalid_output saying a base64 string was expected; base64 data settles as a file part", async () => {
    const refused = await settle(imageTool(PNG), {}, { name: "chart" })
    expect(refused.status).toBe("error")
    expect(refused.error?.kind).toBe("invalid_output")
    expect(refused.error?.message).toBe(
      `chart's toModelOutput returned something that is not content: part 0: a file part's data is bytes (Uint8Array), but it must be a base64 ` +
        `string: data: Buffer.from(bytes).toString("base64"); this is a defect in the tool.`,
    )
    const fixed = await settle(imageTool(Buffer.from(PNG).toString("base64")), {}, { name: "chart" })
    expect(fixed.status).toBe("success")
    expect(fixed.content).toEqual([{ type: "file", mime: "image/png", uri: `data:image/png;base64,${Buffer.from(PNG).toString("base64")}` }])
  })
})
