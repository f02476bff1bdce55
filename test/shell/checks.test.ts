// The parser's side of the bash checks: transparent shells, literal program names, expansions that evaluate code,
// options that hand a program a command, xargs renaming a program, other spellings of the same flags, and code
// planted for the user's own git. Pure parsing: what is checked, not what a rule decides.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect } from "effect"
import { CommandLine } from "../../src/shell/command-line"
import { CommandChecks } from "../../src/shell/command-checks"
import { Flags } from "../../src/shell/flags"
import { Planted } from "../../src/shell/planted"
import { inChild } from "../support/in-child"

const checks = async (text: string) => CommandChecks.checks(await Effect.runPromise(CommandLine.parse(text)))
const plain = async (text: string) => (await checks(text)).filter((check) => check.opaque === undefined).map((check) => check.resource)
const opaque = async (text: string) => (await checks(text)).filter((check) => check.opaque !== undefined).map((check) => check.resource)
const planted = async (text: string) => (await checks(text)).filter((check) => check.protected !== undefined).map((check) => check.resource)
const owners = async (text: string) => CommandChecks.paths(await Effect.runPromise(CommandLine.parse(text))).map((path) => path.owner)

describe("a shell that only runs literal code is checked as that code", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["sh -c 'grep -rn foo .'", ["grep -rn foo ."]],
    ["bash -c 'ls .'", ["ls ."]],
    ["bash -lc 'find . -name x'", ["find . -name x"]],
    ["bash -l -c 'ls .'", ["ls ."]],
    ["bash --login -c 'ls'", ["ls"]],
    ["bash -eo pipefail -c 'ls | wc -l'", ["ls", "wc -l"]],
    ["dash -c 'ls .' zero one", ["ls ."]],
    ["zsh -c 'ls .'", ["ls ."]],
    ["env bash -c 'ls .'", ["ls ."]],
    ["env -i A=1 sh -c 'ls'", ["ls"]],
    ["nohup timeout 5 bash -c 'ls'", ["ls"]],
    ["bash -c \"bash -lc 'git status'\"", ["git status"]],
  ]
  for (const [line, expected] of cases) {
    test(`${line} → ${expected.join(", ")}`, async () => {
      expect(await plain(line)).toEqual([...expected])
      expect(await opaque(line)).toEqual([])
    })
  }

  test("the inner commands own their paths, so a read-only one reads only", async () => {
    expect(await owners("sh -c 'grep -rn foo .'")).toEqual(["grep -rn foo ."])
    expect(await owners("env bash -c 'ls .'")).toEqual(["ls ."])
    expect(await owners("CI=1 sh -c 'grep -rn foo .'")).toEqual(["grep -rn foo ."])
    expect(await owners("bash -c 'ls .' > out")).toEqual(["bash -c 'ls .' > out", "ls ."])
  })

  test("a shell in a line that mentions HOME or ZDOTDIR, or given an environment, keeps its own check", async () => {
    // Setting HOME is asked about every time (where programs read configuration that runs code); ZDOTDIR as well.
    expect(await opaque("HOME=. bash -lc 'ls'")).toContain("HOME=. bash -lc 'ls'")
    expect(await plain("export HOME=.; bash -lc 'ls'")).toContain("bash -lc 'ls'")
    expect(await opaque("export HOME=.; bash -lc 'ls'")).toContain("export HOME=.")
    expect(await owners("export HOME=.; bash -lc 'ls .'")).toEqual(["bash -lc 'ls .'"])
    expect(await plain("CI=1 bash -c 'ls'")).toContain("CI=1 bash -c 'ls'")
    expect((await opaque("ZDOTDIR=. zsh -c 'ls'")).length).toBeGreaterThan(0)
  })

  test("a shell given options that change what runs, a redirection, or a wrapper that is not neutral keeps its own check", async () => {
    expect(await plain("bash --rcfile x -c 'ls'")).toEqual(["bash --rcfile x -c 'ls'", "ls"])
    expect(await plain("bash -i -c 'ls'")).toEqual(["bash -i -c 'ls'", "ls"])
    expect(await plain("bash -O extglob -c 'ls'")).toEqual(["bash -O extglob -c 'ls'", "ls"])
    expect(await plain("bash -c 'ls' > out")).toEqual(["bash -c 'ls' > out", "ls"])
    expect(await plain("sudo bash -c 'ls'")).toEqual(["sudo bash -c 'ls'", "ls"])
    expect(await plain("env -C /tmp bash -c 'ls'")).toEqual(["env -C /tmp bash -c 'ls'", "ls"])
  })

  test("code that is not a literal string, or zsh's own syntax, stays opaque", async () => {
    expect(await opaque('bash -c "$X"')).toEqual(['bash -c "$X"'])
    expect(await opaque("bash -c \"$(cat x)\"")).toEqual(["bash -c \"$(cat x)\""])
    expect(await opaque("zsh -c 'ls *(e:rm x:)'")).toEqual(["zsh -c 'ls *(e:rm x:)'"])
    expect(await opaque("fish -c 'ls'")).toEqual(["fish -c 'ls'"])
    for (const line of ["zsh -c '=rm x'", "zsh -c 'noglob rm x'", "zsh -c 'ls; - rm x'", "ksh -c 'builtin -f x.so y'", "zsh -c 'zmodload zsh/system'", "zsh -c \"ls '=x'\""]) {
      expect([line, await opaque(line)]).toEqual([line, [line]])
    }
    expect(await opaque("zsh -c 'ls -la x-y'")).toEqual([])
    expect(await opaque("bash -c 'if'")).toEqual(["bash -c 'if'"])
  })

  test("what follows the code is $0 and $1, values that never run", async () => {
    expect(await plain("bash -c 'echo ok' rm x")).toEqual(["echo ok"])
  })
})

describe("a quoted command name is that literal program", () => {
  test("a name with a space is checked quoted, never as a command and its argument", async () => {
    expect(await plain("'git status'")).toEqual(["'git status'"])
    expect(await plain("bash -lc \"'git status'\"")).toEqual(["'git status'"])
    expect(await plain("g'it st'atus x")).toEqual(["'git status' x"])
    expect(await plain("'it'\\''s' x")).toEqual(["'it'\\''s' x"])
    expect(CommandLine.nameOf("rm")).toBe("rm")
    expect(CommandLine.nameOf("/usr/bin/git")).toBe("/usr/bin/git")
    expect(CommandLine.nameOf("[")).toBe("[")
    expect(CommandLine.nameOf("a;b")).toBe("'a;b'")
    expect(await plain("'a=b' cat x")).toEqual(["'a=b' cat x"])
  })

  test("a quoted name that holds no space is still its value", async () => {
    expect(await plain("'rm' -rf x")).toEqual(["rm -rf x"])
  })
})

describe("expansions that evaluate code are opaque", () => {
  const lines = [
    "echo ${v@P}",
    'printf %s "${v[@]@P}"',
    "cat <<EOF\n${v@P}\nEOF",
    "cat <<EOF\n$((a))\nEOF",
    "a=([$x]=1)",
    "a=([$(echo 0)]=1)",
    "a=([k]=1)",
    "declare -a a=$x",
    'a=(); declare a="$x"',
    "declare 'a=($(touch p))'",
    "typeset -a \"a=$x\"",
    "compgen -W '$(touch p)' x",
    "[[ -v a[$(cmd)] ]]",
    "printf -v 'a[$(cmd)]' x",
    "echo $(( a[$(cmd)] ))",
    "declare -n r=x",
    "fc -s",
  ]
  for (const line of lines) {
    test(`${JSON.stringify(line)} is opaque`, async () => {
      expect((await opaque(line)).length).toBeGreaterThan(0)
    })
  }

  test("expansions that only quote or transform run nothing", async () => {
    for (const line of ["echo ${v@Q} ${v@E} ${v@A} ${v^^}", "a=([0]=1 [1]=2)", "local b=$x", "fc -l", "declare -a files=($(ls))", 'f() { local -a args=("$@"); }']) {
      expect([line, await opaque(line)]).toEqual([line, []])
    }
  })
})

describe("options that hand a program a command are checked as that command", () => {
  test("rg --pre and --hostname-bin: the program is checked, with the search's paths as its input, and asked", async () => {
    expect(await plain("rg --pre rm foo")).toEqual(["rm <input>"])
    expect(await opaque("rg --pre rm foo")).toEqual(["rg --pre rm foo"])
    expect(await plain("rg --pre=./x foo")).toEqual(["./x <input>", "x <input>"])
    expect(await plain("rg --hostname-bin rm foo")).toEqual(["rm <input>"])
    expect(await opaque("rg --pre \"$P\" foo")).toEqual(['rg --pre "$P" foo'])
    expect(await opaque("rg -- --pre")).toEqual([])
  })

  test("fd -x, --exec, -X and --exec-batch: the command up to ;", async () => {
    expect(await plain("fd . -x rm")).toContain("rm <input>")
    expect(await plain("fd -e txt --exec-batch ls {} \\; -E x")).toEqual(["fd -e txt --exec-batch ls {} \\; -E x", "ls {}"])
    expect(await plain("fd . --exec=rm {}")).toContain("rm {}")
    expect(await opaque("fd . -x {} x")).toEqual(["fd . -x {} x"])
  })

  test("rsync -e, scp -S, ssh -F, less +!, compgen -W are opaque", async () => {
    expect(await plain("rsync -avz -e 'ssh -p 2222' a b:c")).toEqual(["rsync -avz -e 'ssh -p 2222' a b:c", "ssh -p 2222"])
    expect(await plain("rsync --rsh=./x a b:")).toEqual(["rsync --rsh=./x a b:", "./x", "x"])
    for (const line of ["rsync -e 'sh -c \"rm x\"' a b:c", "rsync -e \"$RSH\" a b:", "rsync --rsync-path=x a b:", "scp -S ./x a b:", "sftp -D ./x host", "ssh -F ./cfg host", "ssh -oProxyCommand=x host", "less '+!rm x' f", "less --lesskey-src=k f"]) {
      expect([line, await opaque(line)]).toEqual([line, [line]])
    }
    for (const line of ["rsync -av a b/", "scp a b:", "less f"]) expect([line, await opaque(line)]).toEqual([line, []])
  })

  test("zip -TT, sort --compress-program, wget --use-askpass, sdiff --diff-program, socat EXEC:, ncat --sh-exec and vim +CMD are opaque", async () => {
    for (const line of [
      "zip -TT 'rm x' a.zip f",
      "sort --compress-program=./x f",
      "wget --use-askpass=./x u",
      "sdiff --diff-program=./x a b",
      "socat - EXEC:'rm x'",
      "socat - SYSTEM:x",
      "ncat --sh-exec 'rm x' l",
      "vim '+!rm x' f",
      "vim -S x.vim f",
      "LESS='+!rm x' less f",
      "MANOPT='-P x' man ls",
      // Long options by any start of their name, as getopt takes them.
      "sort --compress=./x f",
      "sort --com=./x f",
      "zip --unzip=./x a.zip f",
      "wget --use-ask=./x u",
      "sdiff --diff=./x a b",
      "less --lesskey-s=k f",
      "man --pa=./x ls",
      "tar --to-c=./x -xf a.tar",
      "tar --use-comp=./x -cf a.tar d",
      "tar --checkpoint-a=exec=./x -cf a.tar d",
      "tar -Ish -cf a.tar d",
      "tar cIf ./x a.tar d",
    ]) {
      expect([line, (await opaque(line)).length > 0]).toEqual([line, true])
    }
    for (const line of ["zip -r a.zip d", "sort -u f", "sort --check f", "vim f", "socat - TCP:localhost:80", "tar --checkpoint=10 -cf a.tar d", "tar cvzf a.tar d", "tar -xzf a.tar", "wget --user=me u"]) expect([line, await opaque(line)]).toEqual([line, []])
  })
})

describe("programs that run the command after their options are read as wrappers", () => {
  test("logsave, choom, luit, fakeroot-tcp, valgrind.bin, memusage, sotruss, dumb-init, tini, uvx, pipx run, nix develop -c ...", async () => {
    for (const [line, inner] of [
      ["logsave /dev/null rm -f victim", "rm -f victim"],
      ["logsave -a -- /dev/null bash -c 'rm -f v'", "rm -f v"],
      ["choom -n 5 -- rm x", "rm x"],
      ["luit -encoding UTF-8 -- rm x", "rm x"],
      ["fakeroot-tcp rm -f F", "rm -f F"],
      ["valgrind.bin rm -f F", "rm -f F"],
      ["memusage -p out.png rm x", "rm x"],
      ["sotruss -f rm x", "rm x"],
      ["dumb-init -c rm x", "rm x"],
      ["tini -s -- rm x", "rm x"],
      ["uvx --from ruff rm x", "rm x"],
      ["pipx run rm x", "rm x"],
      ["devbox run rm x", "rm x"],
      ["gpg-agent --daemon rm x", "rm x"],
      ["debconf-apt-progress -- rm x", "rm x"],
      ["heaptrack rm x", "rm x"],
      ["nix develop .#dev -c rm x", "rm x"],
      ["nix shell nixpkgs#hello --command git push", "git push"],
    ] as const) {
      expect([line, await plain(line)]).toEqual([line, expect.arrayContaining([inner])])
    }
    // What a wrapper runs is read in full: code it is handed, and what makes it opaque.
    expect(await opaque("logsave /dev/null env -S 'rm -f v'")).toEqual(["logsave /dev/null env -S 'rm -f v'"])
    expect(await opaque("logsave /dev/null awk 'BEGIN{system(\"rm -f v\")}'")).toHaveLength(1)
    expect(await opaque("nix develop")).toEqual([])
  })

  test("cmake -E env, time and chdir run the command after them", async () => {
    expect(await plain("cmake -E env A=1 --unset=B rm -f F")).toContain("rm -f F")
    expect(await plain("cmake -E time git push")).toContain("git push")
    expect(await plain("cmake -E chdir /tmp rm x")).toContain("rm x")
    expect(await plain("cmake -E remove x")).toEqual(["cmake -E remove x"])
  })

  test("make given make code or a variable that can run a command is opaque; its targets are no commands", async () => {
    for (const line of [
      "make test 'X=$(shell rm -f x)'",
      "make test -E '$(shell rm -f x)'",
      "make -sE'$(shell id)'",
      "make --eval='$(shell id)'",
      "make --ev x",
      "make 'X!=rm x'",
      "make SHELL=./evil.sh",
      "make .SHELLFLAGS=-c",
      "make 'CC=rm -f x' all",
      "make X=`id`",
      'make CC="$CC"',
      "make -f /dev/null -- 'X!=rm -f m1'",
      "gmake 'X=$(shell id)'",
      "bmake 'X!=id'",
      "remake -E 'x'",
      "make --fil=/dev/stdin",
      "make --fil -",
      "make --makef /dev/stdin",
      "MAKEFILES=/dev/stdin make -f /dev/null",
      "cmake -E __run_co_compile --tidy=rm --source=k1 -- true",
    ]) {
      expect([line, await opaque(line)]).toEqual([line, [line]])
    }
    for (const line of ["make test", "make -j4 CC=clang DEBUG=1 all", "make PREFIX=/usr install", "make -f Makefile.dev all", "make --file=build.mk"]) {
      expect([line, await opaque(line)]).toEqual([line, []])
    }
  })

  test("git subcommands that run the command line they are given are opaque", async () => {
    for (const line of [
      "git remote-ext origin 'sh -c rm% -f% x'",
      "git instaweb --httpd=./x",
      "git web--browse -b ./x u",
      "git daemon --access-hook=./x",
      "git send-email --to-cmd=./x a.patch",
      "git send-email --sendmail-cmd ./x a.patch",
      "git send-email --smtp-server=./x a.patch",
    ]) {
      expect([line, await opaque(line)]).toEqual([line, [line]])
    }
    for (const line of ["git send-email --to=a@b a.patch", "git send-email --cc a@b a.patch", "git daemon --export-all"]) {
      expect([line, await opaque(line)]).toEqual([line, []])
    }
  })

  test("go and cargo told to run a program of their own choosing are opaque", async () => {
    for (const line of ["go test -exec ./x ./...", "go build -toolexec=./x", "go vet -vettool=./x", "go test --exec=./x", "cargo --config 'target.x.runner=\"rm\"' test", "GOFLAGS=-toolexec=./x go build", "RUSTC_WRAPPER=./x cargo build", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./x cargo test"]) {
      expect([line, await opaque(line)]).toEqual([line, [line]])
    }
    for (const line of ["go test ./...", "go build -o bin/x .", "cargo test --release"]) expect([line, await opaque(line)]).toEqual([line, []])
  })
})

describe("xargs and find cannot give a program another name through their input", () => {
  for (const line of [
    "type -P rm | xargs -I{} ln -s {} zap",
    "xargs -i cp {} zap",
    "xargs --replace=@ install @ zap",
    "find /bin -name rm -exec cp {} zap \\;",
    "fd rm /bin -x ln -s {} zap",
  ]) {
    test(`${line} is opaque`, async () => {
      expect((await opaque(line)).length).toBeGreaterThan(0)
    })
  }

  test("a program the line itself copies or links, then runs by its new name, is opaque", async () => {
    expect(await opaque("cp /bin/rm zap; ./zap x")).toEqual(["./zap x"])
    expect(await opaque("ln -s $(type -P rm) zap && ./zap x")).toContain("./zap x")
    expect(await opaque("mkdir b; cp /bin/rm b/zap; PATH=b:$PATH zap x")).toEqual(["PATH=b:$PATH zap x"])
    expect(await opaque("cp a.txt b.txt; ./build.sh")).toEqual([])
    expect(await opaque("chmod +x build.sh; ./build.sh")).toEqual([])
  })

  test("a replacement given to a command that copies nothing is checked as usual", async () => {
    // find's paths lie under the paths it is given, checked as such.
    expect(await opaque("find . -name '*.log' -exec cat {} \\;")).toEqual([])
    // xargs's are its input's, as `xargs cat` appends them: asked every time, and known only when it runs.
    for (const line of ["xargs -I{} grep foo {}", "xargs -I{} tee -a {}", "ls | xargs -I % truncate -s0 %"]) {
      const found = (await checks(line)).filter((check) => check.opaque !== undefined)
      expect(found.map((check) => check.opaque)).toEqual(["the paths it is given come from its input"])
      expect(await plain(line)).not.toContain(line.replace(/^ls \| /, ""))
    }
  })
})

describe("Flags.variants", () => {
  const of = (line: string) => {
    const words = line.split(" ")
    return Flags.variants(words, words, words[0]!)
  }

  test("rm -fr is also rm -rf, rm -r -f, rm -Rf and rm --recursive --force", () => {
    const found = of("rm -fr x")
    for (const spelling of ["rm -rf x", "rm -r -f x", "rm -f -r x", "rm -Rf x", "rm --recursive --force x", "rm --force --recursive x"]) {
      expect(found).toContain(spelling)
    }
    expect(of("rm --recursive --force x")).toContain("rm -rf x")
    expect(of("rm x -rf")).toContain("rm -rf x")
    // More flags than the rule names still meet it: the rule's flags first, the rest apart.
    expect(of("rm -rfv x")).toContain("rm -rf -v x")
    expect(of("rm -vfr x")).toContain("rm -rf -v x")
    expect(of("rm -v -f -r x")).toContain("rm -r -f -v x")
  })

  test("git subcommands: push -f is push --force", () => {
    expect(of("git push -f origin main")).toContain("git push --force origin main")
    expect(of("git push origin +main")).toContain("git push --force origin main")
    expect(of("git push origin +main")).toContain("git push -f origin main")
    expect(of("git clean -fdx")).toContain("git clean -f -d -x")
  })

  // An option the table did not know dropped every other spelling: `rm --preserve-root -fr x` met no rule about
  // `rm -rf *`, nor did more than three flags in another order (`rm -vdfr x`).
  test("an option the table does not know is kept after the flags as written; each two of many flags come first", () => {
    expect(of("rm --no-preserve-root -fr /")).toContain("rm -rf --no-preserve-root /")
    expect(of("rm -fr --interactive=never x")).toContain("rm -rf --interactive=never x")
    expect(of("rm -frZ x")).toContain("rm -rf -Z x")
    expect(of("rm -vdfr x")).toContain("rm -rf -v -d x")
    expect(of("git push -fv --atomic")).toContain("git push -f -v --atomic")
    // Its value, which may look like flags, stays with it.
    const quoted = (values: ReadonlyArray<string>, texts: ReadonlyArray<string>) => Flags.variants(values, texts, values[0]!)
    expect(quoted(["git", "commit", "-m", "-a fix"], ["git", "commit", "-m", '"-a fix"'])).toEqual([])
    const amended = quoted(["git", "commit", "-a", "-m", "-n x"], ["git", "commit", "-a", "-m", '"-n x"'])
    expect(amended).toContain('git commit --all -m "-n x"')
    expect(amended.some((each) => each.includes("--no-verify"))).toBe(false)
  })

  test("a valued option alone, an unknown command or no flag leaves the command as written", () => {
    expect(of("cp -t dir x")).toEqual([])
    expect(of("frob -rf x")).toEqual([])
    expect(of("rm x")).toEqual([])
  })

  test("a command asked as opaque keeps its other spellings", async () => {
    const [check] = await checks("rm -fr $X")
    expect(check?.opaque).toBeDefined()
    expect(check?.variants).toContain("rm -rf $X")
  })

  test("a command's check carries its other spellings, never its own", async () => {
    const [check] = await checks("rm -fr x")
    expect(check?.resource).toBe("rm -fr x")
    expect(check?.variants).toContain("rm -rf x")
    expect(check?.variants).not.toContain("rm -fr x")
    const [assigned, bare] = await checks("X=1 rm -fr x > out")
    expect(assigned?.variants).toContain("X=1 rm -rf x > out")
    expect(bare?.variants).toContain("rm -rf x > out")
  })
})

describe("code planted for the user's own git is protected", () => {
  const protectedLines = [
    "git config core.hooksPath .",
    "git config --global core.pager 'sh x'",
    "git config --system core.fsmonitor x",
    "git config alias.st '!rm x'",
    "git config set filter.x.smudge x",
    "git config --add include.path x",
    "git config --file .git/config diff.x.textconv x",
    "git -C sub config core.sshCommand x",
    "git config -e",
    "git config \"$K\" x",
    "git init --template=t",
    "git clone --template t a b",
    "git clone -c core.hooksPath=x a b",
    "git clone --config=alias.x=!y a b",
    "sudo git config core.editor x",
    "GIT_TEMPLATE_DIR=./t git init",
    "env GIT_TEMPLATE_DIR=./t git clone a b",
    "export GIT_TEMPLATE_DIR=./t",
    "cp x .git/hooks/pre-commit",
    "mv x ./.git//config",
    "echo > .git/config",
    "tee -a .git/info/attributes",
    "ln -s x .git/hooks",
    "sed -i s/a/b/ .git/config",
    "sudo cp x .git/hooks/pre-commit",
    "find . -name x -exec cp {} .git/hooks/pre-push \\;",
    "dd if=x of=.git/config",
    "bash -c 'cat x > .git/hooks/post-checkout'",
  ]
  for (const line of protectedLines) {
    test(`${JSON.stringify(line)} is protected`, async () => {
      expect((await planted(line)).length).toBeGreaterThan(0)
    })
  }

  test("reading git's configuration, or setting what runs nothing, plants nothing", async () => {
    for (const line of ["git config --get core.hooksPath", "git config core.hooksPath", "git config user.name me", "cat .git/config", "git config --unset core.pager", "git init", "grep x .git/config", "git status", "sed -n 1p .git/config", "wc -l .git/config", "ls .git/hooks"]) {
      expect([line, await planted(line)]).toEqual([line, []])
    }
  })

  test("Planted.gitPath knows the places git runs or reads for the user", () => {
    for (const path of [".git/hooks", ".git/hooks/pre-commit", "./.git/config", "/x/.git/info/attributes", ".git", ".git/", ".git/commondir", "sub/.git/config.worktree"]) {
      expect([path, Planted.gitPath(path)]).toEqual([path, true])
    }
    for (const path of [".git/objects/ab", ".gitignore", "x.git/config", ".git/HEAD"]) expect([path, Planted.gitPath(path)]).toEqual([path, false])
    // Only what follows a line break can end such a path.
    for (const path of ["a\r/.git/config", "/.git/hooks/\nb/.git", ".git\u2028/.GIT/hooks/x"]) expect([path, Planted.gitPath(path)]).toEqual([path, true])
    for (const path of ["a\n.git/hooks/x", ".git/hooks/x\n", ".git/hooks/a\nb", "x\u2028"]) expect([path, Planted.gitPath(path)]).toEqual([path, false])
  })

  test("Planted.withoutCode keeps every line but those setting a key that runs code, with their continued values", () => {
    const text =
      '# mine\r\n[core]\r\n\trepositoryformatversion = 0\r\n\tfsmonitor = "touch \\\r\n x"\r\n[remote "origin"]\r\n\turl = https://x/y\r\n' +
      "[alias] st = !sh -c x\n\tco = checkout\n"
    expect(Planted.withoutCode(text)).toBe(
      '# mine\r\n[core]\r\n\trepositoryformatversion = 0\r\n[remote "origin"]\r\n\turl = https://x/y\r\n[alias]\n',
    )
    const plain = '[core]\r\n\tbare = false\r\n[remote "origin"]\r\n\turl = u\r\n'
    expect(Planted.withoutCode(plain)).toBe(plain)
    expect(Planted.withoutCode("not a config line\n")).toBeUndefined()
    // What it keeps runs nothing, as git reads it.
    expect(Planted.configRunsCode(Planted.withoutCode(text)!)).toBe(false)
  })

  test("Planted.configRunsCode reads a git config's keys as git does", () => {
    for (const text of [
      "[core]\n\tfsmonitor = touch x\n",
      '[remote "origin"]\n\turl = u\n[filter "lfs"]\n\tclean = x\n',
      "[core] hooksPath = .hooks\n",
      "[alias]\n\tst = !sh -c x\n",
      "[include]\n\tpath = ../x\n",
      "[CORE]\n\tFsMonitor = x\n",
      "[filter.x]\n\tsmudge = y\n",
      "not a config line\n",
      "fsmonitor = x\n",
      // A backslash in a comment continues nothing: git reads the next line as a key.
      "[core]\n# \\\n\tfsmonitor = touch x\n",
      "[core] # \\\n\tfsmonitor = touch x\n",
      "[core]\n\tname = y ; \\\n\tfsmonitor = touch x\n",
      '[core]\n\tname = "a # \\\n b" \n\tfsmonitor = x\n',
      '[tar "tar.gz"]\n\tcommand = touch x; gzip -cn\n',
      '[hook "lint"]\n\tevent = pre-commit\n\tcommand = touch x\n',
      "[svn]\n\tauthorsProg = touch x\n",
      '[lfs "extension.x"]\n\tclean = touch x\n',
      '[lfs "customtransfer.y"]\n\tpath = /bin/evil\n',
      '[filter "a\u2028b"]\n\tclean = touch x\n',
      '[diff "a\rb"]\n\ttextconv = touch x\n',
    ]) {
      expect([text, Planted.configRunsCode(text)]).toEqual([text, true])
    }
    for (const text of [
      "",
      '[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote "origin"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n',
      "# a comment\n[user]\n\tname = me ; fsmonitor = x\n",
      '[core]\n\tname = a \\\n\tfsmonitor = x\n',
      // Continued inside quotes, across a comment sign: still the value.
      '[user]\n\tname = "a \\\n # b \\\n\tfsmonitor = x"\n',
    ]) {
      expect([text, Planted.configRunsCode(text)]).toEqual([text, false])
    }
  })
})

// The model writes the words these checks read, so reading them must not backtrack: a subscript test that let every
// `[` take every split took a minute on 10,000 `[`, brace tests that let any `,` be the one, or tried every `{` up
// to the end, took seconds on 100,000 characters, and testing the whole line again for each name a declaration
// assigns took seconds for 10,000 names. The answers on ordinary words are those the former expressions gave.
describe("words a model makes long are read in one pass", () => {
  const pinned: ReadonlyArray<readonly [string, boolean]> = [
    ["printf -v 'a[1]' x", false],
    ["printf -v 'a[ 1 ]' x", false],
    ["printf -v 'a[@]' x", false],
    ["printf -v 'a[*]' x", false],
    ["printf -v 'a[i]' x", true],
    ["printf -v 'a]b[1]' x", false],
    ["printf -v 'a[1]b[k]' x", true],
    ["printf -v 'a[1][' x", false],
    ["test 'a[1]x]'", false],
    ["unset 'a[$i]'", true],
    ["read 'a[x'", false],
    ["[[ -v 'a[k]' ]]", true],
    ["[[ -v 'a[1]' ]]", false],
    ["cat {/etc,x}/passwd", true],
    // A sequence expression is an expansion too (`core.js{o..o}n` is core.json).
    ["cat core.js{o..o}n", true],
    ["cat {1..3}", true],
    ["cat '{1..3}'", false],
    ["cat {1.3}", false],
    ["cat a..b}", false],
    ["cat {ab}", false],
    ["cat {a}{b,c}", true],
    ["cat '{a,b}'", false],
    ["cat \\{a,b}", false],
    ["cat {a,{b,c}}", true],
    ["cat x{,}", true],
    ["cat {a,b", false],
    ["cat a,b}", false],
    ['cat "{a,b}"c{d,e}', true],
    ['foo "$X"{a,b}', true],
    ['foo "$X"a{b}', false],
    ['foo "$X"}{,', true],
    ['foo "$X"{a}b,c', false],
    ['foo {"$X",b}', true],
    ["foo \"$X\"'${a,b}'", false],
    ['foo "$X"a{b,', true],
    ["declare a=$x b=$y", false],
    ["z=(1); declare z=$x", true],
    ["b[0]=1; declare b=$x", true],
    ["declare -la  a; declare a=$x", true],
    ["declare -l a; declare a=$x", false],
    ["mapfile q; declare a=$x", true],
    ["xz=(1); declare z=$x", false],
  ]
  for (const [line, expected] of pinned) {
    test(`${JSON.stringify(line)} is ${expected ? "opaque" : "checked as written"}`, async () => {
      expect((await opaque(line)).length > 0).toBe(expected)
    })
  }

  // No test timeout stops synchronous code, so the cases run in a child process killed after 20 s.
  test("long hostile subscripts, braces, git paths and declarations are decided at once, and rightly", async () => {
    expect(
      await inChild(`
        import { Effect } from "effect"
        import { CommandLine } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/command-line.ts"))}
        import { CommandChecks } from ${JSON.stringify(join(import.meta.dir, "../../src/shell/command-checks.ts"))}
        const opaque = async (line) =>
          CommandChecks.checks(await Effect.runPromise(CommandLine.parse(line))).some((check) => check.opaque !== undefined)
        const planted = async (line) =>
          CommandChecks.checks(await Effect.runPromise(CommandLine.parse(line))).some((check) => check.protected !== undefined)
        console.log(JSON.stringify([
          await opaque("printf -v '" + "[".repeat(100_000) + "' x"),
          await opaque("printf -v '" + "[".repeat(100_000) + "k]' x"),
          await opaque("printf -v 'a[" + " 1@*".repeat(50_000) + "]' x"),
          await opaque("cat {" + ",".repeat(100_000)),
          await opaque("cat {" + ",".repeat(100_000) + "{/etc/shadow,x}"),
          await opaque('foo "$X"' + "a{".repeat(50_000)),
          await opaque('foo "$X"' + "a{".repeat(50_000) + "{,"),
          await planted("echo x > 'x" + "/.git/hooks/".repeat(30_000) + "\\n'"),
          await planted("echo x > 'x" + "/.git/hooks/".repeat(30_000) + "\\n/.git/hooks/pre-commit'"),
          await opaque("declare " + "abcdefgh=$x ".repeat(40_000)),
          await opaque("declare " + "abcdefgh=$x ".repeat(40_000) + "; z=(1); declare z=$x"),
          await opaque("declare a=x; ".repeat(30_000) + "b[0]=1; declare b=$x"),
          await opaque("cat " + "{..".repeat(40_000)),
          await opaque("cat " + "{..".repeat(40_000) + "}"),
        ]))
        `, 60_000),
    ).toEqual([false, true, false, false, true, false, true, false, true, false, true, true, false, true])
    // About 4 s on an idle machine, linear in the input; the bound is against work that grows with its square.
  }, 90_000)
})
