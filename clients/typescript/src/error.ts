// The one error the client fails with for what core answered: its status, kind and message.

/** A refusal from core (`{ error: { kind, message } }`), or a call that ended without a settlement. */
export class CoreError extends Error {
  override readonly name = "CoreError"
  constructor(
    /** The HTTP status; 500 for an operational failure reported inside a call's event stream. */
    readonly status: number,
    /** `bad_request`, `invalid_input`, `unauthorized`, `forbidden`, `not_found`, `operational`, ... */
    readonly kind: string,
    message: string,
  ) {
    super(message)
  }
}
