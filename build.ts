// Builds the single `dist/core` executable from src/cli/main.ts (flags per DESIGN §10): bytecode for a fast
// cold start; no autoloading of the workspace's bunfig.toml or .env when the binary runs elsewhere.

import { mkdirSync } from "node:fs"
import { join } from "node:path"

const root = import.meta.dir
const outfile = join(root, "dist", "core")
mkdirSync(join(root, "dist"), { recursive: true })

const args = [
  "build",
  join(root, "src/cli/main.ts"),
  "--compile",
  "--bytecode",
  "--format",
  "esm",
  "--minify",
  "--compile-autoload-package-json",
  "--no-compile-autoload-bunfig",
  "--no-compile-autoload-dotenv",
  "--outfile",
  outfile,
]
const started = performance.now()
const build = Bun.spawnSync([process.execPath, ...args], { cwd: root, stdout: "inherit", stderr: "inherit" })
if (build.exitCode !== 0) {
  console.error(`build failed (exit ${build.exitCode})`)
  process.exit(1)
}
console.error(`built ${outfile} in ${Math.round(performance.now() - started)} ms`)
