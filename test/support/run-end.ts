// Preloaded for every test run (bunfig.toml): what a run leaves behind that no single test file owns (the built
// binary, and what helper modules registered with ./at-run-end: temp directories, servers started) is removed once
// the last file has run.

import { afterAll } from "bun:test"
import { runEnds } from "./at-run-end"
import { removeBuilt } from "./binary"

// Removing every temp directory of a whole run (workspaces with their node_modules among them) takes more than a
// test's minute on a loaded machine: the clean-up has ten.
afterAll(async () => {
  await runEnds()
  removeBuilt()
}, 600_000)
