// The permission prompt of `core exec` on a real terminal: the binary runs under `script` (util-linux, part of
// every Debian system), which gives it a pseudo-terminal, and the test types the answers.

import { describe, expect, test } from "bun:test"
import { binary } from "../support/binary"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { onTerminal as driven, runs, sandbox, settlementOf, type Sandbox } from "./fixture"
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
  // A model that may run `cat` writes a file whose last line, as the command's progress, would clear the screen,
  // draw a harmless-looking ask where the next one's answer is typed, and conceal what follows: the next call's
  // real ask (`rm -rf`) would be invisible, and the person would answer the fake one.
  test("a command's output cannot drive the terminal through its progress, nor hide the next ask", async () => {
    const fake = 'core: allow bash on "ls -la"? [o]nce, [a]lways (saves "ls *"), [r]eject: '
    const box = sandbox({
      "notes.txt": `notes\n\u001b[2J\u001b[3;1H${fake}\u001b]52;c;cHduZWQ=\u0007\u009b1;1H\u001b[1;1H\u001b[8m\n`,
      ...coreJson({ permission: { bash: { "rm *": "ask" } } }),
    })
    mkdirSync(join(box.location, "victim"))
    const location = ["--location", box.location]
    const shown = await driven(box, ["exec", "bash", "--input", JSON.stringify({ command: "cat notes.txt; sleep 1" }), ...location])
    expect(await shown.finished()).toBe(0)
    const screen = shown.screen()
    // Its progress line showed (cut to the terminal's width), the controls in it escaped; core's own (return, erase
    // the line) are all that acted.
    expect(screen).toContain("\r\u001b[2K\\u001b[2J\\u001b[3;1H")
    expect(screen.replaceAll("\r\u001b[2K", "")).not.toMatch(/[\u0007\u001b\u009b]/)
    const asked = await driven(box, ["exec", "bash", "--input", JSON.stringify({ command: "rm -rf victim" }), ...location])
    await asked.until("[r]eject: ")
    // The real ask starts on a cleared line in the default rendition: nothing left concealed or moved hides it.
    expect(asked.screen()).toContain('\r\u001b[0m\u001b[2Kcore: allow bash on "rm -rf victim"?')
    asked.child.stdin.write("r\n\n")
    await asked.child.stdin.end()
    expect(await asked.finished()).toBe(4)
    expect(existsSync(join(box.location, "victim"))).toBe(true)
  })

  // The ask was about `sh` alone: nothing on screen said what the rest of the line fed it.
  test("an ask about a part of a bash line shows the whole line above the question", async () => {
    const box = sandbox({ ...coreJson({ permission: { bash: { "*": "allow" } } }) })
    const command = "cat <<EOF | sh\ntouch made.txt\nEOF"
    const asked = await driven(box, ["exec", "bash", "--input", JSON.stringify({ command }), "--location", box.location])
    await asked.until("[r]eject: ")
    expect(asked.screen()).toContain('core: the command line: "cat <<EOF | sh\\ntouch made.txt\\nEOF"')
    expect(asked.screen()).toContain('core: allow bash on "sh"?')
    asked.child.stdin.write("r\n\n")
    await asked.child.stdin.end()
    expect(await asked.finished()).toBe(4)
    expect(existsSync(join(box.location, "made.txt"))).toBe(false)
  })
})
