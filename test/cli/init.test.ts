// `core init` end to end: the compiled binary prepares workspaces under the system temp directory (with no
// node_modules anywhere above them), then this repository's bun and tsc run there as a tool author's would.

import { beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { binary, run, type Run } from "../support/binary"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
/** Each test runs bun, tsc or the binary a few times: far more than bun's default 5 s on a busy machine. */
const SLOW = 60_000
const { version: VERSION } = (await Bun.file(join(ROOT, "package.json")).json()) as { version: string }

/** A fresh directory with no node_modules on the way up, so nothing but `.core/` can answer an import. */
const workspace = (): string => {
  const directory = join(tempDir("core-init-"), "workspace")
  for (let current = dirname(directory); ; current = dirname(current)) {
    expect(existsSync(join(current, "node_modules"))).toBe(false)
    if (dirname(current) === current) break
  }
  return directory
}

const init = (args: ReadonlyArray<string>, options: { readonly cwd?: string } = {}) => run(["init", ...args], options)

/** Runs a program to completion in `cwd`. */
const spawn = async (command: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}): Promise<Run> => {
  const child = Bun.spawn([...command], { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

/** This repository's bun, as a separate process: `bun test` in the workspace. */
const bunTest = (directory: string) => spawn([process.execPath, "test"], directory)

const tsc = (directory: string) => spawn([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", directory], ROOT)

const sha256 = (text: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(text).digest("hex")

const manifestOf = (directory: string) =>
  JSON.parse(readFileSync(join(directory, ".core/manifest.json"), "utf8")) as {
    version: string
    files: Record<string, string>
  }

/** A prepared workspace; fails the test with core's own words when init does not succeed. */
const prepared = async (): Promise<string> => {
  const directory = workspace()
  const result = await init([directory])
  if (result.code !== 0) throw new Error(`core init failed (exit ${result.code}):\n${result.stderr}`)
  return directory
}

/** Makes the workspace look as if an older core had prepared it, with `tsconfig` as that core's tsconfig.json. */
const olderCore = (directory: string, tsconfig: string) => {
  const manifest = manifestOf(directory)
  writeFileSync(join(directory, ".core/VERSION"), "0.0.1\n")
  writeFileSync(join(directory, "tsconfig.json"), tsconfig)
  manifest.version = "0.0.1"
  manifest.files[".core/VERSION"] = sha256("0.0.1\n")
  manifest.files["tsconfig.json"] = sha256(tsconfig)
  writeFileSync(join(directory, ".core/manifest.json"), JSON.stringify(manifest))
}

const entries = (directory: string) => readdirSync(directory).sort()

// The first use builds the binary (and, when its inputs changed, the author kit it embeds).
beforeAll(async () => {
  await binary()
}, 300_000)

describe("core init", () => {
  test("prepares a new directory: the kit, tsconfig.json, bunfig.toml and an example whose test passes", async () => {
    const directory = workspace()
    const result = await init([directory])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(result.stdout).toContain(`Prepared ${directory} for core ${VERSION}`)
    expect(entries(directory)).toEqual([".core", "bunfig.toml", "tools", "tsconfig.json"])
    expect(entries(join(directory, "tools"))).toEqual(["example.test.ts", "example.ts"])
    expect(readFileSync(join(directory, ".core/VERSION"), "utf8")).toBe(`${VERSION}\n`)
    for (const kit of ["@core/tool/index.js", "@core/tool/testing.d.ts", "effect/package.json"]) {
      expect(existsSync(join(directory, ".core/node_modules", kit))).toBe(true)
    }

    const manifest = manifestOf(directory)
    expect(manifest.version).toBe(VERSION)
    for (const path of ["tsconfig.json", "bunfig.toml", ".core/node_modules/@core/tool/testing.js"]) {
      expect(manifest.files[path]).toBe(sha256(readFileSync(join(directory, path))))
    }

    const tested = await bunTest(directory)
    expect(tested.stderr).toContain("4 pass")
    expect(tested.stderr).toContain("0 fail")
    expect(tested.code).toBe(0)
  }, SLOW)

  test("the workspace type-checks with tsc, and a tool with a type error fails it, naming the place", async () => {
    const directory = await prepared()
    const clean = await tsc(directory)
    expect(clean.stdout + clean.stderr).toBe("")
    expect(clean.code).toBe(0)
    writeFileSync(
      join(directory, "tools/wrong.ts"),
      `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
export default Tool.make({
  description: "Claims a string, returns a number",
  input: Schema.Struct({ n: Schema.Finite }),
  output: Schema.String,
  execute: (input) => Effect.succeed(input.n),
})
`,
    )
    const failed = await tsc(directory)
    expect(failed.code).not.toBe(0)
    expect(failed.stdout).toContain("tools/wrong.ts(7,")
    expect(failed.stdout).toContain("Type 'number' is not assignable to type 'string'")
  }, SLOW)

  test("core exec runs the example there, with the binary's own @core/tool and effect", async () => {
    const directory = await prepared()
    const data = tempDir("core-data-")
    const result = await run(["exec", "example", "--input", '{"values":[3,1,2]}', "--location", directory], {
      env: { CORE_DATA_DIR: data, CORE_HOME: tempDir("core-home-") },
    })
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).content).toEqual([
      { type: "text", text: "3 values: mean 2, median 2, min 1, max 3, sum 6" },
    ])
  }, SLOW)

  test("the helpers settle as core exec does: invalid input, failure, bounded output, denied permission", async () => {
    const directory = await prepared()
    writeFileSync(
      join(directory, "tools/probe.ts"),
      `import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"
const ROWS = Array.from({ length: 300 }, (_, row) => "row " + row).join("\\n")
export default Tool.make({
  description: "Answers by mode",
  input: Schema.Struct({ mode: Schema.Literals(["ok", "fail", "big"]) }),
  output: Schema.String,
  execute: (input) =>
    input.mode === "fail"
      ? Effect.fail(new Tool.Failure({ message: "Asked to fail." }))
      : Effect.succeed(input.mode === "big" ? ROWS : "fine"),
})
export const guarded = Tool.make({
  description: "Never allowed",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.succeed("ran"),
})
`,
    )
    const cases: Array<[string, unknown]> = [
      ["probe", { mode: "ok" }],
      ["probe", { mode: 1 }],
      ["probe", { mode: "fail" }],
      ["probe", { mode: "big" }],
      ["probe_guarded", {}],
    ]
    writeFileSync(join(directory, "cases.json"), JSON.stringify(cases))
    writeFileSync(
      join(directory, "core.json"),
      JSON.stringify({ permission: { probe_guarded: "deny" }, output: { maxLines: 20, maxBytes: 2048 } }),
    )
    writeFileSync(
      join(directory, "tools/probe.test.ts"),
      `import { test } from "bun:test"
import { settleFile } from "@core/tool/testing"

test("settles every case", async () => {
  const cases = (await Bun.file(import.meta.dir + "/../cases.json").json()) as Array<[string, unknown]>
  const results = []
  for (const [index, [name, input]] of cases.entries()) {
    results.push(
      await settleFile(import.meta.dir + "/probe.ts", name, input, {
        toolCallID: "call_" + index,
        limits: { maxLines: 20, maxBytes: 2048 },
        permission: { rules: [{ action: "probe_guarded", resource: "*", effect: "deny" }] },
      }),
    )
  }
  await Bun.write(import.meta.dir + "/../results.json", JSON.stringify(results))
})
`,
    )
    const tested = await bunTest(directory)
    expect(tested.code).toBe(0)
    const helpers = JSON.parse(readFileSync(join(directory, "results.json"), "utf8")) as Array<unknown>

    const env = { CORE_DATA_DIR: tempDir("core-data-"), CORE_HOME: tempDir("core-home-") }
    // Managed output ids and where they are kept differ between runs; so does the file a rule came from.
    const normalized = (settlement: unknown) =>
      JSON.parse(
        JSON.stringify(settlement)
          .replace(/out_[0-9a-z]+_[0-9a-f]{16}/g, "out_ID")
          .replace(/[^ "\\]+\/outputs\/(?:[0-9a-f]{16}\/){0,2}out_ID/g, "OUTPUTS/out_ID")
          .replace(/→ deny \([^)]*\)/g, "→ deny (RULE)")
          .replace(/→ deny, [^)]*\)/g, "→ deny, RULE)"),
      )
    const kinds: Array<string> = []
    for (const [index, [name, input]] of cases.entries()) {
      const executed = await run(
        ["exec", name, "--input", JSON.stringify(input), "--call", `call_${index}`, "--location", directory],
        { env },
      )
      const settlement = JSON.parse(executed.stdout) as {
        status: string
        error?: { kind: string }
        outputs: Array<unknown>
      }
      kinds.push(settlement.error?.kind ?? `${settlement.status} (${settlement.outputs.length} outputs)`)
      expect(normalized(helpers[index])).toEqual(normalized(settlement))
    }
    expect(kinds).toEqual(["success (0 outputs)", "invalid_input", "failure", "success (1 outputs)", "denied"])
  }, SLOW)

  test("running it again leaves an edited example and the kit alone, and says there is nothing to do", async () => {
    const directory = await prepared()
    const edited = "// my own tool now\n"
    writeFileSync(join(directory, "tools/example.ts"), edited)
    const kit = readFileSync(join(directory, ".core/manifest.json"), "utf8")
    const again = await init([directory])
    expect(again.code).toBe(0)
    expect(again.stdout).toBe(`${directory} is ready for core ${VERSION}; nothing to do.\n`)
    expect(readFileSync(join(directory, "tools/example.ts"), "utf8")).toBe(edited)
    expect(readFileSync(join(directory, ".core/manifest.json"), "utf8")).toBe(kit)
  }, SLOW)

  test("a kit changed since core wrote it is reported; --update refuses to overwrite the change; a fresh one replaces a kit moved away", async () => {
    const directory = await prepared()
    const testing = join(directory, ".core/node_modules/@core/tool/testing.js")
    writeFileSync(testing, "export {}\n")
    writeFileSync(join(directory, ".core/NOTES.md"), "mine\n")
    const result = await init([directory])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("was changed since core wrote it (.core/node_modules/@core/tool/testing.js, .core/NOTES.md)")
    const update = await init([directory, "--update"])
    expect(update.code).toBe(1)
    expect(update.stderr).toContain("--update never overwrites changes")
    expect(readFileSync(testing, "utf8")).toBe("export {}\n")
    expect(readFileSync(join(directory, ".core/NOTES.md"), "utf8")).toBe("mine\n")
    renameSync(join(directory, ".core"), join(directory, "old-core"))
    expect((await init([directory])).code).toBe(0)
    expect(sha256(readFileSync(testing))).toBe(manifestOf(directory).files[".core/node_modules/@core/tool/testing.js"]!)
    expect((await bunTest(directory)).code).toBe(0)
  }, SLOW)

  test("a failure while moving files into place undoes every step: the directory is left as it was", async () => {
    const directory = workspace()
    mkdirSync(directory, { recursive: true })
    writeFileSync(join(directory, "keep.txt"), "mine\n")
    // tools/ leads somewhere no file can be created, so the last step (the example tool) fails.
    symlinkSync("/proc/self", join(directory, "tools"))
    const result = await init([directory])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("nothing was written")
    expect(entries(directory)).toEqual(["keep.txt", "tools"])
  }, SLOW)

  test("without a DIR it prepares the current directory, and never adds an example beside existing tools", async () => {
    const directory = workspace()
    mkdirSync(join(directory, "tools"), { recursive: true })
    writeFileSync(join(directory, "tools/mine.ts"), "export {}\n")
    const result = await init([], { cwd: directory })
    expect(result.code).toBe(0)
    expect(entries(join(directory, "tools"))).toEqual(["mine.ts"])
    expect(existsSync(join(directory, ".core/VERSION"))).toBe(true)
  }, SLOW)
})

describe("a workspace whose core was upgraded", () => {
  test("its tests say the installed core differs from the workspace's and how to update", async () => {
    const directory = await prepared()
    // A `core` on the PATH that is another version than the one that prepared the workspace.
    const bin = join(directory, "fake-bin")
    mkdirSync(bin)
    writeFileSync(join(bin, "core"), "#!/bin/sh\necho 9.9.9\n", { mode: 0o755 })
    const child = Bun.spawn([process.execPath, "test"], {
      cwd: directory,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, CORE_BIN: "" },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
    expect(code).not.toBe(0)
    expect(stderr).toContain(`This workspace's .core/ is from core ${VERSION}, but the core installed here is 9.9.9`)
    expect(stderr).toContain("core init --update")
  }, SLOW)
})

describe("core init with a .core/ of another version", () => {
  test("reports it with the command to update, writes nothing, and the kit's tests say the same", async () => {
    const directory = await prepared()
    olderCore(directory, readFileSync(join(directory, "tsconfig.json"), "utf8"))
    const result = await init([directory])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`.core is from core 0.0.1; this is core ${VERSION}`)
    expect(result.stderr).toContain(`core init "${directory}" --update`)
    expect(readFileSync(join(directory, ".core/VERSION"), "utf8")).toBe("0.0.1\n")

    const tested = await bunTest(directory)
    expect(tested.code).not.toBe(0)
    expect(tested.stderr).toContain(`@core/tool/testing comes from core ${VERSION}`)
    expect(tested.stderr).toContain("Run `core init --update`")
  }, SLOW)

  test("--update rewrites the kit, and a tsconfig.json nobody changed since core wrote it", async () => {
    const directory = await prepared()
    const current = readFileSync(join(directory, "tsconfig.json"), "utf8")
    olderCore(directory, '{ "compilerOptions": { "strict": true } }\n')
    const result = await init([directory, "--update"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`rewrote .core/ (core ${VERSION}`)
    expect(result.stdout).toContain("rewrote tsconfig.json")
    expect(readFileSync(join(directory, ".core/VERSION"), "utf8")).toBe(`${VERSION}\n`)
    expect(readFileSync(join(directory, "tsconfig.json"), "utf8")).toBe(current)
    expect(manifestOf(directory).files["tsconfig.json"]).toBe(sha256(current))
    expect((await bunTest(directory)).code).toBe(0)
  }, SLOW)

  // .core/skills/ is where a Location's skills are found first: a skill there counted as a change to the kit, so
  // init refused and --update too, telling the user to move .core away, skills and all.
  test("a skill in .core/skills/ is no change to the kit: init leaves it, --update carries it over", async () => {
    const directory = await prepared()
    const skill = "---\nname: deploy\ndescription: Deploy\n---\n\nRun make deploy.\n"
    mkdirSync(join(directory, ".core/skills/deploy"), { recursive: true })
    writeFileSync(join(directory, ".core/skills/deploy/SKILL.md"), skill)
    const again = await init([directory])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain("nothing to do")
    olderCore(directory, readFileSync(join(directory, "tsconfig.json"), "utf8"))
    const updated = await init([directory, "--update"])
    expect(updated.code).toBe(0)
    expect(readFileSync(join(directory, ".core/VERSION"), "utf8")).toBe(`${VERSION}\n`)
    expect(readFileSync(join(directory, ".core/skills/deploy/SKILL.md"), "utf8")).toBe(skill)
    expect((await bunTest(directory)).code).toBe(0)
  }, SLOW)

  test("--update refuses, naming it, a tsconfig.json a person changed when this core writes another", async () => {
    const directory = await prepared()
    olderCore(directory, '{ "compilerOptions": { "strict": true } }\n')
    writeFileSync(join(directory, "tsconfig.json"), '{ "compilerOptions": { "strict": false } }\n')
    const result = await init([directory, "--update"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`nothing was written to ${directory}`)
    expect(result.stderr).toContain(`${join(directory, "tsconfig.json")} was changed since core wrote it`)
    expect(readFileSync(join(directory, ".core/VERSION"), "utf8")).toBe("0.0.1\n")
  }, SLOW)

  test("--update keeps a changed tsconfig.json when this core would write the same one as before", async () => {
    const directory = await prepared()
    const changed = readFileSync(join(directory, "tsconfig.json"), "utf8").replace(
      '"strict": true',
      '"strict": true, "noUnusedLocals": true',
    )
    writeFileSync(join(directory, "tsconfig.json"), changed)
    const result = await init([directory, "--update"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("kept tsconfig.json (changed since core wrote it)")
    expect(readFileSync(join(directory, "tsconfig.json"), "utf8")).toBe(changed)
  }, SLOW)
})

describe("core init refuses bad input and writes nothing", () => {
  test("an empty DIR (a script's unset variable) is a usage error, never the current directory", async () => {
    const cwd = tempDir("core-init-cwd-")
    const result = await run(["init", ""], { cwd })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("DIR cannot be empty")
    expect(readdirSync(cwd)).toEqual([])
  })

  test("a DIR that is a file is a usage error (exit 2)", async () => {
    const file = join(tempDir("core-init-"), "notes.txt")
    writeFileSync(file, "hi")
    const result = await init([file])
    expect(result.code).toBe(2)
    expect(result.stderr).toStartWith(`core init: ${file} is not a directory`)
  }, SLOW)

  test("a DIR that cannot be created (a file in its path) exits 1 and creates nothing", async () => {
    const parent = tempDir("core-init-")
    writeFileSync(join(parent, "blocker"), "")
    const result = await init([join(parent, "blocker/a/b")])
    expect(result.code).toBe(1)
    const blocked = `${join(parent, "blocker/a/b")}: ${join(parent, "blocker")} is not a directory`
    expect(result.stderr).toBe(`core: cannot create ${blocked}\n`)
    expect(entries(parent)).toEqual(["blocker"])
  }, SLOW)

  test("files in the way (a .core file, a tsconfig.json core did not write) exit 1, each named", async () => {
    const directory = workspace()
    mkdirSync(directory, { recursive: true })
    writeFileSync(join(directory, ".core"), "")
    writeFileSync(join(directory, "tsconfig.json"), "{}\n")
    const result = await init([directory])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`${join(directory, ".core")} exists and is not a directory`)
    expect(result.stderr).toContain(`${join(directory, "tsconfig.json")} exists and core did not write it`)
    expect(entries(directory)).toEqual([".core", "tsconfig.json"])
  }, SLOW)

  // Followed, a tools/ linked to $CORE_HOME/tools had the example written there: a tool of every Location.
  test("a tools/, .core or tsconfig.json that is a symbolic link exits 1, each named; nothing is written where it leads", async () => {
    const elsewhere = tempDir("core-init-elsewhere-")
    for (const name of ["tools", ".core"]) mkdirSync(join(elsewhere, name))
    writeFileSync(join(elsewhere, "tsconfig.json"), "{}\n")
    for (const linked of ["tools", ".core", "tsconfig.json"]) {
      const directory = workspace()
      mkdirSync(directory, { recursive: true })
      symlinkSync(join(elsewhere, linked), join(directory, linked))
      const result = await init([directory])
      expect({ linked, code: result.code }).toEqual({ linked, code: 1 })
      expect(result.stderr).toContain(`${join(directory, linked)} is a symbolic link (core init writes only inside the directory`)
      expect(entries(directory)).toEqual([linked])
    }
    expect(entries(join(elsewhere, "tools"))).toEqual([])
    expect(entries(join(elsewhere, ".core"))).toEqual([])
  }, SLOW)

  test("a DIR that is a symbolic link to a directory is prepared where it leads", async () => {
    const target = workspace()
    mkdirSync(target, { recursive: true })
    const link = join(tempDir("core-init-link-"), "link")
    symlinkSync(target, link)
    const result = await init([link])
    expect(result.code).toBe(0)
    expect(entries(target)).toContain(".core")
  }, SLOW)

  test("a .core/ that core init did not write is left alone", async () => {
    const directory = workspace()
    mkdirSync(join(directory, ".core"), { recursive: true })
    const result = await init([directory, "--update"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("core init did not write it (it has no VERSION file)")
    expect(entries(directory)).toEqual([".core"])
    expect(entries(join(directory, ".core"))).toEqual([])
  }, SLOW)

  test("unknown flags and extra arguments are usage errors; --help prints the usage", async () => {
    expect((await init(["--force"])).code).toBe(2)
    const extra = await init(["a", "b"])
    expect(extra.code).toBe(2)
    expect(extra.stderr).toStartWith('core init: unexpected argument "b"')
    const help = await init(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toStartWith("Usage: core init [DIR] [--update]")
    expect(help.stdout).toContain("Exit codes: 0")
  }, SLOW)
})
