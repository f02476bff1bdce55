// The author kit that `core init` unpacks into a workspace's `.core/`: `@core/tool` and `@core/tool/testing`
// built for Bun with Effect left external, their declarations, the installed Effect package, and the Bun and
// Node type declarations, so `bun test` and `tsc` work there with no npm install and no network.
//
// Archive format (read back by src/cli/init.ts): the JSON `{ format: 1, version, files, workspace }` compressed
// with zstd (Bun.zstdCompressSync): `files` maps each path relative to `.core/` to its UTF-8 text (a file that is
// not UTF-8 fails the build: the kit holds no binaries, and text storage would alter them), `workspace`
// the example tool and its test (from build/example/) by their paths in the workspace. Keys are sorted
// and nothing records a time, so the same inputs give the same bytes. It lives at dist/kit.json.zst (not
// tracked) and is rebuilt only when an input changed, as the fingerprint beside it records; `bun build/kit.ts`
// builds it on its own.

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Declarations from "./declarations"

export const FORMAT = 1
const ROOT = join(import.meta.dir, "..")
export const ARCHIVE = join(ROOT, "dist", "kit.json.zst")
const FINGERPRINT = `${ARCHIVE}.fingerprint`
const MODULES = join(ROOT, "node_modules")

/** Where each part goes inside `.core/` (the tsconfig that `core init` writes points at these). */
const TOOL_PACKAGE = "node_modules/@core/tool"
const ENTRIES = { index: "author/index.ts", testing: "sdk/testing.ts" } as const

/** Decodes UTF-8 exactly; anything else (a binary) is refused, since the archive keeps text and must not alter a byte. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const textOf = (bytes: Uint8Array, path: string): string => {
  try {
    return UTF8.decode(bytes)
  } catch {
    throw new Error(`the kit keeps text only, and ${path} is not UTF-8 text: keep binaries out of the kit`)
  }
}

/** Files of an installed package matching any of `patterns`, as `{ "<prefix>/<path>": text }`. */
const packageFiles = async (
  name: string,
  patterns: ReadonlyArray<string>,
  prefix: string,
): Promise<Record<string, string>> => {
  const directory = join(MODULES, name)
  const files: Record<string, string> = {}
  for (const pattern of patterns) {
    for await (const path of new Bun.Glob(pattern).scan({ cwd: directory })) {
      files[`${prefix}/${path}`] = textOf(await Bun.file(join(directory, path)).bytes(), join(directory, path))
    }
  }
  return files
}

/** `@core/tool` and `@core/tool/testing` for Bun; one shared chunk keeps a single Tool registry between them. */
const javascript = async (version: string): Promise<Record<string, string>> => {
  const build = await Bun.build({
    entrypoints: Object.values(ENTRIES).map((entry) => join(ROOT, "src", entry)),
    root: join(ROOT, "src"),
    target: "bun",
    format: "esm",
    splitting: true,
    external: ["effect", "effect/*"],
    define: { CORE_KIT_VERSION: JSON.stringify(version) },
    naming: { entry: "[name].[ext]", chunk: "chunk-[hash].[ext]" },
  })
  if (!build.success) throw new AggregateError(build.logs, "building @core/tool for the kit failed")
  const files: Record<string, string> = {}
  // Only the kernel's JavaScript belongs here: an asset (a binary a module embeds, like a built-in's wasm or
  // executable) means the testing module reached past the kernel, and text storage would corrupt it anyway.
  const assets = build.outputs.filter((output) => output.kind !== "entry-point" && output.kind !== "chunk")
  if (assets.length > 0) {
    throw new Error(`@core/tool must bundle JavaScript only, not ${assets.map((output) => output.path).join(", ")}`)
  }
  for (const output of build.outputs) {
    const path = `${TOOL_PACKAGE}/${output.path.replace(/^\.\//, "")}`
    files[path] = textOf(new Uint8Array(await output.arrayBuffer()), path)
  }
  return files
}

/** The declarations, under `types/`, and one entry declaration per export of the package. */
const declarations = async (): Promise<Record<string, string>> => {
  const emitted = await Declarations.emit(ROOT, Object.values(ENTRIES))
  const files: Record<string, string> = {}
  for (const [path, text] of Object.entries(emitted)) files[`${TOOL_PACKAGE}/types/${path}`] = text
  for (const [name, entry] of Object.entries(ENTRIES)) {
    files[`${TOOL_PACKAGE}/${name}.d.ts`] = `export * from "./types/${entry.replace(/\.ts$/, ".js")}"\n`
  }
  return files
}

const toolPackage = (version: string): string =>
  `${JSON.stringify(
    {
      name: "@core/tool",
      version,
      type: "module",
      exports: Object.fromEntries(
        Object.keys(ENTRIES).map((name) => [
          name === "index" ? "." : `./${name}`,
          { types: `./${name}.d.ts`, default: `./${name}.js` },
        ]),
      ),
    },
    null,
    2,
  )}\n`

const readme = (version: string): string => `# .core

Written by \`core init\` (core ${version}). It holds what tool files and their tests import, so \`core test\` (or \`bun test\`) and
\`tsc\` work in this workspace with no npm install: \`@core/tool\` and \`@core/tool/testing\`
(node_modules/@core/tool), Effect (node_modules/effect) and the Bun and Node type declarations (types/).
tsconfig.json maps the imports here.

Do not edit it. \`core init --update\` rewrites it for the installed core; manifest.json records what core wrote
(here, and tsconfig.json and bunfig.toml), so an update never replaces a file you changed.
`

/** Everything the archive holds, by path inside `.core/`. */
export const contents = async (version: string): Promise<Record<string, string>> => {
  const parts = await Promise.all([
    javascript(version),
    declarations(),
    packageFiles("effect", ["package.json", "LICENSE", "dist/**/*.js", "dist/**/*.d.ts"], "node_modules/effect"),
    packageFiles("bun-types", ["package.json", "*.d.ts", "ts7.1/*.d.ts", "vendor/**/*.d.ts"], "types/bun-types"),
    packageFiles("@types/node", ["package.json", "LICENSE", "**/*.d.ts"], "types/node"),
    packageFiles("undici-types", ["package.json", "LICENSE", "**/*.d.ts"], "node_modules/undici-types"),
  ])
  const files: Record<string, string> = {
    VERSION: `${version}\n`,
    "README.md": readme(version),
    [`${TOOL_PACKAGE}/package.json`]: toolPackage(version),
  }
  for (const part of parts) Object.assign(files, part)
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/** The example `core init` writes beside the kit while a workspace has no tools yet. */
const example = async (): Promise<Record<string, string>> => ({
  "tools/example.ts": await Bun.file(join(import.meta.dir, "example/example.ts")).text(),
  "tools/example.test.ts": await Bun.file(join(import.meta.dir, "example/example-test.ts")).text(),
})

/** A hash of every input: core's sources, this folder, the lockfile and the packaged dependencies' versions. */
const fingerprint = async (): Promise<string> => {
  const hasher = new Bun.CryptoHasher("sha256")
  hasher.update(`format ${FORMAT}; bun ${Bun.version}\n`)
  const inputs = ["package.json", "package-lock.json"]
  for (const folder of ["src", "build"]) {
    for await (const path of new Bun.Glob("**/*").scan({ cwd: join(ROOT, folder) })) inputs.push(`${folder}/${path}`)
  }
  for (const name of ["effect", "bun-types", "@types/node", "undici-types", "typescript"]) {
    inputs.push(`node_modules/${name}/package.json`)
  }
  for (const path of inputs.sort()) {
    hasher.update(`${path}\n`)
    hasher.update(existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path)) : "(missing)")
  }
  return hasher.digest("hex")
}

const writeAtomically = (path: string, data: string | Uint8Array) => {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, data)
  renameSync(temporary, path)
}

/**
 * The path of an up-to-date kit archive, building it when it is missing or an input changed since it was built.
 * Answers whether it was built now.
 */
export const ensure = async (): Promise<{ readonly path: string; readonly built: boolean; readonly bytes: number }> => {
  const key = await fingerprint()
  if (existsSync(ARCHIVE) && existsSync(FINGERPRINT) && readFileSync(FINGERPRINT, "utf8") === key) {
    return { path: ARCHIVE, built: false, bytes: Bun.file(ARCHIVE).size }
  }
  const { version } = (await Bun.file(join(ROOT, "package.json")).json()) as { version: string }
  const [files, workspace] = await Promise.all([contents(version), example()])
  // zstd level 3: smaller than gzip -6 here, in a third of its time (this runs whenever an input changed).
  const archive = Bun.zstdCompressSync(JSON.stringify({ format: FORMAT, version, files, workspace }), { level: 3 })
  mkdirSync(join(ROOT, "dist"), { recursive: true })
  writeAtomically(ARCHIVE, archive)
  writeAtomically(FINGERPRINT, key)
  return { path: ARCHIVE, built: true, bytes: archive.length }
}

if (import.meta.main) {
  const started = performance.now()
  const kit = await ensure()
  const state = kit.built ? "built" : "up to date:"
  console.error(`${state} ${kit.path} (${kit.bytes} bytes) in ${Math.round(performance.now() - started)} ms`)
}
