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

/** The most words in a TABLE key. */
const KEY_WORDS_MAX = Math.max(...Object.keys(TABLE).map((key) => key.split(" ").length))

/**
 * How many leading words of `words` (the command name, then its arguments; undefined where a word is not a
 * literal) make the prefix an "always" saves, or undefined when the command does not start with that many plain
 * words: an option (`git -C dir status`), an expansion, a wildcard character or too few words (`make` alone). The
 * caller then saves the exact command instead.
 */
export const prefixLength = (words: ReadonlyArray<string | undefined>): number | undefined => {
  let arity = 1
  let matched = 0
  // No longer prefix can be a key: joining every prefix of a model's command took its length squared.
  for (let length = 1; length <= Math.min(words.length, KEY_WORDS_MAX); length++) {
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
  /**
   * Options known to take no value. An option in neither list might take the next word as its value (getopt
   * accepts `--adjustment 5` as well as `--adjustment=5`), so both readings are checked.
   */
  readonly flags: ReadonlyArray<string>
  /** Plain arguments before the wrapped command (`timeout 5s cmd`: the duration). */
  readonly operands: number
  /** Whether `NAME=value` words before the wrapped command are its environment (`env A=1 cmd`). */
  readonly assignments: boolean
}

const wrapper = (
  valued: ReadonlyArray<string> = [],
  operands = 0,
  assignments = false,
  flags: ReadonlyArray<string> = [],
): Wrapper => ({ valued, flags, operands, assignments })

export const WRAPPERS: Readonly<Record<string, Wrapper>> = {
  sudo: wrapper(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir"], 0, true, [
    "-E", "-n", "-H", "-S", "-k", "-b", "-A", "-P", "--preserve-env", "--non-interactive",
  ]),
  doas: wrapper(["-u", "-C"], 0, false, ["-n", "-s"]),
  pkexec: wrapper(["--user"], 0, false, ["--disable-internal-agent", "--keep-cwd"]),
  // A lone `-` is env's `-i` (GNU and BSD alike).
  env: wrapper(["-u", "-C", "--unset", "--chdir"], 0, true, ["-", "-i", "-0", "--ignore-environment", "--null", "-v", "--debug"]),
  command: wrapper([], 0, false, ["-p"]),
  builtin: wrapper(),
  exec: wrapper(["-a"], 0, false, ["-c", "-l"]),
  nohup: wrapper(),
  time: wrapper(["-f", "-o", "--format", "--output"], 0, false, ["-p", "-v", "-a", "-q", "--portability", "--verbose", "--append"]),
  nice: wrapper(["-n", "--adjustment"]),
  ionice: wrapper(["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"], 0, false, ["-t", "--ignore"]),
  timeout: wrapper(["-s", "-k", "--signal", "--kill-after"], 1, false, ["-v", "-f", "--preserve-status", "--foreground", "--verbose"]),
  stdbuf: wrapper(["-i", "-o", "-e", "--input", "--output", "--error"]),
  xargs: wrapper(
    ["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"],
    0,
    false,
    // `-i`, `-e` and `-l` take a value only attached (`-i{}`, `-l2`): `xargs -i sed …` runs sed.
    ["-0", "-r", "-t", "-p", "-x", "-o", "-i", "-e", "-l", "--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty"],
  ),
  setsid: wrapper([], 0, false, ["-f", "-w", "-c", "--fork", "--wait", "--ctty"]),
  chroot: wrapper(["--userspec", "--groups"], 1, false, ["--skip-chdir"]),
  taskset: wrapper([], 1, false, ["-a", "-c", "--all-tasks", "--cpu-list"]),
  chrt: wrapper(["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"], 1, false, [
    "-a", "-b", "-d", "-f", "-i", "-o", "-r", "-R", "-v", "--all-tasks", "--batch", "--deadline", "--fifo", "--idle", "--other", "--rr", "--reset-on-fork", "--verbose",
  ]),
  flock: wrapper(["-w", "-E", "--timeout", "--wait", "--conflict-exit-code"], 1, false, [
    "-s", "-x", "-e", "-n", "-u", "-o", "-F", "--shared", "--exclusive", "--nonblock", "--unlock", "--close", "--no-fork", "--verbose",
  ]),
  unshare: wrapper(["-S", "-G", "-R", "-w", "--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups", "--map-user", "--map-group", "--map-users", "--map-groups"], 0, false, [
    "-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-f", "-r", "-c", "--fork", "--map-root-user", "--map-current-user", "--mount-proc", "--kill-child",
  ]),
  nsenter: wrapper(["-t", "-S", "-G", "-w", "--target", "--setuid", "--setgid"], 0, false, [
    "-a", "-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-F", "-Z", "--all", "--no-fork", "--preserve-credentials",
  ]),
  runuser: wrapper(["-u", "-g", "-G", "-s", "-w", "--user", "--group", "--supp-group", "--shell", "--whitelist-environment"], 0, false, ["-l", "-m", "-p", "-P", "--login", "--pty"]),
  setpriv: wrapper(
    ["--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule"],
    0,
    false,
    ["-d", "--dump", "--clear-groups", "--keep-groups", "--init-groups", "--no-new-privs", "--reset-env"],
  ),
  strace: wrapper(["-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-S", "-X", "-P", "-O", "--output", "--trace", "--attach", "--user", "--env"], 0, false, [
    "-f", "-ff", "-c", "-C", "-w", "-q", "-qq", "-y", "-yy", "-t", "-tt", "-ttt", "-T", "-v", "-x", "-xx", "-Z", "-z", "-k", "-r", "-i", "-n", "-d", "-D", "-F", "--follow-forks", "--summary-only",
  ]),
  ltrace: wrapper(["-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-x", "-D", "-F", "--output", "--library"], 0, false, ["-f", "-c", "-C", "-i", "-r", "-S", "-t", "-tt", "-ttt", "-T", "-w"]),
  prlimit: wrapper(["-p", "--pid", "-o", "--output"], 0, false, ["--noheadings", "--raw", "--verbose"]),
  setarch: wrapper([], 1, false, ["-v", "-R", "-F", "-Z", "-L", "-X", "-B", "-I", "-S", "-T", "--addr-no-randomize", "--verbose"]),
  linux32: wrapper([], 0, false, ["-v", "-R", "-F", "-Z", "-L", "-X", "-B", "-I", "-S", "-T"]),
  linux64: wrapper([], 0, false, ["-v", "-R", "-F", "-Z", "-L", "-X", "-B", "-I", "-S", "-T"]),
  // setarch run by an architecture's name (util-linux links these to it): `x86_64 CMD` runs CMD.
  ...Object.fromEntries(
    ["i386", "i686", "x86_64", "uname26", "arm", "armh", "armv7l", "armv8l", "aarch64", "arm64", "ppc", "ppc32", "ppc64", "ppc64le", "s390", "s390x", "mips", "mips64", "parisc", "parisc64", "sparc", "sparc32", "sparc64", "alpha", "ia64", "riscv64", "loongarch64"].map(
      (name) => [name, wrapper([], 0, false, ["-v", "-R", "-F", "-Z", "-L", "-X", "-B", "-I", "-S", "-T", "--addr-no-randomize", "--verbose"])],
    ),
  ),
  numactl: wrapper(["-i", "-m", "-N", "-C", "-p", "--interleave", "--membind", "--cpunodebind", "--physcpubind", "--preferred"], 0, false, ["-a", "-l", "--all", "--localalloc"]),
  cpulimit: wrapper(["-l", "-p", "-e", "--limit", "--pid", "--exe"], 0, false, ["-z", "-i", "-k", "-r", "-v", "--lazy", "--include-children"]),
  chpst: wrapper(["-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-t"], 0, false, ["-P", "-0", "-1", "-2", "-v"]),
  faketime: wrapper(["-m", "-p", "-f"], 1, false, ["--exclude-monotonic"]),
  eatmydata: wrapper(),
  nocache: wrapper(),
  unbuffer: wrapper([], 0, false, ["-p"]),
  torsocks: wrapper(["-u", "-p", "-a", "-P"], 0, false, ["-i", "-d", "-q", "--isolate"]),
  proxychains: wrapper(["-f"], 0, false, ["-q"]),
  proxychains4: wrapper(["-f"], 0, false, ["-q"]),
  trickle: wrapper(["-u", "-d", "-w", "-t", "-l", "-n"], 0, false, ["-s", "-v"]),
  "dbus-run-session": wrapper(["--config-file", "--dbus-daemon"]),
  "xvfb-run": wrapper(["-n", "-s", "-f", "-e", "-p", "-w", "--server-num", "--server-args", "--auth-file", "--error-file", "--xauth-protocol", "--wait"], 0, false, ["-a", "--auto-servernum"]),
  "systemd-run": wrapper(["-p", "-u", "-E", "-M", "-H", "--unit", "--property", "--setenv", "--slice", "--uid", "--gid", "--working-directory", "--description"], 0, false, [
    "-t", "-P", "-G", "-q", "-d", "-S", "--user", "--scope", "--pty", "--pipe", "--wait", "--collect", "--quiet", "--same-dir", "--no-block",
  ]),
  catchsegv: wrapper(),
  valgrind: wrapper([], 0, false, ["-q", "-v", "--quiet", "--verbose"]),
  firejail: wrapper([], 0, false, ["--quiet", "--noprofile"]),
  busybox: wrapper(),
  toybox: wrapper(),
  caffeinate: wrapper(["-t", "-w"], 0, false, ["-d", "-i", "-m", "-s", "-u"]),
  cgexec: wrapper(["-g"], 0, false, ["--sticky"]),
  fakeroot: wrapper(["-l", "-s", "-i", "-b", "--lib", "--faked"], 0, false, ["-u", "--unknown-is-real"]),
  fakechroot: wrapper(["-l", "-d", "-e", "-c", "-s"]),
  authbind: wrapper([], 0, false, ["--deep", "--depth"]),
  chronic: wrapper([], 0, false, ["-e", "-v"]),
  ifne: wrapper([], 0, false, ["-n"]),
  lckdo: wrapper([], 1, false, ["-w", "-W", "-q"]),
  rlwrap: wrapper(["-f", "-H", "-l", "-p", "-P", "-s", "-S", "-w"]),
  tsp: wrapper(["-L", "-D", "-N"], 0, false, ["-n", "-g", "-f", "-B"]),
  nq: wrapper([], 0, false, ["-c", "-q", "-t", "-w"]),
  "ssh-agent": wrapper(["-a", "-E", "-P", "-t"], 0, false, ["-c", "-s", "-d", "-D"]),
  "dbus-launch": wrapper(["--config-file"], 0, false, ["--sh-syntax", "--csh-syntax", "--exit-with-session", "--exit-with-x11"]),
  run0: wrapper(["-u", "-g", "--user", "--group", "--setenv", "--chdir", "--property", "--unit", "--slice", "--nice", "-D"], 0, false, ["--no-ask-password"]),
  please: wrapper(["-u", "-d", "-t", "-p"], 0, false, ["-n", "-w", "-a", "-c"]),
  envdir: wrapper([], 1),
  // Run a command as a user, named first (`gosu nobody cmd`).
  gosu: wrapper([], 1),
  "su-exec": wrapper([], 1),
  // Compiler caches and launchers, which run the command after them.
  ccache: wrapper(),
  sccache: wrapper(),
  distcc: wrapper(),
  daemonize: wrapper(["-c", "-e", "-E", "-l", "-o", "-p", "-u"], 0, false, ["-a", "-v"]),
  tsocks: wrapper(),
  "s6-setuidgid": wrapper([], 1),
  "aa-exec": wrapper(["-p", "--profile", "-n", "--namespace"], 0, false, ["-i", "--immediate", "-v", "--verbose", "-d", "--debug"]),
  // GNU parallel's semaphore runs its command as parallel would.
  sem: wrapper(["-j", "--jobs", "--id", "--semaphoretimeout", "--st"], 0, false, ["--fg", "--bg", "--wait", "-u", "--ungroup"]),
  // Run on another GPU or emulator, or with a container's environment: the command after them runs.
  "prime-run": wrapper(),
  optirun: wrapper(),
  primusrun: wrapper(),
  vglrun: wrapper(["-d", "-display"]),
  "with-contenv": wrapper(),
  box64: wrapper(),
  box86: wrapper(),
  setuidgid: wrapper([], 1),
  envuidgid: wrapper([], 1),
  softlimit: wrapper(["-m", "-a", "-d", "-o", "-p", "-f", "-c", "-r", "-t", "-s", "-l"]),
  "flatpak-spawn": wrapper(["--directory", "--env", "--forward-fd", "--app-path", "--usr-path"], 0, false, ["--host", "--watch-bus", "--clear-env", "--latest-version", "--no-network", "--sandbox"]),
  entr: wrapper([], 0, false, ["-a", "-c", "-cc", "-d", "-n", "-p", "-r", "-z"]),
  retry: wrapper(["-t", "-d", "--times", "--delay", "-u", "--until"]),
  npx: wrapper(["-p", "--package", "-w", "--workspace"], 0, false, ["-y", "--yes", "--no", "-q", "--quiet", "--ws", "--workspaces"]),
  bunx: wrapper(["-p", "--package"], 0, false, ["--bun", "--silent", "--no-install"]),
  // Programs that run the command after their options, as wrappers do, that systems ship without saying so loudly.
  logsave: wrapper([], 1, false, ["-a", "-s", "-v"]),
  choom: wrapper(["-n", "-p", "--adjust", "--pid"]),
  luit: wrapper(["-encoding", "-argv0", "-ilog", "-olog", "-alt", "-gl", "-gr", "-g0", "-g1", "-g2", "-g3"], 0, false, ["-v", "-c", "-x", "-p", "-k7", "-list"]),
  "fakeroot-tcp": wrapper(["-l", "-s", "-i", "-b", "--lib", "--faked"], 0, false, ["-u", "--unknown-is-real"]),
  "fakeroot-sysv": wrapper(["-l", "-s", "-i", "-b", "--lib", "--faked"], 0, false, ["-u", "--unknown-is-real"]),
  "valgrind.bin": wrapper([], 0, false, ["-q", "-v", "--quiet", "--verbose"]),
  memusage: wrapper(["-n", "-p", "-d", "-x", "-y", "-b", "--progname", "--png", "--data", "--x-size", "--y-size", "--buffer"], 0, false, ["-u", "-t", "-T", "-j", "--unbuffered", "--time-based", "--total", "--json"]),
  sotruss: wrapper(["-F", "-T", "-o", "--from", "--to", "--output"], 0, false, ["-f", "--follow"]),
  heaptrack: wrapper(["-o", "-p", "--output", "--pid", "--record-only"], 0, false, ["-d", "--debug", "--use-inject", "--raw"]),
  "dumb-init": wrapper(["-r", "--rewrite"], 0, false, ["-c", "--single-child", "-v", "--verbose"]),
  tini: wrapper(["-p", "-e"], 0, false, ["-s", "-v", "-vv", "-vvv", "-w", "-g", "-l"]),
  uvx: wrapper(["--from", "--with", "--python", "-p", "--with-requirements", "--index", "--index-url"], 0, false, ["-q", "--quiet", "-v", "--verbose", "--isolated", "--offline"]),
  "gpg-agent": wrapper(["--homedir", "--options"], 0, false, ["--daemon", "--server", "-v", "-q", "--verbose", "--quiet", "--sh", "--csh"]),
  "debconf-apt-progress": wrapper(["--from", "--to", "--logfile", "--logstderr"], 0, false, ["--start", "--stop", "--no-progress", "--dlwaypoint"]),
  pg_virtualenv: wrapper(["-c", "-i", "-o", "-s", "-t", "-v"], 0, false, ["-a", "-h"]),
  watchexec: wrapper(["-w", "--watch", "-e", "--exts", "-f", "--filter", "-i", "--ignore", "-d", "--debounce", "-s", "--signal", "--shell"], 0, false, ["-r", "--restart", "-c", "--clear", "-p", "--postpone", "-n"]),
}

/**
 * Programs whose subcommand runs the command named after it (`uv run rm x`), by program and subcommand. They are
 * read like a wrapper whose name is both words.
 */
export const SUBCOMMAND_WRAPPERS: Readonly<Record<string, Wrapper>> = {
  "uv run": wrapper(["--with", "--python", "-p", "--package", "--project", "--directory", "--env-file", "--extra", "--group", "--index", "--from"], 0, false, [
    "--no-sync", "--frozen", "--locked", "--isolated", "--no-project", "--all-extras", "-q", "-v", "--quiet",
  ]),
  "poetry run": wrapper(["-C", "--directory", "-P", "--project"], 0, false, ["-q", "-v", "-n", "--no-interaction"]),
  "rr record": wrapper(["-o", "--output-trace-dir", "-b", "--bind-to-cpu"], 0, false, ["-n", "--no-syscall-buffer", "-h", "--chaos"]),
  "pipenv run": wrapper(),
  "pdm run": wrapper(["-p", "--project"], 0, false, ["-v", "-q"]),
  "hatch run": wrapper(),
  "rye run": wrapper(),
  "conda run": wrapper(["-n", "-p", "--name", "--prefix", "--cwd"], 0, false, ["--no-capture-output", "--live-stream", "-v", "-s"]),
  "mamba run": wrapper(["-n", "-p", "--name", "--prefix", "--cwd"], 0, false, ["--no-capture-output", "--live-stream"]),
  "pixi run": wrapper(["-e", "--environment", "--manifest-path"], 0, false, ["--frozen", "--locked"]),
  "mise exec": wrapper(["-C", "--cd", "-j", "--jobs"], 0, false, ["-q", "-v"]),
  "mise x": wrapper(["-C", "--cd", "-j", "--jobs"], 0, false, ["-q", "-v"]),
  "rtx exec": wrapper(),
  "asdf exec": wrapper(),
  "direnv exec": wrapper([], 1),
  "bundle exec": wrapper(["--gemfile"], 0, false, ["--keep-file-descriptors"]),
  "pnpm exec": wrapper(["-C", "--dir", "--filter", "-F"], 0, false, ["-r", "--recursive", "--parallel", "--shell-mode", "-c"]),
  "yarn exec": wrapper(),
  // npm's and bun's runners run a package's program, or one on PATH where no package has it (`npx rm x` is rm).
  "npm exec": wrapper(["-p", "--package", "-w", "--workspace"], 0, false, ["-y", "--yes", "--no", "-q", "--quiet", "--ws", "--workspaces"]),
  "npm x": wrapper(["-p", "--package", "-w", "--workspace"], 0, false, ["-y", "--yes", "--no", "-q", "--quiet", "--ws", "--workspaces"]),
  "bun x": wrapper(["-p", "--package"], 0, false, ["--bun", "--silent", "--no-install"]),
  "pnpm dlx": wrapper(["--package"], 0, false, ["-s", "--silent"]),
  "yarn dlx": wrapper(["-p", "--package"], 0, false, ["-q", "--quiet"]),
  "perf stat": wrapper(["-e", "-o", "-r", "-x", "-C", "-p", "-t", "-G", "-I", "--event", "--output", "--repeat", "--pid"], 0, false, ["-a", "-A", "-d", "-n", "-v", "-B"]),
  "perf record": wrapper(["-e", "-o", "-F", "-c", "-C", "-p", "-t", "-g", "-m", "--event", "--output", "--call-graph", "--pid", "--freq", "--count"], 0, false, ["-a", "-g", "-q", "-v", "-s"]),
  "perf trace": wrapper(["-e", "-o", "-p", "-t", "--event", "--output", "--pid"], 0, false, ["-a", "-s", "-f", "-v"]),
  "git bisect run": wrapper(),
  "pipx run": wrapper(["--spec", "--python", "--index-url", "--pip-args"], 0, false, ["--no-cache", "--system-site-packages", "-q", "-v", "--quiet", "--verbose"]),
  "devbox run": wrapper(["-c", "--config", "-e", "--env", "--env-file"], 0, false, ["-q", "--quiet", "--pure"]),
  // cmake's command mode: `cmake -E env [--unset=NAME] [NAME=VALUE]... CMD`, `cmake -E time CMD`, `cmake -E chdir DIR CMD`.
  "cmake -E env": wrapper([], 0, true, ["--modify", "--unset"]),
  "cmake -E time": wrapper(),
  "cmake -E chdir": wrapper([], 1),
  "nix develop": wrapper([], 1),
  "nix shell": wrapper([], 1),
  "apptainer exec": wrapper(["-B", "--bind", "--home", "-W", "--workdir", "--env"], 1, false, ["-c", "-C", "-e", "--contain", "--cleanenv"]),
  "singularity exec": wrapper(["-B", "--bind", "--home", "-W", "--workdir", "--env"], 1, false, ["-c", "-C", "-e", "--contain", "--cleanenv"]),
  "toolbox run": wrapper(["-c", "--container", "-d", "--distro", "-r", "--release"]),
  "distrobox enter": wrapper(["-n", "--name", "-a", "--additional-flags"], 0, false, ["-T", "--no-tty", "-nw", "--no-workdir", "--clean-path"]),
}

/**
 * The dynamic loader by its names on Linux (`ld-linux-x86-64.so.2`, `ld-linux-aarch64.so.1`, `ld-linux.so.2`,
 * `ld64.so.2`, `ld.so`): run as a program, it runs the program named after its options (`ld.so /bin/rm x`).
 */
const LOADER = /^(?:ld(?:-linux(?:-[\w-]+)?)?\.so(?:\.\d+)?|ld64\.so\.\d+|ld-\d+(?:\.\d+)*\.so)$/
const LOADER_WRAPPER = wrapper(
  ["--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask"],
  0,
  false,
  ["--inhibit-cache", "--verify", "--list"],
)

/** The wrapper that `words` (a command with a literal name) is, with how many words name it, if any. */
export const wrapperOf = (
  words: ReadonlyArray<{ readonly value: string | undefined }>,
  name: string,
): { readonly wrapper: Wrapper; readonly length: number } | undefined => {
  if (Object.hasOwn(WRAPPERS, name)) return { wrapper: WRAPPERS[name]!, length: 1 }
  if (LOADER.test(name)) return { wrapper: LOADER_WRAPPER, length: 1 }
  for (const length of [3, 2]) {
    const key = [name, ...words.slice(1, length).map((word) => word.value)].join(" ")
    if (words.length >= length && Object.hasOwn(SUBCOMMAND_WRAPPERS, key)) return { wrapper: SUBCOMMAND_WRAPPERS[key]!, length }
  }
  return undefined
}

/** Where the command a wrapper runs starts among `words` (the wrapper first), if it names one. */
export const wrappedIndex = (
  words: ReadonlyArray<{ readonly value: string | undefined }>,
  wrapper: Wrapper,
  start = 1,
): number | undefined => wrappedIndexes(words, wrapper, start)[0]

/**
 * Every place the wrapped command may start: the first when each option is known, and also the word after an
 * unknown option's possible value (`nice --adjustment 5 rm x` runs `rm x`, not `5 rm x`).
 */
export const wrappedIndexes = (
  words: ReadonlyArray<{ readonly value: string | undefined }>,
  wrapper: Wrapper,
  start = 1,
): ReadonlyArray<number> => {
  let operands = wrapper.operands
  const found: Array<number> = []
  for (let index = start; index < words.length; index++) {
    const value = words[index]!.value
    if (value === undefined) return ordered([...found, index])
    if (value === "--") {
      // After `--` the next word (less the operands) is the command, whatever came before; but a lone `-` where the
      // wrapper reads it as an option (`env -- - cmd`).
      const after = index + 1 + operands + (wrapper.flags.includes("-") && words[index + 1]?.value === "-" ? 1 : 0)
      return ordered(after < words.length ? [...found, after] : found)
    }
    if (wrapper.valued.includes(value)) {
      index++
      continue
    }
    // Short options run together (`sudo -Eu root`): one that takes a value takes the rest of the word, or, last,
    // the next word, as getopt reads them.
    if (/^-[^-]{2,}/.test(value) && !wrapper.flags.includes(value)) {
      const at = [...value.slice(1)].findIndex((letter) => wrapper.valued.includes(`-${letter}`))
      if (at === value.length - 2) index++
      if (at >= 0) continue
    }
    // A lone `-` is an operand (the command `-`), but where a wrapper reads it as an option.
    if (value.startsWith("-") && (value !== "-" || wrapper.flags.includes(value))) {
      const unknown = !wrapper.flags.includes(value) && !value.includes("=") && (value.startsWith("--") || value.length === 2)
      if (unknown && operands === 0 && index + 2 < words.length) found.push(index + 2)
      continue
    }
    // env (and sudo) take any word holding `=` for an assignment, whatever its name (`BASH_FUNC_cat%%=() …`).
    if (wrapper.assignments && /^[^=]+=/.test(value)) continue
    if (operands > 0) {
      operands--
      continue
    }
    return ordered([...found, index])
  }
  return ordered(found)
}

const ordered = (indexes: ReadonlyArray<number>): ReadonlyArray<number> => [...new Set(indexes)].sort((a, b) => a - b)

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
