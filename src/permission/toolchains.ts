export * as Toolchains from "./toolchains"

// Where the user's own programs come from: the folders on their PATH (with the prefix a `bin` folder belongs to and
// the installs its links lead into), the toolchains' folders under the home (cargo's, rustup's, nvm's, pyenv's,
// go's...), the configuration developer tools read there (git's, pip's, cargo's), and what shells, editors and REPLs
// run as they start (RUNS). What is there runs outside any sandbox the next time the user types a command (`git`
// found first in `~/.local/bin`, a `.pth` file in a site-packages, a `rustc-wrapper` in `~/.cargo/config.toml`, a
// plugin in `~/.vim`), so it is code the user's own tools run unasked (DESIGN law 13): commands never change it
// (../shell/sandbox), and a file tool's change there is asked of a person each time (`change`). A PATH folder inside
// a project's Location (its `.venv/bin`, `node_modules/.bin`) is the project's own, as the rest of the Location is.
// Pure reading of the file system.

import { type Dirent, readdirSync, realpathSync } from "node:fs"
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path"
import { Git } from "./git"
import { Homes } from "./homes"

/**
 * The toolchains' folders and the configuration developer tools read under the home, relative to it: read by
 * commands (the credential files some of them hold are carved out, ./credentials), never changed by one (../shell
 * caches their writes elsewhere); a change by a file tool is the user's own to approve (`change`).
 */
export const HOME: ReadonlyArray<string> = [
  // git
  ".gitconfig",
  ".config/git",
  ".gitignore",
  ".gitignore_global",
  ".gitattributes",
  // editors and formatters that read a user-wide file
  ".editorconfig",
  // Rust
  ".cargo",
  ".rustup",
  // JavaScript
  ".bun",
  ".deno",
  ".npm",
  ".nvm",
  ".volta",
  ".yarn",
  ".local/share/pnpm",
  // Go
  "go",
  ".config/go",
  // Python
  ".config/pip",
  ".pip",
  ".pyenv",
  ".config/uv",
  ".local/share/uv",
  ".local/pipx",
  ".local/lib",
  // Ruby, Java
  ".rbenv",
  ".bundle",
  // Haskell (GHC's package environments, and ghci.conf, which the REPL runs), nix (overlays it evaluates), pnpm's
  // global rc (`script-shell`, `node-options`)
  ".ghc",
  ".config/ghc",
  ".stack",
  ".cabal",
  ".config/nixpkgs",
  ".nixpkgs",
  ".config/pnpm",
  ".sdkman",
  ".m2",
  ".gradle",
  // programs installed for the user (both on PATH once they exist, by the login files of Debian, Ubuntu and Fedora),
  // and caches
  "bin",
  ".local/bin",
  ".cache",
]

/**
 * What shells, editors, terminals and REPLs under the home run as they start, relative to it (the login files
 * themselves are secrets: ./credentials): not granted to commands at all, and a change by a file tool is the user's
 * own to approve (`change`).
 */
export const RUNS: ReadonlyArray<string> = [
  // shells: the folders their login files source, plugin managers, prompts, direnv's config and its list of
  // allowed .envrc files (an entry there runs a folder's .envrc on the user's next cd)
  ".bashrc.d",
  ".zshrc.d",
  ".oh-my-zsh",
  ".zinit",
  ".local/share/zinit",
  ".antigen",
  ".zplug",
  ".config/direnv",
  ".local/share/direnv",
  ".direnvrc",
  ".config/starship.toml",
  ".config/mise",
  ".config/husky",
  ".inputrc",
  ".tmux.conf",
  ".config/tmux",
  ".screenrc",
  // editors and their plugins
  ".vimrc",
  ".vim",
  ".config/nvim",
  ".local/share/nvim",
  ".emacs",
  ".emacs.d",
  ".config/emacs",
  ".vscode",
  ".cursor",
  ".config/Code/User/settings.json",
  ".config/Code/User/tasks.json",
  // REPLs, debuggers and clients that run a file of commands as they start
  ".ipython",
  ".jupyter",
  ".Rprofile",
  ".irbrc",
  ".pryrc",
  ".psqlrc",
  ".sqliterc",
  ".gdbinit",
  ".lldbinit",
  ".curlrc",
  ".wgetrc",
  ".mailcap",
  ".condarc",
  // desktop entries and the user's services
  ".local/share/applications",
  ".local/share/systemd",
  // found since: what less, vi, gdb, maven and node read or run as they start; more shells' files, terminals, X
  // sessions, editors' servers and version managers whose installs sit beside the shims on PATH
  ".lesskey",
  ".config/lesskey",
  ".exrc",
  ".gvimrc",
  ".config/vim",
  ".emacs.el",
  ".config/gdb",
  ".mavenrc",
  ".node_modules",
  ".node_libraries",
  ".bash_aliases",
  ".config/zsh",
  ".vscode-server",
  ".vscode-oss",
  ".cursor-server",
  ".config/VSCodium",
  ".config/Cursor/User",
  ".julia/config",
  ".ghci",
  ".erlang",
  ".iex.exs",
  ".ocamlinit",
  ".pdbrc",
  ".duckdbrc",
  ".wezterm.lua",
  ".config/wezterm",
  ".config/kitty",
  ".config/alacritty",
  ".config/ghostty",
  ".xinitrc",
  ".xsession",
  ".config/plasma-workspace",
  ".gem",
  "R",
  ".lein",
  ".sbt",
  ".antrc",
  ".huskyrc",
  ".asdf",
  // podman's and buildah's settings, which name the programs they run (`runtime`, `conmon_path`, `hooks_dir`)
  ".config/containers",
  // more shells' startup files, and what other version-control and developer tools run as they start: Mercurial's
  // `[hooks]` and `[extensions]`, Subversion's `diff-cmd`, gitk's Tcl, npm init's script, Vagrant's Ruby, Ansible's
  // plugins and collections, sbt's and ivy's jars, a JetBrains IDE's `.vmoptions` (`-javaagent:`), Jupyter's kernels
  ".config/nushell",
  ".config/powershell",
  ".config/xonsh",
  ".xonshrc",
  ".config/elvish",
  ".elvish",
  ".hgrc",
  ".config/hg",
  ".subversion",
  ".gitk",
  ".npm-init.js",
  ".vagrant.d",
  ".ansible.cfg",
  ".ansible",
  ".ivy2",
  ".config/JetBrains",
  ".local/share/jupyter",
  ".conda",
  // REPLs and programs that run a file of commands as they start
  ".perldb",
  ".octaverc",
  ".gnuplot",
  ".muttrc",
  ".mutt",
  // what a window manager or desktop runs as the session starts (`exec` lines, autostart scripts, extensions)
  ".config/i3",
  ".config/sway",
  ".config/hypr",
  ".config/openbox",
  ".config/awesome",
  ".config/bspwm",
  ".config/qtile",
  ".xmonad",
  ".xbindkeysrc",
  ".local/share/gnome-shell/extensions",
  // found since: what bash-completion sources, more shells' startup files, editors and Emacs frameworks, more
  // REPLs, more window managers' and desktops' startup files and key bindings, what D-Bus and file managers run on
  // demand (service files, thumbnailers, service menus, scripts), xdg-user-dirs' file (which programs source), and
  // programs with scripts of their own
  ".bash_completion",
  ".local/share/bash-completion",
  ".tcshrc",
  ".cshrc",
  ".kshrc",
  ".mkshrc",
  ".yashrc",
  ".config/kak",
  ".config/micro",
  ".config/vis",
  ".jedrc",
  ".spacemacs",
  ".spacemacs.d",
  ".doom.d",
  ".config/doom",
  ".config/sublime-text",
  ".atom",
  ".guile",
  ".sbclrc",
  ".tclshrc",
  ".re.pl",
  ".config/herbstluftwm",
  ".config/labwc",
  ".config/niri",
  ".config/river",
  ".config/wayfire.ini",
  ".fluxbox",
  ".icewm",
  ".config/lxsession",
  ".config/autostart-scripts",
  ".config/sxhkd",
  ".config/leftwm",
  ".config/spectrwm",
  ".dwm",
  ".config/xfce4",
  ".Xclients",
  ".xserverrc",
  ".local/share/dbus-1",
  ".local/share/thumbnailers",
  ".local/share/kio",
  ".local/share/nautilus",
  ".config/user-dirs.dirs",
  ".config/qutebrowser",
  ".config/mpv",
  ".config/lf",
  ".config/ranger",
]

/** How deep git's includes are followed (git itself stops at 10). */
const INCLUDES_MAX = 5

/**
 * The paths a command names, as `sh -c` runs it (git runs a config's commands so, and programs the environment's
 * `PAGER` or `PROMPT_COMMAND`): every word, quotes and backslashes undone, and each part of one after `=`, `:` or
 * `@` (`LESS=R /x`, `--require=/x.js`, `-javaagent:/a.jar`, `@/init.lua`), that is an absolute path once `~`,
 * `$HOME` and `${HOME}` are the home (`$HOME/../srv/x` is `/srv/x`); never `/` or the home itself. More than the
 * command runs, never less: a word that only looks like a path is kept too.
 */
export const commandPaths = (command: string, home: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let word = ""
  let quote: string | undefined
  const end = () => {
    if (word !== "") words.push(word)
    word = ""
  }
  for (let at = 0; at < command.length; at++) {
    const char = command[at]!
    if (quote === "'") {
      if (char === "'") quote = undefined
      else word += char
    } else if (quote === '"') {
      if (char === '"') quote = undefined
      else word += char === "\\" && at + 1 < command.length ? command[++at] : char
    } else if (char === "'" || char === '"') quote = char
    else if (char === "\\" && at + 1 < command.length) word += command[++at]
    else if (char === "$" && command[at + 1] === "{") {
      // `${NAME}` whole: its braces are no group's.
      const close = command.indexOf("}", at)
      word += close === -1 ? command.slice(at) : command.slice(at, close + 1)
      at = close === -1 ? command.length : close
    } else if (/[\s;|&()<>`{}!]/.test(char)) end()
    else word += char
  }
  end()
  const found: Array<string> = []
  for (const whole of words) {
    for (const part of [whole, ...whole.split(/[=:@]/).slice(1)]) {
      const expanded = part.replace(/^~(?=\/|$)/, home).replaceAll(/\$\{HOME\}|\$HOME(?![A-Za-z0-9_])/g, home)
      if (!expanded.startsWith("/")) continue
      const path = resolve(expanded)
      if (path !== "/" && path !== home && !found.includes(path)) found.push(path)
    }
  }
  return found
}

/**
 * The files the git configs `configs` (the user's: `~/.gitconfig`, `~/.config/git/config`) name for git to read
 * or run: `core.excludesFile`, `core.attributesFile`,
 * `core.hooksPath`, `init.templateDir`, the program a command key runs by its path (Git.runsCommand: `core.pager =
 * ~/bin/pager.sh`, `diff.external`, a filter's `clean`...), and the files `[include]` and `[includeIf]` sections
 * pull in (git gives up on a config whose include it may not read), followed through their own includes; under the
 * home or elsewhere. A relative path is taken against the including file's directory, as git does. `/` and the home
 * itself are never one (a config naming them names no file of its own). A secret among them stays carved out
 * (./credentials): git then fails rather than leak it.
 */
const gitFiles = (
  home: string,
  configs: ReadonlyArray<string> = [join(home, ".gitconfig"), join(home, ".config/git/config")],
  entries: ReadonlyArray<Git.ConfigEntry> = [],
): ReadonlyArray<string> => {
  const found: Array<string> = []
  const add = (path: string) => {
    if (path !== "/" && path !== home && !found.includes(path)) found.push(path)
  }
  const take = (entry: Git.ConfigEntry, base: string, depth: number): void => {
    const { section, key, value } = entry
    const named =
      (section === "core" && (key === "excludesfile" || key === "attributesfile" || key === "hookspath")) ||
      (section === "init" && key === "templatedir") ||
      ((section === "include" || section === "includeif") && key === "path")
    if (named) {
      if (value.trim() === "") return
      const path = expand(value.trim(), home, base)
      add(path)
      if (key === "path" && depth < INCLUDES_MAX) visit(path, depth + 1)
      return
    }
    if (!Git.runsCommand(section, key, value)) return
    for (const path of commandPaths(value, home)) add(path)
  }
  const visit = (file: string, depth: number): void => {
    // Read without waiting: an included file may lie where a command can leave a FIFO.
    const text = Git.read(file)
    if (text !== undefined) for (const entry of Git.configEntries(text)) take(entry, dirname(file), depth)
  }
  for (const config of configs) visit(config, 0)
  // Entries given another way (GIT_CONFIG_COUNT's), relative paths against the home.
  for (const entry of entries) take(entry, home, 0)
  return found
}

/**
 * What developer tools read under `home`: HOME and the files the user's git config names there (gitFiles; those
 * elsewhere are read as the system's are, or not at all).
 */
export const readable = (home: string): ReadonlyArray<string> => [
  ...HOME.map((path) => join(home, path)),
  ...gitFiles(home).filter((path) => within(home, path)),
]

/** Every place under `home` where the user's toolchains, shells and editors find what they run: HOME, RUNS, gitFiles. */
const homePlaces = (home: string): ReadonlyArray<string> => [
  ...HOME.map((path) => join(home, path)),
  ...gitFiles(home),
  ...RUNS.map((place) => join(home, place)),
]

/**
 * Variables of the user's environment that name a file their shells, interpreters or tools run or read as they
 * start (`BASH_ENV`: every non-interactive bash sources it; `PYTHONSTARTUP`; `GIT_CONFIG_GLOBAL` and
 * `GIT_CONFIG_SYSTEM`, git's config in place of `~/.gitconfig` and `/etc/gitconfig`; an `.npmrc` whose
 * `node-options` runs code; R's and irb's profiles).
 */
const ENV_FILES = [
  "BASH_ENV",
  "ENV",
  "PYTHONSTARTUP",
  "INPUTRC",
  "MYVIMRC",
  "GIT_CONFIG_GLOBAL",
  "GIT_CONFIG_SYSTEM",
  "NPM_CONFIG_USERCONFIG",
  "NPM_CONFIG_GLOBALCONFIG",
  "PIP_CONFIG_FILE",
  "WGETRC",
  "LESSKEY",
  "LESSKEYIN",
  "IRBRC",
  "R_PROFILE",
  "R_PROFILE_USER",
  "R_ENVIRON",
  "R_ENVIRON_USER",
  "SCREENRC",
]

/**
 * Variables that move a toolchain's folder (or a shell's) from where HOME and RUNS expect it: `CARGO_HOME`, whose
 * `config.toml` may name a `rustc-wrapper`; `ZDOTDIR`, where zsh reads `.zshrc`; an npm prefix, whose `bin` and
 * `lib/node_modules` npm's global installs fill; `GIT_EXEC_PATH`, where git finds its own commands.
 */
const ENV_FOLDERS = [
  "ZDOTDIR",
  "CARGO_HOME",
  "RUSTUP_HOME",
  "NVM_DIR",
  "PYENV_ROOT",
  "RBENV_ROOT",
  "SDKMAN_DIR",
  "VOLTA_HOME",
  "BUN_INSTALL",
  "DENO_INSTALL",
  "PNPM_HOME",
  "GEM_HOME",
  "GOBIN",
  "GOROOT",
  "PIPX_HOME",
  "PIPX_BIN_DIR",
  "POETRY_HOME",
  "PYTHONUSERBASE",
  "PYTHONHOME",
  "NPM_CONFIG_PREFIX",
  "npm_config_prefix",
  "DOTNET_ROOT",
  "ASDF_DIR",
  "ASDF_DATA_DIR",
  "MISE_DATA_DIR",
  "CURL_HOME",
  "GIT_EXEC_PATH",
  "GIT_TEMPLATE_DIR",
]

/** Variables holding a list of folders (`:` between them) that interpreters load code from, or a linker libraries. */
const ENV_LISTS = [
  "GOPATH",
  "PYTHONPATH",
  "NODE_PATH",
  "PERL5LIB",
  "PERLLIB",
  "RUBYLIB",
  "GEM_PATH",
  "LD_LIBRARY_PATH",
  "JULIA_DEPOT_PATH",
  "JULIA_LOAD_PATH",
  "CLASSPATH",
  "R_LIBS",
  "R_LIBS_USER",
]

/**
 * Variables whose value is a command a program runs (`PAGER`, `EDITOR`, `GIT_SSH_COMMAND`, `LESSOPEN`, bash's
 * `PROMPT_COMMAND`, cargo's `RUSTC_WRAPPER`), or the options an interpreter or the loader takes at every start
 * (`NODE_OPTIONS=--require /x.js`, `JAVA_TOOL_OPTIONS=-javaagent:/a.jar`, `LD_PRELOAD`): the paths in them
 * (commandPaths) are code run unasked.
 */
const ENV_COMMANDS = [
  "PAGER",
  "GIT_PAGER",
  "MANPAGER",
  "EDITOR",
  "VISUAL",
  "GIT_EDITOR",
  "GIT_SEQUENCE_EDITOR",
  "SUDO_ASKPASS",
  "SSH_ASKPASS",
  "GIT_ASKPASS",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_EXTERNAL_DIFF",
  "GIT_PROXY_COMMAND",
  "LESSOPEN",
  "LESSCLOSE",
  "BROWSER",
  "PROMPT_COMMAND",
  "RUSTC_WRAPPER",
  "RUSTC_WORKSPACE_WRAPPER",
  "CARGO_BUILD_RUSTC_WRAPPER",
  "RUSTC",
  "CC",
  "CXX",
  "LUA_INIT",
  "PERL5DB",
  "VIMINIT",
  "EXINIT",
  "NODE_OPTIONS",
  "PERL5OPT",
  "RUBYOPT",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "GOFLAGS",
  "LD_PRELOAD",
  "LD_AUDIT",
]

/**
 * Where `path` really is, or, where it does not exist (yet), where it would be: the real path of its nearest
 * existing folder, with the rest of it after (a `BASH_ENV` not made yet, under a folder reached through a link).
 */
const reallyNearest = (path: string): string => {
  let missing = ""
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), missing)
    } catch {
      if (at === dirname(at)) return path
      missing = join(basename(at), missing)
    }
  }
}

/**
 * Where the user's environment (`env`, core's own, which its commands and the user's shell share) moves or adds
 * places their programs come from: ENV_FILES, ENV_FOLDERS, each folder of ENV_LISTS, the paths ENV_COMMANDS' values
 * name, the files and folders HOME and RUNS name under `~/.config` and `~/.local/share` where `XDG_CONFIG_HOME` and
 * `XDG_DATA_HOME` put them instead, and what the git configs `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM`,
 * `XDG_CONFIG_HOME` and `GIT_CONFIG_COUNT`'s entries name. Absolute paths only (a relative one is relative to
 * wherever a program runs); never `/` or the home itself.
 */
export const environmentPlaces = (env: Readonly<Record<string, string | undefined>>, home: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const add = (value: string | undefined) => {
    const path = value?.trim()
    if (path === undefined || !path.startsWith("/")) return
    const resolved = resolve(path)
    if (resolved !== "/" && resolved !== home && !found.includes(resolved)) found.push(resolved)
  }
  for (const name of [...ENV_FILES, ...ENV_FOLDERS]) add(env[name])
  for (const name of ENV_LISTS) for (const entry of (env[name] ?? "").split(":")) add(entry)
  for (const name of ENV_COMMANDS) for (const path of commandPaths(env[name] ?? "", home)) add(path)
  const moved = (variable: string, under: string) => {
    const to = env[variable]?.trim()
    if (to === undefined || !to.startsWith("/") || resolve(to) === join(home, under)) return
    for (const place of [...HOME, ...RUNS]) if (place.startsWith(`${under}/`)) add(join(to, place.slice(under.length + 1)))
  }
  moved("XDG_CONFIG_HOME", ".config")
  moved("XDG_DATA_HOME", ".local/share")
  const configs = [env.GIT_CONFIG_GLOBAL, env.GIT_CONFIG_SYSTEM, env.XDG_CONFIG_HOME === undefined ? undefined : join(env.XDG_CONFIG_HOME, "git/config")]
  // `git -c` as the environment gives it: GIT_CONFIG_KEY_0=core.pager, GIT_CONFIG_VALUE_0=/x.
  const count = Math.min(Number(env.GIT_CONFIG_COUNT ?? 0) || 0, 1_000)
  const given: Array<Git.ConfigEntry> = []
  for (let index = 0; index < count; index++) {
    const name = env[`GIT_CONFIG_KEY_${index}`]?.toLowerCase() ?? ""
    const first = name.indexOf(".")
    const last = name.lastIndexOf(".")
    if (first <= 0 || last === name.length - 1) continue
    given.push({ section: name.slice(0, first), key: name.slice(last + 1), value: env[`GIT_CONFIG_VALUE_${index}`] ?? "" })
  }
  const files = gitFiles(home, configs.filter((config): config is string => config?.startsWith("/") === true), given)
  for (const path of files) add(path)
  return found
}

/** `~` and `~/x` against the home, a relative path against `from`, an absolute one as it is. */
const expand = (path: string, home: string, from: string): string =>
  path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : isAbsolute(path) ? resolve(path) : resolve(from, path)

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** Where `path` really is, or the path itself when it does not exist (yet). */
const really = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/**
 * The user's PATH folders: its absolute entries and those starting with `~/` (bash expands them as it searches), as
 * given and where each really is.
 */
export const pathFolders = (home: string, path: string | undefined): ReadonlyArray<string> => {
  const entries = (path ?? "").split(":").flatMap((entry) =>
    entry.startsWith("/") ? [entry] : entry === "~" ? [home] : entry.startsWith("~/") ? [join(home, entry.slice(2))] : [],
  )
  return [...new Set(entries.flatMap((entry) => [resolve(entry), really(entry)]))]
}

/**
 * What the system runs for every user, as root too: its configuration (cron, login files, services, `ld.so.preload`,
 * apt's hooks), its boot files, its programs and libraries, the users' crontabs, and the kernel's own files, whose
 * writes take effect at once (`/proc/sys/kernel/core_pattern` or `modprobe` name a program the kernel runs as root,
 * `/sys/kernel/uevent_helper` too; a process's `/proc/<pid>/` entries change it). A change here is a person's, where
 * core may make one at all (run by root).
 */
export const SYSTEM_PLACES: ReadonlyArray<string> = [
  "/etc",
  "/proc",
  "/sys",
  "/boot",
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/var/spool/cron",
  "/var/spool/at",
  // the package managers' own scripts, run as root at the next install or upgrade, and apt's package lists and
  // downloads, which it trusts once fetched (a list's checksum and a .deb beside it are installed as root)
  "/var/lib/dpkg",
  "/var/lib/rpm",
  "/var/lib/apt",
  "/var/cache/apt",
  // polkit's local authority, which grants root's actions to users
  "/var/lib/polkit-1",
  // what systemd, udev and kmod read from /run as they do from /etc: units and their drop-ins (`ExecStartPre=`), udev
  // rules (`RUN+=`), modprobe's `install` commands, tmpfiles, sysctl and binfmt entries, all run or applied as root
  "/run/systemd",
  "/run/udev",
  "/run/modprobe.d",
  "/run/modules-load.d",
  "/run/tmpfiles.d",
  "/run/sysctl.d",
  "/run/binfmt.d",
]

/**
 * Where a program installed as a symlink lives: the package holding its target (the directory under the nearest
 * `node_modules`, as npm and nvm link their bins), else the directory above a `bin/` holding it (a venv, a
 * toolchain's own tree), else the target's directory.
 */
export const installOf = (target: string): string => {
  const parts = target.split(sep)
  const modules = parts.lastIndexOf("node_modules")
  if (modules !== -1 && modules + 1 < parts.length - 1) {
    const scoped = parts[modules + 1]!.startsWith("@") ? 2 : 1
    return parts.slice(0, modules + 1 + scoped).join(sep)
  }
  const directory = dirname(target)
  return basename(directory) === "bin" ? dirname(directory) : directory
}

/**
 * What the PATH folders' programs are made of, besides the folders: the prefix a `bin` or `sbin` folder belongs to
 * (`~/miniconda3` of `~/miniconda3/bin`, whose site-packages every `python3` there imports; never the home or `/`),
 * and the installs their links lead into (installOf: `~/.local/share/dev-tool` of `~/.local/bin/dev-tool`,
 * `/opt/app` of `/usr/local/bin/app`), but where the system's places hold them already.
 */
const madeOf = (home: string, folders: ReadonlyArray<string>): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const folder of folders) {
    const name = basename(folder)
    const prefix = dirname(folder)
    if ((name === "bin" || name === "sbin") && prefix !== home && prefix !== "/") found.push(prefix, really(prefix))
    // The system's own folders hold what its packages link (thousands of links, a look-up each): not looked into, but
    // /usr/local, where a person links what they install by hand.
    if (SYSTEM_PLACES.some((place) => within(place, folder)) && !within("/usr/local", folder)) continue
    for (const target of linkTargets(folder)) {
      const install = installOf(target)
      const system = SYSTEM_PLACES.some((place) => within(place, install))
      if (!within(folder, target) && !system && install !== home && install !== "/") found.push(install)
    }
  }
  return found
}

/** Where each symbolic link in `folder` really leads (a dangling one runs nothing); none when it cannot be listed. */
export const linkTargets = (folder: string): ReadonlyArray<string> => {
  let entries: Array<Dirent>
  try {
    // The entries' types come with the listing: only links cost a look-up.
    entries = readdirSync(folder, { withFileTypes: true })
  } catch {
    return []
  }
  const targets: Array<string> = []
  for (const entry of entries) {
    if (!entry.isSymbolicLink()) continue
    try {
      targets.push(realpathSync(join(folder, entry.name)))
    } catch {
      // Dangling.
    }
  }
  return targets
}

/** How long the places worked out for one home and PATH are reused: each is a few dozen lookups on the disk. */
const PLACES_MS = 2_000

export interface Places {
  readonly key: string
  readonly at: number
  /** Whether a Location holds any of the places (holdsAny), by Location. */
  readonly holding: Map<string, boolean>
  /** The PATH folders, their prefixes and the installs their links lead into, as given and where each really is. */
  readonly programs: ReadonlyArray<string>
  /**
   * What the user's environment names (environmentPlaces), as given and where each really is; like a PATH folder,
   * one inside a project's Location is the project's own.
   */
  readonly environment: ReadonlyArray<string>
  /**
   * The home's toolchain places, git's files and what starts with the user's tools (HOME, RUNS, gitFiles), as
   * given and where each really is.
   */
  readonly home: ReadonlyArray<string>
  /**
   * For a core run by root: the same places in the homes of the system's other users (../permission/homes), which
   * root may write as well. Empty otherwise.
   */
  readonly others: ReadonlyArray<string>
}

let cached: Places | undefined

/** The places where the user's programs come from, for `home` and the PATH `path` (reused for PLACES_MS). */
export const placesOf = (home: string, path: string | undefined): Places => {
  const key = `${home}\0${path ?? ""}`
  const now = performance.now()
  if (cached !== undefined && cached.key === key && now - cached.at < PLACES_MS) return cached
  const folders = pathFolders(home, path)
  const places = homePlaces(home)
  // Kept as PATH folders are: one inside a project's Location (a PYTHONPATH of its `src`) is the project's own.
  const moved = environmentPlaces(process.env, home)
  cached = {
    key,
    at: now,
    holding: new Map(),
    programs: [...new Set([...folders, ...madeOf(home, folders)])],
    environment: [...new Set([...moved, ...moved.map(reallyNearest)])],
    home: [...new Set([...places, ...places.map(really)])],
    others: process.getuid?.() === 0 ? Homes.others(really(home)).flatMap(othersIn) : [],
  }
  return cached
}

/**
 * homePlaces of another user's home, as given and where each really is: looked up only where the home has the
 * entry each starts with (one listing of the home, rather than a look-up of every place in every home).
 */
const othersIn = (home: string): ReadonlyArray<string> => {
  let entries: ReadonlySet<string>
  try {
    entries = new Set(readdirSync(home))
  } catch {
    entries = new Set()
  }
  return homePlaces(home).flatMap((place) => {
    const first = place.slice(home.length + 1).split(sep)[0]
    const real = first !== undefined && entries.has(first) ? really(place) : place
    return real === place ? [place] : [place, real]
  })
}

/**
 * Whether any place of `places` (but a project's own PATH folders), or of the system's, lies in `location`
 * (remembered with the places).
 */
const holdsAny = (places: Places, home: string, location: string): boolean => {
  let holds = places.holding.get(location)
  if (holds === undefined) {
    holds =
      [...places.home, ...places.others, ...SYSTEM_PLACES].some((place) => within(location, place)) ||
      [...places.programs, ...places.environment].some((folder) => within(location, folder) && !projectOwn(places, home, location, folder))
    places.holding.set(location, holds)
  }
  return holds
}

/**
 * Whether the PATH folder (or what it is made of) `folder` is a project's own, inside the Location `location`: a
 * project's `.venv/bin` is, also in a Location under `~/go`; but not where the Location is the home or holds it,
 * nor one in a toolchain's folder of the home that the Location is not strictly inside (`~/go/bin` of a Location
 * `~/go`).
 */
const projectOwn = (places: Places, home: string, location: string, folder: string): boolean =>
  within(location, folder) &&
  !within(location, home) &&
  !places.home.some((place) => within(place, folder) && !(place !== location && within(place, location)))

/**
 * Every place where the user's programs come from (placesOf) that a command in `location` must not change: all but
 * a project's own PATH folders (and what they are made of) inside it. As given and where each really is; some may
 * not exist.
 */
export const unchangeable = (
  home: string,
  path: string | undefined,
  location: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ReadonlyArray<string> => {
  const places = placesOf(home, path)
  return [
    ...namedBeyondPath(home, path, location, env),
    ...places.programs.filter((folder) => !projectOwn(places, home, location, folder)),
    ...SYSTEM_PLACES,
  ]
}

/** What `env` names (environmentPlaces): core's own as placesOf found it, or a command's, looked up now. */
const environmentOf = (places: Places, home: string, env: Readonly<Record<string, string | undefined>>): ReadonlyArray<string> => {
  if (env === process.env) return places.environment
  const named = environmentPlaces(env, home)
  return [...new Set([...places.environment, ...named, ...named.map(reallyNearest)])]
}

/**
 * Of `unchangeable`, what no PATH names: the home's places, git's files and what the environment names (a
 * `BASH_ENV` kept in the temp directory), which stay unchanged inside the temp directory too, where a PATH entry
 * (npm's `X/node_modules/.bin` for every folder X above where it runs) is not kept.
 */
export const namedBeyondPath = (
  home: string,
  path: string | undefined,
  location: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ReadonlyArray<string> => {
  const places = placesOf(home, path)
  return [...places.home, ...environmentOf(places, home, env).filter((folder) => !projectOwn(places, home, location, folder)), ...places.others]
}

/**
 * What a change to `real` (a real path, reached as `requested`) would plant among the user's programs, or
 * undefined: a file in a PATH folder, its prefix or an install its links lead into (a project's own aside), or in a
 * toolchain's folder or configuration under `home`, or what starts with the user's tools (HOME, RUNS, and the
 * files the user's git config names), or (run by root) the same in another user's home, unless both the path and
 * the Location lie in that folder (a Location under
 * `~/go` holds the project's own files), or core.json grants it for writing (`granted`: shell.allowWrite, a
 * person's, by the path it names). `path` is the PATH the user's commands get.
 */
export const change = (
  home: string,
  real: string,
  requested: string,
  location: string,
  path: string | undefined,
  granted: ReadonlyArray<string> = [],
): string | undefined => {
  if (granted.some((grant) => within(grant, real))) return undefined
  const places = placesOf(home, path)
  // Most changes are a project's files: inside a Location holding none of these places, none is at stake.
  if (within(location, real) && within(location, requested) && !holdsAny(places, home, location)) return undefined
  // Where both the path and the Location lie in a folder, the path is the project's own.
  const own = (folder: string) => within(folder, location) && within(location, real)
  const at = (place: string) => within(place, real) || within(place, requested)
  const program = places.programs.find((folder) => at(folder) && !projectOwn(places, home, location, folder) && !own(folder))
  if (program !== undefined) {
    return `${real}, in ${program}, where programs on the user's PATH come from: what is there runs outside any sandbox whenever the user types a command`
  }
  const named = places.environment.find((place) => at(place) && !projectOwn(places, home, location, place) && !own(place))
  if (named !== undefined) {
    return `${real}, in ${named}, which the user's environment names as what their shells, interpreters or tools run or load as they start`
  }
  const place = places.home.find((place) => at(place) && !own(place))
  if (place !== undefined) {
    return `${real}, in ${place}, where the user's own toolchains, shells and editors find programs and settings they run outside any sandbox`
  }
  const other = places.others.find((place) => at(place) && !own(place))
  if (other !== undefined) {
    return `${real}, in ${other}, where another user's toolchains, shells and editors find programs and settings they run outside any sandbox`
  }
  const system = SYSTEM_PLACES.find((place) => at(place) && !own(place))
  if (system === undefined) return undefined
  return system === "/proc" || system === "/sys"
    ? `${real}, in ${system}, the kernel's own files: a write there changes the running system at once (some name programs the kernel runs as root)`
    : `${real}, in ${system}, which the system runs or reads for every user (its programs, services and login)`
}
