// A home like a developer's, for tests that run the product as a user would: git's config, toolchains on PATH
// (with the data their programs read) and every secret the sandbox must keep out (credential stores, histories,
// browser profiles), each holding a marker a test can look for anywhere in what comes back. Made fresh in a temp
// directory, never the real home.

import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { tempDir } from "./temp"

export interface DeveloperHome {
  readonly home: string
  /** HOME, and PATH with the toolchain directories first, then the real PATH. */
  readonly env: { readonly HOME: string; readonly PATH: string }
  /** Every credential store, by its path under the home, with the marker secret it holds. */
  readonly secrets: ReadonlyArray<{ readonly path: string; readonly marker: string }>
  /** The toolchain programs on PATH, by name, with what each prints when it runs. */
  readonly programs: Readonly<Record<string, string>>
}

/** The credential stores, as paths under the home (a trailing file name for those that are directories). */
const STORES = [
  ".ssh/id_ed25519",
  ".aws/credentials",
  ".config/gcloud/application_default_credentials.json",
  ".azure/msal_token_cache.json",
  ".netrc",
  ".git-credentials",
  ".docker/config.json",
  ".kube/config",
  ".npmrc",
  ".pypirc",
  ".cargo/credentials.toml",
  ".config/gh/hosts.yml",
  ".gnupg/private-keys-v1.d/key.key",
  ".local/share/keyrings/login.keyring",
  ".password-store/github.gpg",
  ".m2/settings.xml",
  ".gradle/gradle.properties",
  ".s3cfg",
  ".terraform.d/credentials.tfrc.json",
  ".bash_history",
  ".zsh_history",
  ".mozilla/firefox/default/logins.json",
  ".config/google-chrome/Default/Cookies",
  ".cache/mozilla/firefox/default/cache2/entry",
  ".config/Code/User/globalStorage/state.vscdb",
  ".bunfig.toml",
  ".cache/huggingface/stored_tokens",
  ".local/share/uv/credentials/credentials.toml",
  ".config/pip/pip.conf",
  ".nvm/versions/node/v22.11.0/etc/npmrc",
  ".cargo/env",
  ".config/containers/auth.json",
  ".gemini/oauth_creds.json",
  ".local/share/opencode/auth.json",
  ".config/github-copilot/apps.json",
  ".kaggle/kaggle.json",
  ".subversion/auth/svn.simple/5f1e0c2b",
  ".postgresql/postgresql.key",
  ".authinfo",
  ".mc/config.json",
  // Found since: keys, tokens and histories at names of their own, and a browser installed by snap.
  ".config/age/keys.txt",
  ".huggingface/token",
  ".config/pnpm/rc",
  ".histfile",
  ".local/state/zsh/history",
  ".msmtprc",
  "snap/firefox/common/.mozilla/firefox/default/logins.json",
  // The user's everyday core, where the core under test runs with directories of its own (CORE_HOME, CORE_DATA_DIR):
  // a file of its application tools' folder, and another session's managed output.
  ".config/core/tools/notes.txt",
  ".local/share/core/outputs/0123456789abcdef/0123456789abcdef/out_m0000000_0123456789abcdef",
] as const

/** The bin directories put first on PATH, each with one program. */
const BINS = [".cargo/bin", ".bun/bin", ".deno/bin", "go/bin", ".local/bin"] as const

const put = (path: string, text: string, mode?: number): void => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
  if (mode !== undefined) chmodSync(path, mode)
}

/**
 * A fresh developer-like home (see the module header); `realPath` is what follows the toolchains on PATH. Made in
 * `parent` when given (the caller removes it), else in a temp directory removed with the test file.
 */
export const developerHome = (realPath = process.env.PATH ?? "/usr/bin:/bin", parent?: string): DeveloperHome => {
  const home = parent === undefined ? tempDir("core-devhome-") : mkdtempSync(join(parent, "core-devhome-"))
  const token = Math.random().toString(36).slice(2, 10)
  const secrets = STORES.map((path) => ({ path, marker: `CORE-SECRET-${path.replace(/[^a-z]/gi, "")}-${token}` }))
  for (const { path, marker } of secrets) {
    const text =
      path === ".npmrc"
        ? `//registry.npmjs.org/:_authToken=${marker}\n`
        : path === ".cargo/credentials.toml"
          ? `[registry]\ntoken = "${marker}"\n`
          : `${marker}\n`
    put(join(home, path), text, 0o600)
  }
  put(join(home, ".ssh/id_ed25519.pub"), "ssh-ed25519 AAAA public\n")

  put(
    join(home, ".gitconfig"),
    "[user]\n\tname = Dev Eloper\n\temail = dev@example.com\n[core]\n\texcludesFile = ~/.config/git/ignore\n[init]\n\tdefaultBranch = main\n",
  )
  put(join(home, ".config/git/config"), "[color]\n\tui = false\n")
  put(join(home, ".config/git/ignore"), "*.swp\n")

  // Toolchain data a program reads: rustc-like (a toolchain under ~/.rustup), and the others' own config.
  put(join(home, ".rustup/toolchains/stable/lib/version"), "rust-stable\n")
  put(join(home, ".cargo/config.toml"), "[build]\njobs = 2\n")
  put(join(home, ".npm/_cacache/index-v5/entry"), "cached\n")
  put(join(home, ".cache/tool/data"), "cached\n")
  put(join(home, "go/pkg/mod/cache/download/list"), "module\n")

  const programs: Record<string, string> = {}
  const program = (bin: string, name: string, body: string, prints: string) => {
    put(join(home, bin, name), `#!/bin/sh\n${body}\n`, 0o755)
    programs[name] = prints
  }
  program(".cargo/bin", "rustc-dev", 'cat "$HOME/.rustup/toolchains/stable/lib/version"', "rust-stable")
  program(".bun/bin", "bun-dev", "echo bun-dev", "bun-dev")
  program(".deno/bin", "deno-dev", "echo deno-dev", "deno-dev")
  program("go/bin", "go-dev", "echo go-dev", "go-dev")
  // Installed as npm and pipx do: a link in ~/.local/bin to a program inside its own install, which it reads.
  const install = join(home, ".local/share/dev-tool")
  put(join(install, "lib/message"), "dev-tool\n")
  put(join(install, "bin/dev-tool"), `#!/bin/sh\ncat "${install}/lib/message"\n`, 0o755)
  mkdirSync(join(home, ".local/bin"), { recursive: true })
  symlinkSync(join(install, "bin/dev-tool"), join(home, ".local/bin/dev-tool"))
  programs["dev-tool"] = "dev-tool"

  const path = [...BINS.map((bin) => join(home, bin)), realPath].join(":")
  return { home, env: { HOME: home, PATH: path }, secrets, programs }
}
