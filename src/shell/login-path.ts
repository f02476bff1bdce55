export * as LoginPath from "./login-path"

// A login shell (`bash -lc`, `bash -l script.sh`) reads /etc/profile, which on Debian and Ubuntu sets PATH anew,
// then the user's login files (~/.profile), which add the toolchains to it (~/.cargo/bin, ~/.local/bin, a version
// manager's shims). In the sandbox those files are unreadable (they often export tokens), so a command's `bash -lc`
// lost the toolchains its PATH held. bash reads the file BASH_ENV names after them, in every non-interactive shell:
// this one, in core's data directory (read-only to commands, granted by itself), puts the PATH the command was given
// back in front, in a login shell only. A plain `bash -c` keeps the PATH its parent gave it (a virtualenv's too).

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** The text of the file for a command given `path`. */
const script = (path: string): string =>
  "# core: a login shell read /etc/profile, which may set PATH anew, and cannot read the login files that add to it.\n" +
  `if shopt -q login_shell 2>/dev/null; then PATH=${quoted(path)}\${PATH:+:\$PATH}; export PATH; fi\n`

/** `text` as one word of the shell, taken literally. */
const quoted = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`

/**
 * The file for a command given `path`, made in `directory` (core's, which no command reaches) once for each PATH, or
 * undefined where it cannot be made (a login shell then has what /etc/profile gives).
 */
export const file = (directory: string, path: string): string | undefined => {
  const text = script(path)
  return made(directory, `login-path-${new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 24)}.sh`, text)
}

/** What a command reads in place of the user's login files (~/.profile, ~/.bashrc), which its sandbox covers with it. */
export const KEPT =
  "# core: this login file is kept from commands (login files often export tokens). A login shell keeps the PATH\n" +
  "# the command was given.\n"

/**
 * The file the user's login files are covered with for a command (KEPT), made in `directory` (core's), or undefined
 * where it cannot be made (they are then refused to the command, as every credential store is).
 */
export const kept = (directory: string): string | undefined => made(directory, "login-kept.sh", KEPT)

/** `text` as the file `name` in `directory`, readable by all and written by core alone; undefined where it cannot be. */
const made = (directory: string, name: string, text: string): string | undefined => {
  const target = join(directory, name)
  try {
    if (existsSync(target) && readFileSync(target, "utf8") === text) return target
    mkdirSync(directory, { recursive: true, mode: 0o700 })
    const temporary = `${target}.${process.pid}.${crypto.randomUUID()}.tmp`
    try {
      writeFileSync(temporary, text, { mode: 0o644 })
      chmodSync(temporary, 0o644)
      renameSync(temporary, target)
    } finally {
      rmSync(temporary, { force: true })
    }
    return target
  } catch {
    return undefined
  }
}
