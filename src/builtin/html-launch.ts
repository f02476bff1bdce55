// The compiled core's early dispatch to webfetch's HTML converter (./html-child): imported by the CLI entry, so that
// `core __convert-html` runs the converter before any other module of core is initialised, and never returns to
// them; from source, run directly (`bun html-launch.ts __convert-html`). Anything else passes straight through.

/** The argument that makes the core executable webfetch's HTML converter. */
export const LAUNCH = "__convert-html"

if (process.argv[2] === LAUNCH) {
  const child = await import("./html-child")
  child.main()
  // The converter runs until its parent goes (html-child); the CLI after this import never sees the argument.
  await new Promise<never>(() => {})
}
