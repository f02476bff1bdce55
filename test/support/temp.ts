// Temporary directories for tests: each test gets its own, removed when the run ends (./at-run-end).

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { atRunEnd } from "./at-run-end"

const created: Array<string> = []

atRunEnd(() => {
  // Retried: a process a test started may still be writing its last files as it exits.
  for (const directory of created.splice(0)) rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
})

/** A fresh empty directory under the system temp dir, or under `parent`. */
export const tempDir = (prefix = "core-test-", parent = tmpdir()): string => {
  const directory = mkdtempSync(join(parent, prefix))
  created.push(directory)
  return directory
}
