export * as Project from "./project"

// The identity of a project across machines, under which a store shared by a fleet keeps its saved approvals: the
// same repository checked out at different paths on different hosts is one project. It is the normalized URL of
// the `origin` remote (else the first remote) of the git repository holding the Location, with the Location's
// path inside the repository when it is not the root: `git:github.com/acme/shop` or
// `git:github.com/acme/shop//services/api`. A Location in no repository, or in one without a remote that names one
// repository for every host (see `normalizeRemote`), is known by
// its real path (`path:/srv/shop`), which holds on that machine only. Read from the repository's own config file;
// git is not run.

import { readFileSync, statSync } from "node:fs"
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path"

/** The repository root holding `directory` and its git directory, if any. */
const repositoryOf = (directory: string): { root: string; gitDir: string } | undefined => {
  for (let current = directory; ; current = dirname(current)) {
    const dotGit = join(current, ".git")
    try {
      const stat = statSync(dotGit)
      if (stat.isDirectory()) return { root: current, gitDir: dotGit }
      // A worktree or submodule: `gitdir: <path>`; its remotes are in the common directory's config.
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, "utf8"))?.[1]?.trim()
      if (pointer !== undefined) {
        const gitDir = resolve(current, pointer)
        let common = gitDir
        try {
          common = resolve(gitDir, readFileSync(join(gitDir, "commondir"), "utf8").trim())
        } catch {
          // Not a worktree: the git directory has its own config.
        }
        return { root: current, gitDir: common }
      }
    } catch {
      // No .git here: look further up.
    }
    if (dirname(current) === current) return undefined
  }
}

/**
 * A config line's `url = VALUE`, trimmed, as `/^\s*url\s*=\s*(.+?)\s*$/` took it (the value ends at a line break
 * other than `\n`, and only spaces may follow; only spaces after `=` give their last one that ends no line). Found by
 * plain searches: a model may set a remote's URL, and that pattern tried every split of its spaces (cubic).
 */
const urlOf = (line: string): string | undefined => {
  const key = /^\s*url\s*=/.exec(line)
  if (key === null) return undefined
  const rest = line.slice(key[0].length)
  const start = rest.search(/\S/)
  if (start === -1) {
    const last = rest.search(/[^\r\u2028\u2029\n][\r\u2028\u2029\n]*$/)
    return last === -1 ? undefined : rest[last]
  }
  const breaks = /[\n\r\u2028\u2029]/g
  breaks.lastIndex = start
  const end = breaks.exec(rest)?.index ?? rest.length
  return /^\s*$/.test(rest.slice(end)) ? rest.slice(start, end).trimEnd() : undefined
}

/** The remote URLs of a git config file, `origin` first. */
const remotesOf = (config: string): ReadonlyArray<string> => {
  const remotes: Array<{ name: string; url: string }> = []
  let section: string | undefined
  for (const line of config.split(/\r?\n/)) {
    const header = /^\s*\[\s*remote\s+"([^"]*)"\s*\]/.exec(line)
    if (header !== null) {
      section = header[1]
      continue
    }
    if (/^\s*\[/.test(line)) section = undefined
    const url = urlOf(line)
    if (section !== undefined && url !== undefined) remotes.push({ name: section, url: url.replace(/^"(.*)"$/, "$1") })
  }
  return [...remotes.filter((remote) => remote.name === "origin"), ...remotes.filter((remote) => remote.name !== "origin")].map(
    (remote) => remote.url,
  )
}

/**
 * A remote URL as one string for every way of writing it: no scheme, user, password, port or trailing `.git`, the
 * host in lower case, runs of slashes as one. `git@github.com:Acme/shop.git`, `https://user:token@GitHub.com/Acme/shop`
 * and `ssh://git@github.com:22/Acme/shop.git` are all `github.com/Acme/shop`. An absolute local path remote stays a
 * path. Undefined, for no identity beyond the Location's own path, where the URL names no one repository for every
 * host: a relative path (`../shop`, the same text in unrelated repositories), or a path with `.` or `..` segments,
 * plain or percent-encoded (`acme/%2e%2e/shop`, which a URL parser resolves to another repository's path).
 */
export const normalizeRemote = (url: string): string | undefined => {
  // A run of slashes at the end is tried from its first slash only (`(?<!\/)`): trying it from each of its slashes
  // took its length squared, and the model may write the URL.
  const trimmed = url.trim()
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(trimmed)
  let host: string
  let path: string
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    // Looked at as written: a parser resolves dot segments before anything could see them.
    if (DOT_SEGMENT.test(trimmed.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, ""))) return undefined
    try {
      const parsed = new URL(trimmed)
      if (parsed.protocol === "file:") return `file:${collapsed(parsed.pathname).replace(/\.git\/?$/, "").replace(/(?<!\/)\/+$/, "")}`
      host = parsed.hostname
      path = decodeURIComponent(parsed.pathname)
    } catch {
      return undefined
    }
  } else if (scp !== null && !isAbsolute(trimmed)) {
    host = scp[1]!
    path = scp[2]!
  } else if (isAbsolute(trimmed)) {
    if (DOT_SEGMENT.test(trimmed)) return undefined
    return `file:${collapsed(trimmed).replace(/\.git\/?$/, "").replace(/(?<!\/)\/+$/, "")}`
  } else {
    return undefined
  }
  if (DOT_SEGMENT.test(path)) return undefined
  const cleaned = collapsed(path).replace(/^\/+/, "").replace(/(?<!\/)\/+$/, "").replace(/\.git$/, "")
  return `${host.toLowerCase()}/${cleaned}`
}

/** A `.` or `..` path segment, plain or percent-encoded. */
const DOT_SEGMENT = /(?:^|[/\\])(?:\.|%2e){1,2}(?:[/\\?#]|$)/i

/** Runs of slashes as one: `//` separates a Location's path inside its repository in an identity. */
const collapsed = (path: string): string => path.replace(/\/{2,}/g, "/")

/**
 * Whether `identity` names a project by a place on this machine: the Location's own path (`path:`), or a repository
 * whose remote is a local path (`git:file:`) or on this machine's own address (`localhost`, `127.0.0.0/8`, `::1`),
 * which on another machine is that machine's own. Approvals for it hold here only.
 */
export const machineOnly = (identity: string): boolean =>
  identity.startsWith("path:") || identity.startsWith("git:file:") || LOOPBACK_REMOTE.test(identity)

/** A remote's identity whose host is this machine's own address, however written. */
const LOOPBACK_REMOTE = /^git:(?:localhost|[^/]*\.localhost|127(?:\.\d{1,3}){3}|\[(?:0*:)*:?0*1\]|\[::ffff:127(?:\.\d{1,3}){3}\]|0\.0\.0\.0|\[::\])(?:\/|$)/i

/** The identity of the project at `directory` (a Location's real path). */
export const identityOf = (directory: string): string => {
  const repository = repositoryOf(directory)
  if (repository !== undefined) {
    let config = ""
    try {
      config = readFileSync(join(repository.gitDir, "config"), "utf8")
    } catch {
      // No readable config: no remote.
    }
    const remote = remotesOf(config)[0]
    const normalized = remote === undefined ? undefined : normalizeRemote(remote)
    if (normalized !== undefined) {
      const inside = relative(repository.root, directory).split(sep).join("/")
      return `git:${normalized}${inside === "" ? "" : `//${inside}`}`
    }
  }
  return `path:${directory}`
}
