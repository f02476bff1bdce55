export * as ServerLaunch from "./server-launch"

// Where and what an MCP server command runs as, so that nothing in the Location decides it (DESIGN §2 law 13: a
// server runs outside the sandbox, and the model can write the Location). The server starts in a directory outside
// the Location ($CORE_HOME, else the home, else /), so a package runner (npx, uvx) or an interpreter's module path
// never finds a package planted there; a bare program name is looked up in PATH without its relative entries and
// those inside the Location, and the server gets that PATH; a command path inside the Location, or relative, or a
// program found on PATH through a link into the Location, is refused. It spawns nothing and reads only the file
// system's metadata.

import { realpathSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { delimiter, isAbsolute, join, relative, sep } from "node:path"

export interface Launch {
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

/** Why a command is not started: it names a program in the Location, or one PATH does not have. */
export interface Refused {
  readonly code: "ENOENT" | "EINLOCATION" | "ERELATIVE"
  readonly message: string
}

const real = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** Whether `path` is `directory` or beneath it (both real paths). */
const within = (path: string, directory: string): boolean => {
  const rest = relative(directory, path)
  return rest === "" || (!rest.startsWith(`..${sep}`) && rest !== ".." && !isAbsolute(rest))
}

const isDirectory = (path: string): boolean => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

const isExecutable = (path: string): boolean => {
  try {
    const stat = statSync(path)
    return stat.isFile() && (stat.mode & 0o111) !== 0
  } catch {
    return false
  }
}

/** A directory outside the Location to start servers in: $CORE_HOME, else the home, else /. */
export const neutralDirectory = (location: string, env: NodeJS.ProcessEnv = process.env): string => {
  const inside = real(location)
  for (const candidate of [env.CORE_HOME, env.HOME, homedir()]) {
    if (candidate === undefined || candidate === "" || !isAbsolute(candidate) || !isDirectory(candidate)) continue
    // A directory beneath the Location would let a runner walking up from it reach the Location's packages.
    if (!within(real(candidate), inside)) return real(candidate)
  }
  return "/"
}

/** PATH without relative entries and without those inside the Location. */
export const safePath = (path: string, location: string): string => {
  const inside = real(location)
  return path
    .split(delimiter)
    .filter((entry) => entry !== "" && isAbsolute(entry) && !within(real(entry), inside))
    .join(delimiter)
}

/**
 * How to start `command` for the Location at `location`, with `env` (what the server gets; its PATH is made safe
 * first), or why it is not started.
 */
export const resolve = (
  command: ReadonlyArray<string>,
  location: string,
  env: Readonly<Record<string, string>>,
): Launch | Refused => {
  const [program, ...args] = command
  const path = safePath(env.PATH ?? "/usr/local/bin:/usr/bin:/bin", location)
  const cwd = neutralDirectory(location)
  const safeEnv = { ...env, PATH: path }
  if (program === undefined || program === "") return { code: "ENOENT", message: "the command is empty" }
  if (program.includes("/")) {
    if (!isAbsolute(program)) {
      return {
        code: "ERELATIVE",
        message:
          `command "${program}" is a relative path: give the program's absolute path, or its name on PATH ` +
          `(servers start outside the Location, so a path in it is not followed)`,
      }
    }
    if (within(real(program), real(location))) {
      return {
        code: "EINLOCATION",
        message:
          `command "${program}" is inside the Location, where tools can change it, and a server runs outside the ` +
          `sandbox: install the server outside the Location (or run it with a package runner such as npx)`,
      }
    }
    return { argv: command, cwd, env: safeEnv }
  }
  for (const directory of path.split(delimiter)) {
    if (directory === "") continue
    const candidate = join(directory, program)
    if (!isExecutable(candidate)) continue
    // A link on PATH into the Location (what `npm link` makes for a server being written there) is the Location's
    // file, which tools can change.
    if (within(real(candidate), real(location))) {
      return {
        code: "EINLOCATION",
        message:
          `command "${program}" is found on PATH at ${candidate}, a link to ${real(candidate)} inside the Location, ` +
          `where tools can change it, and a server runs outside the sandbox: install the server outside the ` +
          `Location (or run it with a package runner such as npx)`,
      }
    }
    return { argv: [candidate, ...args], cwd, env: safeEnv }
  }
  return {
    code: "ENOENT",
    message: `command "${program}" not found on PATH (entries inside the Location are not searched; check that it is installed)`,
  }
}
