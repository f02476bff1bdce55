// `--base REV`: a git worktree of another revision of core beside this tree, sharing its node_modules, so a
// benchmark can measure that revision's code side by side with this tree's in one run (imported into the same
// process, or run as its own processes). Removed when the benchmark ends.

import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "..")

/** The revision given with `--base`, or undefined. */
export const revision = (): string | undefined => {
  const at = process.argv.indexOf("--base")
  return at === -1 ? undefined : process.argv[at + 1]
}

/** A worktree of `rev` (its root) and how to remove it. */
export const checkout = (rev: string): { readonly root: string; readonly remove: () => void } => {
  const root = join(mkdtempSync(join(tmpdir(), "core-bench-base-")), "tree")
  const git = (args: ReadonlyArray<string>) => Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "ignore", stderr: "inherit" })
  if (git(["worktree", "add", "--detach", root, rev]).exitCode !== 0) throw new Error(`git worktree add ${rev} failed`)
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"))
  return {
    root,
    remove: () => {
      git(["worktree", "remove", "--force", root])
      rmSync(join(root, ".."), { recursive: true, force: true })
    },
  }
}
