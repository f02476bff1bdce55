// The file boundary's cost per read and per write: the pinned file operations (open, then prove through
// /proc/self/fd that the file or directory is the real path checked; temp file and rename through the held
// directory) against the same operations by path, as they were before; and the protected-configuration check a
// write makes. Each difference is set against a whole settle of the read and write built-ins, measured in the
// same run. Target: the boundary adds at most 10% to a read and to a write.

import { mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { constants, open, rename, unlink } from "node:fs/promises"
import { randomBytes } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Builtins } from "../src/builtin/builtins"
import { ReadTracking } from "../src/builtin/read-tracking"
import { Kernel } from "../src/host/kernel"
import { Reads } from "../src/store/reads"
import { Text } from "../src/builtin/text"
import { Location } from "../src/location/location"
import { Permission } from "../src/permission/permission"
import { Pinned } from "../src/permission/pinned"
import { Protected } from "../src/permission/protected"
import { Settler } from "../src/settlement/settler"
import { Shell } from "../src/shell/shell"
import { Approvals } from "../src/store/approvals"
import { Store } from "../src/store/store"
import { cleanup, duration, main, progress, ratio, type Report, summarize } from "./measure"

const READS = 3_000
const WRITES = 400
const SETTLES = 600
const TARGET_SHARE = 0.1
const FILE_BYTES = 4_096

const readByPath = async (path: string) => {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  try {
    await handle.stat()
    await handle.read(Buffer.allocUnsafe(FILE_BYTES), 0, FILE_BYTES, 0)
  } finally {
    await handle.close()
  }
}

const readPinned = async (path: string) => {
  const handle = await Pinned.openFile(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    await handle.stat()
    await handle.read(Buffer.allocUnsafe(FILE_BYTES), 0, FILE_BYTES, 0)
  } finally {
    await handle.close()
  }
}

/** An atomic replace by path, as the write primitive did before it was pinned. */
const writeByPath = async (target: string, bytes: Uint8Array) => {
  const temp = join(target, "..", `.core-${randomBytes(6).toString("hex")}.tmp`)
  const handle = await open(temp, "wx", 0o666)
  try {
    await handle.writeFile(bytes)
    await handle.datasync()
  } finally {
    await handle.close()
  }
  await rename(temp, target).catch(async (cause) => {
    await unlink(temp)
    throw cause
  })
}

const timed = async (run: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

const measure = async (): Promise<Report> => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "core-bench-boundary-")))
  try {
    const directory = join(root, "project")
    const dataDir = join(root, "data")
    await Bun.write(join(directory, "src", "file.txt"), "x".repeat(FILE_BYTES - 1) + "\n")
    writeFileSync(join(directory, "core.json"), "{}")
    const file = join(directory, "src", "file.txt")
    const target = join(directory, "src", "out.txt")
    const bytes = new Uint8Array(FILE_BYTES).fill(120)
    const roots = Protected.roots({ location: directory, home: join(root, "home"), dataDir, readable: [join(dataDir, "outputs")] })

    progress("reads: by path and pinned, interleaved")
    const plainReads: Array<number> = []
    const pinnedReads: Array<number> = []
    for (let index = 0; index < READS; index++) {
      plainReads.push(await timed(() => readByPath(file)))
      pinnedReads.push(await timed(() => readPinned(file)))
    }
    progress("writes: by path and pinned, interleaved")
    const plainWrites: Array<number> = []
    const pinnedWrites: Array<number> = []
    for (let index = 0; index < WRITES; index++) {
      plainWrites.push(await timed(() => writeByPath(target, bytes)))
      pinnedWrites.push(await timed(() => Effect.runPromise(Text.write({ path: target, bytes, shown: "src/out.txt" }))))
    }
    progress("the protected-configuration check of a write")
    const checks: Array<number> = []
    for (let index = 0; index < READS; index++) {
      const started = performance.now()
      Protected.change(roots, target, { encloses: true })
      checks.push(performance.now() - started)
    }

    progress("settles of the read and write built-ins")
    const permission = Permission.layer({ project: directory, dataDir, readableRoots: [join(dataDir, "outputs")] }).pipe(
      Layer.provide(Approvals.layerMemory),
    )
    const kernel = Kernel.layer({ store: Store.layerMemory, outputsDirectory: join(dataDir, "outputs"), permission })
    const layer = Location.layer(directory, Builtins.layer.pipe(
      Layer.provide(Shell.layer(undefined)),
      Layer.provide(Reads.layerMemory),
      Layer.provide(Layer.succeed(ReadTracking.Required, false)),
    )).pipe(
      Layer.provideMerge(kernel),
    )
    const runtime = ManagedRuntime.make(layer as Layer.Layer<Settler.Service, never>)
    const readSettles: Array<number> = []
    const writeSettles: Array<number> = []
    try {
      const turn = await runtime.runPromise(Effect.gen(function* () {
        return yield* (yield* Settler.Service).materialize()
      }))
      let call = 0
      const settle = (name: string, input: unknown) =>
        timed(() =>
          runtime.runPromise(
            turn.settle({ sessionID: "bench", agent: "build", assistantMessageID: "m", toolCallID: `c${call++}`, name, input }),
          ),
        )
      for (let index = 0; index < SETTLES; index++) {
        readSettles.push(await settle("read", { filePath: "src/file.txt" }))
        writeSettles.push(await settle("write", { filePath: "src/out.txt", content: "y".repeat(FILE_BYTES) }))
      }
    } finally {
      await runtime.dispose()
    }

    const warm = <A>(samples: ReadonlyArray<A>) => samples.slice(Math.floor(samples.length / 10))
    const plainRead = summarize(warm(plainReads))
    const pinnedRead = summarize(warm(pinnedReads))
    const plainWrite = summarize(warm(plainWrites))
    const pinnedWrite = summarize(warm(pinnedWrites))
    const check = summarize(warm(checks))
    const readSettle = summarize(warm(readSettles))
    const writeSettle = summarize(warm(writeSettles))
    // Paired differences (each pinned sample less the by-path sample taken just before it), so the noise of the
    // file system (a datasync can take 1 ms or 40) mostly cancels out.
    const paired = (pinned: ReadonlyArray<number>, plain: ReadonlyArray<number>) =>
      summarize(warm(pinned.map((value, index) => value - plain[index]!))).p50
    const readAdded = paired(pinnedReads, plainReads)
    const readShare = readAdded / (readSettle.p50 - readAdded)
    const writeAdded = paired(pinnedWrites, plainWrites) + check.p50
    const writeShare = writeAdded / (writeSettle.p50 - writeAdded)
    const row = (name: string, summary: ReturnType<typeof summarize>) => [
      name,
      duration(summary.p50),
      duration(summary.p99),
      `${duration(summary.min)} / ${duration(summary.max)}`,
    ]
    return {
      name: "boundary",
      about:
        `Opening a ${FILE_BYTES.toLocaleString("en")}-byte file by path and pinned (${READS.toLocaleString("en")} each), ` +
        `an atomic replace by path and pinned (${WRITES} each, with datasync), the protected-configuration check, and ` +
        `${SETTLES} settles each of read and write (memory store), all in this run.`,
      tables: [
        {
          title: "file operations",
          columns: ["operation", "p50", "p99", "min / max"],
          rows: [
            row("read: open, stat, read, close by path", plainRead),
            row("read: the same, pinned (proved through /proc/self/fd)", pinnedRead),
            row("write: temp file, datasync, rename by path", plainWrite),
            row("write: the same, pinned (held directory)", pinnedWrite),
            row("protected-configuration check of a write", check),
          ],
        },
        {
          title: "whole settles",
          columns: ["settle", "p50", "p99", "min / max"],
          rows: [row("read built-in (4 KiB file)", readSettle), row("write built-in (4 KiB, replacing)", writeSettle)],
        },
      ],
      targets: [
        {
          measure: "pinned read's extra / read settle p50 without it",
          value: ratio(readShare),
          target: `≤ ${ratio(TARGET_SHARE)}`,
          met: readShare <= TARGET_SHARE,
        },
        {
          measure: "pinned write's extra + protection check / write settle p50 without them",
          value: ratio(writeShare),
          target: `≤ ${ratio(TARGET_SHARE)}`,
          met: writeShare <= TARGET_SHARE,
        },
      ],
      notes: [
        `extra per read ${duration(readAdded)}, per write ${duration(writeAdded)} (the protection check included): ` +
          "medians of paired differences; a negative one is noise",
      ],
    }
  } finally {
    cleanup([root])
  }
}

if (import.meta.main) await main(measure)
