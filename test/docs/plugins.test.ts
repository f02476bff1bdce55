// docs/plugins.md keeps its promise that every TypeScript sample is checked: each ```ts block follows a
// `<!-- check: PATH -->` line naming its file, and all of them are written into a workspace made by the compiled
// `core init`, where tsc must pass and `bun test` must run every sample test and pass; and the compiled core
// installs the sample plugins there.

import { beforeAll, expect, test } from "bun:test"
import { join } from "node:path"
import { binary, run } from "../support/binary"
import { expectMarked, expectSamplesPass } from "../support/guide"

const GUIDE = await Bun.file(join(import.meta.dir, "../../docs/plugins.md")).text()
const SLOW = 60_000

beforeAll(async () => {
  await binary()
}, 300_000)

test("every TypeScript sample in the guide is marked with the file it belongs to, each file once", () => {
  expectMarked(GUIDE)
})

test("the samples type-check and their tests pass in a workspace made by core init", async () => {
  const directory = await expectSamplesPass(GUIDE)
  // core itself installs them: the tools they register are listed, the hooks shown, nothing reported.
  const listed = await run(["tools", "--location", directory], { env: { CORE_HOME: join(directory, ".home"), CORE_DATA_DIR: join(directory, ".data") } })
  expect(listed.stderr).toBe("")
  expect(listed.stdout).toMatch(/^notes\s+Read the project's notes/m)
  expect(listed.stdout).toMatch(/^bash\s.*\[hooks: guard: definition, before\]$/m)
}, SLOW)
