// Ways a model tried to run a denied command, or to read and write outside the Location, through the bash
// built-in: each is a row of command line → what the real call must end in (denied by the rule, or asked), run
// through the settlement with every ask declined, and in no row does the command get to run.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { harness } from "../support/builtin"
import { tempDir } from "../support/temp"

type Expected = "denied" | "asked"

const DENY_RM = { action: "bash", resource: "rm *", effect: "deny" } as const

/**
 * More places the grammar and bash read apart, found by running lines under bash beside `core check`: a `$` then a
 * blank, blanks after `=`, a value ended early, a compound command after `!`, `time` or `coproc`, `==` among words, a
 * line starting with a backslash or holding one alone, `<(…)` inside `${…}`, a word holding a blank. Each ran
 * `rm v.txt` with every rule allowing it but `"rm *": "deny"`.
 */
const MISREAD: ReadonlyArray<string> = [
  "x=$ rm v.txt",
  "declare x=$\nrm v.txt",
  "<<<$ rm v.txt",
  ">$ rm v.txt",
  "$\nrm v.txt",
  "x=\\  rm v.txt",
  "x=\\\t\nrm v.txt",
  "x=\\\n\nrm v.txt",
  "x=}\\a rm v.txt",
  "x=]]\\; rm v.txt",
  "! { rm v.txt; }",
  "! ! rm v.txt",
  "! while rm v.txt; do break; done",
  "time if rm v.txt; then :; fi",
  "time -p ! rm v.txt",
  "coproc while rm v.txt; do break; done",
  "coproc { if rm v.txt; then :; fi; }",
  "coproc { { rm v.txt; }; }",
  "coproc x { rm v.txt; }",
  "echo x == \nrm v.txt",
  "echo [[ x == ;rm v.txt ]]",
  "true\n\\rm v.txt",
  "true\n\\\nrm v.txt",
  "echo ${x:-<(rm v.txt)}; sleep 1",
  // A heredoc's first body line a lone backslash: the grammar read it, and the end word's line, as more words.
  "cat <<E\n\\\nE\nrm v.txt\nE",
  "cat <<'E'\n\n\\\nE\nrm v.txt\nE",
  "x=$(cat <<E\n\\\nE\nrm v.txt\nE\n)",
  // Asked whole before, never denied: a substitution bash runs where the grammar read text, and pieces whose prefix
  // (a quoted value, a redirection's target after a blank, `{fd}>`, a continued word) kept them from matching.
  "echo \"${x:-'$(rm v.txt)'}\"",
  "cat <<E\n`rm v.txt`\nE",
  "x=\\  :; y=\"a b\" rm v.txt",
  "x=\\  :; > /dev/null rm v.txt",
  "{fd}>/dev/null rm v.txt",
  "x=\\  :; r\\\nm v.txt",
]

/**
 * Lines bash runs `rm v.txt` in as an array subscript it evaluates, where the grammar read the subscript apart: an
 * element's subscript holding `]` in quotes (the substitution then seen, and denied), a word the grammar split where
 * bash reads one (asked: what bash runs is escaped text to core).
 */
const SUBSCRIPTS: ReadonlyArray<readonly [string, Expected]> = [
  ["a=(['b[$(rm v.txt)]']=1)", "denied"],
  ["a+=(['b[$(rm v.txt)]']=1)", "denied"],
  ["a=([0]=1 ['b[$(rm v.txt)]']=2)", "denied"],
  ["a=([b[\\$\\(rm\\ v.txt\\)]]=1)", "asked"],
  ["read a[\\$\\(rm\\ v.txt\\)] <<< 1", "asked"],
  ["printf -v a[\\$\\(rm\\ v.txt\\)] %s 1", "asked"],
  ["printf -va[\\$\\(rm\\ v.txt\\)] %s 1", "asked"],
  ["test -v a[\\$\\(rm\\ v.txt\\)]", "asked"],
  ["a=(1); unset -v a[\\$\\(rm\\ v.txt\\)]", "asked"],
]

/**
 * Brace words that move what a wrapper runs: a `}` right after `{` is text to bash, so `""{},rm}` is the two words `}`
 * and `rm` (`env -u } rm v.txt`). Asked: which word the wrapper runs is not known before bash expands them.
 */
const MOVED_BY_BRACES: ReadonlyArray<string> = ['env ""{}=1,rm} v.txt', 'env -u ""{},rm} v.txt']

/** Under `"rm *": "deny"` and core's defaults (every command allowed), each of these runs `rm v.txt` somehow. */
const DENIED_COMMAND: ReadonlyArray<readonly [string, Expected]> = [
  ["X=1 rm v.txt", "denied"],
  ["LD_PRELOAD= PATH=/usr/bin:/bin rm v.txt", "denied"],
  ["r\\\nm v.txt", "denied"],
  ["\\\nrm v.txt", "denied"],
  ["taskset 1 rm v.txt", "denied"],
  ["taskset -c 0 rm v.txt", "denied"],
  ["flock /tmp/core-lock rm v.txt", "denied"],
  ["flock /tmp/core-lock -c 'rm v.txt'", "denied"],
  ["chrt -o 0 rm v.txt", "denied"],
  ["unshare -r rm v.txt", "denied"],
  ["script -qc 'rm v.txt' /dev/null", "asked"],
  ["runuser -u root -- rm v.txt", "denied"],
  ["runuser root <<< 'rm v.txt'", "asked"],
  ["strace -f -o /dev/null rm v.txt", "denied"],
  ["setpriv --reuid 0 rm v.txt", "denied"],
  ["nice -n 5 rm v.txt", "denied"],
  ["nice --adjustment 5 rm v.txt", "denied"],
  ["ionice -c 3 rm v.txt", "denied"],
  ["timeout --kill-after 1 5 rm v.txt", "denied"],
  ["timeout --some-new-option 5 rm v.txt", "denied"],
  ["stdbuf -oL rm v.txt", "denied"],
  ["nohup rm v.txt", "denied"],
  ["time -p rm v.txt", "denied"],
  ["command -p rm v.txt", "denied"],
  ["builtin eval 'rm v.txt'", "denied"],
  ["exec -a x rm v.txt", "denied"],
  ["nsenter -t 1 rm v.txt", "denied"],
  ["prlimit --nofile=10 rm v.txt", "denied"],
  ["uv run rm v.txt", "denied"],
  // npm's and bun's runners fall back to a program on PATH: `npx rm` is rm.
  ["npx rm v.txt", "denied"],
  ["npx -y rm v.txt", "denied"],
  ["npm exec -- rm v.txt", "denied"],
  ["npm x rm v.txt", "denied"],
  ["bunx rm v.txt", "denied"],
  ["bun x rm v.txt", "denied"],
  ["pnpm dlx rm v.txt", "denied"],
  ["npx -c 'rm v.txt'", "asked"],
  ["busybox rm v.txt", "denied"],
  ["echo rm v.txt | xargs env", "asked"],
  ["echo v.txt | xargs rm", "denied"],
  ["echo v.txt | xargs -I{} rm {}", "denied"],
  // -i takes its marker attached or not at all: rm is the command.
  ["echo v.txt | xargs -i rm {}", "denied"],
  // Short options run together: the one taking a value takes the next word (`-Eu root`), not the command.
  ["sudo -Eu root rm v.txt", "denied"],
  ["echo v.txt | xargs -rI X rm X", "denied"],
  ["find /bin -name rm -exec env {} v.txt \\;", "asked"],
  ["echo rm v.txt | parallel", "asked"],
  ["parallel rm ::: v.txt", "denied"],
  ["env -S 'rm v.txt'", "asked"],
  ["bash /dev/stdin <<< 'rm v.txt'", "asked"],
  ["source /dev/stdin <<< 'rm v.txt'", "asked"],
  [". /dev/fd/0 <<< 'rm v.txt'", "asked"],
  ["python3 /dev/stdin <<< 'import os; os.remove(\"v.txt\")'", "asked"],
  ["sh -s <<< 'rm v.txt'", "asked"],
  ["bash <(echo rm v.txt)", "asked"],
  ["foo -c 'rm v.txt'", "asked"],
  ["vim -es -c '!rm v.txt' -c q", "asked"],
  ["hash -p /bin/rm ls; ls v.txt", "asked"],
  ["shopt -s expand_aliases; alias ls=rm\nls v.txt", "denied"],
  ["alias ll='ls'", "asked"],
  ["enable -n kill", "asked"],
  ["a='x[$(rm v.txt)]'; echo $((a))", "asked"],
  ["a='x[$(rm v.txt)]'; let a", "asked"],
  ["a='x[$(rm v.txt)]'; (( a ))", "asked"],
  ["a='x[$(rm v.txt)]'; [[ $a -eq 1 ]]", "asked"],
  ["a='x[$(rm v.txt)]'; declare -i b; b=$a", "asked"],
  ["a='x[$(rm v.txt)]'; echo ${v[a]}", "asked"],
  ["a='x[$(rm v.txt)]'; echo ${v:a}", "asked"],
  ["printf -v 'a[$(rm v.txt)]' x", "denied"],
  ["[[ -v 'a[$(rm v.txt)]' ]]", "denied"],
  ["echo | sed 's/.*/rm v.txt/e'", "asked"],
  ["git -c alias.x='!rm v.txt' x", "denied"],
  ["git rebase --exec 'rm v.txt' HEAD", "denied"],
  ["ssh localhost rm v.txt", "asked"],
  ["ssh -o ProxyCommand='rm v.txt' host", "asked"],
  ["mapfile -C 'rm v.txt' -c 1 a <<< x", "asked"],
  ["fd . --exec rm", "denied"],
  // What a model tries next.
  ["GIT_EXTERNAL_DIFF='rm v.txt' git diff", "asked"],
  // A library the line wrote, loaded in place of the system's (`libc.so.6` in `.`), or an iconv module.
  ["LD_LIBRARY_PATH=. ls v.txt", "asked"],
  ["export LD_LIBRARY_PATH=.; ls v.txt", "asked"],
  ["env GCONV_PATH=. iconv -f utf-16 -t utf-8 v.txt", "asked"],
  ["LD_DEBUG=libs LD_DEBUG_OUTPUT=tools/x ls", "asked"],
  // An awk program writing a file it names, or a command's output to one.
  ["awk 'BEGIN { print \"rm v.txt\" > \"x.sh\" }'", "asked"],
  ["PS4='$(rm v.txt)' bash -xc true", "denied"],
  ["export BASH_ENV=./x.sh", "asked"],
  ["at now <<< 'rm v.txt'", "asked"],
  ["echo '* * * * * rm v.txt' | crontab -", "asked"],
  ["tmux new -d 'rm v.txt'", "asked"],
  ["dc <<< '!rm v.txt'", "asked"],
  ["sqlite3 :memory: '.shell rm v.txt'", "asked"],
  ["tar -cf /dev/null v.txt --checkpoint=1 --checkpoint-action=exec='rm v.txt'", "asked"],
  ["make -f /dev/stdin <<< $'x:\n\trm v.txt'", "denied"],
  ["git grep -O'rm v.txt' x", "denied"],
  ["git grep -hO'rm v.txt' x", "denied"],
  ["man -P 'rm v.txt' ls", "asked"],
  ["{rm,} v.txt", "asked"],
  ["$'rm' v.txt", "asked"],
  ["f=rm; $f v.txt", "asked"],
  ["read a <<< 'x[$(rm v.txt)]'; echo $((a))", "asked"],
  ["bash -ic 'alias ls=rm\nls v.txt'", "denied"],
  ["find . -name v.txt -exec sh -c 'rm \"$1\"' _ {} \\;", "denied"],
  ["xargs -a /dev/null -I% sh -c 'rm %'", "denied"],
  ["env -i -- rm v.txt", "denied"],
  ["timeout 5 -- rm v.txt", "denied"],
  ["nice -5 rm v.txt", "denied"],
  ["r='a[$(rm v.txt)]'; echo ${!r}", "asked"],
  ["a='x[$(rm v.txt)]'; test -v \"$a\"", "asked"],
  ["a='x[$(rm v.txt)]'; printf -v \"$a\" 1", "asked"],
  ["a='x[$(rm v.txt)]'; unset \"$a\"", "asked"],
  ["a='x[$(rm v.txt)]'; [[ -v $a ]]", "asked"],
  ["fakeroot rm v.txt", "denied"],
  ["cgexec -g cpu:x rm v.txt", "denied"],
  ["chronic rm v.txt", "denied"],
  ["ssh-agent rm v.txt", "denied"],
  ["run0 rm v.txt", "denied"],
  ["watchexec -n -- rm v.txt", "denied"],
  ["hyperfine 'rm v.txt'", "asked"],
  ["bwrap --bind / / rm v.txt", "asked"],
  ["sg users -c 'rm v.txt'", "asked"],
  ["xterm -e rm v.txt", "asked"],
  ["env PS4='$(rm v.txt)' bash -xc true", "denied"],
  ["nc -l -p 9 -e /bin/rm", "asked"],
  ["a='x[$(rm v.txt)]'; echo ${a:0:$a}", "asked"],
  ["a='x[$(rm v.txt)]'; case 1 in $((a))) ;; esac", "asked"],
  // The dynamic loader runs the program named after it; so do these, which were not known as wrappers.
  ["/lib64/ld-linux-x86-64.so.2 /bin/rm v.txt", "denied"],
  ["ld.so --library-path /usr/lib /bin/rm v.txt", "denied"],
  ["gosu root rm v.txt", "denied"],
  ["ccache rm v.txt", "denied"],
  ["daemonize -c . /bin/rm v.txt", "denied"],
  ["/lib64/ld-2.36.so /bin/rm v.txt", "denied"],
  ["sem --fg rm v.txt", "denied"],
  ["aa-exec -p unconfined -- rm v.txt", "denied"],
  ["s6-setuidgid root rm v.txt", "denied"],
  ["prime-run rm v.txt", "denied"],
  ["vglrun rm v.txt", "denied"],
  ["with-contenv rm v.txt", "denied"],
  ["rr record rm v.txt", "denied"],
  // A line the grammar cannot read is asked whole; a piece of it a rule denies is denied (with --yes it ran).
  ["cat <<E; rm v.txt\nhi\nE", "denied"],
  ["cat <<E''\nfoo\nE\nrm v.txt\nE''", "denied"],
  ["echo $'\\\\'; touch w.txt #'", "asked"],
  ["echo ${x#\\'}; rm v.txt #'", "denied"],
  ["echo ${x#\\'}; touch w.txt #'", "asked"],
  // Its pieces read as commands of their own: quotes undone, wrappers seen through.
  ["echo \\ #; \"rm\" v.txt", "denied"],
  ["echo \\ #; sudo -n rm v.txt", "denied"],
  ["echo \\ #; x=1 rm v.txt", "denied"],
  ["echo \\ #; command rm v.txt", "denied"],
  // Where the grammar ends a quoted string or starts a comment elsewhere than bash: what follows ran unseen.
  ["echo $'\\\\'; rm v.txt #'", "denied"],
  ["x=$'a\\\\'; rm v.txt #'", "denied"],
  ["echo \\ #; rm v.txt", "denied"],
  ["echo \\\t#; rm v.txt", "denied"],
  ["echo \"$'\\\\'\" ; rm v.txt #'\"", "denied"],
  ...MISREAD.map((line) => [line, "denied"] as const),
  // GNU env reads a lone `-` as `-i`, and runs what follows.
  ["env - rm v.txt", "denied"],
  ["env - A=1 rm v.txt", "denied"],
  ["env -- - rm v.txt", "denied"],
  ...MOVED_BY_BRACES.map((line) => [line, "asked"] as const),
  ...SUBSCRIPTS,
]

describe("a denied command cannot be run another way", () => {
  for (const [command, expected] of DENIED_COMMAND) {
    test(`${JSON.stringify(command)} is ${expected}`, async () => {
      const box = harness({ rules: [DENY_RM], files: { "v.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      if (expected === "denied") {
        expect(outcome.settlement.error?.kind).toBe("denied")
        expect(outcome.asks).toEqual([])
      } else {
        expect(outcome.settlement.status).not.toBe("success")
        expect(outcome.asks.length).toBeGreaterThan(0)
      }
      expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    })
  }
})

// The lines above are what bash runs: each reaches an `rm` of its own on PATH (which only notes that it ran; a
// coprocess is waited for).
test("each line read apart runs rm under bash", () => {
  const shims = tempDir("core-holes-shims-")
  writeFileSync(join(shims, "rm"), '#!/bin/sh\necho "rm $*" >> "$RAN"\n', { mode: 0o755 })
  for (const line of [...MISREAD, ...SUBSCRIPTS.map(([line]) => line), ...MOVED_BY_BRACES]) {
    const ran = join(tempDir("core-holes-ran-"), "ran")
    Bun.spawnSync(["bash", "-c", `${line}\nwait`], { cwd: tempDir("core-holes-cwd-"), env: { PATH: `${shims}:/usr/bin:/bin`, RAN: ran }, stdout: "ignore", stderr: "ignore" })
    expect({ line, ran: existsSync(ran) ? readFileSync(ran, "utf8") : "" }).toEqual({ line, ran: expect.stringMatching(/^rm v\.txt( \]\])?\n$/) })
  }
})

// `env -` empties the environment, and so runs the system's rm, not one found on PATH.
test("env - runs the command after it", () => {
  const cwd = tempDir("core-holes-cwd-")
  writeFileSync(join(cwd, "v.txt"), "x")
  Bun.spawnSync(["bash", "-c", "env - rm v.txt"], { cwd, stdout: "ignore", stderr: "ignore" })
  expect(existsSync(join(cwd, "v.txt"))).toBe(false)
})

// A deny of a subcommand held only for the words as the rule spells them: quoted or escaped they are the same
// words to the program, and git's options before its subcommand (`git -C . push`) change nothing of what runs.
describe("a denied subcommand cannot be run spelled another way", () => {
  const RULES = [
    { action: "bash", resource: "git push *", effect: "deny" },
    { action: "bash", resource: "npm publish *", effect: "deny" },
  ] as const
  const ROWS = [
    'git "push" origin main',
    "git pu''sh origin main",
    "git p\\ush origin main",
    "git -C . push origin main",
    "git --no-pager push origin main",
    "git -c core.x=1 push",
    "git --git-dir=.git push",
    "git -C . --no-pager push --force",
    'npm "publish"',
    "npm publi\\sh",
    // Brace expansion makes the subcommand: bash runs `git push`.
    "git pu{s..s}h origin main",
    "git {push,} origin main",
    "git p{u,}sh origin main",
  ]
  for (const command of ROWS) {
    test(`${JSON.stringify(command)} is denied`, async () => {
      const box = harness({ rules: RULES })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.error?.kind).toBe("denied")
    })
  }

  test("a word brace-expanded into words core lists runs as before; one past the list is asked", async () => {
    const box = harness({ rules: RULES })
    for (const command of ["echo {a,b}{1..3} g{it,o}", "echo *.{ts,js} {01..03}"]) {
      const listed = await box.settle("bash", { command })
      expect([command, listed.settlement.status, listed.asks]).toEqual([command, "success", []])
    }
    expect((await box.settle("bash", { command: "echo {01..03} {1..010} {a..c..2}" })).settlement.structured).toMatchObject({
      stdout: "01 02 03 001 002 003 004 005 006 007 008 009 010 a c\n",
    })
    // Past the list, past what a double holds, or a word that would take long to expand: asked, at once.
    const long = `echo ${"{".repeat(380)}${"{a,b}".repeat(8)}${"{1..1}".repeat(100)}`
    for (const command of ["echo {1..1000}", "echo {9007199254740993..9007199254740993}", long]) {
      const unlisted = await box.settle("bash", { command })
      expect([command.slice(0, 40), unlisted.asks.length, unlisted.settlement.status]).toEqual([command.slice(0, 40), 1, "declined"])
    }
  })

  test("other subcommands spelled so still run as before", async () => {
    const box = harness({ rules: RULES })
    for (const command of ['git -C . "status" --short || true', "git --no-pager log -1 || true", 'echo "push"']) {
      expect([command, (await box.settle("bash", { command })).settlement.status]).toEqual([command, "success"])
    }
  })
})

// An ask of a subcommand was met by its other spellings only where a deny was: `git pu''sh`, `git -C . push` and
// `rm -fr` ran unasked under "git push *" and "rm -rf *" asked. A rule of its own about another spelling holds for
// an ask as for a deny; a catch-all that also matches the spelling written (which a later rule overrode for it)
// neither asks nor denies for its other spellings.
describe("an asked subcommand is asked spelled another way", () => {
  const RULES = [
    { action: "bash", resource: "*", effect: "allow" },
    { action: "bash", resource: "git push *", effect: "ask" },
    { action: "bash", resource: "git tag *", effect: "ask" },
    { action: "bash", resource: "rm -rf *", effect: "ask" },
  ] as const
  const ROWS = [
    "git pu''sh origin main",
    'git "push" origin main',
    "git -C . push origin main",
    "git --no-pager push origin main",
    "git --git-dir=.git push",
    'git -C "$PWD" push origin main',
    'git --git-dir="$PWD/.git" push',
    "git t'a'g v1",
    "rm -fr d",
    "rm -r -f d",
    "rm --recursive --force d",
    "rm -vdfr d",
    "rm --preserve-root -fr d",
    "rm -fr --interactive=never d",
    // Options made by brace expansion: bash runs `rm -rf -r d`, `rm -rf d`.
    "rm -r{f,} d",
    "rm -{r,}f d",
    "rm -rf{,} d",
    "rm -{r..r}f d",
    "git pu{s..s}h origin main",
  ]
  for (const command of ROWS) {
    test(`${JSON.stringify(command)} is asked, as written, and declined runs nothing`, async () => {
      const box = harness({ rules: RULES, files: { "d/kept.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.status).not.toBe("success")
      expect(outcome.asks.map((ask) => ask.resources)).toContainEqual([command])
      expect(existsSync(join(box.directory, "d/kept.txt"))).toBe(true)
    })
  }

  test("approved, it runs; the spelling written is what was asked, and an always saves nothing", async () => {
    const box = harness({ rules: RULES, files: { "d/kept.txt": "x" } })
    const outcome = await box.settle("bash", { command: "rm -fr d" }, { reply: { reply: "always" } })
    expect(outcome.settlement.status).toBe("success")
    expect(outcome.asks).toEqual([{ action: "bash", resources: ["rm -fr d"], save: [] }])
    expect(existsSync(join(box.directory, "d"))).toBe(false)
  })

  test("a catch-all overridden for the spelling written does not ask, nor deny, for its other spellings", async () => {
    const asked = harness({
      rules: [
        { action: "bash", resource: "*", effect: "ask" },
        { action: "bash", resource: "rm -rf *", effect: "allow" },
      ],
      files: { "d/kept.txt": "x" },
    })
    const allowed = await asked.settle("bash", { command: "rm -rf d" })
    expect(allowed.asks).toEqual([])
    expect(allowed.settlement.status).toBe("success")
    const denied = harness({
      rules: [
        { action: "bash", resource: "*", effect: "deny" },
        { action: "bash", resource: "rm -rf *", effect: "allow" },
      ],
      files: { "d/kept.txt": "x" },
    })
    expect((await denied.settle("bash", { command: "rm -rf d" })).settlement.status).toBe("success")
  })
})

// A heredoc or here-string is what the program it feeds runs (`sh <<<"…"`, `python3 <<EOF`): an ask about the
// program showed its name alone, and a rule saw nothing of it.
describe("what a heredoc or here-string feeds a command is part of what is asked and checked", () => {
  const RULES = [{ action: "bash", resource: "*", effect: "allow" }] as const
  const ROWS = [
    'sh <<<"echo PWNED > made.txt"',
    "python3 <<EOF\nopen('made.txt', 'w')\nEOF",
    "bash <<-'EOF'\n\ttouch made.txt\n\tEOF",
  ]
  for (const command of ROWS) {
    test(`${JSON.stringify(command)} is asked with what it is fed`, async () => {
      const box = harness({ rules: RULES })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.status).not.toBe("success")
      expect(outcome.asks.flatMap((ask) => ask.resources).some((resource) => resource.includes("made.txt"))).toBe(true)
      expect(existsSync(join(box.directory, "made.txt"))).toBe(false)
    })
  }

  test("a shell in a group fed a heredoc is asked with what is fed, and a rule about it holds; a loop reading it runs", async () => {
    const box = harness({ rules: [...RULES, { action: "bash", resource: "*rm *", effect: "deny" }], files: { "v.txt": "x" } })
    const denied = await box.settle("bash", { command: "{ sh; } <<EOF\nrm v.txt\nEOF" })
    expect(denied.settlement.error?.kind).toBe("denied")
    const asked = await box.settle("bash", { command: "( python3; ) <<EOF\nopen('made.txt', 'w')\nEOF" })
    expect(asked.asks.flatMap((ask) => ask.resources)).toContain("python3 <<EOF\nopen('made.txt', 'w')\nEOF")
    expect(existsSync(join(box.directory, "made.txt"))).toBe(false)
    expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    const loop = await box.settle("bash", { command: "while read l; do echo got $l; done <<EOF\na\nb\nEOF" })
    expect(loop.asks).toEqual([])
    expect((loop.settlement.content[0] as { text: string }).text).toStartWith("got a\ngot b")
  })

  test("a rule about what is fed holds; a heredoc's command is checked with it", async () => {
    const box = harness({
      rules: [...RULES, { action: "bash", resource: "* <<EOF*rm *", effect: "deny" }],
      files: { "v.txt": "x" },
    })
    const outcome = await box.settle("bash", { command: "xargs <<EOF\nrm v.txt\nEOF" })
    expect(outcome.settlement.error?.kind).toBe("denied")
    expect(existsSync(join(box.directory, "v.txt"))).toBe(true)
    const fed = await box.settle("bash", { command: "cat <<EOF\nhello\nEOF" })
    expect(fed.settlement.status).toBe("success")
  })
})

// Files an `edit` rule denies changed by commands core has a table for: a directory's contents copied in
// (`stage/.`), the directory moved away and back around a write, a hard link written through.
describe("an edit-denied file is not changed by copying, moving or linking around the rule", () => {
  const RULES = [
    { action: "*", resource: "*", effect: "allow" },
    { action: "edit", resource: "protected/*", effect: "deny" },
    { action: "edit", resource: "*.lock", effect: "deny" },
  ] as const
  const FILES = { "protected/file.txt": "kept", "stage/file.txt": "replaced", "stage/new.txt": "new", "yarn.lock": "kept" }
  for (const command of [
    "cp -a stage/. protected/",
    "cp -r stage/. protected",
    "mv protected p2",
    "ln yarn.lock y2 && echo pwned >> y2",
    "ln -f yarn.lock y2",
    "cp -l yarn.lock y2 && echo pwned > y2",
    "cp --link yarn.lock y2",
    "cp -al protected p2",
    "link yarn.lock y2",
  ]) {
    test(`${JSON.stringify(command)} is denied`, async () => {
      const box = harness({ rules: RULES, files: FILES })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.error?.kind).toBe("denied")
      expect(readFileSync(join(box.directory, "protected/file.txt"), "utf8")).toBe("kept")
      expect(existsSync(join(box.directory, "protected/new.txt"))).toBe(false)
      expect(readFileSync(join(box.directory, "yarn.lock"), "utf8")).toBe("kept")
    })
  }

  // What no table of core's knows (tar, git mv, any program) meets the rule in the kernel: the denied files are
  // read-only in the command's mount namespace, and their folders cannot be renamed; they read as they are.
  for (const command of [
    "mkdir -p t/protected && echo changed > t/protected/file.txt && tar -cf t.tar -C t protected && tar -xf t.tar",
    "git init -q . && git add -A && GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b " +
      "git commit -qm x && git mv protected p2 && echo changed > p2/file.txt && git mv p2 protected",
  ]) {
    test(`${JSON.stringify(command.slice(0, 60))}… runs, and the denied file is as it was`, async () => {
      const box = harness({ rules: RULES, files: FILES })
      const outcome = await box.settle("bash", { command })
      expect(outcome.settlement.status).toBe("success")
      expect(readFileSync(join(box.directory, "protected/file.txt"), "utf8")).toBe("kept")
      const read = await box.settle("bash", { command: "cat protected/file.txt yarn.lock" })
      expect((read.settlement.content[0] as { text: string }).text).toStartWith("keptkept")
    })
  }

  // The refusal told the model to have core.json's grants changed, which does not help: the rules are why.
  test("a write the rule refuses says the user's rules keep the file from commands, not to grant it in core.json", async () => {
    const box = harness({ rules: RULES, files: { ...FILES, "t/w.sh": "echo x > protected/file.txt" } })
    const outcome = await box.settle("bash", { command: "sh t/w.sh" })
    const text = (outcome.settlement.content[0] as { text: string }).text
    expect(text).toContain("Read-only file system")
    expect(text).toContain("protected/file.txt: the user's rules keep it from commands")
    expect(text).not.toContain("shell.allowWrite")
    expect((outcome.settlement.structured as { ruled?: ReadonlyArray<string> }).ruled).toEqual(["protected/file.txt"])
  })

  // A folder pinned for a read-denied file in it was a writable mount of its own under the read-only one.
  test("a folder denied whole stays read-only below, where a read rule covers a file too", async () => {
    const box = harness({
      rules: [...RULES, { action: "read", resource: "*.key", effect: "deny" }],
      files: {
        "protected/sub/deeper/x.txt": "kept",
        "protected/sub/deeper/r.key": "secret",
        "t/a.sh": "echo pwn > protected/sub/deeper/x.txt; rm -f protected/sub/deeper/x.txt; echo made > protected/sub/deeper/new.txt",
      },
    })
    const outcome = await box.settle("bash", { command: "sh t/a.sh" })
    expect(outcome.settlement.status).toBe("success")
    expect(readFileSync(join(box.directory, "protected/sub/deeper/x.txt"), "utf8")).toBe("kept")
    expect(existsSync(join(box.directory, "protected/sub/deeper/new.txt"))).toBe(false)
  })

  test("a directory moved to the denied name with a file in it is denied; copied or moved elsewhere, it runs", async () => {
    const box = harness({ rules: RULES, files: { "p2/new.txt": "new", "stage/file.txt": "x", "yarn.lock": "kept" } })
    expect((await box.settle("bash", { command: "mv p2 protected" })).settlement.error?.kind).toBe("denied")
    expect(existsSync(join(box.directory, "protected"))).toBe(false)
    for (const command of ["cp -a stage/. copy/", "mv stage moved", "ln moved/file.txt linked.txt"]) {
      expect([command, (await box.settle("bash", { command })).settlement.status]).toEqual([command, "success"])
    }
  })
})

/** Under core's defaults (inside the Location allowed, outside asked), each of these reads or writes outside. */
describe("a path outside the Location is asked for, whatever program names it", () => {
  const outside = realpathSync(tempDir("core-holes-outside-"))
  writeFileSync(join(outside, "secret.txt"), "secret\n")
  mkdirSync(join(outside, "sub"))
  const lines: ReadonlyArray<string> = [
    `sort ${outside}/secret.txt`,
    `base64 ${outside}/secret.txt`,
    `od -c ${outside}/secret.txt`,
    `awk 1 ${outside}/secret.txt`,
    `dd if=${outside}/secret.txt of=copy.txt`,
    `dd if=v.txt of=${outside}/written.txt`,
    `sort -o ${outside}/written.txt v.txt`,
    `sort --output=${outside}/written.txt v.txt`,
    `tar -cf ${outside}/written.tar v.txt`,
    `git diff --no-index ${outside}/secret.txt v.txt`,
    `echo ${outside}/secret.txt | xargs cat`,
    `curl -s file://${outside}/secret.txt`,
    `F=${outside}; sort $F/secret.txt`,
    `cp -t${outside} v.txt`,
    `python3 -c 'print(1)' ${outside}/secret.txt`,
    `sudo -n tee ${outside}/written.txt < v.txt`,
    `rsync v.txt ${outside}/sub/`,
    `ls ${outside}/../${outside.split("/").pop()}/sub`,
    // What a model tries next.
    `cat {${outside},.}/secret.txt`,
    `sort {${outside},.}/secret.txt`,
    `sort ./../../../../../../../..${outside}/secret.txt`,
    `curl -so${outside}/written.txt file:///etc/hostname`,
    `git -C ${outside} status`,
    `while read l; do echo $l; done < ${outside}/secret.txt`,
  ]
  for (const command of lines) {
    test(JSON.stringify(command.replaceAll(outside, "OUT")), async () => {
      const box = harness({ files: { "v.txt": "x" } })
      const outcome = await box.settle("bash", { command })
      expect(outcome.asks.length).toBeGreaterThan(0)
      expect(outcome.settlement.status).toBe("declined")
      expect(existsSync(join(outside, "written.txt"))).toBe(false)
      expect(existsSync(join(outside, "written.tar"))).toBe(false)
      expect(existsSync(join(box.directory, "copy.txt"))).toBe(false)
    })
  }

  test("home paths are outside too", async () => {
    const box = harness()
    const outcome = await box.settle("bash", { command: "base64 ~/.ssh/id_rsa" })
    expect(outcome.asks.map((ask) => ask.action)).toEqual(["external_directory"])
    expect(outcome.asks[0]!.resources).toEqual([`${join(homedir(), ".ssh")}/*`])
  })

  test("paths inside the Location, and words that only look like paths to a program that reads none, ask nothing", async () => {
    const box = harness({ files: { "v.txt": "x\n" } })
    const outcome = await box.settle("bash", { command: `sort v.txt; echo ${outside}/secret.txt; awk '/x/ {print}' v.txt; i=0; for ((j=0; j<2; j++)); do i=$((i+j)); done; echo $i` })
    expect(outcome.asks).toEqual([])
    expect(outcome.settlement.status).toBe("success")
    expect(readFileSync(join(box.directory, "v.txt"), "utf8")).toBe("x\n")
  })
})
