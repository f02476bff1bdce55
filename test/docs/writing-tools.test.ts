// docs/writing-tools.md keeps its promise that every TypeScript sample is checked: each ```ts block follows a
// `<!-- check: PATH -->` line naming its file, and all of them are written into a workspace made by the compiled
// `core init`, where tsc must pass and `bun test` must run every sample test and pass.

import { beforeAll, test } from "bun:test"
import { join } from "node:path"
import { binary } from "../support/binary"
import { expectMarked, expectSamplesPass } from "../support/guide"

const GUIDE = await Bun.file(join(import.meta.dir, "../../docs/writing-tools.md")).text()
const SLOW = 60_000

beforeAll(async () => {
  await binary()
}, 300_000)

test("every TypeScript sample in the guide is marked with the file it belongs to, each file once", () => {
  expectMarked(GUIDE)
})

test("the samples type-check and their tests pass in a workspace made by core init", async () => {
  await expectSamplesPass(GUIDE)
}, SLOW)
