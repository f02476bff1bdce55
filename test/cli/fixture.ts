// Sandboxes for running the compiled `core` against temp Locations: a Location with its tools/ files, a fresh
// data directory, a fresh CORE_HOME and a fresh developer-like HOME per sandbox (never the real home), and ways to
// run or drive the binary.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Builtins } from "../../src/builtin/builtins"
import { binary, run, type Run } from "../support/binary"
import { type DeveloperHome, developerHome } from "../support/home"
import { tempDir } from "../support/temp"

export { IMPORTS, RAN } from "../support/tools"

/** The names among `names` that are not built-in tools: what a test's own tool files contributed. */
export const own = (names: ReadonlyArray<string>): ReadonlyArray<string> =>
  names.filter((name) => !(Builtins.NAMES as ReadonlyArray<string>).includes(name))

export interface Sandbox {
  readonly location: string
  readonly data: string
  readonly home: string
  /** The user's HOME (with PATH) the binary runs with: a developer's, credential stores included. */
  readonly user: DeveloperHome
  readonly env: Record<string, string>
}

/** Writes `files` (paths relative to `root`) and returns `root`. */
export const write = (root: string, files: Record<string, string>): string => {
  for (const [path, text] of Object.entries(files)) {
    const absolute = join(root, path)
    mkdirSync(dirname(absolute), { recursive: true })
    writeFileSync(absolute, text)
  }
  return root
}

/**
 * A Location holding `files`, with `home` files under a fresh CORE_HOME, an empty CORE_DATA_DIR, and a developer's
 * HOME and PATH (test/support/home).
 */
export const sandbox = (files: Record<string, string> = {}, home: Record<string, string> = {}): Sandbox => {
  const location = write(tempDir("core-loc-"), files)
  const data = tempDir("core-data-")
  const homeDir = write(tempDir("core-home-"), home)
  const user = developerHome()
  return { location, data, home: homeDir, user, env: { CORE_DATA_DIR: data, CORE_HOME: homeDir, ...user.env } }
}

/** Runs `core ARGS` in the sandbox's environment. */
export const core = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  options: { readonly stdin?: string; readonly cwd?: string } = {},
): Promise<Run> => run(args, { env: box.env, ...options })

/** Runs `core exec NAME --input <input as JSON> --location <the sandbox's Location> ...extra`. */
export const exec = (box: Sandbox, name: string, input: unknown, extra: ReadonlyArray<string> = []): Promise<Run> =>
  core(box, ["exec", name, "--input", JSON.stringify(input), "--location", box.location, ...extra])

/** The settlement JSON of DESIGN §5, as `core exec` prints it. */
export interface Settlement {
  readonly tool: string
  readonly callID: string
  readonly status: "success" | "error" | "declined" | "cancelled"
  readonly content: ReadonlyArray<
    { readonly type: "text"; readonly text: string } | { readonly type: "file"; readonly mime: string; readonly uri: string }
  >
  readonly structured: unknown
  readonly error?: { readonly kind: string; readonly message: string }
  readonly outputs: ReadonlyArray<{ readonly id: string; readonly bytes: number }>
}

/** The settlement printed on stdout; fails with the whole run when stdout is not one JSON value. */
export const settlementOf = (result: Run): Settlement => {
  try {
    return JSON.parse(result.stdout) as Settlement
  } catch {
    throw new Error(`stdout is not a settlement (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`)
  }
}

/** How many times the tool `name` recorded (through RAN) that it ran in the sandbox's Location. */
export const runs = (box: Sandbox, name: string): number => {
  const log = join(box.location, "ran.log")
  if (!existsSync(log)) return 0
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line === name).length
}

export interface Started {
  readonly child: Bun.Subprocess<"pipe", "pipe", "pipe">
  /** Resolves once `text` has appeared on the child's stderr (fails if stderr ends first). */
  readonly stderrContains: (text: string) => Promise<void>
  /** Waits for the child to exit and returns everything it wrote. */
  readonly finished: () => Promise<Run>
}

/** Starts `core ARGS` without waiting for it, so a test can watch its stderr, signal it or feed its stdin. */
export const start = async (box: Sandbox, args: ReadonlyArray<string>): Promise<Started> => {
  const child = Bun.spawn([await binary(), ...args], {
    env: { ...process.env, ...box.env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  })
  const stdout = new Response(child.stdout).text()
  const reader = child.stderr.getReader()
  const decoder = new TextDecoder()
  let stderr = ""
  let ended = false
  const readMore = async (): Promise<boolean> => {
    const chunk = await reader.read()
    if (chunk.done) {
      stderr += decoder.decode()
      ended = true
      return false
    }
    stderr += decoder.decode(chunk.value, { stream: true })
    return true
  }
  return {
    child,
    stderrContains: async (text) => {
      while (!stderr.includes(text)) {
        if (ended || !(await readMore())) throw new Error(`stderr ended before "${text}" appeared:\n${stderr}`)
      }
    },
    finished: async () => {
      while (!ended && (await readMore())) {}
      const code = await child.exited
      return { code, stdout: await stdout, stderr }
    },
  }
}

/** `core ARGS` on a pseudo-terminal (`script`), as a person runs it: it prompts there, and reads what is typed. */
export interface OnTerminal {
  readonly child: Bun.Subprocess<"pipe", "pipe", "pipe">
  /** What the terminal showed so far. */
  readonly screen: () => string
  /** Reads the terminal until it shows `text`; fails if core ends first. */
  readonly until: (text: string) => Promise<void>
  /** Reads the terminal to its end; answers core's exit code. */
  readonly finished: () => Promise<number>
}

export const onTerminal = async (box: Sandbox, args: ReadonlyArray<string>): Promise<OnTerminal> => {
  const command = [await binary(), ...args].map((part) => `'${part.replaceAll("'", "'\\''")}'`).join(" ")
  const child = Bun.spawn(["script", "-qec", command, "/dev/null"], {
    env: { ...process.env, ...box.env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  })
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let screen = ""
  const more = async (): Promise<boolean> => {
    const chunk = await reader.read()
    if (chunk.done) return false
    screen += decoder.decode(chunk.value, { stream: true })
    return true
  }
  return {
    child,
    screen: () => screen,
    until: async (text) => {
      while (!screen.includes(text)) if (!(await more())) throw new Error(`core ended before showing "${text}":\n${screen}`)
    },
    finished: async () => {
      while (await more()) {}
      return child.exited
    },
  }
}
