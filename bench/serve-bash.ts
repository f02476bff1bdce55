// A `bash` call of `true` through `core serve` (the compiled binary, sandboxed, in a git repository, a fresh call id
// per call), end to end from this process's fetch to the settlement, two ways: back to back (each call posted as the
// one before is answered: the supervisor readied after a call is rarely up in time, so a call often waits for one to
// start) and paced (each after a pause that leaves the spare supervisor ready, as an agent's turns do). Beside them,
// a bare `Bun.spawn(["bash", "-c", "true"])` awaited, in the same rounds. With `--base BINARY` (a compiled core of an
// earlier build) that build is served and measured in the same rounds too. No target: the figures show what a
// command costs a host beyond the process itself, and whether a change moved it.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildCore, cleanup, duration, main, progress, ratio, type Report, spawnServer, summarize } from "./measure"

const ROUNDS = 4
const BACK_TO_BACK = 25
const PACED = 5
/** Long enough for the spare supervisor started after a call to be up before the next. */
const PACE_MS = 1_500
const WARMUP = 5

interface Side {
  readonly label: string
  readonly call: () => Promise<void>
  readonly close: () => void
}

const served = async (label: string, binary: string, root: string): Promise<Side> => {
  const location = mkdtempSync(join(root, "location-"))
  writeFileSync(join(location, "core.json"), JSON.stringify({ permission: { "*": "allow" } }))
  Bun.spawnSync(["git", "init", "-q", location])
  const home = join(root, `home-${label}`)
  mkdirSync(home, { recursive: true })
  const { child, ready } = await spawnServer([binary, "serve", "--location", location, "--port", "0"], {
    PATH: process.env.PATH,
    HOME: home,
    CORE_DATA_DIR: join(root, `data-${label}`),
    CORE_HOME: join(root, `core-home-${label}`),
  })
  const headers = { authorization: `Bearer ${ready.token}`, "content-type": "application/json" }
  const turn = (await (await fetch(`${ready.url}/v1/turns`, { method: "POST", headers, body: "{}" })).json()) as { turnID: string }
  let index = 0
  const call = async () => {
    const body = JSON.stringify({
      sessionID: "ses_bench",
      assistantMessageID: "msg_bench",
      toolCallID: `call_${label}_${index++}`,
      name: "bash",
      input: { command: "true" },
    })
    const answer = (await (await fetch(`${ready.url}/v1/turns/${turn.turnID}/calls`, { method: "POST", headers, body })).json()) as {
      status: string
    }
    if (answer.status !== "success") throw new Error(`${label}: a call settled ${JSON.stringify(answer)}`)
  }
  return { label, call, close: () => child.kill("SIGKILL") }
}

const bare: Side = {
  label: "bare Bun.spawn",
  call: async () => {
    await Bun.spawn(["bash", "-c", "true"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exited
  },
  close: () => {},
}

const timed = async (call: () => Promise<void>): Promise<number> => {
  const started = performance.now()
  await call()
  return performance.now() - started
}

const measure = async (): Promise<Report> => {
  const root = mkdtempSync(join(tmpdir(), "core-bench-serve-bash-"))
  const baseAt = process.argv.indexOf("--base")
  const sides: Array<Side> = [bare]
  try {
    progress("building core")
    sides.push(await served("core", await buildCore(join(root, "core")), root))
    if (baseAt > 0) sides.push(await served("base", process.argv[baseAt + 1]!, root))
    for (const side of sides) for (let call = 0; call < WARMUP; call++) await side.call()
    const backToBack = new Map(sides.map((side) => [side.label, [] as Array<number>]))
    const paced = new Map(sides.map((side) => [side.label, [] as Array<number>]))
    for (let round = 0; round < ROUNDS; round++) {
      progress(`round ${round + 1} of ${ROUNDS}`)
      // Each round in another order: no side always runs after the same one.
      const order = sides.map((_, index) => sides[(index + round) % sides.length]!)
      for (const side of order) {
        for (let call = 0; call < BACK_TO_BACK; call++) backToBack.get(side.label)!.push(await timed(side.call))
        for (let call = 0; call < PACED; call++) {
          await Bun.sleep(PACE_MS)
          paced.get(side.label)!.push(await timed(side.call))
        }
      }
    }
    const bareBack = summarize(backToBack.get(bare.label)!)
    const barePaced = summarize(paced.get(bare.label)!)
    const rows = sides.map((side) => {
      const back = summarize(backToBack.get(side.label)!)
      const pace = summarize(paced.get(side.label)!)
      return [side.label, duration(back.p50), duration(back.q3), ratio(back.p50 / bareBack.p50), duration(pace.p50), duration(pace.q3), ratio(pace.p50 / barePaced.p50)]
    })
    return {
      name: "bash through core serve",
      about:
        `A bash call of \`true\` through core serve, ${ROUNDS} rounds of ${BACK_TO_BACK} back to back and ${PACED} paced ` +
        `(${PACE_MS} ms apart) per side, against a bare Bun.spawn of bash -c true in the same rounds.`,
      tables: [
        {
          title: "per call, end to end",
          columns: ["side", "back to back p50", "q3", "/ bare", "paced p50", "q3", "/ bare"],
          rows,
        },
      ],
      targets: [],
      notes: ["core: HTTP, decoding, the permission check, the line's parse, sandbox and guard set-up, a supervisor, recording the settlement."],
    }
  } finally {
    for (const side of sides) side.close()
    cleanup([root])
  }
}

await main(measure)
