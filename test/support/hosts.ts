// Two or more hosts on one machine, as the fleet tests run them: a Location that allows everything, and for each host
// its own data directory, core home and user home, sharing only what the test passes (store and outputs URLs).

import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tempDir } from "./temp"

/** A Location that allows everything, and `host(name, shared)`: that host's environment with `shared` on top. */
export const world = (defaults: Record<string, string> = {}) => {
  const root = tempDir()
  const location = join(root, "project")
  mkdirSync(location)
  writeFileSync(join(location, "core.json"), JSON.stringify({ permission: { "*": "allow" } }))
  const host = (name: string, shared: Record<string, string>) => {
    const env = { CORE_DATA_DIR: join(root, name, "data"), CORE_HOME: join(root, name, "home"), HOME: join(root, name, "user") }
    for (const directory of Object.values(env)) mkdirSync(directory, { recursive: true })
    return { ...env, ...defaults, ...shared }
  }
  return { location, host }
}
