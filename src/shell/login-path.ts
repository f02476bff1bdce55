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
  const target = join(directory, `login-path-${new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 24)}.sh`)
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
