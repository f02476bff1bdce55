export * as Credentials from "./credentials"

// The user's secrets under the home (credential stores, login files, histories, browser profiles), which no tool
// and no command reads or changes unless the user's core.json grants that very path (shell.allowRead,
// shell.allowWrite): the command sandbox carves them out of every grant (../shell/home), and the file tools refuse
// them (./permission). A list of places only; nothing here touches the disk.

import { join, resolve, sep } from "node:path"

/**
 * The files a shell runs as it starts or ends (bash's and zsh's, relative to the home): login files, among the
 * secrets (STORES): a change would run outside any sandbox.
 */
export const STARTUP: ReadonlyArray<string> = [
  ".bashrc",
  ".bash_profile",
  ".bash_login",
  ".bash_logout",
  ".profile",
  ".zshrc",
  ".zshenv",
  ".zprofile",
  ".zlogin",
  ".zlogout",
]

/**
 * Secrets under the home, relative to it. The rest of the home is not granted to commands at all; this list is what
 * stays out wherever something else is (a toolchain root, a Location or approved directory holding the home, a
 * core.json grant of a directory holding one), and what the file tools refuse.
 */
export const STORES: ReadonlyArray<string> = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".config/gcloud",
  ".kube",
  ".docker",
  ".netrc",
  ".git-credentials",
  ".config/git/credentials",
  ".config/gh",
  ".config/hub",
  ".config/glab-cli",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pypirc",
  ".config/pypoetry/auth.toml",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".gem/credentials",
  ".m2/settings.xml",
  ".m2/settings-security.xml",
  ".gradle/gradle.properties",
  ".terraform.d/credentials.tfrc.json",
  ".vault-token",
  ".pgpass",
  ".my.cnf",
  ".cache/huggingface/token",
  ".cache/huggingface/stored_tokens",
  // bun's and pip's user-wide settings (registry and index logins), uv's credential store
  ".bunfig.toml",
  ".pip/pip.conf",
  ".config/pip/pip.conf",
  ".local/share/uv/credentials",
  ".local/share/keyrings",
  ".password-store",
  ".config/op",
  ".claude/.credentials.json",
  ".codex/auth.json",
  // other agents' and assistants' sign-ins: Gemini CLI, OpenCode's provider keys, GitHub Copilot's tokens
  ".gemini/oauth_creds.json",
  ".gemini/google_accounts.json",
  ".local/share/opencode/auth.json",
  ".config/github-copilot",
  // cloud, hosting and registry CLIs
  ".oci",
  ".ovh.conf",
  ".s3cfg",
  ".boto",
  ".terraformrc",
  ".config/helm",
  ".config/doctl",
  ".config/hcloud",
  ".config/rclone",
  ".config/configstore",
  ".config/stripe",
  ".config/netlify",
  ".config/sops",
  ".databrickscfg",
  ".heroku",
  ".fly",
  ".wrangler",
  ".netlify",
  ".vercel",
  ".supabase",
  ".cloudflared",
  // podman's, buildah's and skopeo's registry logins (containers-auth.json(5)), and more CLIs' tokens and keys
  ".config/containers/auth.json",
  ".kaggle",
  ".pulumi/credentials.json",
  ".config/ngrok",
  ".ngrok2",
  ".minikube",
  ".dbt/profiles.yml",
  // Subversion's saved logins (passwords in plain text where no keyring holds them)
  ".subversion/auth",
  ".nuget/NuGet/NuGet.Config",
  ".composer/auth.json",
  ".config/composer/auth.json",
  ".env",
  // password managers
  ".config/1Password",
  ".config/Bitwarden",
  ".config/keepassxc",
  // what the user's shell, session and desktop run at login (often exporting tokens too): a change would run
  // outside any sandbox
  ...STARTUP,
  ".config/fish",
  ".pam_environment",
  ".xprofile",
  ".xsessionrc",
  ".config/environment.d",
  ".config/autostart",
  ".config/systemd",
  // what those login files source from a toolchain's folder (rustup's, uv's, nvm's and SDKMAN!'s installers add it)
  ".cargo/env",
  ".cargo/env.fish",
  ".local/bin/env",
  ".local/bin/env.fish",
  ".nvm/nvm.sh",
  ".sdkman/bin/sdkman-init.sh",
  // histories: commands typed with passwords in them, queries, files opened
  ".bash_history",
  ".zsh_history",
  ".local/share/fish",
  ".python_history",
  ".node_repl_history",
  ".psql_history",
  ".mysql_history",
  ".sqlite_history",
  ".rediscli_history",
  ".lesshst",
  ".viminfo",
  ".local/share/recently-used.xbel",
  // browsers, mail and editors: cookies, saved passwords, sign-in tokens
  ".mozilla",
  ".thunderbird",
  ".config/google-chrome",
  ".config/chromium",
  ".config/BraveSoftware",
  ".config/microsoft-edge",
  ".cache/mozilla",
  ".cache/google-chrome",
  ".cache/chromium",
  ".config/Code/User/globalStorage",
  ".config/Cursor/User/globalStorage",
  // database, object-store and cloud clients' keys and saved logins: libpq's client keys and service file, MySQL's
  // obfuscated logins, MinIO's client, Emacs's and Gnus's authinfo, Snowflake, Alibaba Cloud, Scaleway, Talos
  ".postgresql",
  ".pg_service.conf",
  ".mylogin.cnf",
  ".mc",
  ".authinfo",
  ".authinfo.gpg",
  ".snowflake",
  ".snowsql",
  ".aliyun",
  ".config/scw",
  ".talos",
  // wallets' keys
  ".config/solana",
  ".ethereum/keystore",
  ".bitcoin/wallets",
  // found since: more keys, CLI and registry tokens, bun's settings where XDG_CONFIG_HOME puts them, browsers
  // installed by snap and flatpak and more browsers, password stores and clients' saved passwords, mail and network
  // logins, wallets and messengers, and zsh's histories by the names its installer and XDG layouts use
  ".ollama/id_ed25519",
  ".config/age",
  ".huggingface",
  ".sentryclirc",
  ".config/.wrangler",
  ".local/share/com.vercel.cli",
  ".railway",
  ".doppler",
  ".jfrog",
  ".config/tea",
  ".gitlab-runner",
  ".wakatime.cfg",
  ".expo/state.json",
  ".continue",
  ".codeium",
  ".claude.json",
  ".ivy2/.credentials",
  ".sbt/.credentials",
  ".lein/credentials.clj",
  ".lein/credentials.clj.gpg",
  ".config/NuGet",
  ".config/pnpm/rc",
  ".config/.bunfig.toml",
  "snap/firefox",
  "snap/chromium",
  ".var/app/org.mozilla.firefox",
  ".var/app/com.google.Chrome",
  ".var/app/org.chromium.Chromium",
  ".var/app/com.brave.Browser",
  ".var/app/org.mozilla.Thunderbird",
  ".config/vivaldi",
  ".config/opera",
  ".config/gopass",
  ".local/share/gopass",
  ".config/keybase",
  ".local/share/DBeaverData",
  ".local/share/remmina",
  ".config/remmina",
  ".config/filezilla",
  ".purple",
  ".msmtprc",
  ".fetchmailrc",
  ".config/aerc",
  ".davfs2",
  ".smbcredentials",
  ".irssi",
  ".config/weechat",
  ".electrum",
  ".config/Slack",
  ".config/discord",
  ".local/share/TelegramDesktop",
  ".config/Signal",
  ".histfile",
  ".zhistory",
  ".local/state/zsh",
  ".local/share/atuin",
  // core's own application configuration (MCP servers' tokens, tools it loads) and data (settlements, saved
  // approvals, every session's outputs) where a core run with other directories leaves them: the user's everyday
  // core, or another user's. A core's own are kept by their own rules (./protected), not as stores.
  ".config/core",
  ".local/share/core",
]

/**
 * The system's secrets (outside the home), which commands read as empty files whatever is granted (../shell/namespace)
 * and the file tools refuse: shadow passwords, TLS and Kerberos keys, saved network logins, cluster credentials and
 * the tokens a container platform mounts. Besides these, the ssh host keys (`/etc/ssh/ssh_host_*`, not their
 * `.pub`) and rootless podman's registry logins (`/run/user/UID/containers`).
 */
export const SYSTEM: ReadonlyArray<string> = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/ssl/private",
  "/etc/letsencrypt",
  "/etc/krb5.keytab",
  "/etc/NetworkManager/system-connections",
  "/etc/wpa_supplicant",
  "/etc/kubernetes",
  "/etc/rancher",
  "/var/lib/kubelet",
  "/run/secrets",
  "/var/run/secrets",
  "/run/containers",
  // old password hashes, TLS keys on Red Hat, VPN and dial-up secrets, Wi-Fi passphrases, SSSD's bind password
  "/etc/security/opasswd",
  "/etc/pki/tls/private",
  "/etc/wireguard",
  "/etc/ipsec.secrets",
  "/etc/ipsec.d/private",
  "/etc/ppp/chap-secrets",
  "/etc/ppp/pap-secrets",
  "/etc/openvpn",
  "/var/lib/iwd",
  "/etc/netplan",
  "/etc/sssd",
  // Docker's daemon key and swarm certificates, k3s's cluster token, systemd's credentials
  "/etc/docker/key.json",
  "/var/lib/docker/swarm",
  "/var/lib/rancher",
  "/etc/credstore",
  "/etc/credstore.encrypted",
  "/run/credentials",
]

/**
 * Variables of the user's environment naming a credential store where the lists do not look: a service account's
 * key (`GOOGLE_APPLICATION_CREDENTIALS`), the files or folders the cloud, container and registry CLIs read their
 * logins from when moved (`AWS_SHARED_CREDENTIALS_FILE`, `DOCKER_CONFIG`, `GNUPGHOME`, `GH_CONFIG_DIR`...).
 */
export const ENVIRONMENT: ReadonlyArray<string> = [
  "GOOGLE_APPLICATION_CREDENTIALS",
  "CLOUDSDK_CONFIG",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_CONFIG_FILE",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AZURE_CONFIG_DIR",
  "OCI_CLI_CONFIG_FILE",
  "BOTO_CONFIG",
  "DOCKER_CONFIG",
  "REGISTRY_AUTH_FILE",
  "GNUPGHOME",
  "PASSWORD_STORE_DIR",
  "GH_CONFIG_DIR",
  "GLAB_CONFIG_DIR",
  "NETRC",
  "PGPASSFILE",
  "MYSQL_PWD_FILE",
  "NPM_CONFIG_USERCONFIG",
  "npm_config_userconfig",
  "TF_CLI_CONFIG_FILE",
  "HF_TOKEN_PATH",
  "VAULT_CONFIG_PATH",
  "DOCKER_CERT_PATH",
  "SOPS_AGE_KEY_FILE",
  "CARGO_HOME",
  "HF_HOME",
  "ZDOTDIR",
]

/**
 * Of ENVIRONMENT, the variables naming a folder whose secrets are some of the files in it: cargo's credentials,
 * Hugging Face's token, and the login files and history zsh keeps in `ZDOTDIR` (as `~/.zshrc` is one).
 */
const ENVIRONMENT_FILES: Readonly<Record<string, ReadonlyArray<string>>> = {
  CARGO_HOME: ["credentials", "credentials.toml"],
  HF_HOME: ["token", "stored_tokens"],
  ZDOTDIR: [".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".zsh_history"],
}

/**
 * The credential stores the user's environment `env` names (ENVIRONMENT, each file `KUBECONFIG` lists, and the
 * stores under `~/.config` and `~/.local/share` where `XDG_CONFIG_HOME` and `XDG_DATA_HOME` move them), as absolute
 * paths: a relative value is taken against `cwd` (where core, and the programs reading the variable, started);
 * never `/`, `home` itself or a folder holding `cwd`. Pure: the caller looks where each really is.
 */
export const environmentOf = (env: Readonly<Record<string, string | undefined>>, home: string, cwd: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const add = (value: string) => {
    const trimmed = value.trim()
    if (trimmed === "") return
    const path = resolve(cwd, trimmed)
    // Never one holding where core runs (`DOCKER_CONFIG=.`): the Location would be a secret whole.
    if (path !== sep && path !== home && !within(path, cwd) && !found.includes(path)) found.push(path)
  }
  for (const name of ENVIRONMENT) {
    const value = env[name]
    if (value === undefined || value.trim() === "") continue
    const files = ENVIRONMENT_FILES[name]
    if (files === undefined) add(value)
    else for (const file of files) add(join(resolve(cwd, value.trim()), file))
  }
  for (const entry of (env.KUBECONFIG ?? "").split(":")) add(entry)
  const moved = (variable: string, under: string) => {
    const to = env[variable]?.trim()
    if (to === undefined || to === "" || resolve(cwd, to) === join(home, under)) return
    for (const store of STORES) if (store.startsWith(`${under}/`)) add(join(resolve(cwd, to), store.slice(under.length + 1)))
  }
  moved("XDG_CONFIG_HOME", ".config")
  moved("XDG_DATA_HOME", ".local/share")
  return found
}

/** The system secret `real` (a real path) lies in, or undefined. */
export const systemOf = (real: string): string | undefined => {
  // Most paths (a project's files) are in none: their first folder says so.
  if (!(real.startsWith("/etc/") || real.startsWith("/run/") || real.startsWith("/var/"))) return undefined
  const found = SYSTEM.find((secret) => within(secret, real))
  if (found !== undefined) return found
  const name = real.startsWith("/etc/ssh/") ? real.slice("/etc/ssh/".length) : undefined
  if (name !== undefined && name.startsWith("ssh_host_") && !name.includes(sep) && !name.endsWith(".pub")) return real
  const podman = /^\/run\/user\/\d+\/containers(\/|$)/.exec(real)
  return podman === null ? undefined : real.slice(0, podman[0].length - (podman[1] === "/" ? 1 : 0))
}

/**
 * Stores whose place under the home has a part that varies: the global npmrc of each Node version nvm or volta
 * installed (`PREFIX/etc/npmrc`, registry tokens as much as `~/.npmrc`). `versions` is the folder holding the
 * versions, `file` the store's path inside one.
 */
export const VERSIONED: ReadonlyArray<{ readonly versions: string; readonly file: string }> = [
  { versions: ".nvm/versions/node", file: "etc/npmrc" },
  { versions: ".volta/tools/image/node", file: "etc/npmrc" },
]

/** The VERSIONED store `relative` (a path under the home) lies in, as a path under the home. */
const versioned = (relative: string): string | undefined => {
  for (const { versions, file } of VERSIONED) {
    if (!relative.startsWith(`${versions}${sep}`)) continue
    const version = relative.slice(versions.length + 1).split(sep)[0]!
    const store = `${versions}${sep}${version}${sep}${file}`
    if (version !== "" && within(store, relative)) return store
  }
  return undefined
}

/** The first name of each store's path (".ssh", ".config", ...). */
const FIRST: ReadonlySet<string> = new Set([...STORES, ...VERSIONED.map((store) => store.versions)].map((store) => store.split("/")[0]!))

const within = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)

/** Where the homes of the system's users are, by path: `/home/NAME` and root's, `/root`. */
const OTHER_HOME = /^(\/home\/[^/]+|\/root)\//

/**
 * The credential store `real` lies in: under `home` (real path) unless a grant names that store or a path inside it
 * and holds `real`, or under another user's home (`others`, real paths, as ./homes finds them; and `/home/NAME`,
 * `/root` by path: a core run as root reads every user's keys), which no grant opens; undefined when `real` is no
 * secret.
 */
export const anyStoreOf = (
  home: string,
  real: string,
  granted: ReadonlyArray<string> = [],
  others: (real: string) => string | undefined = NO_OTHERS,
): string | undefined => {
  if (within(home, real)) return storeOf(home, real, granted)
  const found = others(real)
  if (found !== undefined) return found
  const other = OTHER_HOME.exec(real)?.[1]
  return other === undefined ? undefined : storeOf(other, real)
}

const NO_OTHERS = (): undefined => undefined

/** The first folder of a path (`var` of `/var/lib/postgresql`). */
const firstOf = (path: string): string => path.slice(1, path.indexOf(sep, 1) === -1 ? undefined : path.indexOf(sep, 1))

/**
 * The store `real` lies in under one of `homes` (other users' homes, real paths), for anyStoreOf; made once for a
 * walk's many paths: most share no first folder with any home and are passed by one lookup.
 */
export const storesUnder = (homes: ReadonlyArray<string>): ((real: string) => string | undefined) => {
  if (homes.length === 0) return NO_OTHERS
  const firsts = new Set(homes.map(firstOf))
  return (real) => {
    if (!firsts.has(firstOf(real))) return undefined
    for (const home of homes) {
      if (real === home || !within(home, real)) continue
      const store = storeOf(home, real)
      if (store !== undefined) return store
    }
    return undefined
  }
}

/**
 * The store under `home` (real path) that `real` lies in, unless a grant names that store or a path inside it and
 * holds `real`; undefined when `real` is no secret.
 */
const storeOf = (home: string, real: string, granted: ReadonlyArray<string> = []): string | undefined => {
  if (!within(home, real) || real === home) return undefined
  const relative = real.slice(home.length + (home.endsWith(sep) ? 0 : 1))
  // Most paths under the home (a project's files) are in no store: one lookup of their first name says so.
  if (!FIRST.has(relative.slice(0, relative.indexOf(sep) === -1 ? undefined : relative.indexOf(sep)))) return undefined
  const store = STORES.find((entry) => within(entry, relative)) ?? versioned(relative)
  if (store === undefined) return undefined
  const absolute = `${home}${sep}${store}`
  return granted.some((grant) => within(absolute, grant) && within(grant, real)) ? undefined : absolute
}
