export * as Skill from "./skill"

// The `skill` built-in and the skills behind it (../location/skills finds them): its description lists the
// available skills by name and description; a call answers a skill's instructions and the other files of its
// directory, or with `file` one of those files, read only where it really lies inside the skill's directory. The
// service keeps the skills found, registers `skill` in a Scope of its own (only while there is a skill to load) and
// finds them again on `reload`, registering afresh when what the description says changed.

import { constants } from "node:fs"
import { join } from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type { Discovery } from "../location/discovery"
import { Skills } from "../location/skills"
import { Permission } from "../permission/permission"
import { Pinned } from "../permission/pinned"
import { Registry } from "../registry/registry"
import { Distance } from "../registry/distance"
import { Tool } from "../tool/tool"
import { Stopping } from "../settlement/stopping"
import { Builtin } from "./builtin"

/** Bytes of a skill's file `file` reads at most. */
export const MAX_FILE_BYTES = Skills.MAX_FILE_BYTES

export const Input = Schema.Struct({
  name: Schema.String.annotate({ description: "The skill's name, as listed in this tool's description" }),
  file: Schema.optionalKey(
    Schema.String.annotate({
      description: "One of the skill's files to read instead of its instructions: its path as the skill's answer lists it",
    }),
  ),
})

const FileEntry = Schema.Struct({ path: Schema.String, bytes: Schema.Int })

export const Output = Schema.Union([
  Schema.Struct({
    name: Schema.String,
    directory: Schema.String.annotate({ description: "The skill's directory: relative to the Location when inside it" }),
    instructions: Schema.String.annotate({ description: "The SKILL.md's body" }),
    files: Schema.Array(FileEntry).annotate({ description: "The directory's other files, relative to it" }),
    moreFiles: Schema.Int.annotate({ description: "Files not listed" }),
  }),
  Schema.Struct({
    name: Schema.String,
    directory: Schema.String,
    file: Schema.String.annotate({ description: "The file read, relative to the skill's directory" }),
    content: Schema.String,
  }),
])
export type Output = typeof Output.Type

export interface Reloaded {
  /** Whether the skills a description lists changed (and `skill` was registered again). */
  readonly changed: boolean
  /** The SKILL.md files of the skills that came, went or changed their name or description. */
  readonly files: ReadonlyArray<string>
  readonly diagnostics: ReadonlyArray<Discovery.Diagnostic>
}

export interface Interface {
  /** The skills found, by name. */
  readonly skills: () => ReadonlyArray<Skills.Skill>
  /** What is wrong with the skills not loaded. */
  readonly diagnostics: () => ReadonlyArray<Discovery.Diagnostic>
  /** A skill's instructions as its SKILL.md says now, or a failure naming what is wrong. */
  readonly instructions: (name: string) => Effect.Effect<string, Tool.Failure>
  /** Finds the skills again; `skill` is registered again when their names or descriptions changed. */
  readonly reload: Effect.Effect<Reloaded>
}

export class Service extends Context.Service<Service, Interface>()("core/Skill") {}

/** Where the model can find a skill's directory: relative to the Location inside it, else absolute. */
const shownDirectory = (directory: string, skill: Skills.Skill) => Builtin.display(directory, skill.directory)

export const description = (skills: ReadonlyArray<Skills.Skill>): string =>
  [
    "Load a skill: instructions, and files, for a kind of task, provided by the user or the project. When a task " +
      "matches a skill's description, load the skill before starting and follow it.",
    "",
    "Available skills:",
    ...skills.map((skill) => `- ${skill.name}: ${skill.description.replace(/\s+/g, " ")}`),
    "",
    "The answer holds the skill's instructions and lists its other files; read one with file set to its path as " +
      "listed. Scripts a skill names are run from its directory.",
  ].join("\n")

const unknown = (skills: ReadonlyArray<Skills.Skill>, name: string): Tool.Failure => {
  const names = skills.map((skill) => skill.name)
  const near = names.filter((candidate) => Distance.edits(candidate, name) <= Math.max(2, Math.floor(name.length / 3)))
  const hint = near.length > 0 ? ` Did you mean ${near.map((candidate) => `"${candidate}"`).join(", ")}?` : ""
  return new Tool.Failure({
    message: `Unknown skill "${name.slice(0, 100)}".${hint} Available skills: ${names.join(", ")}.`,
  })
}

const render = (output: Output): string => {
  if ("content" in output) return output.content
  const lines = [`<skill name="${output.name}" directory="${output.directory}">`, output.instructions, "</skill>"]
  if (output.files.length > 0) {
    lines.push(
      "",
      `Files of this skill (read one with skill {"name": "${output.name}", "file": PATH}):`,
      ...output.files.map((file) => `- ${file.path} (${file.bytes} bytes)`),
    )
    if (output.moreFiles > 0) lines.push(`(${output.moreFiles} more files not listed)`)
  }
  return lines.join("\n")
}

/** Reads a file of a skill: a text file whose real path lies inside the skill's directory, opened where it was found. */
const readFile = (skill: Skills.Skill, path: string, hidden: (real: string) => boolean) =>
  Effect.gen(function* () {
    const fail = (message: string) => Effect.fail(new Tool.Failure({ message }))
    const listHint = `Load the skill without file to see the files it has.`
    if (path === "" || path.includes("\0")) return yield* fail(`Give file as a path the skill lists. ${listHint}`)
    const resolved = Skills.resolveInside(skill, join(skill.directory, path))
    if (resolved === undefined || hidden(resolved.real)) {
      return yield* fail(`The skill "${skill.name}" has no file ${path}. ${listHint}`)
    }
    if (resolved.directory) return yield* fail(`${path} is a directory of the skill "${skill.name}". ${listHint}`)
    if (resolved.bytes > MAX_FILE_BYTES) {
      return yield* fail(`${path} is ${resolved.bytes} bytes; skill reads files of at most ${MAX_FILE_BYTES} bytes.`)
    }
    const bytes = yield* Effect.tryPromise({
      try: async () => {
        const handle = await Pinned.openFile(resolved.real, constants.O_RDONLY)
        try {
          const buffer = Buffer.alloc(MAX_FILE_BYTES + 1)
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
          return buffer.subarray(0, bytesRead)
        } finally {
          await handle.close()
        }
      },
      catch: () => new Tool.Failure({ message: `${path} of the skill "${skill.name}" changed while it was read; read it again.` }),
    })
    if (bytes.length > MAX_FILE_BYTES) {
      return yield* fail(`${path} is over ${MAX_FILE_BYTES} bytes; skill reads files of at most ${MAX_FILE_BYTES} bytes.`)
    }
    let text: string
    try {
      if (bytes.includes(0)) throw new Error("binary")
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    } catch {
      return yield* fail(
        `${path} of the skill "${skill.name}" is not a text file (${bytes.length} bytes); use it from the skill's directory as its instructions say.`,
      )
    }
    return text
  })

/** The `skill` tool over `skills` (found in the Location `directory`), authorized as `skill` on the skill's name. */
export const make = (
  services: Pick<Builtin.Services, "directory" | "permission">,
  skills: ReadonlyArray<Skills.Skill>,
) => {
  const checks = (name: string): ReadonlyArray<Permission.Check> => [{ action: "skill", resources: [name], save: [name] }]
  const tool = Builtin.tool({
    description: description(skills),
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: true, idempotent: true, openWorld: false },
    toModelOutput: ({ output }) => render(output),
    execute: (input, context) =>
      Effect.gen(function* () {
        const skill = skills.find((candidate) => candidate.name === input.name)
        if (skill === undefined) return yield* unknown(skills, input.name)
        yield* Stopping.beforeStart(
          services.permission.authorize({ ...Builtin.requestOf(context), metadata: { tool: "skill" } }, checks(skill.name)),
        )
        const hidden = Builtin.hidden(services, context.agent, undefined, skill.directory)
        const directory = shownDirectory(services.directory, skill)
        if (input.file !== undefined) {
          const content = yield* readFile(skill, input.file, hidden)
          return { name: skill.name, directory, file: input.file, content } satisfies Output
        }
        const body = Skills.body(skill)
        if (body._tag === "Invalid") {
          return yield* new Tool.Failure({
            message: `The skill "${skill.name}" cannot be loaded now: ${body.message}. Its SKILL.md is ${skill.file}.`,
          })
        }
        const listed = Skills.files(skill, hidden)
        return {
          name: skill.name,
          directory,
          instructions: body.body,
          files: listed.files,
          moreFiles: listed.more,
        } satisfies Output
      }),
  })
  return Builtin.planned(tool, (input) => Effect.succeed(checks(input.name)))
}

/**
 * The skills of the Location `directory` and of `home`, with `skill` registered into the Location's registry while
 * there is one (a Location without skills has no `skill` tool: nothing to load, and no words spent on it each turn).
 */
export const layer = (options: { readonly directory: string; readonly home: string }) =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const registry = yield* Registry.Service
      const permission = yield* Permission.Service
      const parent = yield* Scope.Scope
      const services = { directory: permission.project, permission }
      let found = Skills.discover(options.directory, options.home)
      let registration: Scope.Closeable | undefined
      const keyOf = (skills: ReadonlyArray<Skills.Skill>) =>
        JSON.stringify(skills.map((skill) => [skill.name, skill.description, skill.file, skill.directory]))

      /** Registers `skill` over the skills found (none when there are none), then closes the registration before. */
      const register = Effect.gen(function* () {
        const previous = registration
        registration = undefined
        if (found.skills.length > 0) {
          const scope = yield* Scope.fork(parent)
          yield* registry.tools.register({ skill: make(services, found.skills) }).pipe(Scope.provide(scope), Effect.orDie)
          registration = scope
        }
        if (previous !== undefined) yield* Scope.close(previous, Exit.void)
      })
      yield* register

      const instructions = (name: string) =>
        Effect.suspend(() => {
          const skill = found.skills.find((candidate) => candidate.name === name)
          if (skill === undefined) return Effect.fail(unknown(found.skills, name))
          const body = Skills.body(skill)
          return body._tag === "Body"
            ? Effect.succeed(body.body)
            : Effect.fail(new Tool.Failure({ message: `The skill "${name}" cannot be loaded now: ${body.message}` }))
        })

      const reload = Effect.gen(function* () {
        const before = found
        found = Skills.discover(options.directory, options.home)
        const entries = (skills: ReadonlyArray<Skills.Skill>) => new Map(skills.map((skill) => [keyOf([skill]), skill.file]))
        const [was, is] = [entries(before.skills), entries(found.skills)]
        const files = new Set<string>()
        for (const [key, file] of was) if (!is.has(key)) files.add(file)
        for (const [key, file] of is) if (!was.has(key)) files.add(file)
        const changed = files.size > 0 || keyOf(before.skills) !== keyOf(found.skills)
        if (changed) yield* register
        const diagnostics = JSON.stringify(found.diagnostics) === JSON.stringify(before.diagnostics) ? [] : found.diagnostics
        return { changed, files: [...files].sort(), diagnostics } satisfies Reloaded
      })

      return Service.of({
        skills: () => found.skills,
        diagnostics: () => found.diagnostics,
        instructions,
        reload,
      })
    }),
  )
