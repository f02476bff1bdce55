// The `core` executable's entry: answers `--version` and `--help` (and a bare `core`) before anything of core is
// loaded, then hands every command to ./dispatch, which loads Effect and the command's own modules (`core exec` first
// tries ./forward, which loads no Effect, where a `core serve` may be running on its data directory). Nothing here may
// import more than the supervisor's and the HTML converter's hooks and package.json: this file is what the two
// cheapest commands cost.

// First: `core __supervise` (the per-call supervisor of a shell command), `core __start` (the starter of a sandboxed
// one) and `core __convert-html` (webfetch's converter of HTML, a process it ends past a budget) must not wait for
// the rest.
import "../shell/launch"
import "../builtin/html-launch"
import packageJson from "../../package.json" with { type: "json" }

const HELP = `core ${packageJson.version}: a tool runtime for AI agents

Usage:
  core exec NAME --input JSON [--location DIR] [--agent ID] [--session ID] [--message ID] [--call ID] [--yes]
  core tools [--location DIR] [--agent ID] [--json] [--provider P]
  core output ID [--structured] [--raw]
  core check NAME --input JSON [--location DIR] [--agent ID]
  core check [--location DIR] [--provider P]
  core permissions [reset [--action A]] [--location DIR]
  core mcp [--location DIR] [--agent ID]
  core mcp list [--location DIR] [--json]
  core serve [--location DIR] [--allow-root DIR]... [--host 127.0.0.1] [--port N] [--log-level L]
  core log [--session ID] [--location DIR] [--since T] [--limit N] [--json]
  core init [DIR] [--update]
  core test [ARGS...]
  core --version | --help | COMMAND --help

Commands:
  exec         settle one tool call and print its settlement JSON
  tools        list the tools a model would be offered
  output       print a managed output (the full output behind a bounded preview)
  check        explain the permission decision for a call, running nothing; or check a whole Location (CI)
  permissions  list or clear the approvals saved by "always" replies
  mcp          serve a Location's tools to an MCP client over stdio; list the Location's MCP servers
  serve        serve tool calls over HTTP to agent hosts (the sidecar), and MCP at /mcp
  log          list the recorded calls: tool, status, agent, Location, input
  init         prepare a directory for writing and testing tools (no npm install)
  test         run a tool workspace's tests (bun test) with the Bun inside core

Environment:
  CORE_DATA_DIR   managed outputs and the settlement store (default ~/.local/share/core)
  CORE_STORE_URL  postgres://… : settlements and saved approvals in a Postgres shared by a
                  fleet (docs/fleet.md); add ?pgbouncer=true behind pgbouncer
  CORE_OUTPUTS_URL
                  s3://bucket/prefix : managed outputs in an S3-compatible store too, read on
                  every host sharing it (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...)
  CORE_LEASE_MS   how long a running call's lease lasts unless renewed (default 5000)
  CORE_USER       who saved approvals are recorded as approved by (default user@host)
  CORE_EXEC_FORWARD
                  0: core exec settles in process even with a core serve of the same data
                  directory running (default: it settles there, see core exec --help)
  CORE_HOME       application tools in $CORE_HOME/tools/*.ts and $CORE_HOME/core.json
                  (default ~/.config/core)
  OTEL_EXPORTER_OTLP_ENDPOINT
                  export OpenTelemetry traces over OTLP/HTTP (exec, serve, mcp); unset: none
`

/** The exit codes of DESIGN §6 this file answers with itself (./command has all of them). */
const OK = 0
const USAGE = 2
const OPERATIONAL = 3

/**
 * Writes `text` and exits once the reader has it: a pipe keeps unread bytes until the process exits, then drops
 * them. A reader that stops early (`core --help | head -1`) is no failure; any other failed write is.
 */
const answer = async (fd: 1 | 2, text: string, code: number): Promise<never> => {
  try {
    await Bun.write(fd === 1 ? Bun.stdout : Bun.stderr, text)
  } catch (cause) {
    if ((cause as { code?: unknown } | undefined)?.code !== "EPIPE") {
      process.stderr.write(`core: could not write to stdout: ${String((cause as Error | undefined)?.message ?? cause)}\n`)
      process.exit(code === OK ? OPERATIONAL : code)
    }
  }
  process.exit(code)
}

const argv = process.argv.slice(2)
const command = argv[0]
if (command === undefined) await answer(2, HELP, USAGE)
if (command === "--help" || command === "-h" || command === "help") await answer(1, HELP, OK)
if (command === "--version" || command === "-v") await answer(1, `${packageJson.version}\n`, OK)
/**
 * Whether a `core serve` may be running on exec's data directory: one of its socket directories (`serve-<pid>-…`) is
 * there, which ./forward then checks in full. Without one, exec settles in process without loading ./forward.
 */
const servedMaybe = (): boolean => {
  const env = process.env
  if (env.CORE_EXEC_FORWARD === "0") return false
  // The default data directory as ./forward finds it (os.homedir() is $HOME where that is set): elsewhere it decides.
  const dataDir = env.CORE_DATA_DIR || (env.HOME ? `${env.HOME}/.local/share/core` : undefined)
  if (dataDir === undefined) return true
  try {
    return (require("node:fs") as typeof import("node:fs")).readdirSync(dataDir).some((name) => name.startsWith("serve-"))
  } catch {
    return false
  }
}

// `core exec` settles through a running `core serve` of the same data directory when there is one that fits, before
// Effect or anything of the host is loaded (./forward); otherwise in process, below.
if (command === "exec" && servedMaybe()) {
  const forward = () => import("./forward")
  const code = await forward().then((module) => module.Forward.run(argv.slice(1)))
  if (code !== undefined) process.exit(code)
}
// Through a function: knip traces the namespace's members only in a dynamic import's callback.
const dispatch = () => import("./dispatch")
await dispatch().then((module) => module.Dispatch.run(argv))
