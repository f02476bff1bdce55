// git run by a test as a person would, in a repository of the test's own: its own identity, and no user or system
// config (the home is the repository), so what the machine's git config says changes nothing.

/** Runs git in `cwd`; its standard output, or an error saying why it failed. */
export const git = (cwd: string, ...args: ReadonlyArray<string>): string => {
  const result = Bun.spawnSync(["git", ...args], {
    cwd,
    env: {
      PATH: process.env.PATH!,
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "a",
      GIT_AUTHOR_EMAIL: "a@b",
      GIT_COMMITTER_NAME: "a",
      GIT_COMMITTER_EMAIL: "a@b",
    },
  })
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr.toString()}`)
  return result.stdout.toString()
}
