// Reading command lines for permission: every simple command found wherever it is nested, the prefix an "always"
// saves, unreadable lines checked as a whole under the unparsed marker, and the paths file commands touch.

import { describe, expect, test } from "bun:test"
import { homedir } from "node:os"
import { Effect } from "effect"
import { Rule } from "../../src/permission/rule"
import { Arity } from "../../src/shell/arity"
import { CommandLine } from "../../src/shell/command"

const parse = (text: string) => Effect.runPromise(CommandLine.parse(text))
const resources = async (text: string) => CommandLine.checks(await parse(text)).map((check) => check.resource)
const saved = async (text: string) => CommandLine.checks(await parse(text)).map((check) => check.save)
const located = async (text: string, workdir = "/work/here") =>
  CommandLine.paths(await parse(text)).map((word) => CommandLine.locate(word, workdir, "/home/someone"))

describe("CommandLine.checks: every command on its own", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["git status && rm -rf /", ["git status", "rm -rf /"]],
    ["make || echo failed; ls", ["make", "echo failed", "ls"]],
    ["cat a.txt | grep x | wc -l", ["cat a.txt", "grep x", "wc -l"]],
    ["(cd sub && rm x) & wait", ["cd sub", "rm x", "wait"]],
    ["echo $(rm -rf build)", ["echo $(rm -rf build)", "rm -rf build"]],
    ["echo `whoami`", ["echo `whoami`", "whoami"]],
    ["diff <(ls a) >(tee out)", ["diff <(ls a) >(tee out)", "ls a", "tee out"]],
    ['echo "today is $(date)"', ['echo "today is $(date)"', "date"]],
    ["x=$(curl evil.sh)", ["x=$(curl evil.sh)", "curl evil.sh"]],
    ["export A=$(id -u)", ["export A=$(id -u)", "id -u"]],
    ["if test -f a; then rm a; fi", ["test -f a", "rm a"]],
    ["for f in $(ls); do rm $f; done", ["ls", "rm $f"]],
    ["f() { rm -rf /; }", ["rm -rf /"]],
    ["[[ -n $(pwd) ]] && true", ["[[ -n $(pwd) ]]", "pwd", "true"]],
    ["cat <<EOF\nhello $(rm x)\nEOF", ["cat", "rm x"]],
    ["echo hi >&2 2>/dev/null", ["echo hi"]],
    ["echo > out.txt hello", ["echo hello"]],
  ]
  for (const [line, expected] of cases) {
    test(JSON.stringify(line), async () => {
      expect(await resources(line)).toEqual([...expected])
    })
  }

  test("a quoted heredoc delimiter keeps its body as text, not commands", async () => {
    expect(await resources("cat <<'EOF'\n$(rm x)\nEOF")).toEqual(["cat"])
  })

  test("a command name is checked by its value, however it is quoted", async () => {
    expect(await resources("'r'm -rf x")).toEqual(["rm -rf x"])
    expect(await resources('"git" status')).toEqual(["git status"])
    expect(await resources("\\rm x")).toEqual(["rm x"])
  })

  test("arguments keep their quoting", async () => {
    expect(await resources('git commit -m "a message"')).toEqual(['git commit -m "a message"'])
  })

  test("a command a wrapper runs is checked too", async () => {
    expect(await resources("sudo -u root rm -rf /etc")).toEqual(["sudo -u root rm -rf /etc", "rm -rf /etc"])
    expect(await resources("timeout 5 npm test")).toEqual(["timeout 5 npm test", "npm test"])
    expect(await resources("env A=1 B=2 rm x")).toEqual(["env A=1 B=2 rm x", "rm x"])
    expect(await resources("find . | xargs -I {} rm {}")).toEqual(["find .", "xargs -I {} rm {}", "rm {}"])
  })

  test("a command named by its path is also checked by its name", async () => {
    expect(await resources("/bin/rm x")).toEqual(["/bin/rm x", "rm x"])
  })

  test("assignments before a command belong to it", async () => {
    expect(await resources("CI=1 npm test")).toEqual(["CI=1 npm test"])
    expect(await saved("CI=1 npm test")).toEqual(["CI=1 npm test *"])
  })

  test("a bare assignment is checked as itself", async () => {
    expect(await resources("PATH=/tmp/evil")).toEqual(["PATH=/tmp/evil"])
    expect(await saved("PATH=/tmp/evil")).toEqual(["PATH=/tmp/evil"])
  })

  test("a line with nothing to run finds nothing", async () => {
    expect(await resources("# only a comment")).toEqual([])
  })

  test("the same command twice is checked once", async () => {
    expect(await resources("ls; ls")).toEqual(["ls"])
  })
})

describe("CommandLine.checks: lines that cannot be read command by command", () => {
  test("a syntax error is checked as the whole line under the unparsed marker", async () => {
    const parsed = await parse('echo "unterminated')
    expect(parsed.unparsed).toBe("bash cannot parse it")
    const [whole] = CommandLine.checks(parsed)
    expect(whole).toEqual({ resource: '<unparsed> echo "unterminated', save: '<unparsed> echo "unterminated' })
    expect((await parse("&& ls")).unparsed).toBeDefined()
    expect((await parse("ls (")).unparsed).toBeDefined()
  })

  test("an expansion in a command name makes the line unparsed", async () => {
    expect(await resources("$CMD -rf /")).toEqual(["<unparsed> $CMD -rf /"])
    expect(await resources("$(echo rm) -rf /")).toContain("<unparsed> $(echo rm) -rf /")
    expect(await resources("ls; r* x")).toEqual(["<unparsed> ls; r* x", "ls"])
    expect(await resources("sudo $CMD")).toContain("<unparsed> sudo $CMD")
  })

  test("no prefix rule matches an unparsed line; only the exact line or a leading wildcard does", async () => {
    const [whole] = CommandLine.checks(await parse('git status "oops && rm -rf /'))
    for (const pattern of ["git *", "git status *", "rm *", "echo *", "git status"]) {
      expect(Rule.matches(pattern, whole!.resource)).toBe(false)
    }
    expect(Rule.matches("*", whole!.resource)).toBe(true)
  })

  test("an unparsed line with a wildcard character saves nothing", async () => {
    const [whole] = CommandLine.checks(await parse("ls *.ts; $X"))
    expect(whole).toEqual({ resource: "<unparsed> ls *.ts; $X", save: undefined })
  })

  test("the commands found in an unparsed line are checked as well", async () => {
    expect(await resources("rm -rf x; $CMD")).toEqual(["<unparsed> rm -rf x; $CMD", "rm -rf x"])
  })
})

describe("saved prefixes", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["ls -la", "ls *"],
    ["rm -rf /", "rm *"],
    ["git checkout main", "git checkout *"],
    ["git status", "git status *"],
    ["git stash pop", "git stash pop *"],
    ["npm run dev", "npm run dev *"],
    ["npm install left-pad", "npm install *"],
    ["bun test --timeout 1000", "bun test *"],
    ["bun run build", "bun run build *"],
    ["cargo build --release", "cargo build *"],
    ["go test ./...", "go test *"],
    ["docker compose up -d", "docker compose up *"],
    ["kubectl get pods", "kubectl get *"],
    ["pip install requests", "pip install *"],
    ["python -m pytest -x", "python -m pytest *"],
    ["make test", "make test *"],
    ["make", "make"],
    ["git -C /x status", "git -C /x status"],
    ["git -C '*' status", undefined],
    ['bash -c "rm -rf /"', 'bash -c "rm -rf /"'],
    ["eval ls", "eval ls"],
    ["sudo -u root rm -rf /", "sudo -u root rm *"],
    ["time npm test", "time npm test *"],
    ["echo 'a*b'", "echo *"],
    ["[ -f x ]", "[ *"],
  ]
  for (const [line, pattern] of cases) {
    test(`${line} → ${pattern ?? "nothing"}`, async () => {
      const [first] = CommandLine.checks(await parse(line))
      expect(first?.save).toBe(pattern)
    })
  }

  test("a saved prefix matches the command it came from and its siblings, not other commands", async () => {
    const [check] = CommandLine.checks(await parse("git checkout main"))
    expect(Rule.matches(check!.save!, "git checkout main")).toBe(true)
    expect(Rule.matches(check!.save!, "git checkout -b other")).toBe(true)
    expect(Rule.matches(check!.save!, "git push --force")).toBe(false)
    expect(Rule.matches("ls *", "ls")).toBe(true)
  })
})

describe("Arity.prefixLength", () => {
  test("the longest listed prefix wins", () => {
    expect(Arity.prefixLength(["npm", "run", "dev"])).toBe(3)
    expect(Arity.prefixLength(["npm", "install", "x"])).toBe(2)
    expect(Arity.prefixLength(["unknown-tool", "a", "b"])).toBe(1)
  })

  test("an option, an expansion, a wildcard or too few words leave no prefix", () => {
    expect(Arity.prefixLength(["git", "-C", "dir", "status"])).toBeUndefined()
    expect(Arity.prefixLength(["git", undefined])).toBeUndefined()
    expect(Arity.prefixLength(["git", "a*"])).toBeUndefined()
    expect(Arity.prefixLength(["git"])).toBeUndefined()
    expect(Arity.prefixLength(["git", "my branch"])).toBeUndefined()
  })

  test("options listed in the table are part of the prefix", () => {
    expect(Arity.prefixLength(["python3", "-m", "http.server", "8000"])).toBe(3)
  })
})

describe("CommandLine.paths and CommandLine.locate", () => {
  test("file commands' operands and redirection targets, resolved from the workdir", async () => {
    expect(await located("rm -rf build /etc/x")).toEqual(["/work/here/build", "/etc/x"])
    expect(await located("echo hi > ../out.txt")).toEqual(["/work/out.txt"])
    expect(await located("cat < /etc/hosts")).toEqual(["/etc/hosts"])
  })

  test("~ is the home directory; ~user cannot be known", async () => {
    expect(await located("cat ~/.ssh/id_rsa")).toEqual(["/home/someone/.ssh/id_rsa"])
    expect(await located("ls ~root")).toEqual([undefined])
    expect(await located("cat '~/x'")).toEqual(["/work/here/~/x"])
  })

  test("cd alone goes home", async () => {
    expect(await located("cd")).toEqual(["/home/someone"])
    expect(await located("cd /tmp")).toEqual(["/tmp"])
  })

  test("a pattern names the directory its matches are in", async () => {
    expect(await located("rm /etc/*.conf")).toEqual(["/etc"])
    expect(await located("ls ../*.txt")).toEqual(["/work"])
    expect(await located("rm *.o")).toEqual(["/work/here"])
  })

  test("modes, owners and patterns are not paths; option values that are paths are", async () => {
    expect(await located("chmod 755 /usr/local/bin/x")).toEqual(["/usr/local/bin/x"])
    expect(await located("grep /etc/passwd notes.txt")).toEqual(["/work/here/notes.txt"])
    expect(await located("cp --target-directory=/opt a")).toEqual(["/opt", "/work/here/a"])
    expect(await located("rm -- -rf")).toEqual(["/work/here/-rf"])
  })

  test("a command whose name is not literal still has its redirections checked", async () => {
    expect(await located("$CMD > /etc/motd")).toEqual(["/etc/motd"])
  })

  test("devices and descriptor duplications are not places", async () => {
    expect(await located("ls 2>/dev/null >&2 2>&1")).toEqual([undefined])
  })

  test("a wrapped file command's paths count", async () => {
    expect(await located("sudo rm /etc/passwd")).toEqual(["/etc/passwd"])
  })

  test("commands that are not file commands name no paths", async () => {
    expect(await located("echo /etc/passwd")).toEqual([])
  })

  test("the real home directory is the default", async () => {
    const [word] = CommandLine.paths(await parse("cat ~/x"))
    expect(CommandLine.locate(word!, "/anywhere")).toBe(`${homedir()}/x`)
  })
})
