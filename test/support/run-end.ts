// Preloaded for every test run (bunfig.toml): what a run leaves behind that no single test file owns is removed
// once the last file has run.

import { afterAll } from "bun:test"
import { removeBuilt } from "./binary"

afterAll(removeBuilt)
