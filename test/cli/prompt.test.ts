// The permission prompt of `core exec` on a real terminal: the binary runs under `script` (util-linux, part of
// every Debian system), which gives it a pseudo-terminal, and the test types the answers.

import { describe, expect, test } from "bun:test"
import { binary } from "../support/binary"
import { runs, sandbox, settlementOf, type Sandbox } from "./fixture"
import { coreJson, recording, savedApprovals } from "./permissions-fixture"

/** Runs `core exec deploy` on a pseudo-terminal, typing `typed`, and returns its settlement and exit code. */
const onTerminal = async (box: Sandbox, typed: string) => {
  const command = [await binary(), "exec", "deploy", "--input", '{"target":"prod"}', "--location", box.location]
    .map((part) => `'${part.replaceAll("'", "'\\''")}'`)
    .join(" ")
  const child = Bun.spawn(["script", "-qec", command, "/dev/null"], {
    env: { ...process.env, ...box.env },
    stdin: new Blob([typed]),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [code, output] = await Promise.all([child.exited, new Response(child.stdout).text()])
  // On a terminal stdout and stderr share the screen: the settlement is the JSON object at the end.
  const json = output.slice(output.indexOf('{\r\n  "tool"')).replaceAll("\r\n", "\n")
  return { code, output, settlement: settlementOf({ code, stdout: json, stderr: "" }) }
}

describe("the permission prompt on a terminal", () => {
  test("once runs the call and saves nothing; always runs it and saves the approval later calls use", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const once = await onTerminal(box, "o\n")
    expect(once.output).toContain('core: allow deploy on "*"? [o]nce, [a]lways (saves "*"), [r]eject:')
    expect(once.settlement.status).toBe("success")
    expect(await savedApprovals(box)).toEqual([])
    const always = await onTerminal(box, "a\n")
    expect(always.settlement.status).toBe("success")
    expect(await savedApprovals(box)).toEqual([["deploy", "*"]])
    expect(runs(box, "deploy")).toBe(2)
  })

  test("reject with a message fails the call with it; reject without one declines it", async () => {
    const box = sandbox({ "tools/deploy.ts": recording("deploy"), ...coreJson({ permission: { deploy: "ask" } }) })
    const rejected = await onTerminal(box, "r\nDeploy to staging first.\n")
    expect(rejected.code).toBe(1)
    expect(rejected.settlement).toMatchObject({ status: "error", error: { kind: "failure", message: "Deploy to staging first." } })
    const declined = await onTerminal(box, "r\n\n")
    expect(declined.code).toBe(4)
    expect(declined.settlement.status).toBe("declined")
    expect(runs(box, "deploy")).toBe(0)
  })
})
