// `npm run package`: the npm tarballs a release publishes, written to dist/npm/ (or `--out DIR`), in the convention
// of tools that ship a native executable through npm (esbuild, Biome, OpenCode): a small main package whose `core`
// bin finds this platform's package and execs its executable, plus one package per platform holding `core`.
// It packages the executable build.ts makes for this machine (or `--binary PATH`); it downloads nothing.

import { chmodSync, copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import packageJson from "../package.json" with { type: "json" }

/**
 * A scope of its own: npm gives a scope's names to its owner alone, so nobody else can publish a platform
 * package that the launcher would run (why esbuild moved to `@esbuild/*`). The root package stays private.
 */
export const SCOPE = "@core-runtime"
export const MAIN = `${SCOPE}/core`

/** The platform package for an OS and CPU as Node names them (`process.platform`, `process.arch`). */
export const platformPackage = (os: string, cpu: string) => `${SCOPE}/core-${os}-${cpu}`

/**
 * The main package's bin: a POSIX shell script that `exec`s the platform executable, so `core` is one process
 * (signals, exit codes, the terminal and stdin are exactly the executable's) and needs no Node at run time.
 * It looks beside the main package (npm's hoisted and global layouts, pnpm) and inside it (nested).
 */
const launcher = (version: string) => `#!/bin/sh
# core ${version}: runs the core executable of this machine's platform package (${platformPackage("<os>", "<cpu>")}).
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) os=$(uname -s) ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) cpu=x64 ;;
  aarch64 | arm64) cpu=arm64 ;;
  *) cpu=$(uname -m) ;;
esac
# npm links bin/core from its bin folder: follow the links (readlink without -f, which older systems lack).
self=$0
while [ -L "$self" ]; do
  link=$(readlink "$self")
  case "$link" in
    /*) self=$link ;;
    *) self=$(dirname "$self")/$link ;;
  esac
done
main=$(dirname "$(dirname "$self")")
name=core-$os-$cpu
for binary in "$main/../$name/bin/core" "$main/node_modules/${SCOPE}/$name/bin/core"; do
  if [ -x "$binary" ]; then exec "$binary" "$@"; fi
done
echo "core: no core executable for $os-$cpu: the package ${SCOPE}/$name is not installed beside $main." >&2
echo "core: reinstall ${MAIN} (npm installs the platform package with it), or build core from source." >&2
exit 1
`

const README = `# ${MAIN}

core is a tool runtime for AI agents, built on Bun and Effect: one executable, \`core\`, that holds typed tools and
settles the tool calls a model makes. This package puts \`core\` on the PATH:

\`\`\`sh
npm install -g ${MAIN}
core --help
\`\`\`

The executable itself comes in the package for your platform (\`${platformPackage("linux", "x64")}\`, ...), which npm
installs with this one.
`

interface Packed {
  readonly name: string
  readonly file: string
  readonly bytes: number
}

/** `npm pack` of a staged folder into `out`; answers the tarball. */
const pack = (folder: string, out: string): Packed => {
  const packed = Bun.spawnSync(["npm", "pack", "--json", "--pack-destination", out], {
    cwd: folder,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, npm_config_loglevel: "error", npm_config_update_notifier: "false" },
  })
  if (packed.exitCode !== 0) throw new Error(`npm pack failed in ${folder}:\n${packed.stderr.toString()}`)
  const [result] = JSON.parse(packed.stdout.toString()) as Array<{ readonly name: string; readonly filename: string }>
  const file = join(out, result!.filename)
  return { name: result!.name, file, bytes: statSync(file).size }
}

/** Stages and packs the main package and this platform's package for `binary`; answers the tarballs. */
export const write = (options: { readonly binary: string; readonly out: string }): ReadonlyArray<Packed> => {
  const { version, description } = packageJson
  const out = resolve(options.out)
  rmSync(out, { recursive: true, force: true })
  const staging = join(out, ".staging")
  const platform = platformPackage(process.platform, process.arch)

  const native = join(staging, "platform")
  mkdirSync(join(native, "bin"), { recursive: true })
  copyFileSync(options.binary, join(native, "bin/core"))
  chmodSync(join(native, "bin/core"), 0o755)
  writeFileSync(
    join(native, "package.json"),
    `${JSON.stringify(
      {
        name: platform,
        version,
        description: `The core executable for ${process.platform}-${process.arch} (installed by ${MAIN})`,
        os: [process.platform],
        cpu: [process.arch],
        files: ["bin/core"],
        // Package managers that would keep it zipped (Yarn PnP) must unpack it: it is executed, not imported.
        preferUnplugged: true,
      },
      null,
      2,
    )}\n`,
  )

  const main = join(staging, "main")
  mkdirSync(join(main, "bin"), { recursive: true })
  writeFileSync(join(main, "bin/core"), launcher(version), { mode: 0o755 })
  writeFileSync(join(main, "README.md"), README)
  writeFileSync(
    join(main, "package.json"),
    `${JSON.stringify(
      {
        name: MAIN,
        version,
        description,
        bin: { core: "bin/core" },
        files: ["bin/core", "README.md"],
        // npm installs only the one whose os and cpu match this machine.
        optionalDependencies: { [platform]: version },
      },
      null,
      2,
    )}\n`,
  )

  try {
    return [pack(main, out), pack(native, out)]
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const flag = (name: string) => {
    const index = process.argv.indexOf(name)
    return index === -1 ? undefined : process.argv[index + 1]
  }
  const root = join(import.meta.dir, "..")
  let binary = flag("--binary")
  if (binary === undefined) {
    const build = Bun.spawnSync([process.execPath, join(root, "build.ts")], { cwd: root, stdout: "inherit", stderr: "inherit" })
    if (build.exitCode !== 0) process.exit(1)
    binary = join(root, "dist/core")
  }
  const started = performance.now()
  const packed = write({ binary, out: flag("--out") ?? join(root, "dist/npm") })
  for (const tarball of packed) console.error(`packed ${tarball.name}: ${tarball.file} (${tarball.bytes} bytes)`)
  console.error(`packed in ${Math.round(performance.now() - started)} ms; install with: npm install -g ${packed.map((p) => p.file).join(" ")}`)
}
