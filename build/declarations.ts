// TypeScript declarations for the author kit: `tsc --declaration --emitDeclarationOnly` over the kit's entry
// points, from a copy of src/. The copy exists because TypeScript 7 refuses to emit a module whose own namespace
// re-export (`export * as Tool from "./tool"`) shares its name with a type declared in it (`interface Tool`):
// TS4081 "has or is using private name". In the copy such a module becomes a facade re-exporting `<name>.impl`,
// which holds the original code; importers see the same names, and the declarations emit.

import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { basename, join, relative } from "node:path"

/** `export * as Name from "./file"` as the first statement of src/<dir>/file.ts. */
const SELF_EXPORT = /^export \* as (\w+) from "\.\/([\w-]+)"\n/

/** The facade and implementation that replace a module whose namespace name is also one of its types. */
const split = (file: string, source: string): Record<string, string> | undefined => {
  const match = SELF_EXPORT.exec(source)
  if (match === null || match[2] !== basename(file, ".ts")) return undefined
  const name = match[1]!
  if (!new RegExp(`^export (?:declare )?(?:interface|type|class) ${name}\\b`, "m").test(source)) return undefined
  const implementation = `./${match[2]}.impl`
  return {
    [file]: `export * as ${name} from "${implementation}"\nexport * from "${implementation}"\n`,
    [file.replace(/\.ts$/, ".impl.ts")]: source.slice(match[0].length),
  }
}

const sourceFiles = (directory: string, prefix = ""): Array<string> =>
  readdirSync(join(directory, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(directory, join(prefix, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(prefix, entry.name)]
        : [],
  )

/**
 * Emits the declarations of `entries` (paths relative to `<root>/src`) and everything they reach; answers the
 * `.d.ts` files by path relative to src/ (`author/index.d.ts`, `tool/tool.d.ts`, ...).
 */
export const emit = async (root: string, entries: ReadonlyArray<string>): Promise<Record<string, string>> => {
  // Inside the repository, so `effect` and `bun-types` resolve from its node_modules; dist/ is not tracked.
  const work = join(root, "dist", `.declarations-${process.pid}-${Date.now().toString(36)}`)
  try {
    for (const file of sourceFiles(join(root, "src"))) {
      const source = await Bun.file(join(root, "src", file)).text()
      for (const [path, text] of Object.entries(split(file, source) ?? { [file]: source })) {
        mkdirSync(join(work, "src", path, ".."), { recursive: true })
        writeFileSync(join(work, "src", path), text)
      }
    }
    const tsconfig = {
      extends: relative(work, join(root, "tsconfig.json")),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        rootDir: "./src",
        outDir: "./types",
        // The typecheck of the repository checks this code; here only the declarations are wanted.
        noCheck: true,
      },
      files: entries.map((entry) => `./src/${entry}`),
      include: [],
    }
    writeFileSync(join(work, "tsconfig.json"), JSON.stringify(tsconfig, null, 2))
    const tsc = Bun.spawn([join(root, "node_modules/.bin/tsc"), "-p", join(work, "tsconfig.json")], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    })
    const [code, stdout, stderr] = await Promise.all([
      tsc.exited,
      new Response(tsc.stdout).text(),
      new Response(tsc.stderr).text(),
    ])
    if (code !== 0) throw new Error(`declarations for the kit failed (tsc exit ${code}):\n${stdout}${stderr}`)
    const declarations: Record<string, string> = {}
    for (const file of sourceFiles(join(work, "types"))) {
      declarations[file] = await Bun.file(join(work, "types", file)).text()
    }
    return declarations
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
