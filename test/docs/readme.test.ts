// The README's and docs/serve.md's shell samples, run against the compiled core as a reader would run them, in
// order, in one scratch directory holding the README's weather tool: each `$ command` of a ```sh block must print
// what follows it (whitespace aside, `…` standing for anything) or, with nothing shown, exit 0; a ```sh block
// marked `<!-- run -->` is run whole by bash and must print, in order, each settlement its `# {…}` and
// `# data: {"tool"…}` comments show.
// And `npm start` prints exactly one JSON line on stdout, as the README says.

import { beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { binary, type Run } from "../support/binary"
import { tempDir } from "../support/temp"

const ROOT = join(import.meta.dir, "../..")
const README = await Bun.file(join(ROOT, "README.md")).text()
const SERVE = await Bun.file(join(ROOT, "docs/serve.md")).text()
/** The samples read JSON with jq and call the sidecar with curl, as the docs say. */
const MISSING = ["bash", "jq", "curl"].filter((program) => Bun.which(program) === null)

type Sample =
  | { readonly kind: "prompt"; readonly command: string; readonly expected: string }
  | { readonly kind: "script"; readonly script: string; readonly expected: ReadonlyArray<string> }

/** The runnable samples of a markdown text, in order. */
const samplesOf = (markdown: string): ReadonlyArray<Sample> => {
  const samples: Array<Sample> = []
  for (const match of markdown.matchAll(/^(<!-- run -->\n)?```sh\n([\s\S]*?)^```$/gm)) {
    const body = match[2]!
    if (match[1] !== undefined) {
      const expected = body
        .split("\n")
        .filter((line) => /^# (\{|data: \{"tool")/.test(line))
        .map((line) => line.slice(2))
      samples.push({ kind: "script", script: body, expected })
      continue
    }
    let current: { command: string; output: Array<string> } | undefined
    const flush = () => {
      if (current !== undefined) samples.push({ kind: "prompt", command: current.command, expected: current.output.join("\n").trim() })
    }
    for (const line of body.split("\n")) {
      if (line.startsWith("$ ")) {
        flush()
        current = { command: line.slice(2), output: [] }
      } else current?.output.push(line)
    }
    flush()
  }
  return samples
}

/** Whether `actual` is what `expected` shows: whitespace aside, `…` standing for anything (or nothing). */
const shows = (expected: string, actual: string): boolean => {
  const squeeze = (text: string) => text.replace(/\s+/g, "")
  const pattern = squeeze(expected)
    .split("…")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*?")
  return new RegExp(`^${pattern}$`).test(squeeze(actual))
}

let workspace = ""
let env: Record<string, string> = {}

/** Runs `script` with bash in the scratch directory; a server it leaves behind (a script that stopped early) is ended. */
const bash = async (script: string): Promise<Run> => {
  const child = Bun.spawn(["bash", "-c", script], { cwd: workspace, env, stdout: "pipe", stderr: "pipe", detached: true })
  const stdout = new Response(child.stdout).text()
  const stderr = new Response(child.stderr).text()
  const code = await child.exited
  try {
    process.kill(-child.pid, "SIGTERM")
  } catch {
    // Nothing of it is left.
  }
  return { code, stdout: await stdout, stderr: await stderr }
}

const runAll = async (samples: ReadonlyArray<Sample>) => {
  for (const sample of samples) {
    if (sample.kind === "prompt") {
      const result = await bash(sample.command)
      if (sample.expected === "") {
        expect({ command: sample.command, code: result.code, stderr: result.stderr }).toEqual({
          command: sample.command,
          code: 0,
          stderr: expect.any(String),
        })
      } else if (!shows(sample.expected, result.stdout)) {
        throw new Error(`$ ${sample.command}\nshowed:\n${sample.expected}\nprinted:\n${result.stdout}\n${result.stderr}`)
      }
      continue
    }
    const result = await bash(`set -e\n${sample.script}`)
    if (result.code !== 0) throw new Error(`the script exited ${result.code}:\n${sample.script}\n${result.stderr}`)
    const lines = result.stdout.split("\n")
    let at = 0
    for (const expected of sample.expected) {
      while (at < lines.length && !shows(expected, lines[at]!)) at++
      if (at === lines.length) throw new Error(`no line shows ${expected}; printed:\n${result.stdout}`)
      at++
    }
  }
}

beforeAll(async () => {
  const bin = tempDir("core-bin-link-")
  symlinkSync(await binary(), join(bin, "core"))
  workspace = tempDir("core-readme-")
  const home = tempDir("core-home-")
  // A reader's PATH: core and the system's programs (jq, curl), no Bun.
  env = { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, HOME: home, CORE_HOME: join(home, ".config/core"), CORE_DATA_DIR: tempDir("core-data-") }
  // The README's tool file, as a reader copies it (the first line names the file).
  for (const match of README.matchAll(/^```ts\n(\/\/ (\S+)\n[\s\S]*?)^```$/gm)) {
    const path = join(workspace, match[2]!)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, match[1]!)
  }
}, 300_000)

describe("the README's samples", () => {
  test("are found: the tour, permissions, the Location check, built-ins, serving, writing tools", () => {
    const samples = samplesOf(README)
    expect(samples.filter((sample) => sample.kind === "prompt").length).toBeGreaterThanOrEqual(10)
    expect(samples.filter((sample) => sample.kind === "script")).toHaveLength(1)
  })

  test.skipIf(MISSING.length > 0)(`run against the binary as shown (needs ${MISSING.join(", ") || "bash, jq, curl"})`, async () => {
    await runAll(samplesOf(README))
  }, 300_000)

  test("a sample that shows the wrong output is caught", () => {
    expect(shows("weather      Current weather for a city", "weather  Current weather for a city\n")).toBe(true)
    expect(shows("weather  Current weather for a city", "apply_patch  …\nweather  Current weather for a city")).toBe(false)
    expect(shows("…\nweather …", "apply_patch  x\nweather  Current weather for a city")).toBe(true)
  })
})

describe("docs/serve.md's full turn with curl", () => {
  test.skipIf(MISSING.length > 0)("runs against the binary, posting to the turn it made", async () => {
    const samples = samplesOf(SERVE).filter((sample) => sample.kind === "script")
    expect(samples).toHaveLength(1)
    await runAll(samples)
  }, 120_000)
})

describe("npm start", () => {
  test("prints exactly one JSON line on stdout with --silent: the url and token, then serves", async () => {
    const child = Bun.spawn(["npm", "start", "--silent"], {
      cwd: ROOT,
      env: { ...process.env, CORE_HOME: tempDir("core-home-"), CORE_DATA_DIR: tempDir("core-data-") },
      stdout: "pipe",
      stderr: "pipe",
      // Its own process group: npm, its shell and the core it starts are stopped together.
      detached: true,
    })
    const stderr = new Response(child.stderr).text()
    const reader = child.stdout.getReader()
    let text = ""
    while (!text.includes("\n")) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error(`npm start ended before its ready line:\n${await stderr}`)
      text += new TextDecoder().decode(chunk.value)
    }
    const ready = JSON.parse(text.slice(0, text.indexOf("\n"))) as { url: string; token: string }
    expect(Object.keys(ready).sort()).toEqual(["token", "url"])
    expect(((await (await fetch(`${ready.url}/v1/health`)).json()) as { ok: boolean }).ok).toBe(true)
    process.kill(-child.pid, "SIGTERM")
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += new TextDecoder().decode(chunk.value)
    }
    await child.exited
    expect(text.split("\n").filter((line) => line !== "")).toHaveLength(1)
    expect(await stderr).toContain("core: serving")
  }, 300_000)
})
