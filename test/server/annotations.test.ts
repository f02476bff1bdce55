// What each built-in declares about its effects, as `POST /v1/turns` advertises it: the searching and reading tools
// read only; write, edit and apply_patch change files in the Location; bash may do anything, beyond it too;
// webfetch only reads, from beyond the Location. A host may let calls run without asking on these hints, so a
// changed hint must be a deliberate change.

import { describe, expect, test } from "bun:test"
import { Builtins } from "../../src/builtin/builtins"
import { inProcess } from "./support"

const READ_ONLY = { readOnly: true, idempotent: true, openWorld: false }

const DECLARED: Record<string, unknown> = {
  read: READ_ONLY,
  glob: READ_ONLY,
  grep: READ_ONLY,
  list: READ_ONLY,
  write: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
  edit: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
  apply_patch: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
  bash: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
  webfetch: { readOnly: true, idempotent: true, openWorld: true },
  // The session's own list, replaced whole: sending the same list again changes nothing.
  todowrite: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
  todoread: READ_ONLY,
}

const sidecar = await inProcess()
const { definitions } = await sidecar.turn()

describe("the built-ins' annotations in POST /v1/turns", () => {
  test("the table covers every built-in", () => {
    expect(Object.keys(DECLARED).sort()).toEqual([...Builtins.NAMES].sort())
  })

  for (const [name, annotations] of Object.entries(DECLARED)) {
    test(`${name} declares ${JSON.stringify(annotations)}`, () => {
      expect(definitions.find((definition) => definition.name === name)?.annotations).toEqual(annotations)
    })
  }
})
