export * as Diagnostics from "./diagnostics"

// Prints tool, plugin and skill load diagnostics (application, plugins, Location, skills) and what kept an MCP server or one of
// its tools from being offered on stderr, one line each, naming file and reason.

import * as Effect from "effect/Effect"
import { Terminal } from "../contract/terminal"
import { Skill } from "../builtin/skill"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { McpClient } from "../mcp-client/mcp-client"
import { Plugins } from "../plugin/plugins"
import { Command } from "./command"

export const report = Effect.gen(function* () {
  const application = yield* Application.Service
  const location = yield* Location.Service
  const remote = yield* McpClient.Service
  const plugins = yield* Plugins.Service
  const skills = (yield* Skill.Service).diagnostics()
  for (const diagnostic of [...application.diagnostics, ...plugins.diagnostics, ...location.diagnostics, ...skills, ...remote.diagnostics()]) {
    Command.stderr(`${Terminal.warning(`${diagnostic.file}: ${diagnostic.message}`)}\n`)
  }
})
