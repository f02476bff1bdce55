export * as Closure from "./closure"

// The import closure of the tool and plugin files core loads: every path whose content decides what code runs
// inside core when they load (relative modules, each package with every node_modules it could load another from,
// the nearer places the resolver would look first, the tsconfig.json that maps bare names). Computed from the files
// on disk, not from what was loaded, so a file written with a person's approval is covered before it is loaded.
// Pure reading of the file system, with each file's imports remembered by its identity and change time.

import { lstatSync, readdirSync, realpathSync, statSync, type Stats } from "node:fs"
import { basename, dirname, extname, join, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { Served } from "../author/served"
import { FileText } from "./file-text"

/**
 * The most files and packages followed from one set of roots; past it the rest cannot be named one by one, and
 * Protected protects the Locations whole instead.
 */
export const MAX_FOLLOWED = 5_000

/** Extensions Bun's resolver tries for a specifier without one, in its order (checked here), then `index.*`. */
const EXTENSIONS = [".tsx", ".jsx", ".mts", ".ts", ".mjs", ".js", ".cts", ".cjs", ".json"]

/** Files whose imports are scanned (others, such as .json or .wasm, are protected but import nothing). */
const SOURCE = /\.(tsx?|jsx?|mjs|cjs|mts|cts)$/

/** Files that live beside tools and plugins without being loaded. */
const IGNORED = /\.(test|spec|d)\.ts$/

/** The folders of a directory whose files core loads. */
export const FOLDERS = ["tools", "plugins"] as const

/** One protected path of the closure, the loaded file that first reaches it, and who it is when it exists. */
export interface Reached {
  readonly path: string
  readonly by: string
  /** Its device and inode, and when it was made (0 where the file system does not say). */
  readonly identity: { readonly dev: number; readonly ino: number; readonly born: number } | undefined
}

const statOf = (path: string, follow: boolean): Stats | undefined => {
  try {
    return follow ? statSync(path, { throwIfNoEntry: false }) : lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

const realOf = (path: string): string => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

type Kind = "file" | "directory" | "link" | "other"

/** What is in a directory, by name. */
interface Names {
  readonly get: (name: string) => Kind | undefined
  /**
   * The other names that are `name` but for case. Bun's resolver finds a file by its name ignoring case (its
   * directory entries are kept lowercased): a specifier `./fmt.ts` loads `FMT.ts` where no `fmt.ts` is.
   */
  readonly like: (name: string) => ReadonlyArray<readonly [string, Kind]>
}

/** A directory's names by their lowercase spelling, each with what it is. */
const folded = (entries: Iterable<readonly [string, Kind]>): Map<string, Array<readonly [string, Kind]>> => {
  const index = new Map<string, Array<readonly [string, Kind]>>()
  for (const entry of entries) {
    const key = entry[0].toLowerCase()
    const same = index.get(key)
    if (same === undefined) index.set(key, [entry])
    else same.push(entry)
  }
  return index
}

/** The names of `index` that are `name` but for case. */
const likeIn = (index: ReadonlyMap<string, ReadonlyArray<readonly [string, Kind]>>, name: string) =>
  (index.get(name.toLowerCase()) ?? []).filter(([each]) => each !== name)

/** A listed directory's names; its lowercase index made when first asked. */
const listedNames = (entries: ReadonlyMap<string, Kind>): Names => {
  let index: Map<string, Array<readonly [string, Kind]>> | undefined
  return {
    get: (name) => entries.get(name),
    like: (name) => likeIn((index ??= folded(entries)), name),
  }
}

/**
 * Each directory's entries, kept while its identity and modification time stay the same: whether a name exists
 * is then answered without a system call per name (a resolver's candidates are mostly missing).
 */
const listings = new Map<string, { readonly stamp: string; readonly entries: Names }>()

/**
 * A directory larger than this (hundreds of entries: /tmp, a busy home folder above a Location) is not listed: the
 * few names asked there (node_modules, package.json, tsconfig.json) are looked up one by one. Listing /tmp with
 * 8,000 entries took 3 ms, again each time anything in it changed, which on a busy machine is every closure.
 */
export const LISTED_BYTES = 32 * 1_024

/** What an entry is, from its listing or its stats (not followed). */
const kindOfEntry = (entry: Pick<Stats, "isFile" | "isDirectory" | "isSymbolicLink">): Kind =>
  entry.isFile() ? "file" : entry.isDirectory() ? "directory" : entry.isSymbolicLink() ? "link" : "other"

/**
 * The names asked of each directory not listed, with what each was (not followed), kept while the directory's
 * identity and modification time stay the same, as a listing is.
 */
const unlisted = new Map<
  string,
  { readonly stamp: string; readonly known: Map<string, Kind | undefined>; index?: Map<string, Array<readonly [string, Kind]>> }
>()

/** The names of a directory not listed, each looked up when first asked since it last changed. */
const lookedUp = (directory: string, stamp: string): Names => {
  const found = unlisted.get(directory)
  const kept = found !== undefined && found.stamp === stamp ? found : { stamp, known: new Map<string, Kind | undefined>() }
  if (kept !== found) unlisted.set(directory, kept)
  const { known } = kept
  return {
    get: (name) => {
      // A listing holds neither, nor a name with a separator.
      if (name === "" || name === "." || name === ".." || name.includes("/")) return undefined
      if (!known.has(name)) {
        const stats = statOf(join(directory, name), false)
        known.set(name, stats === undefined ? undefined : kindOfEntry(stats))
      }
      return known.get(name)
    },
    // Asked only where a file a tool imports is missing: the folder is listed then, once while it stays the same
    // (one core cannot list, Bun's resolver cannot either, and finds no name but by its spelling).
    like: (name) => {
      if (kept.index === undefined) {
        try {
          kept.index = folded(readdirSync(directory, { withFileTypes: true }).map((entry) => [entry.name, kindOfEntry(entry)] as const))
        } catch {
          kept.index = new Map()
        }
      }
      return likeIn(kept.index, name)
    },
  }
}

/**
 * One directory's entries now (none when it is missing), looked up once per closure (`fresh`), its stats taken by
 * `stat` (followed). One its parent's entries, looked up in this closure, do not hold is missing.
 */
const entriesOf = (directory: string, fresh: Map<string, Names | undefined>, stat: (path: string) => Stats | undefined) => {
  if (fresh.has(directory)) return fresh.get(directory)
  const parent = dirname(directory)
  if (parent !== directory && fresh.has(parent) && fresh.get(parent)?.get(basename(directory)) === undefined) {
    fresh.set(directory, undefined)
    return undefined
  }
  const stats = stat(directory)
  let entries: Names | undefined
  if (stats?.isDirectory() === true) {
    const stamp = `${stats.dev}:${stats.ino}:${stats.mtimeMs}:${stats.ctimeMs}`
    if (stats.size > LISTED_BYTES) {
      listings.delete(directory)
      entries = lookedUp(directory, stamp)
      fresh.set(directory, entries)
      return entries
    }
    const known = listings.get(directory)
    if (known !== undefined && known.stamp === stamp) entries = known.entries
    else {
      const found = new Map<string, Kind>()
      try {
        for (const entry of readdirSync(directory, { withFileTypes: true })) {
          found.set(entry.name, kindOfEntry(entry))
        }
        entries = listedNames(found)
        listings.set(directory, { stamp, entries })
        unlisted.delete(directory)
      } catch {
        // Unreadable (searchable, not listable: mode 711): each name asked is looked up, as in a large folder.
        listings.delete(directory)
        entries = lookedUp(directory, stamp)
      }
    }
  }
  fresh.set(directory, entries)
  return entries
}

/** The files core loads from `directory`: its `tools/*.ts` and `plugins/*.ts`. */
export const rootsOf = (directory: string): ReadonlyArray<string> =>
  FOLDERS.flatMap((folder) => {
    try {
      return readdirSync(join(directory, folder))
        .filter((name) => name.endsWith(".ts") && !IGNORED.test(name))
        .sort()
        .map((name) => join(directory, folder, name))
    } catch {
      return []
    }
  })

const transpilers = new Map<string, Bun.Transpiler>()
const transpilerFor = (file: string): Bun.Transpiler => {
  const extension = extname(file)
  // Bun runs JSX in a .js file (not in .mjs or .cjs), and imports its runtime for it: scanned as JSX.
  const loader = extension === ".tsx" ? "tsx" : extension === ".jsx" || extension === ".js" ? "jsx" : /\.[mc]js$/.test(extension) ? "js" : "ts"
  let transpiler = transpilers.get(loader)
  if (transpiler === undefined) {
    transpiler = new Bun.Transpiler({ loader })
    transpilers.set(loader, transpiler)
  }
  return transpiler
}

/** Each scanned file's specifiers, kept while its identity and change time stay the same. */
const scanned = new Map<string, { readonly stamp: string; readonly specifiers: ReadonlyArray<string>; readonly large: boolean }>()

const stampOf = (stats: Stats) => `${stats.dev}:${stats.ino}:${stats.ctimeMs}:${stats.size}`

/**
 * Loads the transpiler's scan does not list, and the words a file making one cannot do without: any `require` but
 * its plain call with a literal (`module.require`, `(0, require)(…)`, `require.call`, an alias, `createRequire`,
 * `require.resolve`, `Module._load`), `import.meta` (however spaced: its `require`, `resolve`, and the URL or
 * directory a path is made from) and `__dirname`/`__filename`, a `Worker` (of `node:worker_threads` too, under any
 * name), a native library (`dlopen`, `bun:ffi`, `process.dlopen`), a program run on a file (`spawn`, `fork`,
 * `execFile`, `child_process`, Bun's `$` shell), Bun's own builds and plugins (`Bun.build`, `Bun.plugin`,
 * `Bun.Transpiler`). Where a file makes one, what it loads is a string somewhere in it, or a path it puts together
 * from its own folder (`import.meta.dir + "/x.ts"`, `join(__dirname, "sub", "x.ts")`): see `namedIn`.
 */
const LOADS =
  /\b(?:create)?[Rr]equire\b|\bimport\s*(?:\/\*[\s\S]*?\*\/\s*)*\.\s*meta\b|\b__(?:dirname|filename)\b|\bWorker\b|\bworker_threads\b|\bdlopen\b|\bbun:ffi\b|\bspawn(?:Sync)?\b|\bfork\b|\bexecFile(?:Sync)?\b|\bchild_process\b|\$\s*`|\bBun\s*\.\s*(?:\$|build|plugin|Transpiler)\b|\bModule\b|\b_load\b/

/**
 * Among a file's specifiers, that it makes a load no string need name whole (LOADS): its folder is protected whole
 * (unless it is a Location's or the home's own folder, or one above: then only what its strings name).
 */
const OWN_FOLDER = "\0folder"

/**
 * The names of files of code or scripts anywhere in a file's text (a literal, a piece of a path put together, a
 * template's fixed part): in a file making a load of its own, each is taken as a file of its folder too.
 */
const FILE_NAMES = /[\w@.\/-]*\.(?:[cm]?[jt]sx?|json|node|so|dylib|dll|wasm|sh|bash|zsh|py|rb|pl)\b/g

/**
 * String literals on one line, their value in group `v`, escapes as written: a double-quoted, a single-quoted, a
 * template without a substitution, and, so that a stray quote (in a comment, a regular expression) that pairs with a
 * real literal's opening quote hides nothing, a literal holding no quote of another kind. Each pass runs on its own.
 */
const LITERALS = [
  /"(?<v>(?:[^"\\\n]|\\.)*)"/g,
  /'(?<v>(?:[^'\\\n]|\\.)*)'/g,
  /`(?<v>(?:[^`\\\n$]|\\.|\$(?!\{))*)`/g,
  /(["'`])(?<v>(?:[^"'`\\\n$]|\\.)*)\1/g,
]

/**
 * A string that may name a module: a relative path, a `file:` URL, a subpath import (`#x`), a package's name (and a
 * path in it), or an absolute path to a source file (any absolute string would make "/" and "/tmp" places of code).
 */
const NAMING = /^(?:\.{1,2}\/|file:|#)|^@?[a-z0-9][\w.~-]*(?:\/.*)?$|^\/.*\.[cm]?[jt]sx?$/is

const ESCAPE = /\\(?:u\{([0-9a-f]+)\}|u([0-9a-f]{4})|x([0-9a-f]{2})|([0-7]{1,3})|([\s\S]))/gi
const SIMPLE: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f", v: "\v" }

/** A literal's value, its escapes read as JavaScript reads them (`"./\u0066mt.ts"` names `./fmt.ts`). */
const cooked = (raw: string): string =>
  raw.includes("\\")
    ? raw.replace(ESCAPE, (_, braced?: string, unicode?: string, hex?: string, octal?: string, other?: string) => {
        const code = braced ?? unicode ?? hex
        if (code !== undefined) {
          const point = Number.parseInt(code, 16)
          return point <= 0x10ffff ? String.fromCodePoint(point) : ""
        }
        if (octal !== undefined) return String.fromCharCode(Number.parseInt(octal, 8) & 0xff)
        return SIMPLE[other!] ?? (other === "\n" || other === "\r" || other === "\u2028" || other === "\u2029" ? "" : other!)
      })
    : raw

/**
 * Every string in `source` that may name a module, read without running anything of it: the transpiler's fuller
 * `scan` runs the macros a file imports (`with { type: "macro" }`), code of the file's, inside core.
 */
const stringsNamingIn = (source: string, into: Set<string>): void => {
  for (const literal of LITERALS) {
    for (const match of source.matchAll(literal)) {
      const value = cooked(match.groups!.v!)
      if (value !== "" && NAMING.test(value)) into.add(value)
    }
  }
}

/**
 * What `source` (of `file`) imports: the specifiers the transpiler finds (static, dynamic with a literal, require),
 * and, in a file making a load it cannot follow (LOADS), `named`: every string in it that may name a module, which
 * the closure follows as one (it then holds whatever they name, and at worst a few names nothing loads) but which
 * the file is not required to resolve (`"utf8"` is no package it needs).
 */
const specifiersIn = (file: string, source: string): { readonly imports: ReadonlyArray<string>; readonly named: ReadonlyArray<string> } => {
  const imports = transpilerFor(file).scanImports(source).map((entry) => entry.path)
  const loads = LOADS.test(source)
  return { imports, named: namedIn(source, imports, loads, loads) }
}

/**
 * A JSX pragma naming the package JSX is compiled against (`@jsxImportSource` and the package's name, in a comment):
 * Bun then imports its `jsx-dev-runtime` (or `jsx-runtime`), which the transpiler's scan does not list (it lists
 * `react`'s).
 */
const JSX_SOURCE = /@jsxImportSource\s+([^\s*]+)/g

/**
 * The specifiers the closure follows from `source`: `found`, the runtime of each JSX import source a pragma names,
 * and where `strings`, every string in it that may name a module (NAMING). Where `loads` (the file makes a load of
 * its own, LOADS), also OWN_FOLDER, and every file name in its text as a file of its folder (`./name`).
 */
const namedIn = (source: string, found: ReadonlyArray<string>, strings: boolean, loads = false): ReadonlyArray<string> => {
  const pragma = source.includes("@jsxImportSource")
  if (!strings && !pragma) return found
  const named = new Set(found)
  if (pragma) {
    for (const match of source.matchAll(JSX_SOURCE)) {
      named.add(`${match[1]}/jsx-runtime`)
      named.add(`${match[1]}/jsx-dev-runtime`)
    }
  }
  if (strings) stringsNamingIn(source, named)
  if (loads) {
    named.add(OWN_FOLDER)
    for (const [name] of source.matchAll(FILE_NAMES)) {
      const bare = name.replace(/^\/+/, "")
      if (bare !== "" && !bare.startsWith(".")) named.add(`./${bare}`)
    }
  }
  return [...named]
}

/**
 * What a file the transpiler's scan refuses may import: Bun may run it all the same (a class's `accessor` fails the
 * scan, not the runtime), so every string in it that may name a module. Never the transpiler's fuller `scan`, which
 * parses such a file but runs its macros: while a command ran, a file it made where a tool's import was missing
 * would have had its code run by core, outside the sandbox, as a check of another call read the closure.
 */
const guessedIn = (source: string): ReadonlyArray<string> => namedIn(source, [], true)

/**
 * The most of one file the closure reads. A command can make a file where a tool's import is missing, sparse and of
 * any size, and another call's check reads the closure while the command runs: read whole, 1.5 GB of it held core's
 * thread for 10 s and took as much memory. No module or package.json is near this large.
 */
export const MAX_READ_BYTES = 64 * 1_024 * 1_024

/** A file the closure did not read for its size: set by each read in `of`, which then cannot be complete. */
let tooLarge: string | undefined

/** The text of `file`, a regular file, read whole; where it is larger than MAX_READ_BYTES, `tooLarge` is set. */
const textOf = (file: string): string | undefined => {
  const text = FileText.read(file, MAX_READ_BYTES)
  if (text !== FileText.LARGE) return text
  tooLarge = file
  return undefined
}

/** The specifiers the closure follows from a source file (`specifiersIn`, named); none when it cannot be read. */
export const specifiersOf = (file: string, stated?: Stats): ReadonlyArray<string> => {
  const stats = stated ?? statOf(file, true)
  if (stats === undefined || !stats.isFile()) return []
  const stamp = stampOf(stats)
  const known = scanned.get(file)
  if (known !== undefined && known.stamp === stamp) {
    if (known.large) tooLarge = file
    return known.specifiers
  }
  // Unreadable, core cannot load it either: it imports nothing. Too large, it is not read: `tooLarge` says so.
  const source = textOf(file)
  let specifiers: ReadonlyArray<string> = []
  if (source !== undefined) {
    try {
      specifiers = specifiersIn(file, source).named
    } catch {
      // Not a file core loads as a tool (discovery refuses it), but one a tool imports may be run by Bun anyway.
      specifiers = guessedIn(source)
    }
  }
  scanned.set(file, { stamp, specifiers, large: tooLarge === file })
  return specifiers
}

/**
 * Scans `source`, read from `file` after `stats` were taken, and remembers the specifiers the closure follows from
 * it (discovery's own scan before it imports a file, so its closure need not read it again); answers its imports,
 * which must resolve. Throws the transpiler's error on a syntax error. Stats taken before reading make a file
 * changed meanwhile look changed, so it is scanned again.
 */
export const scan = (file: string, source: string, stats: Stats | undefined): ReadonlyArray<string> => {
  const { imports, named } = specifiersIn(file, source)
  if (stats?.isFile() === true) scanned.set(file, { stamp: stampOf(stats), specifiers: named, large: false })
  return imports
}

/**
 * The names the resolver tries for a relative specifier, in its order: the first that exists is loaded, so it and
 * every missing one before it are what a change could redirect. For `./x.js` the TypeScript sources are tried too.
 */
const candidatesOf = (base: string): ReadonlyArray<string> => {
  const extension = extname(base)
  const stem = base.slice(0, base.length - extension.length)
  return [
    base,
    ...EXTENSIONS.map((each) => base + each),
    ...(extension === "" ? [] : EXTENSIONS.map((each) => stem + each)),
    join(base, "package.json"),
    ...EXTENSIONS.map((each) => join(base, `index${each}`)),
  ]
}

/** node:module is loaded only for a bare specifier that is not one of core's (as discovery does). */
let isBuiltin: ((specifier: string) => boolean) | undefined
const builtin = (specifier: string): boolean =>
  (isBuiltin ??= (require("node:module") as typeof import("node:module")).isBuiltin)(specifier)

/**
 * Specifiers core serves itself (exactly those: `effect/cli` is not, and loads the Location's node_modules) or that
 * name no file: nothing of the Location is reached through them.
 */
const served = (specifier: string): boolean =>
  specifier === "bun" || Served.isServed(specifier) || /^[a-z]+:/.test(specifier) || builtin(specifier)

/** The path a `file:` URL names, or undefined where it names none. */
const pathOfUrl = (specifier: string): string | undefined => {
  try {
    return fileURLToPath(specifier)
  } catch {
    return undefined
  }
}

/** The package name of a bare specifier (`a/b` → `a`, `@s/a/b` → `@s/a`). */
const packageOf = (specifier: string): string => {
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!
}

/** The directories from `from` up to the root of the file system. */
const ancestors = (from: string): Array<string> => {
  const found: Array<string> = []
  for (let current = from; ; current = dirname(current)) {
    found.push(current)
    if (dirname(current) === current) return found
  }
}

/** The dependencies a package's package.json names (read once while it stays the same: manifestOf). */
const dependenciesOf = (directory: string): ReadonlyArray<string> => {
  const json = manifestOf(join(directory, "package.json"))
  if (json === undefined) return []
  return [
    ...new Set(
      ["dependencies", "optionalDependencies", "peerDependencies"].flatMap((key) => {
        const value = json[key]
        return typeof value === "object" && value !== null ? Object.keys(value) : []
      }),
    ),
  ]
}

/** A package.json's fields that name files (`main`, `module`, `exports`, `imports`), kept while it stays the same. */
const manifests = new Map<string, { readonly stamp: string; readonly json: Record<string, unknown> | undefined; readonly large: boolean }>()

const manifestOf = (file: string): Record<string, unknown> | undefined => {
  const stats = statOf(file, true)
  if (stats === undefined || !stats.isFile()) return undefined
  const stamp = stampOf(stats)
  const known = manifests.get(file)
  if (known !== undefined && known.stamp === stamp) {
    if (known.large) tooLarge = file
    return known.json
  }
  let json: Record<string, unknown> | undefined
  try {
    const parsed: unknown = JSON.parse(textOf(file) ?? "")
    json = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined
  } catch {
    json = undefined
  }
  manifests.set(file, { stamp, json, large: tooLarge === file })
  return json
}

/** Every string a package.json value holds (an `exports` or `imports` map's targets under every condition). */
const stringsIn = (value: unknown, found: Array<string> = [], depth = 0): Array<string> => {
  if (typeof value === "string") found.push(value)
  else if (depth < 32 && typeof value === "object" && value !== null) {
    for (const each of Array.isArray(value) ? value : Object.values(value)) stringsIn(each, found, depth + 1)
  }
  return found
}

/**
 * The closure of `roots` (files core loads): every path it reaches, with the root that first reached it. The roots
 * themselves are not included. `complete` is false when MAX_FOLLOWED was reached, or a file of it was not read for
 * its size (`unread`: the first).
 */
export const of = (
  roots: ReadonlyArray<string>,
): { readonly reached: ReadonlyArray<Reached>; readonly complete: boolean; readonly unread?: string } => {
  tooLarge = undefined
  const reached = new Map<string, Reached>()
  const rooted = new Set(roots)
  const seen = new Set<string>(roots)
  const fresh = new Map<string, Names | undefined>()
  const files: Array<{ readonly file: string; readonly by: string }> = roots.map((file) => ({ file, by: file }))
  /** The Locations and homes whose tool and plugin files the roots are: never protected whole for a load of a file. */
  const bases = [...new Set(roots.map((root) => dirname(dirname(root))))]
  const packages: Array<{ readonly directory: string; readonly by: string }> = []
  const looked = new Set<string>()
  const configured = new Set<string>()
  let budget = MAX_FOLLOWED
  /** Files' and folders' stats, taken once per closure: who a file is, and whether its scan still holds. */
  const stated = new Map<string, Stats | undefined>()
  const statFresh = (path: string, follow: boolean) => {
    const key = `${follow ? "" : "l"}${path}`
    if (!stated.has(key)) stated.set(key, statOf(path, follow))
    return stated.get(key)
  }
  const followed = (path: string) => statFresh(path, true)
  /** What is at `path` now, from its directory's entries. */
  const kindOf = (path: string): Kind | undefined => entriesOf(dirname(path), fresh, followed)?.get(basename(path))
  const reach = (path: string, by: string, kind: Kind | undefined) => {
    if (reached.has(path) || rooted.has(path)) return
    const stats = kind === undefined ? undefined : statFresh(path, kind === "link" ? false : true)
    reached.set(path, { path, by, identity: stats === undefined ? undefined : { dev: stats.dev, ino: stats.ino, born: stats.birthtimeMs } })
  }
  /** Where `path` really is, when a symbolic link leads elsewhere: protected there too. */
  const follow = (path: string, kind: Kind, by: string): string => {
    if (kind !== "link") return path
    const real = realOf(path)
    reach(real, by, statFresh(real, true)?.isDirectory() === true ? "directory" : "file")
    return real
  }
  /** A package looked up from `from` as Node and Bun do: the nearest node_modules that holds it. */
  const lookUp = (name: string, from: string, by: string) => {
    const key = `${from}\0${name}`
    if (looked.has(key)) return
    looked.add(key)
    for (const directory of ancestors(from)) {
      // A node_modules folder is never searched inside another's own name (`node_modules/node_modules`).
      if (basename(directory) === "node_modules") continue
      const candidate = join(directory, "node_modules", name)
      const kind = kindOf(candidate)
      // Nearer places, missing now, are protected too: one planted there would be found first.
      reach(candidate, by, kind)
      // A file of the package's name (`node_modules/leftpad.js`) is loaded for it as a relative import's file is:
      // each such name is protected, and one that is there followed to its imports.
      let file = false
      for (const each of EXTENSIONS) {
        const path = candidate + each
        const found = kindOf(path)
        reach(path, by, found)
        if (found !== undefined && found !== "directory" && !file) file = loads(path, found, by, 0)
      }
      // With a folder beside it as well, both are followed (which one the resolver takes is its own affair).
      if (kind === undefined && file) return
      if (kind === undefined) continue
      const real = follow(candidate, kind, by)
      if (!seen.has(real)) {
        seen.add(real)
        packages.push({ directory: real, by })
      }
      return
    }
  }
  /**
   * A file a package.json maps to (`target`, from `directory`): a relative one is resolved as a relative import, a
   * pattern (`./src/*.js`) protects the folder its fixed part names whole, a bare one is a package looked up.
   */
  const mapped = (target: string, directory: string, by: string, depth: number) => {
    if (target.startsWith("#")) return
    const star = target.indexOf("*")
    if (star !== -1) {
      const fixed = target.slice(0, star)
      const folder = fixed.endsWith("/") ? fixed : dirname(fixed)
      if (folder.startsWith(".") || folder.startsWith("/")) reach(resolve(directory, folder), by, kindOf(resolve(directory, folder)))
      return
    }
    if (target.startsWith(".") || target.startsWith("/")) relative(resolve(directory, target), by, depth + 1)
    else if (!served(target)) lookUp(packageOf(target), directory, by)
  }
  /**
   * A relative specifier resolved from `base` as the resolver does: the first name that exists is loaded, so it and
   * every missing one before it are reached. A folder's package.json is followed to the files it names (`main`,
   * `module`, `exports`): the resolver loads those instead of its index.
   */
  const relative = (base: string, by: string, depth: number): void => {
    const candidates = candidatesOf(base)
    for (let index = 0; index < candidates.length; index++) {
      const candidate = candidates[index]!
      const kind = kindOf(candidate)
      // A folder is looked into (its package.json, its index), never protected whole.
      if (kind === "directory") continue
      reach(candidate, by, kind)
      if (kind !== undefined) {
        if (loads(candidate, kind, by, depth)) break
        continue
      }
      // Bun's resolver finds a name ignoring case: where the specifier's own name is missing, another spelling of it
      // is loaded (`FMT.ts` for `./fmt.ts`), so each one there is followed. (Another candidate's spelling, `FMT.tsx`
      // for `./fmt`, is found and then fails to load: the name tried is read.)
      if (index !== 0) continue
      let loaded = false
      for (const [name, each] of entriesOf(dirname(candidate), fresh, followed)?.like(basename(candidate)) ?? []) {
        if (each === "directory") continue
        const path = join(dirname(candidate), name)
        reach(path, by, each)
        if (loads(path, each, by, depth)) loaded = true
      }
      if (loaded) break
    }
  }
  /**
   * The file at `candidate` (of kind `kind`) loaded: followed to its imports, or a folder's package.json to the files
   * it names. Whether the resolver stops there (a package.json may name no entry, when its index is loaded).
   */
  const loads = (candidate: string, kind: Kind, by: string, depth: number): boolean => {
    const real = follow(candidate, kind, by)
    if (statFresh(real, true)?.isFile() !== true) return false
    if (basename(candidate) === "package.json") {
      const json = depth < 8 ? manifestOf(real) : undefined
      for (const key of ["main", "module", "exports"]) {
        for (const target of stringsIn(json?.[key])) mapped(target.startsWith(".") || target.startsWith("/") ? target : `./${target}`, dirname(candidate), by, depth)
      }
      return false
    }
    if (!seen.has(real)) {
      seen.add(real)
      files.push({ file: real, by })
    }
    return true
  }
  /**
   * The nearest package.json above `from` (every one nearer, missing now, is reached too: one planted there would
   * decide), with the folder it is in; reached, and read, once per folder.
   */
  const nearest = (from: string, by: string): { readonly json: Record<string, unknown> | undefined; readonly ancestor: string } | undefined => {
    for (const ancestor of ancestors(from)) {
      const manifest = join(ancestor, "package.json")
      const kind = kindOf(manifest)
      reach(manifest, by, kind)
      if (kind !== undefined) return { json: manifestOf(manifest), ancestor }
    }
    return undefined
  }
  /** A subpath import (`#internal`): mapped by the `imports` of the nearest package.json, to each file it may name. */
  const subpath = (from: string, by: string) => {
    const key = `#\0${from}`
    if (looked.has(key)) return
    looked.add(key)
    const found = nearest(from, by)
    if (found !== undefined) for (const target of stringsIn(found.json?.imports)) mapped(target, found.ancestor, by, 0)
  }
  /**
   * A bare import of `name` from `from` is resolved first as the package the file is part of, when the nearest
   * package.json is named so (a self-reference): the files its `exports` (or `main`, `module`) name are loaded then,
   * before any node_modules is searched. That package.json decides whatever the name, so it is reached for every
   * bare import, and followed where its name is the one imported.
   */
  const selfReference = (name: string, from: string, by: string) => {
    const key = `@\0${from}\0${name}`
    if (looked.has(key)) return
    looked.add(key)
    const found = nearest(from, by)
    if (found?.json?.name !== name) return
    for (const field of ["exports", "main", "module"]) {
      for (const target of stringsIn(found.json[field])) mapped(target.startsWith(".") || target.startsWith("/") ? target : `./${target}`, found.ancestor, by, 0)
    }
  }
  // A tool file that is a symbolic link is loaded from where it leads (its imports resolved from there): that file
  // is code core runs too.
  for (const [index, root] of roots.entries()) {
    if (statFresh(root, false)?.isSymbolicLink() !== true) continue
    const real = follow(root, "link", root)
    seen.add(real)
    files[index] = { file: real, by: root }
  }
  while ((files.length > 0 || packages.length > 0) && budget-- > 0) {
    const pkg = packages.pop()
    if (pkg !== undefined) {
      for (const name of dependenciesOf(pkg.directory)) lookUp(name, pkg.directory, pkg.by)
      // A package may load one it does not name (hoisted beside it, an optional peer, pnpm's hidden hoisting): every
      // node_modules its files would search is protected whole, missing ones too (one made there would be loaded).
      for (const ancestor of ancestors(dirname(pkg.directory))) {
        if (basename(ancestor) === "node_modules") continue
        const folder = join(ancestor, "node_modules")
        reach(folder, pkg.by, kindOf(folder))
      }
      continue
    }
    const { file, by } = files.pop()!
    if (!SOURCE.test(file)) continue
    const directory = dirname(file)
    let bare = false
    for (const specifier of specifiersOf(file, statFresh(file, true))) {
      if (specifier === OWN_FOLDER) {
        if (!bases.some((base) => base === directory || base.startsWith(directory.endsWith(sep) ? directory : directory + sep))) {
          reach(directory, by, "directory")
        }
        continue
      }
      if (specifier.startsWith(".") || specifier.startsWith("/")) {
        relative(resolve(directory, specifier), by, 0)
        continue
      }
      // A file URL names a path as an absolute specifier does.
      if (specifier.startsWith("file:")) {
        const path = pathOfUrl(specifier)
        if (path !== undefined) relative(path, by, 0)
        continue
      }
      if (specifier.startsWith("#")) {
        subpath(directory, by)
        continue
      }
      if (served(specifier)) continue
      bare = true
      selfReference(packageOf(specifier), directory, by)
      lookUp(packageOf(specifier), directory, by)
    }
    // A bare name may be mapped by a tsconfig.json (its `paths`) before any node_modules is searched: the nearest
    // one decides, and a nearer one added later would.
    if (bare && !configured.has(directory)) {
      configured.add(directory)
      for (const ancestor of ancestors(directory)) {
        const config = join(ancestor, "tsconfig.json")
        const kind = kindOf(config)
        reach(config, by, kind)
        reach(join(ancestor, "jsconfig.json"), by, kindOf(join(ancestor, "jsconfig.json")))
        if (kind !== undefined) break
      }
    }
  }
  const unread = tooLarge
  tooLarge = undefined
  return {
    reached: [...reached.values()],
    complete: files.length === 0 && packages.length === 0 && unread === undefined,
    ...(unread === undefined ? {} : { unread }),
  }
}
