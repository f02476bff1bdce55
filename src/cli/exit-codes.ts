export * as ExitCodes from "./exit-codes"

// The exit codes of DESIGN §6 and the one a settlement ends `core exec` with. Imports nothing: the forwarded exec
// (./forward) uses them without loading Effect.

export const EXIT = {
  ok: 0,
  modelError: 1,
  usage: 2,
  operational: 3,
  declined: 4,
  cancelled: 130,
} as const

/** How `core exec` ends for a settlement of `status`. */
export const ofStatus = (status: "success" | "error" | "declined" | "cancelled"): number => {
  switch (status) {
    case "success":
      return EXIT.ok
    case "error":
      return EXIT.modelError
    case "declined":
      return EXIT.declined
    case "cancelled":
      return EXIT.cancelled
  }
}
