/// <reference path="../../build/kit-archive.d.ts" />
export * as InitCommand from "./init"

// `core init [DIR] [--update]`: prepares DIR for writing tools and testing them with `core test` and `tsc` with no
// npm install and no network: the author kit unpacked into `.core/`, a tsconfig.json and bunfig.toml pointing
// there, and an example tool with its test. It never overwrites a tool, a test or a file a person changed, and it
// writes nothing unless it can write everything: it checks first, stages in a temp folder inside DIR, then renames.

import {
  type Dirent,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import packageJson from "../../package.json" with { type: "json" }
import { Command } from "./command"

export const HELP = `Usage: core init [DIR] [--update]

Prepare DIR (default: the current directory; created if needed) for writing tools and
testing them with \`core test\` (or \`bun test\`) and \`tsc\`, with no npm install and no network:

  .core/              @core/tool, @core/tool/testing, Effect and the Bun and Node types
                      of this core, with a VERSION file and a manifest of what core wrote
  tsconfig.json       strict; maps @core/tool and effect into .core/
  bunfig.toml         bun never installs packages on its own here
  tools/example.ts    an example tool, with tools/example.test.ts (written only while
                      tools/ holds no .ts file)
  package.json        only inside another package (a package.json above DIR) and when
                      DIR has none: \`npm install\` of a package a tool imports then changes
                      DIR's package.json, not the other package's

Nothing is overwritten: existing tools and tests stay, an existing .core/ of this version is
left alone, and one of another version is reported.

Options:
  --update          rewrite .core/ for this core, and tsconfig.json and bunfig.toml when
                    they are unchanged since core wrote them (refused, naming them, when a
                    person changed one that this core would write differently)
  -h, --help        show this help

Exit codes: 0 done or nothing to do, 1 refused (files in the way, a .core/ of another version
without --update, DIR cannot be written; nothing is written then), 2 usage error (unknown
flag, DIR is not a directory).
`

const OPTIONS = { update: { type: "boolean" } } as const

const VERSION: string = packageJson.version
const KIT = ".core"
const MANIFEST = "manifest.json"

/** The workspace's tsconfig.json: strict, and every import of core's kit mapped into `.core/`. */
const TSCONFIG = `{
  "compilerOptions": {
    "target": "ESNext",
    "module": "Preserve",
    "moduleResolution": "bundler",
    "lib": ["ESNext"],
    "types": ["bun-types"],
    "typeRoots": ["./.core/types"],
    "strict": true,
    "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true,
    "noImplicitOverride": true,
    "allowImportingTsExtensions": true,
    "skipLibCheck": true,
    "noEmit": true,
    "paths": {
      "@core/tool": ["./.core/node_modules/@core/tool/index"],
      "@core/tool/testing": ["./.core/node_modules/@core/tool/testing"],
      "effect": ["./.core/node_modules/effect/dist/index"],
      "effect/*": ["./.core/node_modules/effect/dist/*"]
    }
  },
  "exclude": [".core", "node_modules"]
}
`

/** Bun resolves through tsconfig.json's paths; a missing import fails at once instead of being fetched. */
const BUNFIG = `# Written by core init: imports resolve into .core/ (see tsconfig.json), never from the network.
[install]
auto = "disable"
`

/** The package.json of a workspace inside another package, so that `npm install` there installs here. */
const PACKAGE_JSON = `{
  "private": true
}
`

/** The package.json of the nearest package strictly above `directory`, if it is inside one. */
const packageAbove = (directory: string): string | undefined => {
  for (let current = dirname(directory); ; current = dirname(current)) {
    const path = join(current, "package.json")
    if (kindOf(path, true) === "file") return path
    if (dirname(current) === current) return undefined
  }
}

/** The archive that build/kit.ts writes (see there): every file of `.core/`, and the example, by path. */
const Archive = Schema.Struct({
  format: Schema.Literal(1),
  version: Schema.String,
  files: Schema.Record(Schema.String, Schema.String),
  workspace: Schema.Record(Schema.String, Schema.String),
})
type Archive = typeof Archive.Type

/** What core wrote into a workspace: each file's SHA-256, by path relative to the workspace. */
const Manifest = Schema.Struct({ version: Schema.String, files: Schema.Record(Schema.String, Schema.String) })
type Manifest = typeof Manifest.Type

/**
 * The embedded archive in the compiled binary. Run from source the build may not have made it yet (or made it
 * from older sources), so it is brought up to date first; the binary never carries build/.
 */
const archivePath = async (): Promise<string> => {
  if (import.meta.path.startsWith("/$bunfs/")) {
    return (await import("../../dist/kit.json.zst", { with: { type: "file" } })).default
  }
  const builder = join(import.meta.dir, "../../build/kit.ts")
  const kit = (await import(builder)) as { readonly ensure: () => Promise<{ readonly path: string }> }
  return (await kit.ensure()).path
}

const refused = (message: string) => new Command.Exit({ code: Command.EXIT.modelError, message })

const hash = (data: string | Uint8Array): string => new Bun.CryptoHasher("sha256").update(data).digest("hex")

/**
 * What is at `path`. Inside the directory, a symbolic link is what it is (`link`): followed, a `tools` or `.core`
 * linked elsewhere would have core write there. The directory itself and the folders above it are followed.
 */
const kindOf = (path: string, follow = false): "missing" | "directory" | "file" | "link" | "other" => {
  try {
    const stats = follow ? statSync(path) : lstatSync(path)
    return stats.isDirectory() ? "directory" : stats.isFile() ? "file" : stats.isSymbolicLink() ? "link" : "other"
  } catch {
    return "missing"
  }
}

/** How an entry that is not what core init needs is named: a symbolic link as one. */
const notA = (path: string, kind: ReturnType<typeof kindOf>, what: "a directory" | "a file") =>
  kind === "link" ? `${path} is a symbolic link (core init writes only inside the directory, never where a link leads)` : `${path} exists and is not ${what}`

/**
 * The outermost folder that creating `directory` would make, and what is in the way if something is; a folder under
 * `root` (the directory core init writes in) that is a link is in the way, as core init never writes where one leads.
 */
const toCreate = (directory: string, root?: string): { readonly first?: string; readonly blocker?: string } => {
  let first: string | undefined
  for (let current = directory; ; current = dirname(current)) {
    const kind = kindOf(current, root === undefined || !current.startsWith(`${root}/`))
    if (kind === "directory") return first === undefined ? {} : { first }
    if (kind !== "missing") return first === undefined ? { blocker: current } : { first, blocker: current }
    first = current
    if (dirname(current) === current) return { first }
  }
}

interface Plan {
  readonly kit: "write" | "replace" | "keep"
  /** Files outside `.core/` to write; `replace` marks those core may replace (its own, unchanged). */
  readonly writes: ReadonlyArray<{ readonly path: string; readonly text: string; readonly replace: boolean }>
  /** Whether to write the example tool and its test (the archive's `workspace` files). */
  readonly example: boolean
  /** Manifest entries for files outside `.core/` that hold what core wrote. */
  readonly recorded: Readonly<Record<string, string>>
  readonly notes: ReadonlyArray<string>
  readonly previous: Manifest | undefined
}

/** The kit files that are missing or differ from what the manifest says core wrote (all of them without one). */
/** Files of `.core/` changed, removed or added since core wrote it (per its manifest). */
/**
 * The folders of `.core/` that are the user's, not the kit's: `.core/skills/` is where a Location's skills are found
 * first (docs/todo-and-skills.md). Files there are no change to the kit, and an update carries them over.
 */
const USERS_FOLDERS: ReadonlyArray<string> = ["skills"]

const isUsers = (path: string): boolean => USERS_FOLDERS.some((folder) => path.startsWith(`${KIT}/${folder}/`))

const changedKitFiles = (directory: string, manifest: Manifest | undefined): ReadonlyArray<string> => {
  if (manifest === undefined) return [`${KIT}/${MANIFEST}`]
  const changed = Object.entries(manifest.files)
    .filter(([path, digest]) => {
      if (!path.startsWith(`${KIT}/`)) return false
      const file = join(directory, path)
      return kindOf(file) !== "file" || hash(readFileSync(file)) !== digest
    })
    .map(([path]) => path)
  const added = (readdirSync(join(directory, KIT), { recursive: true, withFileTypes: true }) as Array<Dirent>)
    .filter((entry) => entry.isFile())
    .map((entry) => relative(directory, join(entry.parentPath, entry.name)))
    .filter((path) => path !== `${KIT}/${MANIFEST}` && manifest.files[path] === undefined && !isUsers(path))
  return [...changed, ...added]
}

const listed = (paths: ReadonlyArray<string>) =>
  paths.slice(0, 3).join(", ") + (paths.length > 3 ? `, and ${paths.length - 3} more` : "")

/** Decides what to write, or lists every reason not to write anything. */
const plan = (
  directory: string,
  update: boolean,
  again: string,
): Plan | { readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const notes: Array<string> = []
  const writes: Array<{ path: string; text: string; replace: boolean }> = []
  const recorded: Record<string, string> = {}
  const kitPath = join(directory, KIT)
  const kitKind = kindOf(kitPath)
  let previous: Manifest | undefined
  let kit: Plan["kit"] = "write"
  if (kitKind === "directory") {
    const versionFile = join(kitPath, "VERSION")
    const installed = kindOf(versionFile) === "file" ? readFileSync(versionFile, "utf8").trim() : undefined
    try {
      previous = Schema.decodeUnknownSync(Manifest)(JSON.parse(readFileSync(join(kitPath, MANIFEST), "utf8")))
    } catch {
      previous = undefined
    }
    if (installed === undefined) {
      problems.push(
        `${kitPath} exists but core init did not write it (it has no VERSION file); move it away and run ${again}`,
      )
    } else if (update) {
      // Regenerated, but never over what a person changed or added there.
      const changed = changedKitFiles(directory, previous)
      if (changed.length > 0) {
        problems.push(
          `${kitPath} was changed since core wrote it (${listed(changed)}); --update never overwrites changes: ` +
            `move ${kitPath} away (your changes stay in it) and run ${again}`,
        )
      } else kit = "replace"
    } else if (installed !== VERSION) {
      const versions = `${kitPath} is from core ${installed}; this is core ${VERSION}`
      return { problems: [`${versions}. Run ${again} --update to update it.`] }
    } else {
      kit = "keep"
      const changed = changedKitFiles(directory, previous)
      if (changed.length > 0) {
        problems.push(
          `${kitPath} was changed since core wrote it (${listed(changed)}); to restore it, move ${kitPath} away ` +
            `(your changes stay in it) and run ${again}`,
        )
      }
    }
  } else if (kitKind !== "missing") {
    problems.push(`${notA(kitPath, kitKind, "a directory")}; move it away and run ${again}`)
  }

  for (const [path, text] of [
    ["tsconfig.json", TSCONFIG],
    ["bunfig.toml", BUNFIG],
  ] as const) {
    const target = join(directory, path)
    const wanted = hash(text)
    const kind = kindOf(target)
    if (kind === "missing") {
      writes.push({ path, text, replace: false })
      recorded[path] = wanted
      continue
    }
    if (kind !== "file") {
      problems.push(`${notA(target, kind, "a file")}; move it away and run ${again}`)
      continue
    }
    const current = hash(readFileSync(target))
    const written = previous?.files[path]
    if (current === wanted) {
      recorded[path] = wanted
    } else if (written === current && update) {
      writes.push({ path, text, replace: true })
      recorded[path] = wanted
    } else if (written !== undefined && (written === wanted || !update)) {
      // Changed by a person, and this core would write what it wrote before: the changes stay.
      notes.push(`kept ${path} (changed since core wrote it)`)
      recorded[path] = written
    } else {
      problems.push(
        written === undefined
          ? `${target} exists and core did not write it; core needs its own (it maps @core/tool and effect into ` +
              `.core/). Move it away, run ${again}, then merge your settings into the new one`
          : `${target} was changed since core wrote it, and this core writes a different one. Move it away (or ` +
              `undo the change), run ${again} --update, then merge your settings into the new one`,
      )
    }
  }

  // Inside another package, `npm install` of a package a tool imports would change that package's package.json:
  // the workspace gets its own. Never recorded, so it is the author's from the start.
  const outer = packageAbove(directory)
  if (outer !== undefined && kindOf(join(directory, "package.json")) === "missing") {
    writes.push({ path: "package.json", text: PACKAGE_JSON, replace: false })
    notes.push(`${directory} is inside the package of ${outer}: packages its tools import are installed here, not there`)
  }

  const tools = join(directory, "tools")
  const toolsKind = kindOf(tools)
  const example =
    toolsKind === "missing" || (toolsKind === "directory" && !readdirSync(tools).some((name) => name.endsWith(".ts")))
  if (toolsKind !== "missing" && toolsKind !== "directory") {
    problems.push(`${notA(tools, toolsKind, "a directory")}; move it away and run ${again}`)
  }
  return problems.length > 0 ? { problems } : { kit, writes, example, recorded, notes, previous }
}

const unpack = async (): Promise<Archive> => {
  const bytes = await Bun.file(await archivePath()).bytes()
  const json = new TextDecoder().decode(Bun.zstdDecompressSync(bytes))
  const archive = Schema.decodeUnknownSync(Archive)(JSON.parse(json))
  if (archive.version !== VERSION) throw new Error(`the embedded kit is from core ${archive.version}, not ${VERSION}`)
  return archive
}

/**
 * Stages everything inside `directory`, then moves it into place step by step, remembering how to undo each step:
 * if any step fails, the steps done are undone in reverse, so the directory is as it was. Answers the files
 * written outside `.core/`.
 */
const apply = (directory: string, chosen: Plan, archive: Archive | undefined): Plan["writes"] => {
  const { first } = toCreate(directory)
  mkdirSync(directory, { recursive: true })
  const staging = mkdtempSync(join(directory, ".core-init-"))
  const undo: Array<() => void> = []
  const made = new Set<string>()
  const write = (path: string, text: string) => {
    const folder = dirname(path)
    if (!made.has(folder)) mkdirSync(folder, { recursive: true })
    made.add(folder)
    writeFileSync(path, text)
  }
  /** Creates the missing folders of `folder`, and remembers to remove them again. */
  const ensureFolder = (folder: string) => {
    const { first: created, blocker } = toCreate(folder, directory)
    // Checked when planned; something put in the way since is not gone through.
    if (blocker !== undefined) throw new Error(`${blocker} is in the way of ${folder}`)
    mkdirSync(folder, { recursive: true })
    if (created !== undefined) undo.push(() => rmSync(created, { recursive: true, force: true }))
  }
  const example = chosen.example ? Object.entries(archive?.workspace ?? {}) : []
  const writes = [...chosen.writes, ...example.map(([path, text]) => ({ path, text, replace: false }))]
  try {
    const kitPath = join(directory, KIT)
    const staged = join(staging, "kit")
    const files: Record<string, string> = {}
    if (chosen.kit !== "keep" && archive !== undefined) {
      for (const [path, text] of Object.entries(archive.files)) {
        write(join(staged, path), text)
        files[`${KIT}/${path}`] = hash(text)
      }
    } else {
      for (const [path, digest] of Object.entries(chosen.previous?.files ?? {})) {
        if (path.startsWith(`${KIT}/`)) files[path] = digest
      }
    }
    Object.assign(files, chosen.recorded)
    const manifest = { version: VERSION, files: Object.fromEntries(Object.entries(files).sort()) }
    write(join(staged, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`)
    for (const file of writes) write(join(staging, "files", file.path), file.text)

    // Everything is staged: move it into place.
    const previous = join(staging, "previous")
    mkdirSync(previous)
    if (chosen.kit === "write") {
      renameSync(staged, kitPath)
      undo.push(() => rmSync(kitPath, { recursive: true, force: true }))
    } else if (chosen.kit === "keep") {
      const kept = join(previous, MANIFEST)
      renameSync(join(kitPath, MANIFEST), kept)
      undo.push(() => renameSync(kept, join(kitPath, MANIFEST)))
      renameSync(join(staged, MANIFEST), join(kitPath, MANIFEST))
    } else {
      const old = join(previous, "kit")
      renameSync(kitPath, old)
      undo.push(() => renameSync(old, kitPath))
      renameSync(staged, kitPath)
      undo.push(() => rmSync(kitPath, { recursive: true, force: true }))
      // The user's folders go on in the new kit (the old one is removed with the staging folder); undone first.
      for (const folder of USERS_FOLDERS) {
        const kept = join(old, folder)
        if (kindOf(kept) === "missing") continue
        renameSync(kept, join(kitPath, folder))
        undo.push(() => renameSync(join(kitPath, folder), kept))
      }
    }
    for (const file of writes) {
      const target = join(directory, file.path)
      const source = join(staging, "files", file.path)
      ensureFolder(dirname(target))
      if (file.replace) {
        const old = join(previous, "files", file.path)
        mkdirSync(dirname(old), { recursive: true })
        renameSync(target, old)
        undo.push(() => renameSync(old, target))
        renameSync(source, target)
      } else {
        // Exclusive creation: a file that appeared meanwhile makes this fail rather than be overwritten.
        writeFileSync(target, readFileSync(source), { flag: "wx" })
        undo.push(() => rmSync(target, { force: true }))
      }
    }
    return writes
  } catch (error) {
    for (const step of undo.reverse()) {
      try {
        step()
      } catch {
        // Undo what can be undone; the error below says what went wrong.
      }
    }
    if (first !== undefined) rmSync(first, { recursive: true, force: true })
    throw error
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Command.parse("init", args, OPTIONS)
    if (values.help) {
      Command.stdout(HELP)
      return Command.EXIT.ok
    }
    const usage = (message: string) => new Command.UsageError({ command: "init", message })
    if (positionals.length > 1) return yield* usage(`unexpected argument "${positionals[1]}"`)
    const given = positionals[0]
    // An empty DIR (a script's unset variable) would be the current directory.
    if (given?.trim() === "") return yield* usage("DIR cannot be empty: give a directory, or leave it out for the current directory")
    const directory = resolve(given ?? ".")
    const update = values.update === true
    const again = `core init${given === undefined ? "" : ` ${JSON.stringify(given)}`}`

    const kind = kindOf(directory, true)
    if (kind === "file" || kind === "other") return yield* usage(`${directory} is not a directory`)
    const { blocker } = toCreate(directory)
    if (blocker !== undefined) return yield* refused(`cannot create ${directory}: ${blocker} is not a directory`)

    const chosen = yield* Effect.try({
      try: () => plan(directory, update, again),
      catch: (cause) => refused(`cannot read ${directory}: ${messageOf(cause)}`),
    })
    if ("problems" in chosen) {
      return yield* refused(`nothing was written to ${directory}:\n  - ${chosen.problems.join("\n  - ")}`)
    }
    if (chosen.kit === "keep" && chosen.writes.length === 0 && !chosen.example) {
      Command.stdout(`${directory} is ready for core ${VERSION}; nothing to do.\n`)
      for (const note of chosen.notes) Command.stdout(`  ${note}\n`)
      return Command.EXIT.ok
    }

    const archive =
      chosen.kit === "keep" && !chosen.example
        ? undefined
        : yield* Effect.tryPromise({
            try: unpack,
            catch: (cause) => refused(`cannot read core's author kit: ${messageOf(cause)}`),
          })
    const written = yield* Effect.try({
      try: () => apply(directory, chosen, archive),
      catch: (cause) => refused(`cannot write to ${directory} (nothing was written): ${messageOf(cause)}`),
    })

    const kit = `.core/ (core ${VERSION}${archive === undefined ? "" : `, ${Object.keys(archive.files).length} files`})`
    const lines = [
      `${chosen.kit === "keep" ? "kept" : chosen.kit === "write" ? "wrote" : "rewrote"} ${kit}`,
      ...written.map((file) => `${file.replace ? "rewrote" : "wrote"} ${file.path}`),
      ...chosen.notes,
    ]
    Command.stdout(`Prepared ${directory} for core ${VERSION}:\n${lines.map((line) => `  ${line}\n`).join("")}`)
    Command.stdout(`Run \`core test\` there to test its tools; \`core tools --location ${directory}\` lists them.\n`)
    return Command.EXIT.ok
  })
