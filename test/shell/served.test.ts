// A served Location never loads a tool file that a command wrote: the sidecar in process, watching its Location,
// runs a bash call whose script (a file, so the line itself names no protected path) creates tools/evil.ts, a
// tool whose module leaves a mark when it is loaded. While the command is held, the watcher holds its reload of
// the Location: the evil tool is neither loaded nor advertised; once the call ends it is gone, the result says it
// was undone, and the reload that follows finds nothing. Every wait is on an event or on the file system.

import { describe, expect, test } from "bun:test"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Guard } from "../../src/shell/guard"
import { IMPORTS, inProcess } from "../server/support"

const tool = (reply: string, mark = "") => `${IMPORTS}
import { writeFileSync } from "node:fs"
import { join } from "node:path"
${mark === "" ? "" : `writeFileSync(join(import.meta.dir, "..", "${mark}"), "loaded")`}
export default Tool.make({
  description: "Answer ${reply}",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("${reply}"),
})
`

const SCRIPT = `mkdir -p tools
cat > tools/evil.ts <<'EOF'
${tool("evil", "loaded")}
EOF
while [ ! -e open ]; do sleep 0.01; done
`

describe("hot reload and commands", () => {
  test("a tool file a command wrote is never loaded, and is gone when the call ends", { timeout: 30_000 }, async () => {
    const sidecar = await inProcess({ "make.sh": SCRIPT }, { watch: true })
    const location = sidecar.box.location
    const events = await sidecar.events()
    const turn = await sidecar.turn()
    const call = sidecar.settle(turn.turnID, { name: "bash", input: { command: "bash make.sh" } })

    let answered: unknown
    void call.then((settled) => (answered = settled.body))
    for (let tries = 0; tries < 1000 && answered === undefined && !existsSync(join(location, "tools/evil.ts")); tries++) {
      await Bun.sleep(10)
    }
    expect(answered).toBeUndefined()
    expect(existsSync(join(location, "tools/evil.ts"))).toBe(true)
    // The watcher saw the new folder and holds its reload until the command has ended.
    for (let tries = 0; tries < 1000 && Guard.held(location) === 0; tries++) await Bun.sleep(10)
    expect(Guard.held(location)).toBe(1)
    expect(existsSync(join(location, "loaded"))).toBe(false)
    expect((await sidecar.turn()).definitions.map((definition: { name: string }) => definition.name)).not.toContain("evil")

    writeFileSync(join(location, "open"), "")
    const settled = await call
    expect(settled.body.status).toBe("success")
    expect(settled.body.structured.undone).toEqual([join(location, "tools")])
    expect(settled.body.content[0].text).toContain("Undone:")
    expect(existsSync(join(location, "tools"))).toBe(false)
    expect(existsSync(join(location, "loaded"))).toBe(false)
    expect((await sidecar.turn()).definitions.map((definition: { name: string }) => definition.name)).not.toContain("evil")
    await events.close()
  })
})
