// A Location named through a link (core exec --location, core mcp, core check): where no mount namespace holds a
// served Location in place, a command of a Location holding it can rename it away and leave a link to a folder of the
// model's in its place. The name is resolved again once no command of the Location it names runs (its lock, as a
// command holds it from before it starts until its guard has put things back), so what loads is the Location.
import { expect, test } from "bun:test"
import { mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { Host } from "../../src/host/host"
import { LoadGate } from "../../src/shell/load-gate"
import { tempDir } from "../support/temp"

test("a name that leads through a link is resolved again once no command of the Location it names runs", async () => {
  const root = realpathSync(tempDir("core-named-"))
  const environment = { dataDir: join(root, "data"), home: join(root, "home") }
  const sub = join(root, "main", "a", "sub")
  mkdirSync(sub, { recursive: true })
  writeFileSync(join(sub, "core.json"), "{}")
  mkdirSync(join(root, "main", "evil", "tools"), { recursive: true })
  // A command of a Location holding `sub` runs (it holds `sub`'s lock), and has swapped it for a link.
  const letGo = await LoadGate.command([sub], LoadGate.directoryOf({ CORE_DATA_DIR: environment.dataDir }))
  renameSync(sub, `${sub}.old`)
  symlinkSync(join(root, "main", "evil"), sub)
  let prepared: string | undefined
  const preparing = Effect.runPromise(Host.prepare(environment, sub)).then((done) => {
    prepared = done.directory
    return done
  })
  await Bun.sleep(300)
  expect(prepared).toBeUndefined()
  // The command has ended and its guard has put the Location back.
  rmSync(sub)
  renameSync(`${sub}.old`, sub)
  letGo()
  expect((await preparing).directory).toBe(sub)
})
