// What each provider receives is public contract (DESIGN §14): for the tools of ./pinned-cases, every mapping's
// output (the tool, or the problems and message of the compatibility error) is compared as JSON text, byte for byte
// (key order included), with pinned.json, recorded from the mappings. A difference there changes what models are
// sent: review it as a change of contract, never as a fixture to refresh.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Provider } from "../../src/provider/provider"
import { CASES, prepared } from "./pinned-cases"

const PINNED: Record<string, Record<Provider.Name, unknown>> = JSON.parse(readFileSync(join(import.meta.dir, "pinned.json"), "utf8"))

describe("every provider mapping's output is the pinned one, byte for byte", () => {
  test("every case is pinned, and every pinned case is one", () => {
    expect(CASES.map((definition) => definition.name)).toEqual(Object.keys(PINNED))
  })

  for (const definition of CASES) {
    for (const provider of Provider.NAMES) {
      test(`${definition.name} for ${provider}`, () => {
        expect(JSON.stringify(prepared(definition, provider), null, 2)).toBe(JSON.stringify(PINNED[definition.name]![provider], null, 2))
      })
    }
  }

  test("an unfrozen copy of each definition maps to the same text, and is left as it was", () => {
    // Definitions are frozen, so a mapping that changed its input in place would throw above; a copy that is not
    // frozen shows it would change nothing either, and that no answer depends on the definition's identity.
    for (const definition of CASES) {
      const copy = structuredClone(definition)
      const before = JSON.stringify(copy)
      for (const provider of Provider.NAMES) {
        expect(JSON.stringify(prepared(copy, provider), null, 2)).toBe(JSON.stringify(PINNED[definition.name]![provider], null, 2))
      }
      expect(JSON.stringify(copy)).toBe(before)
    }
  })
})
