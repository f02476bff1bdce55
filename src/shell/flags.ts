export * as Flags from "./flags"

// Equivalent spellings of the same flags, for the commands core knows: `rm -fr x`, `rm -r -f x`, `rm -Rf x` and
// `rm --recursive --force x` are one command, so a rule written in any of those spellings must meet all of them.
// Pure: it lists the other spellings of a command's text; ../builtin/bash.ts decides what they are checked for.

/** One flag: its short letters (the first is the usual one) and its long name, any of which means it. */
interface Flag {
  readonly short: string
  readonly long: string | undefined
}

const flag = (short: string, long?: string): Flag => ({ short, long })

/** Flags that take no value, by command (and subcommand); a command given any other option is left as written. */
export const TABLE: Readonly<Record<string, ReadonlyArray<Flag>>> = {
  rm: [flag("rR", "--recursive"), flag("f", "--force"), flag("i"), flag("I"), flag("d", "--dir"), flag("v", "--verbose")],
  cp: [
    flag("rR", "--recursive"), flag("f", "--force"), flag("a", "--archive"), flag("i", "--interactive"),
    flag("n", "--no-clobber"), flag("p"), flag("l", "--link"), flag("s", "--symbolic-link"), flag("u", "--update"),
    flag("v", "--verbose"), flag("L", "--dereference"), flag("P", "--no-dereference"),
  ],
  mv: [flag("f", "--force"), flag("i", "--interactive"), flag("n", "--no-clobber"), flag("u", "--update"), flag("v", "--verbose")],
  ln: [flag("s", "--symbolic"), flag("f", "--force"), flag("n", "--no-dereference"), flag("r", "--relative"), flag("v", "--verbose"), flag("i", "--interactive")],
  chmod: [flag("R", "--recursive"), flag("v", "--verbose"), flag("f", "--silent"), flag("c", "--changes")],
  chown: [flag("R", "--recursive"), flag("v", "--verbose"), flag("f", "--silent"), flag("c", "--changes"), flag("h", "--no-dereference")],
  chgrp: [flag("R", "--recursive"), flag("v", "--verbose"), flag("f", "--silent"), flag("c", "--changes"), flag("h", "--no-dereference")],
  mkdir: [flag("p", "--parents"), flag("v", "--verbose")],
  rmdir: [flag("p", "--parents"), flag("v", "--verbose")],
  shred: [flag("u"), flag("z", "--zero"), flag("f", "--force"), flag("v", "--verbose")],
  "git push": [flag("f", "--force"), flag("u", "--set-upstream"), flag("n", "--dry-run"), flag("q", "--quiet"), flag("v", "--verbose"), flag("", "--force-with-lease"), flag("", "--all"), flag("", "--tags"), flag("", "--mirror"), flag("", "--no-verify"), flag("d", "--delete")],
  "git reset": [flag("", "--hard"), flag("", "--soft"), flag("", "--mixed"), flag("", "--keep"), flag("", "--merge"), flag("q", "--quiet")],
  "git clean": [flag("f", "--force"), flag("d"), flag("x"), flag("X"), flag("n", "--dry-run"), flag("q", "--quiet"), flag("i", "--interactive")],
  "git checkout": [flag("f", "--force"), flag("q", "--quiet"), flag("", "--ours"), flag("", "--theirs"), flag("m", "--merge")],
  "git switch": [flag("f", "--force"), flag("", "--discard-changes"), flag("q", "--quiet"), flag("d", "--detach")],
  "git restore": [flag("S", "--staged"), flag("W", "--worktree"), flag("q", "--quiet"), flag("", "--ours"), flag("", "--theirs")],
  "git branch": [flag("d", "--delete"), flag("D"), flag("f", "--force"), flag("r", "--remotes"), flag("a", "--all")],
  "git stash": [flag("a", "--all"), flag("u", "--include-untracked"), flag("k", "--keep-index"), flag("q", "--quiet")],
  "git commit": [flag("a", "--all"), flag("n", "--no-verify"), flag("", "--amend"), flag("q", "--quiet"), flag("v", "--verbose"), flag("s", "--signoff")],
}

/**
 * At most this many flags are spelled in every order; past it, each two of them first (in either order, the rest
 * as written), so that a rule naming two (`rm -rf *`) meets them however many more are given (`rm -vdfr x`).
 */
const MAX_PERMUTED = 3

/** Orders of `flags` past MAX_PERMUTED: as written, sorted, and each ordered pair first with the rest as written. */
const pairsFirst = <A>(flags: ReadonlyArray<A>, sorted: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => [
  flags,
  sorted,
  ...flags.flatMap((first) => flags.filter((second) => second !== first).map((second) => [first, second, ...flags.filter((each) => each !== first && each !== second)])),
]

const permutations = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> =>
  items.length <= 1
    ? [items]
    : items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]))

/** Every combination of one choice from each list. */
const product = (lists: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<ReadonlyArray<string>> =>
  lists.reduce<ReadonlyArray<ReadonlyArray<string>>>((acc, list) => acc.flatMap((done) => list.map((item) => [...done, item])), [[]])

/** The flag of `known` a short letter or a long name (`--force`) is, if any. */
const knownFlag = (known: ReadonlyArray<Flag>, letter: string): Flag | undefined =>
  known.find((candidate) => (letter.startsWith("--") ? candidate.long === letter : candidate.short.includes(letter)))

/** Whether `value` is an option word made only of flags of `known` (`-fr`, `--force`). */
const allKnown = (known: ReadonlyArray<Flag>, value: string): boolean =>
  value.startsWith("--")
    ? knownFlag(known, value) !== undefined
    : /^-[^-]/.test(value) && [...value.slice(1)].every((letter) => knownFlag(known, letter) !== undefined)

/**
 * The other spellings of a command's words (`values`: the command name, then its arguments' values; `texts`: the
 * same as written), or none when the command is not in TABLE. Options TABLE does not know (`--preserve-root`, a
 * letter of a group it does not know) and operands keep their written text, in their order, after the flags: the
 * spellings are only ever checked for a rule of their own that denies or asks, so one more is never a way around.
 */
export const variants = (values: ReadonlyArray<string | undefined>, texts: ReadonlyArray<string>, name: string): ReadonlyArray<string> => {
  const key = name === "git" && values[1] !== undefined ? `git ${values[1]}` : name
  const known = TABLE[key]
  if (known === undefined) return []
  const head = key.split(" ")
  const flags: Array<Flag> = []
  const operands: Array<string> = []
  /** Options TABLE does not know, as written. */
  const others: Array<string> = []
  let ended = false
  for (let index = head.length; index < values.length; index++) {
    const value = values[index]
    const text = texts[index]!
    if (ended || value === undefined || !value.startsWith("-") || value === "-") {
      // `git push origin +main` forces that ref, as `--force` does.
      const forced = key === "git push" && value !== undefined && /^\+[^+]/.test(value) && text === value
      if (forced && !flags.includes(known[0]!)) flags.push(known[0]!)
      operands.push(forced ? text.slice(1) : text)
      continue
    }
    if (value === "--") {
      ended = true
      operands.push(text)
      continue
    }
    const letters = value.startsWith("--") ? [value] : [...value.slice(1)]
    const unknown: Array<string> = []
    for (const letter of letters) {
      const found = knownFlag(known, letter)
      if (found === undefined) unknown.push(letter)
      else if (!flags.includes(found)) flags.push(found)
    }
    if (unknown.length === 0) continue
    others.push(unknown.length === letters.length ? text : `-${unknown.join("")}`)
    // An option it does not know may take the next word as its value (`git commit -m "-a fix"`): that word is kept
    // with it, unless it is plainly flags the table knows (`rm --preserve-root -fr x`).
    const next = values[index + 1]
    if (unknown.length === letters.length && !value.includes("=") && index + 1 < values.length && !(next !== undefined && allKnown(known, next))) {
      others.push(texts[++index]!)
    }
  }
  if (flags.length === 0) return []
  const orders =
    flags.length <= MAX_PERMUTED ? permutations(flags) : pairsFirst(flags, [...flags].sort((a, b) => (a.short + a.long).localeCompare(b.short + b.long)))
  const rest = [...others, ...operands]
  const tail = rest.length === 0 ? "" : ` ${rest.join(" ")}`
  const found = new Set<string>()
  for (const order of orders) {
    const shorts = order.every((item) => item.short !== "") ? product(order.map((item) => [...item.short])) : []
    for (const letters of shorts) {
      // The first k letters together, the rest apart: `-rf -v` meets a rule about `rm -rf *`.
      for (let k = letters.length; k >= 1; k--) {
        found.add(`${key} ${[`-${letters.slice(0, k).join("")}`, ...letters.slice(k).map((letter) => `-${letter}`)].join(" ")}${tail}`)
      }
    }
    // Long names, and each flag's usual spelling where it has no long one.
    const longs = order.map((item) => item.long ?? `-${item.short[0]}`)
    found.add(`${key} ${longs.join(" ")}${tail}`)
    // Mixed: the usual short letter where there is one, else the long name.
    found.add(`${key} ${order.map((item) => (item.short === "" ? item.long! : `-${item.short[0]}`)).join(" ")}${tail}`)
  }
  return [...found]
}
