// Several Locations served at once, against a model in one of them: another served Location's configuration
// (core.json, tools/, plugins/, .core/) configures core as much as its own, so changing it asks a person too.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Guard } from "../../src/shell/guard"
import { inProcess } from "./support"
import { tempDir } from "../support/temp"

const ALLOW = JSON.stringify({ permission: { "*": "allow" } })

/** Waits in a script until the test writes `go`. */
const UNTIL_GO = "while [ ! -e go ]; do sleep 0.05; done\n"

/**
 * The bash call `sh late.sh` (`script` written there, in the sidecar's Location) in a turn of its own, once its
 * script has written `started`: what a command does is in a script it runs, not read from its line.
 */
const scripted = async (sidecar: Awaited<ReturnType<typeof inProcess>>, script: string, toolCallID: string) => {
  const main = realpathSync(sidecar.box.location)
  writeFileSync(join(main, "late.sh"), script)
  const { turnID } = await sidecar.turn()
  const running = sidecar.settle(turnID, { name: "bash", input: { command: "sh late.sh", description: "x" }, toolCallID })
  for (let waited = 0; !existsSync(join(main, "started")) && waited < 100; waited++) await Bun.sleep(50)
  // Wrapped: an async function's promise would wait for the call's.
  return { running }
}

/** A tool file that, imported, writes its process's pid to `marker`. */
const planted = (marker: string) =>
  `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\nrequire("fs").writeFileSync(${JSON.stringify(marker)}, String(process.pid))\nexport default Tool.make({ description: "x", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed("x") })\n`

describe("a model in one served Location against another", () => {
  test("writing another served Location's core.json or tool file is asked of a person, whatever the rules say", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const other = join(roots, "other")
    mkdirSync(join(other, "tools"), { recursive: true })
    writeFileSync(join(other, "core.json"), '{ "permission": { "*": "ask" } }\n')
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots] })
    // The other Location is served (a host opened it).
    expect((await sidecar.turn(undefined, { "x-core-location": other })).turnID).toBeString()
    const turn = await sidecar.turn()
    const read = await sidecar.settle(turn.turnID, { name: "read", input: { filePath: join(other, "core.json") }, toolCallID: "call_other_read" })
    expect(read.body.status).toBe("success")
    const writes = [
      { name: "write", input: { filePath: join(other, "core.json"), content: ALLOW } },
      { name: "edit", input: { filePath: join(other, "core.json"), oldString: '"ask"', newString: '"allow"' } },
      { name: "write", input: { filePath: join(other, "tools/evil.ts"), content: "export default 1" } },
      { name: "bash", input: { command: `echo '${ALLOW}' > ${join(other, "core.json")}`, description: "x" } },
    ]
    const events = await sidecar.events()
    let n = 0
    for (const call of writes) {
      const settling = sidecar.settle(turn.turnID, { ...call, toolCallID: `call_other_${++n}` })
      // The rules allow everything: what asks is the protection, and its message says a person must decide.
      const asked = await Promise.race([events.until("permission.asked"), settling])
      expect([call.name, "event" in asked ? asked.event : asked.body.status]).toEqual([call.name, "permission.asked"])
      await sidecar.json("POST", `/v1/permissions/${(asked as { data: { id: string } }).data.id}/reply`, { body: { reply: "reject" } })
      expect([call.name, (await settling).body.status]).toEqual([call.name, "declined"])
    }
    await events.close()
    expect(readFileSync(join(other, "core.json"), "utf8")).toBe('{ "permission": { "*": "ask" } }\n')
    expect(() => readFileSync(join(other, "tools/evil.ts"))).toThrow()
  })

  test("code a command runs cannot change another served Location's configuration either", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const other = join(roots, "other")
    mkdirSync(join(other, "tools"), { recursive: true })
    writeFileSync(join(other, "core.json"), '{ "permission": { "*": "ask" } }\n')
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots] })
    expect((await sidecar.turn(undefined, { "x-core-location": other })).turnID).toBeString()
    const turn = await sidecar.turn()
    // The line names no protected path: only the script it writes and runs does.
    const script = [`echo '{}' > ${join(other, "core.json")}`, `echo x > ${join(other, "tools/evil.ts")}`, `mkdir ${join(other, "plugins")}`]
    const command = `printf '%s\\n' ${script.map((line) => `"${line.replaceAll('"', '\\"')}"`).join(" ")} > w.sh; sh w.sh; true`
    const ran = await sidecar.settle(turn.turnID, { name: "bash", input: { command, description: "x" }, toolCallID: "call_script" })
    expect(ran.body.status).toBe("success")
    expect(readFileSync(join(other, "core.json"), "utf8")).toBe('{ "permission": { "*": "ask" } }\n')
    expect(() => readFileSync(join(other, "tools/evil.ts"))).toThrow()
    expect(() => readFileSync(join(other, "plugins"))).toThrow()
  })

  // Let go (idle, or past the bound), a Location lost its protection, and its next request loaded what a model had
  // written into its tools/ meanwhile: code run inside core.
  test("a Location let go keeps its configuration protected: its next load would run what was written", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const [other, third] = [join(roots, "other"), join(roots, "third")]
    for (const directory of [other, third]) mkdirSync(join(directory, "tools"), { recursive: true })
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots], locations: { max: 1 } })
    expect((await sidecar.turn(undefined, { "x-core-location": other })).turnID).toBeString()
    // A third Location served past the bound of one: the other is let go.
    expect((await sidecar.turn(undefined, { "x-core-location": third })).turnID).toBeString()
    const turn = await sidecar.turn()
    const events = await sidecar.events()
    const settling = sidecar.settle(turn.turnID, {
      name: "write",
      input: { filePath: join(other, "tools/evil.ts"), content: "export default 1" },
      toolCallID: "call_let_go",
    })
    const asked = await Promise.race([events.until("permission.asked"), settling])
    expect("event" in asked ? asked.event : asked.body.status).toBe("permission.asked")
    await sidecar.json("POST", `/v1/permissions/${(asked as { data: { id: string } }).data.id}/reply`, { body: { reply: "reject" } })
    expect((await settling).body.status).toBe("declined")
    await events.close()
    expect(() => readFileSync(join(other, "tools/evil.ts"))).toThrow()
  })
})

describe("a named Location that leaves the roots", () => {
  test("is refused at once: its name leading to another directory, or the same one moved out", async () => {
    const roots = realpathSync(tempDir("core-roots-"))
    const outside = realpathSync(tempDir("core-outside-"))
    const project = join(roots, "parent", "project")
    mkdirSync(join(project, "tools"), { recursive: true })
    const sidecar = await inProcess({ "core.json": ALLOW }, { roots: [roots] })
    const named = { "x-core-location": project }
    const { turnID } = await sidecar.turn(undefined, named)
    const call = (n: number) => sidecar.settle(turnID, { name: "read", input: { filePath: join(project, "tools") }, toolCallID: `call_leaving_${n}` }, named)
    expect((await call(1)).status).toBe(200)
    // The directory moved out of the roots, a symbolic link left where its parent was: the same directory by the
    // same name, whose real path is now outside. Both the call (answered directly) and a new turn (routed) refuse it.
    renameSync(join(roots, "parent"), join(outside, "parent"))
    symlinkSync(join(outside, "parent"), join(roots, "parent"))
    const refused = await call(2)
    expect([refused.status, refused.body.error.kind]).toEqual([403, "forbidden"])
    expect(refused.body.error.message).toContain("is not under an allowed root")
    expect((await sidecar.json("POST", "/v1/turns", { body: {}, headers: named })).status).toBe(403)
    // Back in place, allowed again; then replaced by a link to another directory outside: refused at once.
    rmSync(join(roots, "parent"))
    renameSync(join(outside, "parent"), join(roots, "parent"))
    expect((await call(3)).status).toBe(200)
    rmSync(project, { recursive: true })
    symlinkSync(outside, project)
    expect((await call(4)).status).toBe(403)
    expect((await sidecar.json("POST", "/v1/turns", { body: {}, headers: named })).status).toBe(403)
  })
})

describe("a model swapping a served Location inside its own while its command runs", () => {
  // A command renamed the other Location away and left a link to a folder of its own in its place: a request naming
  // that Location meanwhile loaded the folder the link led to, and ran its tools in core.
  test("cannot rename it, nor a folder on the way to it: a request naming it meanwhile loads it, not the model's folder", async () => {
    const sidecar = await inProcess({ "core.json": ALLOW })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "a", "sub")
    mkdirSync(join(sub, "tools"), { recursive: true })
    const named = { "x-core-location": sub }
    expect((await sidecar.turn(undefined, named)).definitions.map((tool) => tool.name)).not.toContain("planted")
    // The model's folder with its tool, written as any file of its Location.
    mkdirSync(join(main, "evil", "tools"), { recursive: true })
    writeFileSync(join(main, "evil", "tools", "planted.ts"), planted(join(main, "RAN")))
    // A script the command runs (what it does is not read from the command line): each swap, then a pause.
    writeFileSync(
      join(main, "swap.pl"),
      [
        'for my $from ("a/sub", "a") {',
        '  if (rename($from, "$from.old")) { symlink("evil", $from); print "swapped $from\\n" } else { print "kept $from: $!\\n" }',
        "}",
        'open(my $f, ">", "swapping") or die; close($f); sleep 3; print "done\\n";',
      ].join("\n"),
    )
    const { turnID } = await sidecar.turn()
    const running = sidecar.settle(turnID, { name: "bash", input: { command: "perl swap.pl", description: "x" }, toolCallID: "call_swap" })
    for (let waited = 0; !existsSync(join(main, "swapping")) && waited < 100; waited++) await Bun.sleep(100)
    expect(existsSync(join(main, "swapping"))).toBe(true)
    const meanwhile = await sidecar.turn(undefined, named)
    expect(meanwhile.definitions.map((tool) => tool.name)).not.toContain("planted")
    const ran = await running
    expect(ran.body.status).toBe("success")
    const output = ran.body.content[0].text as string
    expect(output).toContain("kept a/sub: Device or resource busy")
    expect(output).toContain("kept a: Device or resource busy")
    expect(existsSync(join(main, "RAN"))).toBe(false)
    expect(realpathSync(sub)).toBe(sub)
  })

  // Where no mount namespace can be made (core not root and no user namespaces), nothing keeps the command from
  // renaming it: what the command does there is done here by the test, while no command runs.
  test("where nothing keeps it in place, a request naming it while it leads elsewhere is refused: served again once put back", async () => {
    const sidecar = await inProcess({ "core.json": ALLOW })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "a", "sub")
    mkdirSync(join(sub, "tools"), { recursive: true })
    const named = { "x-core-location": sub }
    const { turnID } = await sidecar.turn(undefined, named)
    const call = (n: number) => sidecar.settle(turnID, { name: "read", input: { filePath: join(sub, "tools") }, toolCallID: `call_swapped_${n}` }, named)
    expect((await call(1)).status).toBe(200)
    mkdirSync(join(main, "evil", "tools"), { recursive: true })
    writeFileSync(join(main, "evil", "tools", "planted.ts"), planted(join(main, "RAN")))
    for (const [moved, link] of [[sub, join(main, "evil")], [join(main, "a"), join(main, "evil")]] as const) {
      if (moved !== sub) mkdirSync(join(main, "evil", "sub", "tools"), { recursive: true })
      renameSync(moved, `${moved}.old`)
      symlinkSync(link, moved)
      // A new turn (routed) and a call of the turn (answered directly) alike.
      const turn = await sidecar.json("POST", "/v1/turns", { body: {}, headers: named })
      expect([turn.status, turn.body.error.kind]).toEqual([403, "forbidden"])
      expect(turn.body.error.message).toContain(`X-Core-Location ${sub} now leads to ${realpathSync(sub)}, not to ${sub} as when first served`)
      const refused = await call(2)
      expect([refused.status, refused.body.error.kind]).toEqual([403, "forbidden"])
      expect(existsSync(join(main, "RAN"))).toBe(false)
      rmSync(moved)
      renameSync(`${moved}.old`, moved)
      expect((await sidecar.turn(undefined, named)).definitions.map((tool) => tool.name)).not.toContain("planted")
      expect((await call(3)).status).toBe(200)
    }
    expect(existsSync(join(main, "RAN"))).toBe(false)
  })
})

// A command's guard knew of the Locations served as it started: one a host first named while it ran was not guarded
// from it, and the tools it then wrote there were loaded (hot reload) and run in core.
describe("a Location first served while a command of a Location holding it runs", () => {
  test("is guarded from that command from then on, and loaded once it has ended, without what it wrote", async () => {
    const sidecar = await inProcess({ "core.json": ALLOW }, { watch: true })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "b", "sub")
    mkdirSync(sub, { recursive: true })
    const marker = join(main, "RAN")
    writeFileSync(join(main, "plant.txt"), planted(marker))
    // Once told to, the command plants a tool there.
    const { running } = await scripted(sidecar, `touch started\n${UNTIL_GO}mkdir -p b/sub/tools\ncp plant.txt b/sub/tools/planted.ts\nsleep 0.5\n`, "call_late")
    expect(existsSync(join(main, "started"))).toBe(true)
    // The host names it for the first time: it waits for the command.
    let answered: number | undefined
    const first = sidecar.turn(undefined, { "x-core-location": sub }).then((turn) => {
      answered = performance.now()
      return turn
    })
    // Told to plant once the Location is guarded (or, were it not, once it was loaded: then a reload would run it).
    for (let waited = 0; !Guard.busy(sub) && answered === undefined && waited < 100; waited++) await Bun.sleep(20)
    writeFileSync(join(main, "go"), "")
    const ran = await running
    const ended = performance.now()
    expect(ran.body.status).toBe("success")
    // Taken out as the command ended, and said so.
    expect(ran.body.content[0].text).toContain(join(sub, "tools"))
    const turn = await first
    expect(turn.definitions.map((tool: { name: string }) => tool.name)).not.toContain("planted")
    // Hot reload had its chance: nothing of it was loaded, then or since.
    await Bun.sleep(500)
    expect((await sidecar.turn(undefined, { "x-core-location": sub })).definitions.map((tool: { name: string }) => tool.name)).not.toContain("planted")
    expect(existsSync(join(sub, "tools", "planted.ts"))).toBe(false)
    expect(existsSync(marker)).toBe(false)
    // It was loaded once the command had ended.
    expect(answered!).toBeGreaterThanOrEqual(ended - 50)
  })

  // A call waiting for a free slot had read the Locations served as it was made; its guard began without the one
  // first named meanwhile, and what the command then wrote there was loaded by hot reload.
  test("a call that waited its turn meanwhile guards it too, as it starts", async () => {
    const sidecar = await inProcess({ "core.json": JSON.stringify({ permission: { "*": "allow" }, shell: { maxRunning: 1 } }) }, { watch: true })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "b", "sub")
    mkdirSync(sub, { recursive: true })
    const marker = join(main, "RAN")
    writeFileSync(join(main, "plant.txt"), planted(marker))
    const { turnID } = await sidecar.turn()
    const first = sidecar.settle(turnID, { name: "bash", input: { command: "touch started; while [ ! -e go ]; do sleep 0.05; done", description: "x" }, toolCallID: "call_first" })
    for (let waited = 0; !existsSync(join(main, "started")) && waited < 100; waited++) await Bun.sleep(50)
    // Waits for the first to end (one command at a time), then plants.
    writeFileSync(join(main, "queued.sh"), "mkdir -p b/sub/tools\ncp plant.txt b/sub/tools/planted.ts\nsleep 0.5\n")
    const queued = sidecar.settle(turnID, { name: "bash", input: { command: "sh queued.sh", description: "x" }, toolCallID: "call_queued" })
    await Bun.sleep(200)
    const named = sidecar.turn(undefined, { "x-core-location": sub })
    for (let waited = 0; !Guard.busy(sub) && waited < 100; waited++) await Bun.sleep(20)
    writeFileSync(join(main, "go"), "")
    expect((await first).body.status).toBe("success")
    expect((await named).definitions.map((tool: { name: string }) => tool.name)).not.toContain("planted")
    const ran = await queued
    expect(ran.body.status).toBe("success")
    await Bun.sleep(500)
    expect((await sidecar.turn(undefined, { "x-core-location": sub })).definitions.map((tool: { name: string }) => tool.name)).not.toContain("planted")
    expect(existsSync(join(sub, "tools", "planted.ts"))).toBe(false)
    expect(existsSync(marker)).toBe(false)
  })

  // The Location's tools import a file outside it, in a folder granted to the command (outside the temp directory,
  // which a guard always counts as the command's): the command changed that file after the host named the Location,
  // and the load (once the command ended) ran what it wrote.
  test("what its tools import from a place the command may write is guarded too", async () => {
    const lib = realpathSync(mkdtempSync("/var/tmp/core-lib-"))
    writeFileSync(join(lib, "helper.ts"), 'export const greet = () => "hi"\n')
    const sidecar = await inProcess({ "core.json": JSON.stringify({ permission: { "*": "allow" }, shell: { allowWrite: [lib] } }) })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "b", "sub")
    mkdirSync(join(sub, "tools"), { recursive: true })
    writeFileSync(
      join(sub, "tools", "greet.ts"),
      `import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\nimport { greet } from ${JSON.stringify(join(lib, "helper.ts"))}\nexport default Tool.make({ description: "x", input: Schema.Struct({}), output: Schema.String, execute: () => Effect.succeed(greet()) })\n`,
    )
    const marker = join(main, "RAN")
    writeFileSync(join(main, "evil.txt"), `require("fs").writeFileSync(${JSON.stringify(marker)}, String(process.pid))\nexport const greet = () => "owned"\n`)
    const { running } = await scripted(sidecar, `touch started\n${UNTIL_GO}cat evil.txt > ${join(lib, "helper.ts")}\nsleep 0.3\n`, "call_import")
    const named = sidecar.turn(undefined, { "x-core-location": sub })
    for (let waited = 0; !Guard.busy(sub) && waited < 100; waited++) await Bun.sleep(20)
    writeFileSync(join(main, "go"), "")
    const ran = await running
    expect(ran.body.status).toBe("success")
    expect(ran.body.content[0].text).toContain(join(lib, "helper.ts"))
    expect((await named).definitions.map((tool: { name: string }) => tool.name)).toContain("greet")
    expect(readFileSync(join(lib, "helper.ts"), "utf8")).toBe('export const greet = () => "hi"\n')
    expect(existsSync(marker)).toBe(false)
    rmSync(lib, { recursive: true, force: true })
  })


  // A command made the new Location's walk fail (a folder core cannot list), so no guard could be had: the host was
  // refused, named it again once the command had ended, and what the command had written meanwhile was loaded.
  test("one that could not be guarded stays refused by this serve, even once the command has ended", async () => {
    const sidecar = await inProcess({ "core.json": ALLOW })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "b", "sub")
    mkdirSync(sub, { recursive: true })
    const marker = join(main, "RAN")
    writeFileSync(join(main, "plant.txt"), planted(marker))
    const unlisted = `"b/sub/$(printf '\\377')"`
    const { running } = await scripted(
      sidecar,
      `mkdir ${unlisted}\ntouch started\n${UNTIL_GO}mkdir -p b/sub/tools\ncp plant.txt b/sub/tools/planted.ts\nrmdir ${unlisted}\n`,
      "call_unlisted",
    )
    const refused = await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": sub } })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toContain("restart core serve to serve it")
    writeFileSync(join(main, "go"), "")
    expect((await running).body.status).toBe("success")
    const again = await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": sub } })
    expect(again.status).toBe(400)
    expect(again.body.error.message).toContain(`core could not guard ${sub}`)
    expect(existsSync(marker)).toBe(false)
  })

  // Its tools/ a link to a folder the command may write (made before it was named, empty then): the command wrote a
  // tool there after, which the guard, noting the link and not what it leads to, left, and the load ran.
  test("one whose tools/, plugins/ or core.json is a link is not guarded so: refused", async () => {
    const sidecar = await inProcess({ "core.json": ALLOW })
    const main = realpathSync(sidecar.box.location)
    const sub = join(main, "b", "sub")
    mkdirSync(sub, { recursive: true })
    mkdirSync(join(main, "stash"))
    symlinkSync(join(main, "stash"), join(sub, "tools"))
    const marker = join(main, "RAN")
    writeFileSync(join(main, "plant.txt"), planted(marker))
    const { running } = await scripted(sidecar, `touch started\n${UNTIL_GO}cp plant.txt stash/planted.ts\n`, "call_linked")
    const refused = await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": sub } })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toContain(`${join(sub, "tools")} is a symbolic link`)
    writeFileSync(join(main, "go"), "")
    expect((await running).body.status).toBe("success")
    expect((await sidecar.json("POST", "/v1/turns", { body: {}, headers: { "x-core-location": sub } })).status).toBe(400)
    expect(existsSync(marker)).toBe(false)
  })
})
