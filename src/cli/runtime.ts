export * as Runtime from "./runtime"

// The CLI's side of wiring: a Location named on the command line, prepared by the host floor (../host) with its
// failures turned into usage errors, and the agent check every command shares. The layers themselves come from
// the host floor, shared with the sidecar.

import * as Effect from "effect/Effect"
import { Host } from "../host/host"
import type { Permission } from "../permission/permission"
import { Terminal } from "../contract/terminal"
import { Command } from "./command"

/** A path as a shell takes it as one word (shown inert: it may hold anything). */
const quoted = (path: string): string =>
  /^[\w./@%+=:,-]+$/.test(path) ? path : `'${Terminal.inline(path).replaceAll("'", "'\\''")}'`

/**
 * Checks the Location and loads its core.json files; a missing Location or an invalid file is a usage error (an
 * invalid file's pointing at `core check`, which lists every problem, rather than at the command's --help).
 */
export const prepare = (command: string, environment: Host.Environment, location: string | undefined) =>
  Host.prepare(environment, location ?? ".").pipe(
    Effect.mapError((error) =>
      error._tag === "Config.ConfigError"
        ? new Command.UsageError({
            command,
            message: error.message,
            next: `Fix it, then see whether the Location loads: core check${location === undefined ? "" : ` --location ${quoted(location)}`}`,
          })
        : new Command.UsageError({ command, message: error.message }),
    ),
  )

/** An agent the Location knows, or a usage error listing the known ones. */
export const checkAgent = (command: string, permission: Permission.Interface, agent: string) =>
  permission.isAgent(agent)
    ? Effect.void
    : Effect.fail(
        new Command.UsageError({
          command,
          message: `unknown agent "${agent}"; known agents: ${permission.agents.join(", ")}`,
        }),
      )
