export * as SystemPrograms from "./system-programs"

// The programs core itself runs outside the sandbox (`unshare`, which starts a supervisor for a user who is not root;
// `true`, which a supervisor runs to warm up) are looked up in the system's own folders, never on PATH: a PATH folder
// may lie in a Location (`npm run` puts the project's `node_modules/.bin` first), where a model may write a program
// of that name. Imports nothing: a supervisor loads it as it starts.

/** The system's folders of programs, where a package manager installs them (util-linux's `unshare`, coreutils). */
export const DIRECTORIES = "/usr/bin:/bin:/usr/sbin:/sbin"

/** Where the system's program `name` is, or null where the system has none. */
export const find = (name: string): string | null => Bun.which(name, { PATH: DIRECTORIES })
