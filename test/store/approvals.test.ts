import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Approvals } from "../../src/store/approvals"
import { PostgresStore } from "../../src/store/postgres-store"
import { SqliteStore } from "../../src/store/sqlite-store"
import { Project } from "../../src/store/project"
import type { Store } from "../../src/store/store"
import { freshDatabase } from "../support/postgres"
import { tempDir } from "../support/temp"

const implementations: ReadonlyArray<[string, () => Layer.Layer<Approvals.Service, Store.StoreError>]> = [
  ["memory", () => Approvals.layerMemory],
  ["sqlite", () => SqliteStore.approvalsLayer(join(tempDir(), "core.db"))],
  ["postgres", () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.approvalsLayer(urls.postgres))))],
  [
    "postgres through pgbouncer",
    () => Layer.unwrap(Effect.promise(freshDatabase).pipe(Effect.map((urls) => PostgresStore.approvalsLayer(urls.pgbouncer)))),
  ],
]

const use = <A, E>(layer: Layer.Layer<Approvals.Service, Store.StoreError>, program: Effect.Effect<A, E, Approvals.Service>) =>
  Effect.runPromise(program.pipe(Effect.provide(layer)))

const pairs = (approvals: ReadonlyArray<Approvals.Approval>) => approvals.map((approval) => [approval.action, approval.pattern])

for (const [name, make] of implementations) {
  describe(`Approvals contract (${name})`, () => {
    test("saves patterns per project and action, once each", () =>
      use(make(), Effect.gen(function* () {
        const approvals = yield* Approvals.Service
        yield* approvals.save("/a", "bash", ["git checkout *", "ls *"])
        yield* approvals.save("/a", "bash", ["ls *"])
        yield* approvals.save("/a", "edit", ["src/*"])
        yield* approvals.save("/b", "bash", ["rm *"])
        expect(pairs(yield* approvals.list("/a")).sort()).toEqual([["bash", "git checkout *"], ["bash", "ls *"], ["edit", "src/*"]])
        expect(pairs(yield* approvals.list("/b"))).toEqual([["bash", "rm *"]])
        expect(yield* approvals.list("/c")).toEqual([])
      })))

    test("reset clears one action or all of a project's approvals, and says how many", () =>
      use(make(), Effect.gen(function* () {
        const approvals = yield* Approvals.Service
        yield* approvals.save("/a", "bash", ["ls *", "cat *"])
        yield* approvals.save("/a", "edit", ["src/*"])
        yield* approvals.save("/b", "bash", ["ls *"])
        expect(yield* approvals.reset("/a", "bash")).toBe(2)
        expect(pairs(yield* approvals.list("/a"))).toEqual([["edit", "src/*"]])
        expect(yield* approvals.reset("/a")).toBe(1)
        expect(yield* approvals.list("/a")).toEqual([])
        expect(pairs(yield* approvals.list("/b"))).toEqual([["bash", "ls *"]])
      })))

    test("an approval records who approved it and when", () =>
      use(make(), Effect.gen(function* () {
        const approvals = yield* Approvals.Service
        const before = Date.now()
        yield* approvals.save("/a", "bash", ["ls *"])
        const [saved] = yield* approvals.list("/a")
        expect(saved?.approvedBy).toBe(Approvals.approver())
        expect(saved!.savedAt).toBeGreaterThanOrEqual(before - 1_000)
        expect(saved!.savedAt).toBeLessThanOrEqual(Date.now() + 1_000)
      })))
  })
}

describe("Approvals.approver", () => {
  test("is $CORE_USER when set, else the OS user at this host", () => {
    expect(Approvals.approver({ CORE_USER: " alice@acme " })).toBe("alice@acme")
    // The OS user by its passwd name, with or without $USER (Bun's userInfo() says "unknown" without it).
    const name = Bun.spawnSync(["id", "-un"]).stdout.toString().trim()
    expect(Approvals.approver({ CORE_USER: "" })).toBe(`${name}@${hostname()}`)
    const saved = process.env.USER
    delete process.env.USER
    try {
      expect(Approvals.approver({})).toBe(`${name}@${hostname()}`)
    } finally {
      if (saved !== undefined) process.env.USER = saved
    }
  })
})

/** A git checkout at a fresh path whose `origin` is `remote`. */
const checkout = (remote: string | undefined) => {
  const root = tempDir()
  mkdirSync(join(root, ".git"))
  writeFileSync(
    join(root, ".git", "config"),
    `[core]\n\tbare = false\n${remote === undefined ? "" : `[remote "origin"]\n\turl = ${remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`}`,
  )
  mkdirSync(join(root, "services", "api"), { recursive: true })
  return root
}

describe("Approvals for a team (Postgres)", () => {
  test("an approval saved on one host holds on every host serving a checkout of the same repository, wherever it is", async () => {
    const { pgbouncer } = await freshDatabase()
    const alice = checkout("git@github.com:Acme/shop.git")
    const bob = checkout("https://bob:token@GitHub.com/Acme/shop")
    const other = checkout("git@github.com:Acme/other.git")
    const plain = tempDir()
    await use(PostgresStore.approvalsLayer(pgbouncer, { approvedBy: "alice@host-a" }), Effect.gen(function* () {
      const approvals = yield* Approvals.Service
      yield* approvals.save(alice, "bash", ["npm test"])
      yield* approvals.save(join(alice, "services", "api"), "edit", ["src/*"])
      yield* approvals.save(plain, "bash", ["ls *"])
    }))
    const seen = await use(PostgresStore.approvalsLayer(pgbouncer, { approvedBy: "bob@host-b" }), Effect.gen(function* () {
      const approvals = yield* Approvals.Service
      return {
        root: yield* approvals.list(bob),
        sub: yield* approvals.list(join(bob, "services", "api")),
        other: yield* approvals.list(other),
        plain: yield* approvals.list(plain),
        elsewhere: yield* approvals.list(tempDir()),
      }
    }))
    expect(seen.root).toMatchObject([{ project: "git:github.com/Acme/shop", action: "bash", pattern: "npm test", approvedBy: "alice@host-a" }])
    expect(seen.sub).toMatchObject([{ project: "git:github.com/Acme/shop//services/api", action: "edit", pattern: "src/*" }])
    expect(seen.other).toEqual([])
    expect(seen.plain).toMatchObject([{ project: `path:${plain}`, pattern: "ls *" }])
    expect(seen.elsewhere).toEqual([])
  })
})

describe("Project identity", () => {
  test("every spelling of a remote is one project", () => {
    for (const url of [
      "git@github.com:Acme/shop.git",
      "https://github.com/Acme/shop",
      "https://user:secret@GITHUB.com/Acme/shop.git/",
      "ssh://git@github.com:22/Acme/shop.git",
      "git://github.com/Acme/shop",
    ]) {
      expect(Project.normalizeRemote(url)).toBe("github.com/Acme/shop")
    }
    expect(Project.normalizeRemote("/srv/git/shop.git")).toBe("file:/srv/git/shop")
    expect(Project.normalizeRemote("file:///srv/git/shop.git")).toBe("file:/srv/git/shop")
  })

  // An identity shared by a fleet must name one repository for every host: text that names different repositories
  // in different places, or that a parser resolves to another repository's path, gives none (the path holds).
  test("a remote that names no one repository gives no identity; a path's slashes cannot pass for a subfolder", () => {
    for (const url of [
      "../shop",
      "./shop.git",
      "shop",
      "https://github.com/evil/%2e%2e/Acme/shop",
      "https://github.com/evil/../Acme/shop",
      "git@github.com:evil/../Acme/shop.git",
      "ssh://git@github.com/evil/%2E%2e/Acme/shop",
      "/srv/git/evil/../shop.git",
      "file:///srv/git/evil/%2e%2e/shop",
    ]) {
      expect([url, Project.normalizeRemote(url)]).toEqual([url, undefined])
    }
    expect(Project.normalizeRemote("https://github.com/Acme/shop//services/api")).toBe("github.com/Acme/shop/services/api")
    expect(Project.normalizeRemote("git@github.com:Acme//shop.git")).toBe("github.com/Acme/shop")
    expect(Project.normalizeRemote("https://github.com/Acme/shop.v2")).toBe("github.com/Acme/shop.v2")
    const relative = checkout("../shop")
    expect(Project.identityOf(relative)).toBe(`path:${relative}`)
    const subfolderLike = checkout("https://github.com/Acme/shop//services/api")
    expect(Project.identityOf(subfolderLike)).toBe("git:github.com/Acme/shop/services/api")
  })

  test("a credential in a remote URL never becomes part of the identity", () => {
    expect(Project.identityOf(checkout("https://ci:ghp_secret123@github.com/Acme/shop.git"))).toBe("git:github.com/Acme/shop")
  })

  test("a worktree is its repository's project; a repository without a remote, or no repository, is its path", () => {
    const main = checkout("git@github.com:Acme/shop.git")
    const worktree = tempDir()
    mkdirSync(join(main, ".git", "worktrees", "w"), { recursive: true })
    writeFileSync(join(main, ".git", "worktrees", "w", "commondir"), "../..\n")
    writeFileSync(join(worktree, ".git"), `gitdir: ${join(main, ".git", "worktrees", "w")}\n`)
    expect(Project.identityOf(worktree)).toBe("git:github.com/Acme/shop")
    const local = checkout(undefined)
    expect(Project.identityOf(local)).toBe(`path:${local}`)
    const none = tempDir()
    expect(Project.identityOf(none)).toBe(`path:${none}`)
  })
})

describe("SqliteStore approvals", () => {
  test("approvals survive reopening and live beside the settlements in one database", async () => {
    const path = join(tempDir(), "core.db")
    await use(SqliteStore.approvalsLayer(path), Effect.gen(function* () {
      yield* (yield* Approvals.Service).save("/a", "bash", ["ls *"])
    }))
    const both = Layer.merge(SqliteStore.approvalsLayer(path), SqliteStore.layer(path))
    const listed = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* Approvals.Service).list("/a")
      }).pipe(Effect.provide(both)),
    )
    expect(pairs(listed)).toEqual([["bash", "ls *"]])
  })
})
