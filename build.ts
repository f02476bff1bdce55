// Builds the single `dist/core` executable (or `--outfile PATH`) from src/cli/main.ts (flags per DESIGN §10): bytecode and
// code splitting for a fast cold start; no autoloading of the workspace's bunfig.toml or .env when the binary runs elsewhere.
// First it brings the author kit up to date (build/kit.ts: dist/kit.json.zst, rebuilt only when an input changed),
// because the binary embeds it for `core init`. It writes nothing on stdout.

import { mkdirSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import * as Kit from "./build/kit"

const root = import.meta.dir
/**
 * How many times more reluctant to JIT-compile the binary starts (1 is JavaScriptCore's normal policy). Measured on
 * `core exec` of a one-tool Location (bench/cold-start.ts): 10 leaves 3-4 ms more CPU than 30 to 1000, which are alike;
 * a tool looping 10^8 times in JavaScript runs as fast at 100 as at 10 (its loops reach the scaled thresholds early).
 */
const JIT_POLICY = 100
const outfileFlag = process.argv.indexOf("--outfile")
const outfile = outfileFlag === -1 ? join(root, "dist", "core") : resolve(process.argv[outfileFlag + 1]!)
mkdirSync(dirname(outfile), { recursive: true })

const started = performance.now()
const kit = await Kit.ensure()
if (kit.built) console.error(`built ${kit.path} (${kit.bytes} bytes) in ${Math.round(performance.now() - started)} ms`)

const args = [
  "build",
  join(root, "src/cli/main.ts"),
  // The thread that makes and sends trace requests (src/host/otlp-sender.ts starts it by this path).
  join(root, "src/host/otlp-worker.ts"),
  "--compile",
  "--bytecode",
  "--format",
  "esm",
  "--minify",
  // Code split at each dynamic import: a command's modules (and the MCP SDK) are evaluated only when it runs.
  "--splitting",
  // Start with JavaScriptCore's tier-up thresholds scaled up: the run-once code of a start (loading modules, building
  // layers, deriving schemas) stays in the interpreter instead of costing JIT compilations a short command never
  // repays (exec: about a quarter less CPU). Long-running commands set the normal policy back (cli/dispatch.ts).
  `--compile-jit-policy=${JIT_POLICY}`,
  // Entry points at the root of the embedded files, by their names alone: the sending thread's module is where
  // src/host/otlp-sender.ts looks for it, beside the chunk that starts it.
  "--entry-naming",
  "[name].[ext]",
  // Tool files resolve packages of a node_modules beside them through package.json (exports and imports maps):
  // without it they cannot, though it costs each start about a millisecond (test/cli/discovery.test.ts).
  "--compile-autoload-package-json",
  "--no-compile-autoload-bunfig",
  "--no-compile-autoload-dotenv",
  "--outfile",
  outfile,
]
const compiling = performance.now()
// Bun's progress lines go to stderr (file descriptor 2): stdout stays for what `npm start` serves, one JSON line.
const build = Bun.spawnSync([process.execPath, ...args], { cwd: root, stdout: 2, stderr: "inherit" })
if (build.exitCode !== 0) {
  console.error(`build failed (exit ${build.exitCode})`)
  process.exit(1)
}
console.error(`built ${outfile} in ${Math.round(performance.now() - compiling)} ms`)
