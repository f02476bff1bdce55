export * as Cancelled from "./cancelled"

// What a cancelled call says to the model (DESIGN §5: a runner outcome, not a tool result), in a module of its own
// that loads nothing: the settlement schema (./settlement) words it so, and so does `core exec` forwarded to a
// `core serve` (cli/forward.ts, which loads no Effect), for a call it joined and stopped waiting for.

/** The text of a cancelled call of `tool`, then what was ended of it while it was stopped (`stopping`). */
export const text = (tool: string, stopping: ReadonlyArray<string> = []): string =>
  [
    `The ${tool} call was cancelled by the user or the host before it finished; it may have done part of ` +
      `its work. Check before calling it again.`,
    ...stopping,
  ].join("\n")

/** The text of a call of `tool` cancelled before it began running (while it waited for permission, say). */
export const beforeStart = (tool: string): string =>
  `The ${tool} call was cancelled by the user or the host before it ran (while it waited for permission or for ` +
  "its turn): nothing of it ran. Call it again if it is still wanted."

/**
 * The text of a call of `tool` that another core process is running under the same ids, when this one stops waiting
 * for it: nothing of it ran here, and stopping waiting stops nothing of it.
 */
export const stoppedWaiting = (tool: string): string =>
  `Stopped waiting for the ${tool} call, which another core process is running under the same ids: nothing of it ` +
  "ran here, and it goes on there. Call again with the same ids to get its settlement once it ends."
