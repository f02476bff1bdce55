// What start-up loads: `core --version` and `core --help` evaluate nothing of core but its entry (no Effect at all);
// `core exec` of a built-in evaluates no module of the MCP SDK, zod or ajv, no HTML converter and no Postgres store
// (each heavy at evaluation, and unused by it), even in a Location that names MCP servers, and no Node built-in module
// that costs milliseconds to load where it does not use it (node:util, node:dns, node:fs/promises). A guard against start-up
// growing back, in place of a timed test: the figures are in bench/cold-start.ts.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { write } from "./fixture"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
const HEAVY = /node_modules\/(@modelcontextprotocol\/sdk|zod|ajv|ajv-formats)\//
const HTML = /node_modules\/(turndown|@mixmark-io\/domino)\/|\/src\/builtin\/html-convert\.ts$/
const POSTGRES = /\/src\/store\/postgres-store\.ts$/
/** What `--version` and `--help` may evaluate: the entry, the supervisor hook it imports first, package.json. */
const ENTRY = /\/src\/cli\/main\.ts$|\/src\/shell\/launch\.ts$|\/src\/builtin\/html-launch\.ts$|\/package\.json$|\/startup-recorder\.ts$/

/** The environment a recorded run gets: where the recorder writes, and a fresh CORE_HOME and data directory. */
const isolated = (record: string) => ({ CORE_TEST_LOADED: record, CORE_HOME: tempDir("core-home-"), CORE_DATA_DIR: tempDir("core-data-") })

/** The modules `core ARGS` evaluated, run from source with the recorder preloaded, in `location`. */
const loaded = async (
  args: ReadonlyArray<string>,
  location: string,
  env: Record<string, string> = {},
  exitCode = 0,
  record = join(tempDir("core-loaded-"), "loaded.json"),
): Promise<ReadonlyArray<string>> => {
  const child = Bun.spawn(
    [process.execPath, "--preload", join(import.meta.dir, "startup-recorder.ts"), join(ROOT, "src/cli/main.ts"), ...args],
    {
      cwd: location,
      env: { ...process.env, ...isolated(record), ...env },
      stdout: "pipe",
      stderr: "pipe",
    },
  )
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  expect({ code, stderr }).toMatchObject({ code: exitCode })
  return JSON.parse(readFileSync(record, "utf8")) as ReadonlyArray<string>
}

describe("start-up", () => {
  // A server that would answer if anything connected to it: its name must not even be looked up.
  const location = write(tempDir("core-loc-"), {
    "core.json": JSON.stringify({ mcp: { everything: { command: ["mcp-server-everything"] } } }),
    "a.txt": "hello\n",
  })

  test("--version and --help evaluate nothing but the entry: no Effect, no command, no host", async () => {
    for (const args of [["--version"], ["-v"], ["--help"], ["-h"], ["help"]]) {
      const modules = await loaded(args, location)
      // The entry is still evaluating when it exits, so the module it imports first stands for it.
      expect(modules.some((path) => /\/src\/shell\/launch\.ts$/.test(path))).toBe(true)
      expect({ args, modules: modules.filter((path) => !ENTRY.test(path)) }).toEqual({ args, modules: [] })
    }
  })

  test("a bare core (the usage, exit 2) evaluates nothing but the entry either", async () => {
    const modules = await loaded([], location, {}, 2)
    expect(modules.filter((path) => !ENTRY.test(path))).toEqual([])
  })

  test("core exec of a built-in evaluates no MCP SDK, zod or ajv module, with MCP servers configured", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/builtin/read.ts"))).toBe(true)
    expect(modules.filter((path) => HEAVY.test(path))).toEqual([])
  })

  test("core exec of a built-in evaluates no HTML converter (turndown, domino): webfetch loads it for a page", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/builtin/webfetch.ts"))).toBe(true)
    expect(modules.filter((path) => HTML.test(path))).toEqual([])
  })

  // node:crypto takes 5 ms to load in Bun, a tenth of core exec: core hashes with Bun.CryptoHasher and draws random
  // bytes from crypto.getRandomValues. Bun's module cache does not list built-in modules, so the sources are read.
  test("core exec of a built-in evaluates no module that imports node:crypto", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    const sources = modules.filter((path) => path.startsWith("/") && /\.(ts|js|mjs|cjs)$/.test(path))
    expect(sources.some((path) => path.endsWith("/src/store/journal.ts"))).toBe(true)
    expect(sources.filter((path) => /["']node:crypto["']|require\(["']crypto["']\)|from ["']crypto["']/.test(readFileSync(path, "utf8")))).toEqual([])
  })

  // Each of these costs Bun from half a millisecond (node:dns) to several (node:util, node:fs/promises, node:tty) to
  // load, and core exec of a tool uses none: the modules that need one load it where they use it (a refused sandboxed
  // start, a host name to resolve, a file opened through a held directory).
  test("core exec of a built-in evaluates no module that imports node:util, node:dns or node:fs/promises at its top", async () => {
    const LAZY = ["util", "dns", "dns/promises", "fs/promises", "readline", "stream", "http", "https", "zlib", "net", "tty", "child_process", "worker_threads"]
    const clause = String.raw`(?:\{[^}]*\}|\*\s+as\s+\w+|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s+`
    const imports = new RegExp(String.raw`^import\s+(?!type\b)(?:${clause})?["'](?:node:)?(${LAZY.join("|")})["']`, "m")
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    const sources = modules.filter((path) => path.startsWith("/") && /\/src\/.*\.ts$/.test(path))
    expect(sources.some((path) => path.endsWith("/src/builtin/webfetch.ts"))).toBe(true)
    expect(sources.some((path) => path.endsWith("/src/permission/pinned.ts"))).toBe(true)
    expect(sources.some((path) => path.endsWith("/src/shell/starter.ts"))).toBe(true)
    const found = sources.flatMap((path) => {
      const match = imports.exec(readFileSync(path, "utf8"))
      return match === null ? [] : [`${path.slice(ROOT.length + 1)}: node:${match[1]}`]
    })
    expect(found).toEqual([])
  })

  // Loading bash's grammar (two WebAssembly modules) was 80 ms of processor time of a one-off `core exec bash`.
  test("core exec bash of plain words (and commands of them joined by && | ;) evaluates no tree-sitter module; a line that needs the grammar loads it", async () => {
    // The grammar files themselves are imported as paths (`type: "file"`); its runtime is a module.
    const GRAMMAR = /\/node_modules\/web-tree-sitter\/.*\.[cm]?js$/
    const bash = (command: string) => loaded(["exec", "bash", "--input", JSON.stringify({ command }), "--yes", "--location", location], location)
    const plain = await bash("git status --short")
    expect(plain.some((path) => path.endsWith("/src/shell/command-line.ts"))).toBe(true)
    expect(plain.filter((path) => GRAMMAR.test(path))).toEqual([])
    const listed = await bash("cd . && git status --short | cat")
    expect(listed.filter((path) => GRAMMAR.test(path))).toEqual([])
    const quoted = await bash("git status --short 2>&1")
    expect(quoted.some((path) => GRAMMAR.test(path))).toBe(true)
  })

  test("core exec with the SQLite store evaluates no Postgres store module", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/store/sqlite-store.ts"))).toBe(true)
    expect(modules.filter((path) => POSTGRES.test(path))).toEqual([])
  })

  test("without an OTLP endpoint, core exec loads no tracing exporter; with one, it does", async () => {
    const TRACING = /effect\/dist\/observability\/|\/src\/host\/otlp\.ts$/
    const args = ["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location]
    const off = await loaded(args, location)
    expect(off.filter((path) => TRACING.test(path))).toEqual([])
    // An endpoint where nothing listens: the call is unaffected, and the exporter is loaded.
    const on = await loaded(args, location, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_TIMEOUT: "100" })
    expect(on.some((path) => TRACING.test(path))).toBe(true)
  })

  test("core exec forwarded to a core serve of the same data directory evaluates no Effect and nothing of the host", async () => {
    // A Location naming no MCP server: the serve answers its turn with no warning to report (one it could not start,
    // off npm's PATH, sends exec to run in process).
    const location = write(tempDir("core-loc-"), { "a.txt": "hello\n" })
    const record = join(tempDir("core-loaded-"), "loaded.json")
    // The same environment for both (exec forwards only then); the serve runs without the recorder.
    const env = isolated(record)
    const serve = Bun.spawn([process.execPath, join(ROOT, "src/cli/main.ts"), "serve", "--location", location], {
      cwd: location,
      env: { ...process.env, ...env },
      stdout: "pipe",
      stderr: "pipe",
    })
    try {
      await serve.stdout.getReader().read()
      const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location, env, 0, record)
      expect(modules.some((path) => path.endsWith("/src/cli/forward.ts"))).toBe(true)
      expect(modules.filter((path) => path.includes("/node_modules/effect/") || path.includes("/src/host/"))).toEqual([])
      // Forced in process, the same call loads them, and nothing of forwarding.
      const off = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location, { ...env, CORE_EXEC_FORWARD: "0" }, 0, record)
      expect(off.some((path) => path.includes("/src/host/host.ts"))).toBe(true)
      expect(off.filter((path) => path.endsWith("/src/cli/forward.ts"))).toEqual([])
    } finally {
      serve.kill()
      await serve.exited
    }
  })

  test("core exec with no core serve on its data directory settles in process without loading the forwarding path", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/host/host.ts"))).toBe(true)
    expect(modules.filter((path) => /\/src\/cli\/forward\.ts$|\/src\/server\/forwarding\.ts$/.test(path))).toEqual([])
  })

  test("the recorder sees what a command does use (so the checks above can fail)", async () => {
    expect((await loaded(["mcp", "--help"], location)).some((path) => HEAVY.test(path))).toBe(true)
    expect((await loaded(["exec", "--help"], location)).some((path) => path.includes("/node_modules/effect/"))).toBe(true)
    // A store URL core refuses (not postgres://): the Postgres store module is loaded to say so, and nothing runs.
    const refused = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location, { CORE_STORE_URL: "mysql://127.0.0.1:9/core" }, 3)
    expect(refused.some((path) => POSTGRES.test(path))).toBe(true)
  })
})
