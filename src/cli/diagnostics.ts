export * as Diagnostics from "./diagnostics"

// Prints tool load diagnostics (application and Location) and what kept an MCP server or one of its tools from
// being offered on stderr, one line each, naming file and reason.

import * as Effect from "effect/Effect"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { Remote } from "../remote/remote"
import { Command } from "./command"

export const report = Effect.gen(function* () {
  const application = yield* Application.Service
  const location = yield* Location.Service
  const remote = yield* Remote.Service
  for (const diagnostic of [...application.diagnostics, ...location.diagnostics, ...remote.diagnostics()]) {
    Command.stderr(`core: warning: ${diagnostic.file}: ${diagnostic.message}\n`)
  }
})
