// What start-up loads: `core --version`, `core --help` and `core exec` of a built-in evaluate no module of the MCP
// SDK, zod or ajv (heavy at evaluation), even in a Location that names MCP servers. A guard against start-up
// growing back, in place of a timed test: the figures are in bench/cold-start.ts.

import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { write } from "./fixture"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
const HEAVY = /node_modules\/(@modelcontextprotocol\/sdk|zod|ajv|ajv-formats)\//

/** The modules `core ARGS` evaluated, run from source with the recorder preloaded, in `location`. */
const loaded = async (
  args: ReadonlyArray<string>,
  location: string,
  env: Record<string, string> = {},
): Promise<ReadonlyArray<string>> => {
  const record = join(tempDir("core-loaded-"), "loaded.json")
  const child = Bun.spawn(
    [process.execPath, "--preload", join(import.meta.dir, "startup-recorder.ts"), join(ROOT, "src/cli/main.ts"), ...args],
    {
      cwd: location,
      env: { ...process.env, CORE_TEST_LOADED: record, CORE_HOME: tempDir("core-home-"), CORE_DATA_DIR: tempDir("core-data-"), ...env },
      stdout: "pipe",
      stderr: "pipe",
    },
  )
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  expect({ code, stderr }).toMatchObject({ code: 0 })
  return JSON.parse(readFileSync(record, "utf8")) as ReadonlyArray<string>
}

describe("start-up", () => {
  // A server that would answer if anything connected to it: its name must not even be looked up.
  const location = write(tempDir("core-loc-"), {
    "core.json": JSON.stringify({ mcp: { everything: { command: ["mcp-server-everything"] } } }),
    "a.txt": "hello\n",
  })

  test("--version and --help evaluate no MCP SDK, zod or ajv module, and few modules at all", async () => {
    for (const args of [["--version"], ["--help"]]) {
      const modules = await loaded(args, location)
      expect(modules.filter((path) => HEAVY.test(path))).toEqual([])
      // The commands themselves (and the host floor they load) stay out.
      expect(modules.filter((path) => path.includes("/src/host/") || path.includes("/src/builtin/"))).toEqual([])
    }
  })

  test("core exec of a built-in evaluates no MCP SDK, zod or ajv module, with MCP servers configured", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/builtin/read.ts"))).toBe(true)
    expect(modules.filter((path) => HEAVY.test(path))).toEqual([])
  })

  test("core exec of a built-in evaluates no HTML converter (turndown, domino): webfetch loads it for a page", async () => {
    const modules = await loaded(["exec", "read", "--input", '{"filePath":"a.txt"}', "--location", location], location)
    expect(modules.some((path) => path.includes("/src/builtin/webfetch.ts"))).toBe(true)
    expect(modules.filter((path) => /node_modules\/(turndown|@mixmark-io\/domino)\/|\/src\/builtin\/html-convert\.ts/.test(path))).toEqual([])
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

  test("the recorder sees the SDK when a command does use it (so the checks above can fail)", async () => {
    const modules = await loaded(["mcp", "--help"], location)
    expect(modules.some((path) => HEAVY.test(path))).toBe(true)
  })
})
