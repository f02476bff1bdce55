export * as Sandbox from "./sandbox"

// What a sandboxed command may touch, and the per-call temp directory that makes it sound. Writes: the Location,
// the directories approved for the call, a temp directory and the Location's cache (in core's data directory). Reads: those, the
// system directories programs need (Landlock.SYSTEM_READABLE), what developer tools read under the home and the
// programs on PATH (./home). Never the home's credential stores (Home.DENIED) unless core.json grants that path,
// never what core.json denies, and never $CORE_HOME or $CORE_DATA_DIR, wherever they lie: Landlock grants are
// carved around them (./landlock). When the system temp directory holds one of them (as in tests), the command
// gets a fresh temp directory of its own (TMPDIR) instead of all of it.

import { existsSync, lstatSync, mkdirSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { Covered } from "./covered"
import { Listing } from "./listing"
import { Credentials } from "../permission/credentials"
import { Homes } from "../permission/homes"
import { Toolchains } from "../permission/toolchains"
import { Home } from "./home"
import { Landlock } from "./landlock"
import { LoginPath } from "./login-path"
import { ProcessDirs } from "./process-dirs"
import { Sockets } from "./sockets"
import { SidecarPorts } from "../permission/sidecar-ports"

/** What the caller decides: where the command runs and what was approved for this call. */
export interface Policy {
  /** The Location: read and written. */
  readonly location: string
  /** Directories approved through external_directory for this call: read and written. */
  readonly approved: ReadonlyArray<string>
  /**
   * Whether a person approved, for this call, a change to core's configuration in the Location (core.json,
   * tools/, plugins/, .core/): then the command may change it. Otherwise it is read-only to the command.
   */
  readonly configuration?: boolean
  /**
   * The other Locations this core serves: their configuration is guarded from the command as the Location's is
   * (a command may reach them through the Location, an approved directory or the temp directory).
   */
  readonly others?: ReadonlyArray<string>
  /**
   * The Locations this core serves now, read again as the command's guard begins: one first served while the call
   * waited its turn (a slot, a load under way) is guarded as `others` are.
   */
  readonly servedNow?: () => ReadonlyArray<string>
  /**
   * The calling agent's `read` rules as a test of a real path (true: denied), when any rule denies a read: what
   * they deny inside the Location and the approved directories is covered in the command's mount namespace.
   */
  readonly readDenied?: (real: string) => boolean
  /**
   * The calling agent's `edit` rules as a test of a real path (true: denied), when any rule denies an edit: what
   * they deny inside the Location and the approved directories is made read-only in the command's mount namespace.
   */
  readonly editDenied?: (real: string) => boolean
}

/**
 * The Location's own grants from core.json (`shell.allowRead`, `shell.allowWrite`, `shell.denyRead`): paths with
 * `~` for the home, relative ones against the Location. A grant reaches a credential store only by naming it or a
 * path inside it; a deny wins over every grant.
 */
export interface Settings {
  readonly allowRead?: ReadonlyArray<string>
  readonly allowWrite?: ReadonlyArray<string>
  readonly denyRead?: ReadonlyArray<string>
  /** core.json's `shell.sockets`: the socket files a command may connect to (Sockets.reachable). */
  readonly sockets?: ReadonlyArray<string>
}

/** The directories no command may read or write: core's home and data directory (as core resolves them), and the sidecars' ports. */
export const hidden = (env: Readonly<Record<string, string | undefined>> = process.env): ReadonlyArray<string> => [
  resolve(env.CORE_HOME || join(homedir(), ".config/core")),
  resolve(env.CORE_DATA_DIR || join(homedir(), ".local/share/core")),
  ...[SidecarPorts.folder()].filter((folder) => folder !== undefined),
]

/** Whether something is at `path` that this user can see (a PATH entry may lie in a folder it cannot search). */
const exists = (path: string): boolean => {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined
  } catch {
    return false
  }
}

const { within } = Landlock

/** How long the grants worked out from the disk (PATH, the home) are reused: a new PATH directory is readable after that. */
const FIXED_MS = 5_000
/** How many of those are kept (one per Location and settings in use). */
const FIXED_ENTRIES = 16
/**
 * While a Location's commands keep coming (one within KEPT_FRESH_MS), its grants are worked out again AHEAD_MS
 * before they are FIXED_MS old, in the background: a command never finds them older than FIXED_MS (as before), and
 * commands seconds apart do not each work them out on their way to start.
 */
const KEPT_FRESH_MS = 60_000
const AHEAD_MS = 1_000
/**
 * core.json's grants for writing, as real paths; one named inside the Location or the temp directory that a link
 * on the way leads elsewhere is dropped: a command may have put that link there (`out` made a link to
 * `~/.local/bin`, and the next command wrote there).
 */
const grantsOf = (paths: ReadonlyArray<string> | undefined, home: string, location: string, temp: string): ReadonlyArray<Grant> =>
  (paths ?? []).flatMap((path) => {
    const given = Home.expand(path, home, location)
    const real = Landlock.real(given)
    const root = [location, temp].find((root) => within(root, given) || within(Landlock.real(root), given))
    if (root === undefined) return [{ given, real }]
    const base = within(root, given) ? root : Landlock.real(root)
    return real === join(Landlock.real(root), relative(base, given)) ? [{ given, real }] : []
  })

/** A grant of core.json: the path it names (expanded), and where it really is. */
interface Grant {
  readonly given: string
  readonly real: string
}

/** The background refresh due for each key of `cached`. */
const refreshes = new Map<string, ReturnType<typeof setTimeout>>()

interface Fixed {
  readonly at: number
  /** When a command last used it (kept across its refreshes). */
  used: number
  /** core's own directories: never granted, not even by core.json. */
  readonly core: ReadonlyArray<string>
  /** Everything carved out of the grants core makes itself: core's directories, credential stores, core.json's denies. */
  readonly secret: ReadonlyArray<string>
  /** Of those, the credential stores (the user's, the other users' where core is root, those the environment names). */
  readonly stores: ReadonlyArray<string>
  readonly system: string
  readonly read: ReadonlyArray<string>
  /**
   * Where the user's own programs come from (Toolchains: what developer tools read under the home, the PATH folders
   * outside the Location): never written, wherever a write grant holds it.
   */
  readonly readOnly: ReadonlyArray<string>
  /**
   * Of those, what lies in the temp directory and no PATH names (a `BASH_ENV` or a git program kept there): read,
   * never written; where there is any, the command gets a temp directory of its own, as where a secret lies there.
   */
  readonly readOnlyInTemp: ReadonlyArray<string>
  /** core.json's allowWrite, carved. */
  readonly write: ReadonlyArray<string>
  /** The folders a person granted for writing: the directories approved for the call and core.json's allowWrite. */
  readonly granted: ReadonlyArray<string>
  readonly devices: ReadonlyArray<string>
  /** The Location's cache directory, undefined when core's data directory cannot hold it or another user made it first. */
  readonly cache: string | undefined
  /** core.json's denyRead covered by mounts rather than carved out of the grants (looked up at each call). */
  readonly coverable: ReadonlyArray<string>
}

/** The Location's cache directory under `data`, made if missing; undefined when it is not this user's alone. */
const cacheDirectory = (data: string, location: string): string | undefined => {
  const cache = Home.cacheOf(data, location)
  try {
    mkdirSync(cache, { recursive: true, mode: 0o700 })
    const stat = lstatSync(cache)
    return stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0 ? cache : undefined
  } catch {
    return undefined
  }
}

const cached = new Map<string, Fixed>()

/**
 * The grants that depend on the disk rather than on the call (system, home and PATH directories, devices,
 * core.json's grants, real paths looked up one by one): a few milliseconds to work out, so reused for a moment.
 */
const fixed = (
  policy: Policy,
  env: Readonly<Record<string, string | undefined>>,
  settings: Settings,
  covering: boolean,
): Fixed => {
  const homes = hidden(process.env)
  const key = JSON.stringify([env.PATH ?? "", env.HOME ?? "", homes, tmpdir(), settings, policy.location, policy.approved, policy.others ?? [], covering])
  const now = performance.now()
  const found = cached.get(key)
  if (found !== undefined && now - found.at < FIXED_MS) {
    found.used = now
    return found
  }
  const entry = workOut(policy, env, settings, covering, homes, now)
  if (cached.size >= FIXED_ENTRIES && !cached.has(key)) cached.delete(cached.keys().next().value!)
  cached.set(key, entry)
  keepFresh(key, () => workOut(policy, env, settings, covering, hidden(process.env), performance.now()))
  return entry
}

/** Works `key`'s entry out again before it expires, for as long as commands keep using it (KEPT_FRESH_MS). */
const keepFresh = (key: string, again: () => Fixed): void => {
  if (refreshes.has(key)) return
  const due = (at: number) => {
    const timer = setTimeout(() => {
      refreshes.delete(key)
      const entry = cached.get(key)
      if (entry === undefined || performance.now() - entry.used > KEPT_FRESH_MS) return
      let next: Fixed
      try {
        next = again()
      } catch {
        // Worked out by the next command instead, on its way.
        return
      }
      next.used = entry.used
      if (cached.has(key)) cached.set(key, next)
      due(next.at)
    }, Math.max(0, at + FIXED_MS - AHEAD_MS - performance.now()))
    timer.unref?.()
    refreshes.set(key, timer)
  }
  due(cached.get(key)!.at)
}

/** The entry of `fixed`, worked out from the disk now. */
const workOut = (
  policy: Policy,
  env: Readonly<Record<string, string | undefined>>,
  settings: Settings,
  covering: boolean,
  homes: ReadonlyArray<string>,
  now: number,
): Fixed => {
  const home = Landlock.real(env.HOME || homedir())
  const location = Landlock.real(policy.location)
  const expand = (paths: ReadonlyArray<string> | undefined) =>
    (paths ?? []).map((path) => Landlock.real(Home.expand(path, home, policy.location)))
  const core = homes.map(Landlock.real)
  // Run by root, the other users' stores too: root keeps DAC_OVERRIDE, which passes their modes.
  const otherHomes = process.getuid?.() === 0 ? Homes.others(home) : []
  const others = otherHomes.flatMap(Home.denied)
  // And the stores the user's environment names elsewhere (a service account's key, a moved DOCKER_CONFIG).
  const named = Credentials.environmentOf(env, home, process.cwd()).filter(exists)
  const denied = [...Home.denied(home), ...others, ...named].map(Landlock.real)
  const system = Landlock.real(tmpdir())
  const allowRead = expand(settings.allowRead)
  const writeGrants = grantsOf(settings.allowWrite, home, policy.location, system)
  const allowWrite = writeGrants.map((grant) => grant.real)
  const denyRead = expand(settings.denyRead)
  // A deny of core.json inside a tree granted for writing here (not the temp directory) is covered (see `prepare`) rather than carved out of the
  // grant, which would grant its siblings one by one and leave its folder unable to take a new file. Elsewhere, and
  // where the supervisor cannot mount, it is carved out (the command is refused it: EACCES).
  const writable = [location, ...policy.approved.map(Landlock.real)].concat(allowWrite)
  const coverable = covering ? denyRead.filter((path) => writable.some((root) => within(root, path))) : []
  const refused = [...core, ...denyRead.filter((path) => !coverable.includes(path))]
  const secret = [...refused, ...denied]

  // A grant in core.json reaches the credential stores inside it only when it names one of them or a path in it.
  const granted = (paths: ReadonlyArray<string>) =>
    paths.flatMap((path) => Landlock.granted([path], [...refused, ...denied.filter((store) => store !== path && within(path, store))]))
  // What the user's lists, git's config and the environment name in the temp directory (a BASH_ENV kept there):
  // read, never written; the temp directory is then not granted whole either (see `prepare`).
  // (Not the home's own: read through `homeward` already, and a home there holds secrets, which keep it so anyway.)
  const readOnlyInTemp = Toolchains.namedBeyondPath(home, env.PATH, location, env)
    .filter((path) => within(system, path) && !within(home, path) && exists(path))
    .map(Landlock.real)
    .filter((path) => path !== system && within(system, path) && !within(home, path) && !secret.some((dir) => within(dir, path)))
  // Where a command may write (the system temp directory only when it is granted whole, see `prepare`).
  const temp = secret.some((dir) => within(system, dir)) || readOnlyInTemp.length > 0 ? [] : [system]
  const untrusted = [location, ...[...policy.approved, ...(policy.others ?? []), ...temp].map(Landlock.real)].concat(allowWrite)
  // A home inside a system directory (/var/lib/<service>, /opt/<user>) is carved out of it: of the home, only what
  // developer tools read is granted, as anywhere else. A home that is a system directory itself cannot be.
  const enclosed = Landlock.SYSTEM_READABLE.some((root) => root !== home && within(root, home)) ? home : undefined
  const systemRead = Landlock.granted(Landlock.SYSTEM_READABLE, enclosed === undefined ? secret : [...secret, enclosed])
  const developerRead = Toolchains.readable(home).map(Landlock.real).filter(exists)
  const homeward = Landlock.granted([...developerRead, ...Home.programs(env.PATH, Landlock.SYSTEM_READABLE, untrusted, enclosed)], secret)
  // Where the user's programs come from; one not made yet, by the folder that would hold it (a command approved
  // `~/.dotnet` must not make the `~/.dotnet/tools` on PATH), where that folder is there and is no shared one: not
  // `/`, the temp directories or a home's `~/.config`, `~/.local`, `~/.cache` (the user's, and run by root the others'; a grant holding one of these is split
  // around core's directories and the stores in it), and never a folder further up (npm puts `X/node_modules/.bin`
  // on PATH for every folder X above where it runs: `/tmp` or `~/projects` are not kept for that).
  const shared = [
    "/",
    system,
    "/var/tmp",
    ...[home, ...otherHomes].flatMap((one) => [one, ...[".config", ".local", ".local/share", ".cache"].map((folder) => join(one, folder))]),
  ]
  // Hundreds of places, most of them missing and in a few folders (the home): each folder looked up once.
  const byFolder = new Map<string, ReadonlyArray<string>>()
  const readOnly = [
    ...new Set(
      Toolchains.unchangeable(home, env.PATH, location, env).flatMap((place) => {
        if (exists(place)) return [Landlock.real(place)]
        // The system's places that a system lacks (/lib32) are not made by a command anyway.
        if (Toolchains.SYSTEM_PLACES.includes(place)) return []
        const parent = dirname(place)
        let kept = byFolder.get(parent)
        if (kept === undefined) {
          const real = exists(parent) ? Landlock.real(parent) : undefined
          kept = real === undefined || shared.includes(real) ? [] : [real]
          byFolder.set(parent, kept)
        }
        return kept
      }),
    ),
  ]
  return {
    at: now,
    used: now,
    core,
    secret,
    stores: denied,
    system,
    read: [...systemRead, ...homeward, ...granted(allowRead), ...Landlock.granted(readOnlyInTemp, secret)],
    // Carved of what it reaches only through a link (a folder outside the Location a command replaced with a link
    // to ~/.local/bin or ~/.ssh): the stores and the places of the user's programs it does not name itself.
    write: writeGrants.flatMap(({ given, real }) =>
      Landlock.granted(
        [real],
        [...refused, ...denied.filter((store) => !within(store, given) && within(real, store)), ...readOnly.filter((place) => !within(place, given))],
      ),
    ),
    granted: [...policy.approved.map(Landlock.real), ...allowWrite],
    devices: Landlock.devices(secret),
    cache: cacheDirectory(core[1]!, policy.location),
    readOnly,
    readOnlyInTemp,
    coverable,
  }
}

export interface Prepared {
  readonly grants: Landlock.Grants
  /**
   * Variables the command gets: TMPDIR when it has a temp directory of its own, the cache variables (Home.CACHES),
   * and BASH_ENV, which gives a login shell the PATH back (./login-path).
   */
  readonly env: Readonly<Record<string, string>>
  /**
   * The paths a command's output says it was refused ("Permission denied", EACCES) that this sandbox keeps out of
   * its reach: not granted, or carved out (core's own directories are never named). Relative paths are taken
   * against `cwd`, where the command ran.
   */
  readonly refused: (output: string, cwd: string) => ReadonlyArray<string>
  /**
   * Whether a path `refused` named (taken against `cwd`) is one the agent's `read` or `edit` rules keep from the
   * command (covered, or read-only): the rules, not the grants, are why.
   */
  readonly ruled: (name: string, cwd: string) => boolean
  /** Whether a path `refused` named (taken against `cwd`) lies in a credential store, which no command reads. */
  readonly stored: (name: string, cwd: string) => boolean
  /**
   * What the command must read nothing of although a grant holds it (core.json's denyRead, what the agent's `read`
   * rules deny in the Location and approved directories), covered in its mount namespace; absent when nothing is,
   * or when covering was not asked (then core.json's denies are carved out of the grants instead).
   */
  readonly cover?: {
    readonly files: ReadonlyArray<string>
    readonly directories: ReadonlyArray<string>
    /**
     * The folders between what the read rules deny and the root it was found in (the Location, an approved
     * directory), which the command must not rename or remove: renamed, they would carry the denied file to a name
     * the rules allow, and the file tools would read it there once the command ended.
     */
    readonly folders: ReadonlyArray<string>
  }
  /** The folders a person granted the command for writing (approved for the call, shell.allowWrite), uncarved. */
  readonly granted: ReadonlyArray<string>
  /**
   * Why the command must not start: the walk for what the read rules deny stopped at its bound (a command can fill a
   * folder past it), so files past it would not be covered. The rules fail closed.
   */
  readonly uncovered?: string
  /** Removes the per-call temp and cache directories, if any were made. */
  readonly cleanup: () => void
}

/**
 * Lines that say the system refused a path: Landlock's refusal, or the read-only mount every place the command may
 * not write is (Namespace.readOnlyOutside), which the kernel checks first.
 */
const REFUSAL = /permission denied|EACCES|read-only file system|EROFS/i
/**
 * git's word for a repository it could not read (a remote `../remote.git` outside the Location): the path, quoted.
 * A name with a colon is a URL or `host:path`, not a path of this machine.
 */
const NOT_A_REPOSITORY = /'([^':\n]+)' does not appear to be a git repository/
/** Lines that say a connection was refused: a socket file the command's mount namespace covers answers so. */
const UNCONNECTED = /connection refused|ECONNREFUSED/i
/** Trees the kernel makes, never walked for what the rules deny. */
const KERNEL_TREES = ["/proc", "/sys", "/dev"]
/** Characters that open a quoted path, end one (and close it, when a quote), and end a bare one. */
const QUOTE_OPENS = new Set(["'", '"', "`", "‘"])
const QUOTED_ENDS = new Set(["'", '"', "`", "’", "\n"])
const QUOTE_CLOSES = new Set(["'", '"', "’"])
const BARE_ENDS = /[\s:'",()[\]]/
/** Characters after which a bare path may start. */
const BARE_AFTER = /[\s=:([]/

/**
 * The absolute (or `~/`) paths a line names, left to right: quoted (from an opening quote up to the next quote or line
 * end, which must be a closing quote), or bare (starting a word, up to a space, colon, quote, comma or bracket;
 * never after a URL's `://`).
 * These are the matches of `(['"`‘])((?:\/|~\/)[^'"`’\n]*)['"’]|(?<![^\s=:([])((?:\/|~\/)[^\s:'",()[\]]+)` in
 * turn, read in one pass: a command prints the line, and that pattern read to the line's end from every `‘` (a
 * quote that does not end a quoted path), minutes for a line of a megabyte.
 */
const absoluteNamed = (line: string): Array<string> => {
  const named: Array<string> = []
  const prefixed = (at: number) => (line[at] === "/" ? at + 1 : line[at] === "~" && line[at + 1] === "/" ? at + 2 : undefined)
  // Where the quoted path tried last ended without a closing quote: a later one starting before it ends there too.
  let unclosed = -1
  let index = 0
  while (index < line.length) {
    if (QUOTE_OPENS.has(line[index]!) && prefixed(index + 1) !== undefined && index + 1 > unclosed) {
      let end = index + 1
      while (end < line.length && !QUOTED_ENDS.has(line[end]!)) end++
      if (end < line.length && QUOTE_CLOSES.has(line[end]!)) {
        named.push(line.slice(index + 1, end))
        index = end + 1
        continue
      }
      unclosed = end
    }
    // Not what follows a URL's scheme (`https://host/a/b`, `http://%2Fvar%2Frun%2Fdocker.sock/v1`): no path; but a
    // `file:///etc/x` names the path after its second slash.
    const url = line[index - 1] === ":" && line[index] === "/" && line[index + 1] === "/"
    const file = url && line[index + 2] === "/" && /file:$/i.test(line.slice(Math.max(0, index - 5), index))
    if (file) index += 2
    const rest = file || (!url && (index === 0 || BARE_AFTER.test(line[index - 1]!))) ? prefixed(index) : undefined
    if (rest !== undefined) {
      let end = rest
      while (end < line.length && !BARE_ENDS.test(line[end]!)) end++
      if (end > rest) {
        named.push(line.slice(index, end))
        index = end
        continue
      }
    }
    index++
  }
  return named
}
/** A relative path as programs name it before their `: Permission denied` (`cat: src/a: Permission denied`). */
const RELATIVE = /(?<![^\s:])([^\s:'"/~][^\s:'"]*): (?:Permission denied|No such file or directory|Read-only file system)/g
/** Lines that say a path is missing or read-only: a refusal where the path lies in what the sandbox covers. */
const COVERED = /no such file or directory|read-only file system|ENOENT|EROFS/i
/**
 * Whether the system's own permissions keep `path` from this user, sandbox or not: core, the same user, cannot look
 * at it either (`/root/x` for a user who is not root). A refusal of it is then no sandbox's.
 */
const outOfReach = (path: string): boolean => {
  try {
    lstatSync(path)
    return false
  } catch (cause) {
    return (cause as { readonly code?: unknown }).code === "EACCES"
  }
}

/** How many refused paths a result names. */
const REFUSED_MAX = 3
/** Linux's longest path, in bytes. */
const PATH_MAX = 4096

/**
 * The grants of one call, making its temp directory when the system one cannot be granted whole. With `covering`
 * (the supervisor can mount in the command's namespace), denied paths are covered rather than carved out (`cover`).
 */
export const prepare = (
  policy: Policy,
  env: Readonly<Record<string, string | undefined>>,
  settings: Settings = {},
  covering = false,
): Prepared => {
  const made = fixed(policy, env, settings, covering)
  const { core, secret, system, read, write: allowed, devices } = made
  // A cache directory someone else made (see Fixed.cache) is not used: the call gets an empty one of its own.
  const cache = made.cache ?? ProcessDirs.make(system, "core-cache-")
  const owned = made.cache === undefined ? [cache] : []
  let temporary: string | undefined
  if (secret.some((dir) => within(system, dir)) || made.readOnlyInTemp.length > 0) temporary = ProcessDirs.make(system, "core-call-")
  // The cache lies in core's data directory, carved out of every grant: it is granted by itself.
  // Where the user's programs come from stays read-only where a write grant holds it (a Location holding the home),
  // though never carved out of the Location or temp where it holds them (a Location under ~/go); a directory approved
  // for the call inside one (`~/.cargo/bin`, a PATH folder) is not granted: a change there is a person's to make.
  const location = Landlock.real(policy.location)
  const write = [
    ...Landlock.granted([location], [...secret, ...made.readOnly.filter((path) => !within(path, location))]),
    // The temp directory is every command's: what lies in it (a clone's node_modules/.bin on PATH) is not kept there.
    ...Landlock.granted([Landlock.real(temporary ?? system)], secret),
    ...Landlock.granted(policy.approved, [...secret, ...made.readOnly]),
    cache,
    ...allowed,
  ]
  // What puts the command's PATH back in a login shell (./login-path), unless the user's environment names its own.
  const login = env.BASH_ENV === undefined && env.PATH !== undefined ? LoginPath.file(join(core[1]!, "shell"), env.PATH) : undefined
  const grants = { read: login === undefined ? read : [...read, login], devices, write }
  const home = env.HOME || homedir()
  const grantedAll = [...write, ...read, ...devices]
  const reachable = (path: string) => !secret.some((dir) => within(dir, path)) && grantedAll.some((dir) => within(dir, path))
  // The kernel's own trees (a command naming /proc/self) hold nothing a rule denies, and cannot all be listed.
  const roots = [location, ...policy.approved.map(Landlock.real).filter((path) => !KERNEL_TREES.some((tree) => within(tree, path)))]
  const walked = covering && policy.readDenied !== undefined ? Covered.walk(roots, policy.readDenied) : undefined
  // What the grants already keep out (carved out, or never granted) needs no cover: the command is refused it.
  const files = (walked?.files ?? []).filter(reachable)
  const directories = (walked?.directories ?? []).filter(reachable)
  // What the edit rules deny, made read-only where it is (each program then fails to change it: EROFS), unless it
  // is covered already; a folder denied whole, with all it holds.
  const edits = covering && policy.editDenied !== undefined ? Covered.walk(roots, policy.editDenied) : undefined
  const frozen = [...(edits?.files ?? []), ...(edits?.directories ?? [])]
    .filter((path) => reachable(path) && !files.includes(path) && !directories.some((dir) => within(dir, path)))
  const folders = new Set<string>()
  // A folder in (or at) a frozen one is not pinned: the frozen one is read-only whole, and a pin in it would be a
  // writable mount of its own under it.
  const frozenWhole = (folder: string) => (edits?.directories ?? []).some((dir) => frozen.includes(dir) && within(dir, folder))
  for (const path of [...files, ...directories, ...frozen]) {
    const root = roots.find((each) => within(each, path))
    if (root === undefined) continue
    for (let folder = dirname(path); folder !== root && within(root, folder) && !folders.has(folder); folder = dirname(folder)) {
      if (!frozenWhole(folder)) folders.add(folder)
    }
  }
  for (const path of made.coverable) {
    const stat = lstatSync(path, { throwIfNoEntry: false })
    if (stat?.isDirectory()) directories.push(path)
    else if (stat?.isFile()) files.push(path)
  }
  /** Whether a path lies in what the command's mount namespace covers: missing or read-only there. */
  const covers = (path: string) =>
    files.includes(path) || [...directories, ...frozen].some((dir) => within(dir, path))
  /**
   * Whether a path is a socket file the command may not connect to (one `shell.sockets` does not grant), however
   * readable its folder: `docker`'s "dial unix /var/run/docker.sock: connect: permission denied" is the sandbox's.
   */
  let sockets: ReadonlyArray<string> | undefined
  const socketKept = (path: string) => {
    // A path the user cannot look at (EACCES) is no socket core knows of: never a failure of the call.
    let socket: boolean
    try {
      socket = lstatSync(path, { throwIfNoEntry: false })?.isSocket() === true
    } catch {
      socket = false
    }
    if (!socket) return false
    // Expanded as the grant is (Shell: core's environment, not the command's).
    sockets ??= Sockets.reachable(settings.sockets, [policy.location, ...policy.approved]) ?? []
    return !sockets.some((granted) => within(granted, path))
  }
  const refused = (output: string, cwd: string): ReadonlyArray<string> => {
    const denied = REFUSAL.test(output)
    const missing = files.length + directories.length > 0 && COVERED.test(output)
    const unconnected = UNCONNECTED.test(output)
    const repository = NOT_A_REPOSITORY.test(output)
    if (!denied && !missing && !unconnected && !repository) return []
    const paths = new Set<string>()
    for (const line of output.split("\n")) {
      // A repository git could not read, quoted: the sandbox's where it is there and out of reach.
      const git = repository ? NOT_A_REPOSITORY.exec(line)?.[1] : undefined
      const refusal = REFUSAL.test(line)
      const socket = refusal || (unconnected && UNCONNECTED.test(line))
      const listed = socket || (missing && COVERED.test(line))
      if (!listed && git === undefined) continue
      const named = listed ? absoluteNamed(line) : []
      if (listed) for (const match of line.matchAll(RELATIVE)) if (match[1]!.includes("/")) named.push(match[1]!)
      if (git !== undefined) named.push(git)
      for (const name of named) {
        // Longer than any path the kernel takes: never a file refused (and resolving it, segment by segment, would
        // overflow the stack on a line of hundreds of thousands of slashes a command can print).
        if (name.length > PATH_MAX) continue
        const path = Landlock.real(Home.expand(name, home, cwd))
        if (core.some((dir) => within(dir, path))) continue
        const kept =
          name === git
            ? !reachable(path) && existsSync(path)
            : (refusal && !reachable(path) && !outOfReach(path)) || (socket && socketKept(path)) || covers(path)
        if (kept) paths.add(name)
        if (paths.size > REFUSED_MAX) return [...paths]
      }
    }
    return [...paths]
  }
  return {
    grants,
    ...(files.length + directories.length + frozen.length > 0
      ? {
          cover: {
            files: [...new Set(files)],
            directories: [...new Set(directories)],
            folders: [...folders].sort((a, b) => a.length - b.length),
            ...(frozen.length === 0 ? {} : { frozen: [...new Set(frozen)] }),
          },
        }
      : {}),
    env: {
      ...Home.cacheEnv(cache),
      ...(temporary === undefined ? {} : { TMPDIR: temporary, TMP: temporary, TEMP: temporary }),
      ...(login === undefined ? {} : { BASH_ENV: login }),
    },
    refused,
    ruled: (name, cwd) => {
      const path = Landlock.real(Home.expand(name, home, cwd))
      return (walked?.files ?? []).includes(path) || [...(walked?.directories ?? []), ...frozen].some((dir) => within(dir, path))
    },
    stored: (name, cwd) => {
      const path = Landlock.real(Home.expand(name, home, cwd))
      return made.stores.some((store) => within(store, path))
    },
    granted: made.granted,
    ...(walked?.partial === true || edits?.partial === true
      ? {
          uncovered:
            `core did not run the command: the ${walked?.partial === true ? "read" : "edit"} rules deny files in ${[policy.location, ...policy.approved].join(", ")}, which ` +
            `core ${walked?.partial === true ? "covers" : "makes read-only"} before each command so that no program ${walked?.partial === true ? "reads" : "changes"} them, and ` +
            ((walked?.partial === true ? walked : edits)!.shut === undefined
              ? `there are more than ${Covered.bound().toLocaleString("en-US")} entries there (node_modules included), too ` +
                "many to look through. Ask the user to remove what is not needed there (a folder of generated files), or to " +
                "serve a smaller Location."
              : `core cannot list ${(walked?.partial === true ? walked : edits)!.shut!.at} (${Listing.shutText((walked?.partial === true ? walked : edits)!.shut!.code)}). Ask the user to look at that ` +
                "folder (make it readable, move it to a shorter path, or remove it).") +
            " Do not retry the command until then.",
        }
      : {}),
    cleanup: () => {
      // What is left is swept by a later core (ProcessDirs.sweep); a cleanup never fails the call whose output it follows.
      for (const own of [...owned, ...(temporary === undefined ? [] : [temporary])]) ProcessDirs.remove(own)
    },
  }
}
