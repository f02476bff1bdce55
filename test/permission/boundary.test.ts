import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { Boundary } from "../../src/permission/boundary"
import { tempDir } from "../support/temp"

// One tree for the whole file, read-only once built:
//   <base>/app            the Location (src/a.ts, notes.txt, links below)
//   <base>/app2           a sibling sharing the prefix
//   <base>/outside        a directory outside (b.txt)
//   <base>/data/outputs   a managed outputs directory (out.txt), and data/outputs2 beside it
// The temp dir may itself sit behind a symlink (/tmp on macOS), so expectations use real paths.
const base = tempDir("core-boundary-")
const location = join(base, "app")
const real = realpathSync.native(base)
const realApp = join(real, "app")
const realOutside = join(real, "outside")

for (const directory of ["app/src", "app2", "outside", "data/outputs", "data/outputs2"])
  mkdirSync(join(base, directory), { recursive: true })
writeFileSync(join(base, "app/src/a.ts"), "a")
writeFileSync(join(base, "app/notes.txt"), "notes")
writeFileSync(join(base, "app2/c.txt"), "c")
writeFileSync(join(base, "outside/b.txt"), "b")
writeFileSync(join(base, "data/outputs/out.txt"), "out")
writeFileSync(join(base, "data/outputs2/out.txt"), "out")
symlinkSync(join(base, "outside/b.txt"), join(base, "app/escape"))
symlinkSync(join(base, "app/src/a.ts"), join(base, "outside/back"))
symlinkSync(join(base, "outside"), join(base, "app/linkdir"))
symlinkSync(join(base, "app/src"), join(base, "app/inner"))
symlinkSync("../outside", join(base, "app/up"))
symlinkSync("../app/src", join(base, "outside/home"))
symlinkSync(join(base, "outside/nothing.txt"), join(base, "app/dangling"))
symlinkSync("loopB", join(base, "app/loopA"))
symlinkSync("loopA", join(base, "app/loopB"))
symlinkSync("self", join(base, "app/self"))
symlinkSync(join(base, "outside"), join(base, "data/outputs/elsewhere"))
symlinkSync(join(base, "data"), join(base, "datalink"))
symlinkSync(join(base, "app"), join(base, "via"))
symlinkSync("nowhere/../linkdir", join(base, "app/ghost"))

const resolve = (path: string, readableRoots?: ReadonlyArray<string>) =>
  Effect.runSync(Boundary.resolve(readableRoots === undefined ? { location, path } : { location, path, readableRoots }))

const reject = (path: string) => Effect.runSync(Effect.flip(Boundary.resolve({ location, path })))

describe("Boundary.resolve", () => {
  test("a relative path resolves against the Location and is inside", () => {
    expect(resolve("src/a.ts")).toEqual({
      requested: join(location, "src/a.ts"),
      real: join(realApp, "src/a.ts"),
      exists: true,
      kind: "file",
      inside: true,
      readable: true,
      externalDirectory: undefined,
      pattern: undefined,
      perProcess: false,
    })
  })

  test("the Location itself is inside and a directory", () => {
    const resolved = resolve(".")
    expect(resolved.real).toBe(realApp)
    expect(resolved.requested).toBe(location)
    expect(resolved.kind).toBe("directory")
    expect(resolved.inside).toBe(true)
  })

  test("trailing slashes, doubled slashes and . segments are normalised away", () => {
    const directory = resolve("./src/./")
    expect(directory.requested).toBe(join(location, "src"))
    expect(directory.real).toBe(join(realApp, "src"))
    expect(directory.kind).toBe("directory")
    expect(directory.inside).toBe(true)
    expect(resolve("src//./a.ts").real).toBe(join(realApp, "src/a.ts"))
  })

  test("a ../ escape is outside and asks about the file's directory", () => {
    const resolved = resolve("../outside/b.txt")
    expect(resolved.requested).toBe(join(base, "outside/b.txt"))
    expect(resolved.real).toBe(join(realOutside, "b.txt"))
    expect(resolved.inside).toBe(false)
    expect(resolved.readable).toBe(false)
    expect(resolved.externalDirectory).toBe(realOutside)
    expect(resolved.pattern).toBe(`${realOutside}/*`)
  })

  test("an outside directory asks about the directory itself", () => {
    const resolved = resolve("../outside")
    expect(resolved.kind).toBe("directory")
    expect(resolved.externalDirectory).toBe(realOutside)
    expect(resolved.pattern).toBe(`${realOutside}/*`)
  })

  test("an absolute path outside the Location is outside", () => {
    const resolved = resolve(join(base, "outside/b.txt"))
    expect(resolved.inside).toBe(false)
    expect(resolved.externalDirectory).toBe(realOutside)
  })

  test("an absolute path inside the Location is inside", () => {
    expect(resolve(join(location, "src/a.ts")).inside).toBe(true)
  })

  test("a sibling directory sharing the Location's prefix is outside", () => {
    const resolved = resolve(join(base, "app2/c.txt"))
    expect(resolved.inside).toBe(false)
    expect(resolved.externalDirectory).toBe(join(real, "app2"))
    expect(resolve("../app2").inside).toBe(false)
  })

  test("a symlink inside the Location whose target is outside is outside", () => {
    const resolved = resolve("escape")
    expect(resolved.requested).toBe(join(location, "escape"))
    expect(resolved.real).toBe(join(realOutside, "b.txt"))
    expect(resolved.kind).toBe("file")
    expect(resolved.inside).toBe(false)
    expect(resolved.externalDirectory).toBe(realOutside)
  })

  test("a symlink outside the Location whose target is inside is inside", () => {
    const resolved = resolve(join(base, "outside/back"))
    expect(resolved.real).toBe(join(realApp, "src/a.ts"))
    expect(resolved.inside).toBe(true)
    expect(resolved.externalDirectory).toBeUndefined()
    expect(resolve(join(base, "outside/home/a.ts")).inside).toBe(true)
  })

  test("a symlinked directory in the middle of the path is followed", () => {
    const out = resolve("linkdir/b.txt")
    expect(out.real).toBe(join(realOutside, "b.txt"))
    expect(out.inside).toBe(false)
    expect(out.externalDirectory).toBe(realOutside)
    const within = resolve("inner/a.ts")
    expect(within.real).toBe(join(realApp, "src/a.ts"))
    expect(within.inside).toBe(true)
  })

  test("a path through a process's own view of /proc says so, by name or by a link", () => {
    symlinkSync("/proc/self/fd/0", join(location, "stdin-link"))
    for (const path of ["/proc/self/cwd/core.json", "/proc/thread-self/root/etc", `/proc/${process.pid}/fd/1`, "/dev/stdin", "stdin-link"]) {
      expect(resolve(path).perProcess).toBe(true)
    }
    for (const path of ["/proc/cpuinfo", "/proc/selfish", "/dev/null", "src/a.ts"]) expect(resolve(path).perProcess).toBe(false)
  })
  test("a relative link target with .. is resolved from the link's directory", () => {
    const resolved = resolve("up/b.txt")
    expect(resolved.real).toBe(join(realOutside, "b.txt"))
    expect(resolved.inside).toBe(false)
  })

  test("a missing file inside resolves through its nearest existing ancestor and stays inside", () => {
    expect(resolve("src/new/deep.ts")).toEqual({
      requested: join(location, "src/new/deep.ts"),
      real: join(realApp, "src/new/deep.ts"),
      exists: false,
      kind: "missing",
      inside: true,
      readable: true,
      externalDirectory: undefined,
      pattern: undefined,
      perProcess: false,
    })
  })

  test("a missing path under a symlinked directory that leaves the Location is outside", () => {
    const resolved = resolve("linkdir/new/file.ts")
    expect(resolved.real).toBe(join(realOutside, "new/file.ts"))
    expect(resolved.exists).toBe(false)
    expect(resolved.inside).toBe(false)
    expect(resolved.externalDirectory).toBe(join(realOutside, "new"))
    expect(resolved.pattern).toBe(`${join(realOutside, "new")}/*`)
  })

  test("a dangling symlink leads to its missing target, not to a new file beside the link", () => {
    const resolved = resolve("dangling")
    expect(resolved.real).toBe(join(realOutside, "nothing.txt"))
    expect(resolved.exists).toBe(false)
    expect(resolved.inside).toBe(false)
    expect(resolved.externalDirectory).toBe(realOutside)
  })

  test("a link target stepping back out of a missing directory is still followed through later links", () => {
    const resolved = resolve("ghost/b.txt")
    expect(resolved.real).toBe(join(realOutside, "b.txt"))
    expect(resolved.inside).toBe(false)
  })

  test("a path under a file fails with not_a_directory naming the file", () => {
    const error = reject("notes.txt/child")
    expect(error._tag).toBe("Boundary.PathError")
    expect(error.reason).toBe("not_a_directory")
    expect(error.path).toBe("notes.txt/child")
    expect(error.ancestor).toBe(join(location, "notes.txt"))
    expect(error.message).toStartWith("Cannot use notes.txt/child: notes.txt is a file, not a directory.")
    const deeper = reject("src/a.ts/x/y")
    expect(deeper.ancestor).toBe(join(location, "src/a.ts"))
    expect(deeper.message).toStartWith("Cannot use src/a.ts/x/y: src/a.ts is a file, not a directory.")
  })

  test("a path under a symlink to a file fails with not_a_directory", () => {
    const error = reject("escape/child")
    expect(error.reason).toBe("not_a_directory")
    expect(error.ancestor).toBe(join(location, "escape"))
  })

  test("an empty path or a path with a NUL byte fails as invalid", () => {
    const empty = reject("")
    expect(empty.reason).toBe("invalid")
    expect(empty.message).toContain("empty path")
    const nul = reject("src/a\0.ts")
    expect(nul.reason).toBe("invalid")
    expect(nul.message).toContain("src/a\\0.ts")
    expect(nul.message).not.toContain("\0")
  })

  test("a path longer than the system takes fails as invalid at once, however many parts it has", () => {
    for (const path of ["a/".repeat(100_000), `${"ab".repeat(2_100)}.txt`, "é/".repeat(1_400)]) {
      const error = reject(path)
      expect(error.reason).toBe("invalid")
      expect(error.message).toContain("the system takes paths of at most 4095 bytes")
      // The message does not repeat the model's path.
      expect(error.message.length).toBeLessThan(200)
    }
    // As long as the system takes, a path resolves (to a file not there yet).
    const longest = "x/".repeat(Math.floor((4_095 - location.length - 8) / 2)) + "f.txt"
    expect(resolve(longest).exists).toBe(false)
  })

  test("symlink loops fail with loop instead of hanging", () => {
    for (const path of ["loopA", "loopB/child", "self", "src/../self"]) {
      const error = reject(path)
      expect(error.reason).toBe("loop")
      expect(error.message).toContain(path)
    }
  })

  test("a Location given through a symlink compares by its real path", () => {
    const through = Effect.runSync(Boundary.resolve({ location: join(base, "via"), path: "src/a.ts" }))
    expect(through.requested).toBe(join(base, "via/src/a.ts"))
    expect(through.real).toBe(join(realApp, "src/a.ts"))
    expect(through.inside).toBe(true)
    const escaped = Effect.runSync(Boundary.resolve({ location: join(base, "via"), path: "escape" }))
    expect(escaped.inside).toBe(false)
  })

  test("a readable root outside the Location makes its contents readable but not inside", () => {
    const outputs = join(base, "data/outputs")
    const kept = resolve(join(outputs, "out.txt"), [outputs])
    expect(kept.inside).toBe(false)
    expect(kept.readable).toBe(true)
    expect(kept.externalDirectory).toBe(join(real, "data/outputs"))
    expect(resolve(join(outputs, "out.txt")).readable).toBe(false)
  })

  test("readable roots compare by real path and by segment", () => {
    const outputs = join(base, "data/outputs")
    expect(resolve(join(base, "datalink/outputs/out.txt"), [outputs]).readable).toBe(true)
    expect(resolve(join(outputs, "out.txt"), [join(base, "datalink/outputs")]).readable).toBe(true)
    expect(resolve(join(base, "data/outputs2/out.txt"), [outputs]).readable).toBe(false)
    expect(resolve(join(outputs, "elsewhere/b.txt"), [outputs]).readable).toBe(false)
    expect(resolve(join(outputs, "not-yet.txt"), [outputs]).readable).toBe(true)
  })
})

describe("Boundary.isWithin", () => {
  test("a path is within a root when it is the root or lies under it", () => {
    expect(Boundary.isWithin("/x/app", "/x/app")).toBe(true)
    expect(Boundary.isWithin("/x/app", "/x/app/src/a.ts")).toBe(true)
    expect(Boundary.isWithin("/x/app/", "/x/app/src")).toBe(true)
    expect(Boundary.isWithin("/", "/anything")).toBe(true)
  })

  test("a sibling sharing the root's prefix or a parent is not within", () => {
    expect(Boundary.isWithin("/x/app", "/x/app2")).toBe(false)
    expect(Boundary.isWithin("/x/app", "/x/app2/a.ts")).toBe(false)
    expect(Boundary.isWithin("/x/app", "/x")).toBe(false)
    expect(Boundary.isWithin("/x/app", "/y/app")).toBe(false)
  })
})
