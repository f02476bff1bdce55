// What git writes in the work tree, by a line's words: files the line does not name (`git checkout .`, a merge, an
// alias), only the paths it names (`git checkout -- src/a.ts`), or nothing (`git status`, `git checkout -b x`). Pure
// parsing; test/permission/protected.test.ts attacks core's configuration through it with the OS sandbox off.

import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { CommandLine } from "../../src/shell/command-line"
import { WorkTree } from "../../src/shell/work-tree"

/** What the line writes in the work tree, one entry per git command: "whole", the path words' values, or nothing. */
const writes = async (line: string) =>
  WorkTree.of(await Effect.runPromise(CommandLine.parse(line))).map((found) =>
    "whole" in found.writes ? "whole" : found.writes.paths.map((word) => word.value ?? word.text),
  )

describe("git commands that write files the line does not name", () => {
  for (const line of [
    "git checkout .",
    "git checkout main",
    "git checkout -",
    "git checkout -b topic origin/main",
    "git checkout HEAD~1 .",
    "git checkout -f",
    "git switch main",
    "git switch --detach HEAD~2",
    "git reset --hard",
    "git reset --hard HEAD~1",
    "git reset --keep origin/main",
    "git stash",
    "git stash -u",
    "git stash pop",
    "git stash apply stash@{1}",
    "git stash branch topic",
    "git merge topic",
    "git merge --abort",
    "git rebase main",
    "git pull",
    "git pull --rebase origin main",
    "git cherry-pick abc123",
    "git revert HEAD",
    "git am < x.patch",
    "git apply x.patch",
    "git apply --index x.patch",
    "git clean -fdx",
    "git clean -fd -e keep",
    "git bisect start",
    "git sparse-checkout set src",
    "git submodule update --init",
    // A form that writes nothing is known only by options that all say so: git takes a long option cut short, short
    // ones run together, and --no-… undoing one.
    "git reset --ha",
    "git reset --har HEAD",
    "git checkout -f -b x",
    "git checkout -b x --force",
    "git checkout --orphan x -f",
    "git switch -c x --discard-changes",
    "git checkout-index -fa",
    "git checkout-index --al -f",
    "git read-tree --reset -vu HEAD",
    "git apply --stat --apply p.patch",
    "git apply --check --no-check p.patch",
    "git clean -n --no-dry-run -f",
    "git read-tree -u -m HEAD",
    "git checkout-index -a -f",
    "git clone ../repo",
    "git clone --depth 1 -b main https://example.com/x/tools.git",
    // git matches these pathspecs itself, quoted or not: what they name is not their text.
    "git checkout -- 'core.js?n'",
    "git checkout -- '*.json'",
    "git restore ':(glob)**/core.json'",
    "git checkout -- :/",
    "git rm -r '*.json'",
    // Paths known only when it runs.
    'git checkout -- "$F"',
    "xargs git checkout --",
    "git $SUB .",
    "git -C sub checkout -- x",
    "git --work-tree=/elsewhere checkout -- x",
    "git restore --pathspec-from-file=list",
    // An alias from the user's git config, or a program of its own: not git's.
    "git co .",
    "git undo",
  ]) {
    test(line, async () => expect(await writes(line)).toEqual(["whole"]))
  }
})

describe("as wrappers and shells run it", () => {
  for (const line of [
    "timeout 5 git reset --hard",
    "bash -c 'git checkout .'",
    "env GIT_DIR=.git git stash",
    "/usr/lib/git-core/git-checkout .",
    "nice git -c core.quotepath=off checkout .",
  ]) {
    test(line, async () => expect(await writes(line)).toEqual(["whole"]))
  }
})

describe("git commands that write only the paths they name", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["git checkout -- src/a.ts", ["src/a.ts"]],
    ["git checkout HEAD~1 -- src/a.ts src/b.ts", ["src/a.ts", "src/b.ts"]],
    ["git checkout -- .", ["."]],
    ["git restore src/a.ts", ["src/a.ts"]],
    ["git restore --source HEAD~2 --worktree src", ["src"]],
    ["git restore -s HEAD .", ["."]],
    ["git restore --staged --no-staged .", ["."]],
    ["git rm --cached --no-cached core.json", ["core.json"]],
    ["git stash push -- src", ["src"]],
    ["git clean -fd build", ["build"]],
    ["git rm -r src/old", ["src/old"]],
    ["git mv a.ts b.ts", ["a.ts", "b.ts"]],
    ["git checkout-index -f -- core.json", ["core.json"]],
    ["git worktree add ../wt", ["../wt"]],
    ["git clone https://example.com/x.git vendor/x", ["vendor/x"]],
    ["git merge-file -L a -L b -L c ours base theirs", ["ours", "base", "theirs"]],
  ]
  for (const [line, expected] of cases) {
    test(line, async () => expect(await writes(line)).toEqual([[...expected]]))
  }
})

describe("git commands that write nothing in the work tree", () => {
  for (const line of [
    "git status",
    "git diff core.json",
    "git log --oneline -- core.json",
    "git add . && git commit -m 'x'",
    "git checkout -b topic",
    "git checkout -B topic",
    "git switch -c topic",
    "git reset",
    "git reset HEAD~1",
    "git reset --soft HEAD~1",
    "git restore --staged core.json",
    "git rm --cached -r .",
    "git stash list",
    "git stash show -p",
    "git stash drop",
    "git clean -n",
    "git apply --check x.patch",
    "git apply --stat x.patch",
    "git fetch origin",
    "git push origin main",
    "git branch -D old",
    "git tag v1",
    "git worktree list",
    "git read-tree HEAD",
    "git read-tree -m HEAD",
    "git submodule status",
    "git reset -- core.json",
    "git -C sub status",
    "git --no-pager log",
    "ls && echo git checkout .",
  ]) {
    test(line, async () => expect(await writes(line)).toEqual([]))
  }
})
