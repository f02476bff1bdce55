export * as ApplyPatch from "./apply-patch"

// The `apply_patch` built-in: adds, updates, moves and deletes files as one transaction. Every path (move
// targets included) is authorized before any file is read; every change is computed in memory and staged in
// temp files before the first one is committed; a failure while committing restores the files already changed
// from their saved originals. So a patch applies completely or leaves every file as it was.

import { statSync } from "node:fs"
import { dirname, sep } from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Boundary } from "../permission/boundary"
import type { Permission } from "../permission/permission"
import { Git } from "../permission/git"
import { Tool } from "../tool/tool"
import { Builtin } from "./builtin"
import { FileLock } from "./file-lock"
import { Match } from "./match"
import { Patch } from "./patch"
import { ReadTracking } from "./read-tracking"
import { Stopping } from "../settlement/stopping"
import { Text } from "./text"

export const Input = Schema.Struct({
  patchText: Schema.String.annotate({
    description: "The whole patch, from '*** Begin Patch' to '*** End Patch'",
  }),
})

export const FileChange = Schema.Struct({
  path: Schema.String.annotate({
    description: "The file, relative to the Location when inside it (after a move: where it is now)",
  }),
  action: Schema.Literals(["added", "updated", "moved", "deleted"]),
  from: Schema.optionalKey(Schema.String.annotate({ description: "For a move: where the file was" })),
  added: Schema.Finite.annotate({ description: "Lines added" }),
  removed: Schema.Finite.annotate({ description: "Lines removed" }),
  notKept: Schema.optionalKey(Text.NotKept),
})
export type FileChange = typeof FileChange.Type

export const Output = Schema.Struct({ files: Schema.Array(FileChange) })
export type Output = typeof Output.Type

const DESCRIPTION = `Apply a patch that adds, updates, moves or deletes files, all or nothing.

Format:
*** Begin Patch
*** Add File: path/new.txt
+every line of the new file, each starting with +
*** Update File: path/old.txt
*** Move to: path/renamed.txt          (optional: rename the file too)
@@ a line the hunk comes after, such as a function signature (optional)
 an unchanged context line (starts with a space)
-a removed line
+an added line
*** Delete File: path/gone.txt
*** End Patch

- Give about 3 lines of context around each change, copied from the file. Hunks of one file are found in order; "*** End of File" after a hunk's lines anchors it at the end of the file.
- Context is matched exactly first, then ignoring whitespace at line ends or around lines, then treating curly quotes, dashes and non-breaking spaces as their ASCII forms.
- Paths are relative to the Location (the project directory the tools work in) or absolute. Each file may appear in one section only, except that a file the patch deletes may be a move's target. Adding a file that exists, updating or deleting one that does not, or a read-only file, is an error.
- Unchanged lines keep their line endings, new lines take their neighbours'; a byte order mark is kept. A file without a final line break keeps it that way.
- Nothing is changed unless everything applies: if any hunk does not match or any file cannot be written, every file stays as it was. Unified diffs (---/+++) are refused.
- For one replacement, edit is simpler; to replace a whole file, use write.`

type Plan =
  | { readonly _tag: "Add"; readonly operation: Patch.Operation; readonly target: Place; readonly bytes: Uint8Array; readonly lines: number }
  | {
      readonly _tag: "Update"
      readonly operation: Patch.Operation
      readonly source: Place
      /** Where the file ends up: the source unless it moves. */
      readonly target: Place
      readonly snapshot: Text.Snapshot
      readonly bytes: Uint8Array
      readonly added: number
      readonly removed: number
    }
  | { readonly _tag: "Delete"; readonly operation: Patch.Operation; readonly source: Place; readonly snapshot: Text.Snapshot; readonly removed: number }

interface Place {
  readonly resolved: Boundary.Resolved
  readonly shown: string
  /** Whether a person approved it as a protected change. */
  readonly asked: boolean
}

const failure = (message: string) => new Tool.Failure({ message })

/** Lines a splice really removes and adds: context it repeats at either end is not a change. */
const counted = (removed: ReadonlyArray<string>, inserted: ReadonlyArray<string>) => {
  let head = 0
  while (head < removed.length && head < inserted.length && removed[head] === inserted[head]) head++
  let tail = 0
  while (tail < removed.length - head && tail < inserted.length - head && removed[removed.length - 1 - tail] === inserted[inserted.length - 1 - tail]) tail++
  return { added: inserted.length - head - tail, removed: removed.length - head - tail }
}

const summary = (files: ReadonlyArray<FileChange>): string => {
  const counts = (file: FileChange) =>
    [file.added > 0 ? `+${file.added}` : undefined, file.removed > 0 ? `-${file.removed}` : undefined]
      .filter((count) => count !== undefined)
      .join(" ")
  const line = (file: FileChange) => {
    const letter = { added: "A", updated: "M", moved: "R", deleted: "D" }[file.action]
    const name = file.from === undefined ? file.path : `${file.from} -> ${file.path}`
    const count = counts(file)
    return `${letter} ${name}${count === "" ? "" : ` (${count})`}`
  }
  const notes = files.map((file) => Text.notKeptNote(file.path, file.notKept)).join("")
  return `Applied the patch to ${files.length} file${files.length === 1 ? "" : "s"}:\n${files.map(line).join("\n")}${notes}`
}

/** The refusal of a patch naming a path as a directory ("a.txt/"), if it names one so. */
const directoryNamed = (operations: ReadonlyArray<Patch.Operation>): Tool.Failure | undefined => {
  for (const operation of operations) {
    const moveTo = operation._tag === "Update" ? operation.moveTo : undefined
    for (const path of moveTo === undefined ? [operation.path] : [operation.path, moveTo]) {
      const ending = Text.directoryEnding(path)
      if (ending !== undefined) {
        return failure(`Cannot use ${path} (patch line ${operation.line}): ${Text.namesDirectory(ending)} Nothing was changed.`)
      }
    }
  }
  return undefined
}

/** Where an operation's file is, and where it moves to. */
type Places = ReadonlyArray<{ readonly source: Place; readonly target: Place | undefined }>

/**
 * A file's identity: its device and inode where it exists, so that two names of one file (hard links) are one, else
 * its real path.
 */
const identityOf = (place: Place): string => {
  const stats = place.resolved.exists ? statSync(place.resolved.real, { bigint: true, throwIfNoEntry: false }) : undefined
  return stats === undefined ? place.resolved.real : `${stats.dev}:${stats.ino}`
}

/**
 * Checks that each file appears in one section only, under whatever name (a hard link is the file it links), except
 * that a file the patch deletes may be a move's target; answers the real paths of the files a move replaces so
 * (deleted first, then moved onto).
 */
const claims = (operations: ReadonlyArray<Patch.Operation>, places: Places): Result.Result<Set<string>, Tool.Failure> => {
  const identities = new Map<Place, string>()
  const identity = (place: Place) => {
    let known = identities.get(place)
    if (known === undefined) identities.set(place, (known = identityOf(place)))
    return known
  }
  const deletes = new Set<string>()
  for (const [index, operation] of operations.entries()) {
    if (operation._tag === "Delete") deletes.add(places[index]!.source.resolved.real)
  }
  const claimed = new Map<string, { readonly line: number; readonly place: Place }>()
  const replacedByMove = new Set<string>()
  for (const [index, operation] of operations.entries()) {
    const { source, target } = places[index]!
    if (target !== undefined && target.resolved.real !== source.resolved.real && identity(target) === identity(source)) {
      return Result.fail(
        failure(
          `Cannot move ${source.shown} to ${target.shown} (patch line ${operation.line}): they are one file under two ` +
            "names (hard links). Update it under one name; remove the other name with a command if it should go. Nothing was changed.",
        ),
      )
    }
    for (const touched of target === undefined || target.resolved.real === source.resolved.real ? [source] : [source, target]) {
      const key = identity(touched)
      const earlier = claimed.get(key)
      // A move's target may be a file (that name) the patch deletes; one file under two names is claimed once.
      const movedOntoDeleted = touched === target && deletes.has(target.resolved.real) && !replacedByMove.has(target.resolved.real)
      const deletedUnderMove = operation._tag === "Delete" && replacedByMove.has(touched.resolved.real) && earlier !== undefined
      if (movedOntoDeleted) replacedByMove.add(touched.resolved.real)
      if (earlier !== undefined && !movedOntoDeleted && !deletedUnderMove) {
        const alias =
          earlier.place.resolved.real === touched.resolved.real
            ? ""
            : ` (${touched.shown} and ${earlier.place.shown} are one file: hard links, two names of it)`
        return Result.fail(
          failure(
            `The patch changes ${touched.shown} twice${alias} (sections at lines ${earlier.line} and ${operation.line}). Put all changes to a file in one section. Nothing was changed.`,
          ),
        )
      }
      claimed.set(key, { line: operation.line, place: touched })
    }
  }
  return Result.succeed(replacedByMove)
}

const makeTool = (services: Builtin.Services) =>
  Builtin.tool({
    description: DESCRIPTION,
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
    toModelOutput: ({ output }) => summary(output.files),
    execute: (input, context) =>
      Effect.gen(function* () {
        const half = Text.halfCharacter("patchText", input.patchText)
        if (half !== undefined) return yield* failure(`${half} Nothing was changed.`)
        const parsed = Patch.parse(input.patchText)
        if (Result.isFailure(parsed)) {
          return yield* failure(`The patch could not be read. ${parsed.failure.message} Nothing was changed.`)
        }
        const operations = parsed.success
        const misnamed = directoryNamed(operations)
        if (misnamed !== undefined) return yield* misnamed

        // Every permission is asked before anything is read; a rule denying any path refuses before anything is asked.
        const planned = yield* plansOf(services, operations, context.sessionID)
        yield* Builtin.refuseDenied(services, context, planned.flatMap(({ checks }) => checks))
        const place = (index: number): Effect.Effect<Place, Permission.Refusal> => {
          const { resolved, checks } = planned[index]!
          return Builtin.authorize(services, context, checks, { tool: "apply_patch" }).pipe(
            Effect.as({ resolved, shown: Builtin.display(services.directory, resolved.real), asked: Builtin.askedOf(checks) }),
          )
        }
        const places: Array<{ source: Place; target: Place | undefined }> = []
        let next = 0
        for (const operation of operations) {
          const source = yield* place(next++)
          const target = operation._tag === "Update" && operation.moveTo !== undefined ? yield* place(next++) : undefined
          places.push({ source, target })
        }
        const claimed = claims(operations, places)
        if (Result.isFailure(claimed)) return yield* claimed.failure
        const replacedByMove = claimed.success

        const paths = places.flatMap(({ source, target }) => (target === undefined ? [source.resolved.real] : [source.resolved.real, target.resolved.real]))
        return yield* FileLock.retried(
          paths,
          (tries) => attempt(services, context, operations, places, replacedByMove, tries),
          () =>
            failure(
              "A file of the patch changed on disk while the patch was being applied (another program wrote it), " +
                "again and again, so nothing was changed. Read the files again and retry.",
            ),
        )
      }),
  })

/** The refusal of a hunk that matches nothing, showing the most similar region of the file. */
const unmatched = (
  operation: Extract<Patch.Operation, { _tag: "Update" }>,
  failed: { readonly hunk: Patch.Hunk; readonly message: string },
  text: string,
  lines: ReadonlyArray<string>,
  shown: string,
) => {
  const { hunk, message } = failed
  const number = operation.hunks.indexOf(hunk) + 1
  const closest = Match.nearest(text.replaceAll("\r\n", "\n"), hunk.old.join("\n"))
  const region =
    closest === undefined
      ? ""
      : `\nThe most similar region is ${closest.startLine === closest.endLine ? `line ${closest.startLine}` : `lines ${closest.startLine}-${closest.endLine}`} (${Math.round(closest.similarity * 100)}% similar):\n${Text.numbered(lines, closest.startLine, closest.endLine)}`
  return failure(
    `Cannot apply hunk ${number} of ${operation.hunks.length} to ${shown} (patch line ${hunk.line}): ${message}${region}\nRead the file again and make the hunk's context and removed lines match it. Nothing was changed.`,
  )
}

/**
 * Reads an operation's file and computes its change in memory: the new bytes of an added or updated file, or the
 * snapshot of a deleted one. Refuses what cannot apply (a file that exists or does not, a hunk that matches nothing).
 */
const planOf = (
  operation: Patch.Operation,
  source: Place,
  target: Place | undefined,
  replacedByMove: ReadonlySet<string>,
  unreadable: (real: string) => boolean,
): Effect.Effect<Plan, Tool.Failure> =>
  Effect.gen(function* () {
    const at = `(patch line ${operation.line})`
    const sourceExists = yield* Text.exists(source.resolved.real, source.shown)
    if (operation._tag === "Add") {
      if (sourceExists) {
        return yield* failure(
          `Cannot add ${source.shown} ${at}: it already exists. Use "*** Update File: ${operation.path}" to change it. Nothing was changed.`,
        )
      }
      const twin = Text.otherFormNote(source.resolved.real)
      if (twin !== "") return yield* failure(`Cannot add ${source.shown} ${at}:${twin} Nothing was changed.`)
      const text = operation.lines.map((line) => `${line}\n`).join("")
      return { _tag: "Add", operation, target: source, bytes: Text.encode(text, false), lines: operation.lines.length } as const
    }
    const verb = operation._tag === "Update" ? "update" : "delete"
    if (!sourceExists) {
      return yield* failure(
        `Cannot ${verb} ${source.shown} ${at}: the file does not exist.${Text.otherFormNote(source.resolved.real) || (operation._tag === "Update" ? ` To create it, use "*** Add File: ${operation.path}".` : "")} Nothing was changed.`,
      )
    }
    if (source.resolved.kind !== "file") {
      return yield* failure(
        `Cannot ${verb} ${source.shown} ${at}: it is ${source.resolved.kind === "directory" ? "a directory" : "not a regular file (a FIFO, socket or device)"}. Nothing was changed.`,
      )
    }
    const snapshot = yield* Text.read(source.resolved.real, source.shown)
    yield* Text.writable(source.resolved.real, source.shown, "apply_patch")
    if (operation._tag === "Delete") {
      // A delete reads nothing of the file: of one the read rules deny, not even how many lines it had.
      const removed = unreadable(source.resolved.real) ? 0 : Text.lineCount(new TextDecoder().decode(snapshot.bytes))
      return { _tag: "Delete", operation, source, snapshot, removed } as const
    }
    const decoded = yield* Text.decode(snapshot.bytes, source.shown, "apply_patch")
    const lines = Text.lines(decoded.text)
    const located = Patch.locate(lines.texts, operation.hunks)
    if (Result.isFailure(located)) return yield* unmatched(operation, located.failure, decoded.text, lines.texts, source.shown)
    let added = 0
    let removed = 0
    for (const splice of located.success) {
      const change = counted(lines.texts.slice(splice.at, splice.at + splice.remove), splice.insert)
      added += change.added
      removed += change.removed
    }
    const moving = target !== undefined && target.resolved.real !== source.resolved.real
    if (moving && !replacedByMove.has(target.resolved.real) && (yield* Text.exists(target.resolved.real, target.shown))) {
      return yield* failure(
        `Cannot move ${source.shown} to ${target.shown} ${at}: ${target.shown} already exists. To replace it, delete it in the same patch ("*** Delete File: ${target.shown}"), or choose another name. Nothing was changed.`,
      )
    }
    const text = Text.splice(lines, located.success, decoded.eol)
    return {
      _tag: "Update",
      operation,
      source,
      target: moving ? target : source,
      snapshot,
      bytes: Text.encode(text, decoded.bom),
      added,
      removed,
    } as const
  })

/**
 * One try at a patch: read every file, plan every change, stage it, and commit it if no file changed since it was
 * read; when another process changed one meanwhile, nothing is written and it answers FileLock.CHANGED, to plan again.
 */
const attempt = (
  services: Builtin.Services,
  context: Tool.Context,
  operations: ReadonlyArray<Patch.Operation>,
  places: Places,
  replacedByMove: ReadonlySet<string>,
  tries: number,
): Effect.Effect<Output | typeof FileLock.CHANGED, Tool.Failure> =>
  Effect.gen(function* () {
    const plans: Array<Plan> = []
    const denied = Builtin.readDenied(services, context.agent)
    const unreadable = (real: string) => denied?.(real) === true
    for (const [index, operation] of operations.entries()) {
      const { source, target } = places[index]!
      plans.push(yield* planOf(operation, source, target, replacedByMove, unreadable))
    }
    // A file the patch deletes to move another onto it goes first.
    plans.sort((left, right) => Number(isReplacedDelete(right, replacedByMove)) - Number(isReplacedDelete(left, replacedByMove)))
    // Applied in full or not at all, and answered: a cancel meanwhile neither stops it nor hides that it was applied.
    return yield* Effect.uninterruptible(
      Effect.gen(function* () {
        // Another process changed a file after it was read: nothing was written; plan again from the files as they are.
        const lost = yield* transact(services, plans, replacedByMove, context, tries)
        if (lost === undefined) return FileLock.CHANGED
        for (const plan of plans) {
          if (plan._tag === "Delete") continue
          yield* ReadTracking.see(services, context, plan.target.resolved.real, yield* ReadTracking.written(plan.target.resolved.real, plan.bytes))
        }
        return yield* Stopping.finished({
          files: plans.map((plan) => {
            const change = fileChange(plan)
            const notKept = lost.get(plan) ?? []
            return notKept.length === 0 ? change : { ...change, notKept }
          }),
        })
      }),
    )
  })

const fileChange = (plan: Plan): FileChange => {
  switch (plan._tag) {
    case "Add":
      return { path: plan.target.shown, action: "added", added: plan.lines, removed: 0 }
    case "Delete":
      return { path: plan.source.shown, action: "deleted", added: 0, removed: plan.removed }
    case "Update":
      return plan.target === plan.source
        ? { path: plan.source.shown, action: "updated", added: plan.added, removed: plan.removed }
        : { path: plan.target.shown, action: "moved", from: plan.source.shown, added: plan.added, removed: plan.removed }
  }
}

const restore = (place: Place, snapshot: Text.Snapshot) =>
  Text.write({ path: place.resolved.real, bytes: snapshot.bytes, shown: place.shown, kept: snapshot })
const remove = (place: Place) => Text.remove(place.resolved.real, place.shown)
const unchanged = (place: Place, snapshot: Text.Snapshot) =>
  Text.unchanged(place.resolved.real, snapshot, place.shown).pipe(
    Effect.flatMap((same) => (same ? Effect.void : Effect.fail(Text.changed(place.shown)))),
  )
const absent = (place: Place) =>
  Text.exists(place.resolved.real, place.shown).pipe(
    Effect.flatMap((found) =>
      found ? Effect.fail(failure(`${place.shown} was created by someone else while the patch was being applied.`)) : Effect.void,
    ),
  )

/** A committed change's way back, for the rollback. */
interface Undo {
  readonly shown: string
  readonly run: Effect.Effect<void, Tool.Failure>
}

/** Commits one staged change (`staged` is its temp file; none for a delete), noting how to undo it. */
const commitPlan = (plan: Plan, staged: Text.Staged | undefined, undo: Array<Undo>) =>
  Effect.gen(function* () {
    if (plan._tag === "Add") {
      yield* absent(plan.target)
      yield* Text.commit(staged!, plan.target.resolved.real, plan.target.shown)
      undo.push({ shown: plan.target.shown, run: remove(plan.target) })
      return
    }
    yield* unchanged(plan.source, plan.snapshot)
    if (plan._tag === "Delete") {
      yield* remove(plan.source)
      undo.push({ shown: plan.source.shown, run: restore(plan.source, plan.snapshot) })
      return
    }
    if (plan.target === plan.source) {
      yield* Text.commit(staged!, plan.source.resolved.real, plan.source.shown)
      undo.push({ shown: plan.source.shown, run: restore(plan.source, plan.snapshot) })
      return
    }
    yield* absent(plan.target)
    yield* Text.commit(staged!, plan.target.resolved.real, plan.target.shown)
    undo.push({ shown: plan.target.shown, run: remove(plan.target) })
    yield* remove(plan.source)
    undo.push({ shown: plan.source.shown, run: restore(plan.source, plan.snapshot) })
  })

/** Whether every file is still as read (or still absent), as the plans were made. */
const verify = (plans: ReadonlyArray<Plan>, replacedByMove: ReadonlySet<string>) =>
  Effect.gen(function* () {
    for (const plan of plans) {
      if (plan._tag === "Add") {
        if (yield* Text.exists(plan.target.resolved.real, plan.target.shown)) return false
        continue
      }
      if (!(yield* Text.unchanged(plan.source.resolved.real, plan.snapshot, plan.source.shown))) return false
      if (plan._tag === "Update" && plan.target !== plan.source && !replacedByMove.has(plan.target.resolved.real)) {
        if (yield* Text.exists(plan.target.resolved.real, plan.target.shown)) return false
      }
    }
    return true
  })

/** Whether a patch making the files `made` (real paths) makes `path`: one of them, or a folder holding one. */
const makes = (made: ReadonlyArray<string>) => (path: string) => made.some((each) => each === path || each.startsWith(`${path}${sep}`))

/** The files a patch makes: an added file, a move's target. */
const madeBy = (plans: ReadonlyArray<Plan>): ReadonlyArray<Place> =>
  plans.flatMap((plan) => (plan._tag === "Add" || (plan._tag === "Update" && plan.target !== plan.source) ? [plan.target] : []))

/** The files a patch makes that no person was asked about. */
const unaskedMade = (plans: ReadonlyArray<Plan>): ReadonlyArray<Place> => madeBy(plans).filter((target) => !target.asked)

/**
 * The files the commit locks: each plan's file, and a move's both ends; for a file it makes unasked, the names
 * that would make a folder around it a git repository with it (Git.repositoryNames, checked under them: `planted`).
 */
const lockedPaths = (plans: ReadonlyArray<Plan>) => [
  ...plans.flatMap((plan) =>
    plan._tag === "Update" && plan.target !== plan.source
      ? [plan.source.resolved.real, plan.target.resolved.real]
      : [(plan._tag === "Add" ? plan.target : plan.source).resolved.real],
  ),
  ...unaskedMade(plans).flatMap((target) => Git.repositoryNames(target.resolved.real)),
]

/**
 * The first file the patch makes unasked that would now make a folder a git repository (with the patch's other
 * files taken as made), or around which one has become a repository since `before` (Git.plantedSince, each file's
 * repositories before the patch made its folders), as the message refusing the patch: another change made at the
 * same time left the rest.
 */
const planted = (plans: ReadonlyArray<Plan>, before: ReadonlyMap<string, ReadonlyArray<string>>): string | undefined => {
  const madeHere = makes(madeBy(plans).map((target) => target.resolved.real))
  for (const target of unaskedMade(plans)) {
    const found = Git.plantedSince(target.resolved.real, before.get(target.resolved.real) ?? [], madeHere)
    if (found !== undefined) return Text.plantedMessage(target.shown, found)
  }
  return undefined
}

/**
 * Stages every new content beside its destination, then commits in patch order, all or nothing: whatever stops the
 * commit, the files already changed are put back. Answers what each file written did not keep of the one it
 * replaced; undefined, having written nothing, when a file changed since it was read.
 */
const transact = (
  services: Builtin.Services,
  plans: ReadonlyArray<Plan>,
  replacedByMove: ReadonlySet<string>,
  context: Tool.Context,
  tries: number,
): Effect.Effect<ReadonlyMap<Plan, ReadonlyArray<string>> | undefined, Tool.Failure> =>
  Effect.gen(function* () {
    const temps = new Map<Plan, Text.Staged>()
    const created: Array<ReadonlyArray<string>> = []
    const undo: Array<Undo> = []
    let unrestored: ReadonlyArray<string> = []
    const rollback = Effect.gen(function* () {
      const lost: Array<string> = []
      for (const step of undo.reverse()) {
        yield* step.run.pipe(Effect.catch((problem) => Effect.sync(() => lost.push(`${step.shown}: ${problem.message}`))))
      }
      unrestored = lost
    })
    const cleanup = Effect.suspend(() =>
      Effect.forEach([...temps.values()], Text.discard, { discard: true }).pipe(
        Effect.andThen(Text.removeDirectories(created.toReversed().flat())),
      ),
    )

    // The repositories around each file made unasked, before the patch makes any folder (Git.plantedSince).
    const before = new Map(unaskedMade(plans).map((target) => [target.resolved.real, Git.repositoriesAround(target.resolved.real)] as const))
    const stage = Effect.gen(function* () {
      for (const plan of plans) {
        if (plan._tag === "Delete") continue
        const target = plan.target
        if (!target.resolved.exists) created.push(yield* Text.ensureDirectory(dirname(target.resolved.real), target.shown))
        const kept = plan._tag === "Update" ? plan.snapshot : undefined
        temps.set(plan, yield* Text.prepare(target.resolved.real, plan.bytes, kept, target.shown))
      }
    })

    const committed = yield* stage.pipe(
      Effect.andThen(
        FileLock.committing(
          lockedPaths(plans),
          plans.map((plan) => (plan._tag === "Add" ? plan.target : plan.source).shown).join(", "),
          Effect.gen(function* () {
            // Every file is still as read (or still absent) just before the first commit, checked under the files'
            // commit locks so no other core process can change one between the check and the renames.
            if (!(yield* verify(plans, replacedByMove))) return false
            const plants = planted(plans, before)
            if (plants !== undefined) return yield* failure(plants)
            if (tries === 1) {
              yield* context.progress({
                message: `Applying the patch to ${plans.length} file${plans.length === 1 ? "" : "s"}`,
                metadata: { files: plans.length },
              })
            }
            for (const plan of plans) yield* commitPlan(plan, temps.get(plan), undo)
            // A file made unasked that became core's configuration meanwhile (Builtin.becameProtected): the whole
            // patch is put back.
            for (const target of unaskedMade(plans)) {
              const became = yield* Builtin.becameProtected(services, target.resolved.real, target.shown)
              if (became !== undefined) return yield* failure(`${became} A person must make that change; do not retry it.`)
            }
            return true
          }),
        ),
      ),
      // Whatever stops the commit (a failure, a defect), the files already changed are put back.
      Effect.onError(() => rollback.pipe(Effect.andThen(cleanup))),
      Effect.mapError((problem) =>
        failure(
          unrestored.length === 0
            ? `${problem.message}\nThe patch was not applied: no file was changed (files already written were restored).`
            : `${problem.message}\nThe patch was not applied, and restoring failed for: ${unrestored.join("; ")}. Check those files.`,
        ),
      ),
    )
    if (!committed) {
      yield* cleanup
      return undefined
    }
    return new Map([...temps].map(([plan, staged]) => [plan, staged.lost]))
  })

const isReplacedDelete = (plan: Plan, replacedByMove: ReadonlySet<string>): boolean =>
  plan._tag === "Delete" && replacedByMove.has(plan.source.resolved.real)

/** The paths a patch touches, in order (each operation's path, then where it moves to). */
/**
 * The files a patch changes, in order, and whether it reads each: an update reads its file (its hunks are matched
 * against the text, shown back when they do not match, and a move carries the text elsewhere); an add, a delete and
 * a move's target are written only.
 */
/** The files a patch changes, in order: each section's, then where an update moves it; `makes` for a file it creates. */
const changesOf = (
  operations: ReadonlyArray<Patch.Operation>,
): ReadonlyArray<{ readonly path: string; readonly reads: boolean; readonly makes: boolean }> =>
  operations.flatMap((operation): Array<{ readonly path: string; readonly reads: boolean; readonly makes: boolean }> =>
    operation._tag !== "Update"
      ? [{ path: operation.path, reads: false, makes: operation._tag === "Add" }]
      : operation.moveTo === undefined
        ? [{ path: operation.path, reads: true, makes: false }]
        : [{ path: operation.path, reads: true, makes: false }, { path: operation.moveTo, reads: false, makes: true }],
  )

/**
 * Each change's checks (Builtin.changePlan). The files the patch makes are judged together too: one folder given a
 * `HEAD` and an `objects/` by one patch is a git repository the user's git would run the config of, which no file
 * of it alone shows (Git.bare, with the patch's other files taken as made); those files are then asked of a person,
 * as a protected change is.
 */
const plansOf = (services: Builtin.Services, operations: ReadonlyArray<Patch.Operation>, sessionID?: string) =>
  Effect.gen(function* () {
    const changes = changesOf(operations)
    const session = sessionID === undefined ? {} : { sessionID }
    const planned = yield* Effect.forEach(changes, (change) => Builtin.changePlan(services, { ...change, ...session }))
    const made = changes.flatMap((change, index) => (change.makes ? [planned[index]!.resolved.real] : []))
    const madeHere = makes(made)
    return planned.map((plan) => {
      const what = made.includes(plan.resolved.real) ? Git.bare(plan.resolved.real, madeHere) : undefined
      if (what === undefined) return plan
      const last = plan.checks.length - 1
      return { ...plan, checks: plan.checks.map((check, index) => (index === last ? { ...check, save: [], ask: true as const, protected: what } : check)) }
    })
  })

/** The apply_patch built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) =>
  Builtin.planned(makeTool(services), (input) =>
    Effect.gen(function* () {
      const parsed = Patch.parse(input.patchText)
      if (Result.isFailure(parsed)) return yield* failure(`The patch could not be read. ${parsed.failure.message}`)
      const planned = yield* plansOf(services, parsed.success)
      return planned.flatMap(({ checks }) => checks)
    }),
  )
