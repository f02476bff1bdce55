export * as OtlpOutcome from "./otlp-outcome"

// How a span that did not succeed ended, as OTLP says it (its status code and message, Effect's
// `effect.fiber.interrupted`, an exception event per error), worked out from its Cause where the span ends: the
// thread that makes request bodies of spans (./otlp-worker) is given it worked out, and loads nothing of Effect's
// Cause.

import * as Cause from "effect/Cause"
import { OtlpWire } from "./otlp-wire"

/** How a span that ended with `failure` ended. */
export const of = (failure: Cause.Cause<unknown>): OtlpWire.Outcome => {
  if (Cause.hasInterruptsOnly(failure)) return { code: OtlpWire.STATUS_UNSET, message: undefined, interrupted: true, errors: [] }
  const errors = Cause.prettyErrors(failure, { includeCauseInStack: true })
  return errors.length === 0 ? OtlpWire.SUCCEEDED : { code: OtlpWire.STATUS_ERROR, message: errors[0]!.message, interrupted: false, errors }
}
