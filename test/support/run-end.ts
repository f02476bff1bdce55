// Preloaded for every test run (bunfig.toml): what a run leaves behind that no single test file owns (the built
// binary, and what helper modules registered with ./at-run-end: temp directories, servers started) is removed once
// the last file has run.

import { afterAll } from "bun:test"
import { mkdtempSync } from "node:fs"
import { basename, dirname } from "node:path"
import { ProcessDirs } from "../../src/shell/process-dirs"
import { runEnds } from "./at-run-end"
import { removeBuilt } from "./binary"

/**
 * The run's own data directory, so that no test writes into the data directory of the person running them
 * (`~/.local/share/core`: caches, undone changes, supervisor records and settlements a run leaves behind). Not in the
 * temp directory: a data directory there is carved out of the temp directory a command is granted, which would
 * change the sandboxes the tests check. `npm test` makes it before Bun starts, so that every process a test starts
 * has it too (Bun.spawn gives a child the environment Bun started with, not `process.env` as changed since); a bare
 * `bun test` gets one here, which only this process and the children given `process.env` see.
 */
const PREFIX = "core-test-data-"
const ours = (path: string | undefined): path is string => path !== undefined && dirname(path) === "/var/tmp" && basename(path).startsWith(PREFIX)
if (!ours(process.env.CORE_DATA_DIR)) process.env.CORE_DATA_DIR = mkdtempSync(`/var/tmp/${PREFIX}`)
const data = process.env.CORE_DATA_DIR!

// Removing every temp directory of a whole run (workspaces with their node_modules among them) takes more than a
// test's minute on a loaded machine: the clean-up has ten.
afterAll(async () => {
  await runEnds()
  removeBuilt()
  ProcessDirs.remove(data)
}, 600_000)
