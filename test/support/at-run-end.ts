// What helper modules leave behind for the end of the run. A module is evaluated once per run, so a hook it registers
// at its top level belongs to the first test file that imports it and runs when that file ends, never for the
// files after it: helpers register their clean-up here instead, and ./run-end (preloaded, bunfig.toml) runs it
// once the last file has run.

const ends: Array<() => unknown> = []

/** Runs `end` once the last test file has run (in the order registered; a failing one does not stop the rest). */
export const atRunEnd = (end: () => unknown): void => {
  ends.push(end)
}

/** Runs what was registered, each once. */
export const runEnds = async (): Promise<void> => {
  for (const end of ends.splice(0)) {
    try {
      await end()
    } catch (cause) {
      console.error("a test run's clean-up failed:", cause)
    }
  }
}
