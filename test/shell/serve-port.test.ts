// Under `core serve` (the compiled binary), a command cannot connect to core's own port: bash's /dev/tcp, curl
// and bun's fetch from a bash call are refused by the kernel, while another local port still answers. The script
// is a file, so the line itself names nothing outside the Location. Needs Landlock's network rules (ABI 4).

import { afterAll, describe, expect, test } from "bun:test"
import { Landlock } from "../../src/shell/landlock"
import { sandbox, serve } from "../server/support"

const NET = Landlock.abi() >= 4
const needs = NET ? "" : " (SKIPPED: this kernel's Landlock has no network rules)"

const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("other") })
afterAll(() => other.stop(true))

const SCRIPT = `for port in "$@"; do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "tcp $port connected" || echo "tcp $port refused"
  if command -v curl >/dev/null; then curl -s -o /dev/null "http://127.0.0.1:$port/v1/health" && echo "curl $port connected" || echo "curl $port refused"; fi
  bun -e "fetch('http://127.0.0.1:$port/v1/health').then(() => console.log('fetch $port connected'), () => console.log('fetch $port refused'))"
done
`

describe("core serve and its own port", () => {
  test.skipIf(!NET)(`a command cannot connect to core's port; another port answers${needs}`, async () => {
    const box = sandbox({ "net.sh": SCRIPT })
    const served = await serve(box)
    const port = Number(new URL(served.url).port)
    const turn = await served.turn()
    const settled = await served.settle(turn.turnID, { name: "bash", input: { command: `bash net.sh ${port} ${other.port}` } })
    expect(settled.body.status).toBe("success")
    const lines: Array<string> = settled.body.structured.stdout.trim().split("\n")
    const curl = Bun.which("curl") !== null
    const expected = (at: number, outcome: string) => [
      `tcp ${at} ${outcome}`,
      ...(curl ? [`curl ${at} ${outcome}`] : []),
      `fetch ${at} ${outcome}`,
    ]
    expect(lines).toEqual([...expected(port, "refused"), ...expected(other.port!, "connected")])
    served.child.kill("SIGTERM")
    await served.exited()
  })
})
