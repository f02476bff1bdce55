export * as Diagnostics from "./diagnostics"

// Prints tool load diagnostics (application and Location) on stderr, one line each, naming file and reason.

import * as Effect from "effect/Effect"
import { Application } from "../location/application"
import { Location } from "../location/location"
import { Command } from "./command"

export const report = Effect.gen(function* () {
  const application = yield* Application.Service
  const location = yield* Location.Service
  for (const diagnostic of [...application.diagnostics, ...location.diagnostics]) {
    Command.stderr(`core: warning: ${diagnostic.file}: ${diagnostic.message}\n`)
  }
})
