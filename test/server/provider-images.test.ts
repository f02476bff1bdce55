// Image limits per provider (DESIGN §14): a call through a turn prepared for `anthropic` resizes an image to what
// Anthropic takes (1568 px on the long side, 3.75 MiB so its base64 stays within 5 MB), and the result block carries
// the resized image; a turn without a provider keeps core.json's (default 2000 px); openai's 2048 px is looser than
// the Location's, which stays the ceiling.

import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { metadata, png } from "../support/image"
import { inProcess } from "./support"

const picture = png(3200, 1600, { noise: 0 })

const imageOf = (body: any) => {
  const part = body.content.find((item: any) => item.type === "file")
  return Buffer.from(part.uri.slice(part.uri.indexOf(",") + 1), "base64")
}

describe("images through a turn prepared for a provider", () => {
  test("anthropic: resized to 1568 px on the long side, in the settlement and its result block", async () => {
    const sidecar = await inProcess({}, { before: (box) => writeFileSync(join(box.location, "wide.png"), picture) })
    const turn = await sidecar.json("POST", "/v1/turns", { body: { provider: "anthropic" } })
    const answer = await sidecar.settle(turn.body.turnID, { name: "read", input: { filePath: "wide.png" }, toolCallID: "call_img" })
    expect(answer.body.status).toBe("success")
    const bytes = imageOf(answer.body)
    expect(await metadata(bytes)).toMatchObject({ width: 1568, height: 784 })
    expect(bytes.length).toBeLessThanOrEqual((5 * 1024 * 1024 * 3) / 4)
    expect(answer.body.content.at(-1).text).toContain("to 1568×784 PNG")
    const block = answer.body.result.content.find((item: any) => item.type === "image")
    expect(block.source.data).toBe(bytes.toString("base64"))
  })

  test("no provider: the Location's 2000 px; openai (2048 px) does not loosen it", async () => {
    const sidecar = await inProcess({}, { before: (box) => writeFileSync(join(box.location, "wide.png"), picture) })
    for (const body of [{}, { provider: "openai" }]) {
      const turn = await sidecar.json("POST", "/v1/turns", { body })
      const answer = await sidecar.settle(turn.body.turnID, { name: "read", input: { filePath: "wide.png" } })
      expect(await metadata(imageOf(answer.body))).toMatchObject({ width: 2000, height: 1000 })
    }
  })
})
