export * as Arity from "./arity"

// How many leading words of a command say what it does, for the pattern an "always" approval saves: `ls -la` is
// `ls *` (one word), `git checkout main` is `git checkout *` (two), `npm run dev` is `npm run dev *` (three).
// Also the wrappers that run another command (`sudo`, `env`, `timeout` ...), whose wrapped command is checked in
// its own right. Pure tables and lookups; it never decides a permission.

/**
 * Words that name an action, by the words before them. A command not listed has arity 1. The longest listed
 * prefix wins, so `npm run` (3) is used for `npm run dev` and `npm` (2) for `npm install`.
 */
export const TABLE: Readonly<Record<string, number>> = {
  git: 2,
  "git remote": 3,
  "git stash": 3,
  "git submodule": 3,
  "git worktree": 3,
  "git lfs": 3,
  npm: 2,
  "npm run": 3,
  "npm exec": 3,
  npx: 2,
  pnpm: 2,
  "pnpm run": 3,
  "pnpm exec": 3,
  pnpx: 2,
  yarn: 2,
  "yarn run": 3,
  "yarn workspace": 4,
  bun: 2,
  "bun run": 3,
  "bun x": 3,
  bunx: 2,
  deno: 2,
  "deno task": 3,
  cargo: 2,
  rustup: 2,
  go: 2,
  "go mod": 3,
  "go tool": 3,
  docker: 2,
  "docker compose": 3,
  "docker container": 3,
  "docker image": 3,
  "docker network": 3,
  "docker volume": 3,
  "docker-compose": 2,
  podman: 2,
  kubectl: 2,
  "kubectl config": 3,
  "kubectl rollout": 3,
  helm: 2,
  pip: 2,
  pip3: 2,
  "python -m": 3,
  "python3 -m": 3,
  uv: 2,
  "uv run": 3,
  "uv pip": 3,
  poetry: 2,
  "poetry run": 3,
  make: 2,
  gh: 3,
  terraform: 2,
  systemctl: 2,
  brew: 2,
  apt: 2,
  "apt-get": 2,
  dotnet: 2,
  mvn: 2,
  gradle: 2,
  aws: 3,
  gcloud: 3,
}

/**
 * How many leading words of `words` (the command name, then its arguments; undefined where a word is not a
 * literal) make the prefix an "always" saves, or undefined when the command does not start with that many plain
 * words: an option (`git -C dir status`), an expansion, a wildcard character or too few words (`make` alone). The
 * caller then saves the exact command instead.
 */
export const prefixLength = (words: ReadonlyArray<string | undefined>): number | undefined => {
  let arity = 1
  let matched = 0
  for (let length = 1; length <= words.length; length++) {
    const key = words.slice(0, length).join(" ")
    if (words.slice(0, length).includes(undefined)) break
    if (Object.hasOwn(TABLE, key)) {
      arity = TABLE[key]!
      matched = length
    }
  }
  if (words.length < arity) return undefined
  for (let index = 0; index < arity; index++) {
    const word = words[index]
    if (word === undefined || word === "" || /[*?]/.test(word) || /\s/.test(word)) return undefined
    // Options named in the table (`python -m`) are part of the action; any other option is not.
    if (index >= matched && index > 0 && word.startsWith("-")) return undefined
  }
  return arity
}

/** A command that runs the command named after its own options. */
export interface Wrapper {
  /** Options that take the next word as their value (`sudo -u root`). */
  readonly valued: ReadonlyArray<string>
  /** Plain arguments before the wrapped command (`timeout 5s cmd`: the duration). */
  readonly operands: number
  /** Whether `NAME=value` words before the wrapped command are its environment (`env A=1 cmd`). */
  readonly assignments: boolean
}

const wrapper = (valued: ReadonlyArray<string> = [], operands = 0, assignments = false): Wrapper => ({
  valued,
  operands,
  assignments,
})

export const WRAPPERS: Readonly<Record<string, Wrapper>> = {
  sudo: wrapper(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"]),
  doas: wrapper(["-u", "-C"]),
  env: wrapper(["-u", "-C", "--unset", "--chdir"], 0, true),
  command: wrapper(),
  builtin: wrapper(),
  exec: wrapper(["-a"]),
  nohup: wrapper(),
  time: wrapper(["-f", "-o"]),
  nice: wrapper(["-n"]),
  ionice: wrapper(["-c", "-n", "-p"]),
  timeout: wrapper(["-s", "-k", "--signal", "--kill-after"], 1),
  stdbuf: wrapper(["-i", "-o", "-e"]),
  xargs: wrapper(["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"]),
  setsid: wrapper(),
  chroot: wrapper([], 1),
}

/** Where the command a wrapper runs starts among `words` (the wrapper first), if it names one. */
export const wrappedIndex = (words: ReadonlyArray<{ readonly value: string | undefined }>, wrapper: Wrapper): number | undefined => {
  let operands = wrapper.operands
  for (let index = 1; index < words.length; index++) {
    const value = words[index]!.value
    if (value === undefined) return index
    if (value === "--") continue
    if (wrapper.valued.includes(value)) {
      index++
      continue
    }
    if (value.startsWith("-")) continue
    if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(value)) continue
    if (operands > 0) {
      operands--
      continue
    }
    return index
  }
  return undefined
}

/**
 * Commands that run code given as text (`bash -c "..."`, `eval ...`): an "always" for them saves the exact
 * command, never a prefix, since their prefix would approve any code at all.
 */
export const INTERPRETERS: ReadonlySet<string> = new Set([
  "bash",
  "sh",
  "zsh",
  "dash",
  "ash",
  "ksh",
  "mksh",
  "fish",
  "su",
  "eval",
  "source",
  ".",
  "trap",
  "alias",
  "watch",
])
