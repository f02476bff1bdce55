// The MCP client through the compiled `core`: `core tools` connects the servers and lists their tools,
// `core exec` asks before a server's tool runs (declined without a person, approved once by --yes),
// `core mcp list` shows each server's state, and a malformed `mcp` entry stops the command at its line.

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { alive } from "../shell/processes"
import { binary, run } from "../support/binary"
import { tempDir } from "../support/temp"
import { BUN, FIXTURE, location } from "./support"

const env = (data: { dataDir: string; home: string }) => ({ CORE_DATA_DIR: data.dataDir, CORE_HOME: data.home })

describe("core with MCP servers in core.json", () => {
  test("core tools lists a server's tools; core exec asks, declining without a person and running with --yes", async () => {
    const { directory, environment } = location({ mcp: { fix: { command: [BUN, FIXTURE] } } })
    const tools = await run(["tools", "--json", "--location", directory], { env: env(environment) })
    expect(tools.code).toBe(0)
    const names = (JSON.parse(tools.stdout) as Array<{ name: string }>).map((definition) => definition.name)
    expect(names).toContain("fix_echo")

    const input = JSON.stringify({ text: "cli" })
    const declined = await run(["exec", "fix_echo", "--input", input, "--location", directory], { env: env(environment) })
    expect(declined.code).toBe(4)
    expect(JSON.parse(declined.stdout).status).toBe("declined")

    const approved = await run(["exec", "fix_echo", "--input", input, "--location", directory, "--yes"], {
      env: env(environment),
    })
    expect(approved.code).toBe(0)
    expect(JSON.parse(approved.stdout)).toMatchObject({ status: "success", content: [{ type: "text", text: "echo: cli" }] })
  }, 120_000)

  test("core exec of a built-in starts no MCP server; a server's tool starts only its own server", async () => {
    const { directory, environment } = location({
      permission: { "*": "allow" },
      mcp: {
        // Never answers initialize: anything waiting on it would wait for its whole timeout.
        mute: { command: [BUN, FIXTURE, "mute"], env: { PID_FILE: "" } },
        fix: { command: [BUN, FIXTURE], env: { PID_FILE: "" } },
      },
    })
    // Outside the Location, in a directory removed at the end of the run.
    const pids = tempDir("core-pids-")
    const mutePid = join(pids, "mute.pid")
    const fixPid = join(pids, "fix.pid")
    const config = JSON.parse(readFileSync(join(directory, "core.json"), "utf8"))
    config.mcp.mute.env.PID_FILE = mutePid
    config.mcp.fix.env.PID_FILE = fixPid
    await Bun.write(join(directory, "core.json"), JSON.stringify(config))
    const listed = await run(["exec", "list", "--input", "{}", "--location", directory], { env: env(environment) })
    expect(listed.code).toBe(0)
    expect(existsSync(mutePid) || existsSync(fixPid)).toBe(false)
    const echoed = await run(["exec", "fix_echo", "--input", JSON.stringify({ text: "lazy" }), "--location", directory], {
      env: env(environment),
    })
    expect(JSON.parse(echoed.stdout)).toMatchObject({ status: "success", content: [{ type: "text", text: "echo: lazy" }] })
    expect(existsSync(fixPid)).toBe(true)
    expect(existsSync(mutePid)).toBe(false)
  }, 120_000)

  test("a server command never resolves into the Location: a planted package or program is not what runs", async () => {
    const { directory, environment } = location((directory) => ({
      mcp: {
        // npx prefers a package installed in the project it starts in; offline, it cannot fetch the real one.
        runner: { command: ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"], env: { npm_config_offline: "true" }, timeoutMs: 20_000 },
        bare: { command: ["planted-server"] },
        relative: { command: ["./node_modules/.bin/planted-server"] },
        inside: { command: [join(directory, "node_modules/.bin/planted-server")] },
        // Found on PATH outside the Location, a link into it (what `npm link` makes for a server written there).
        linked: { command: ["linked-server"] },
      },
    }))
    const marker = `${directory}.planted-ran`
    const script = `#!/bin/sh\necho ran >> "${marker}"\n`
    const write = (path: string, text: string, mode = 0o644) => {
      mkdirSync(dirname(join(directory, path)), { recursive: true })
      writeFileSync(join(directory, path), text, { mode })
    }
    write("package.json", JSON.stringify({ name: "site", dependencies: { "@modelcontextprotocol/server-everything": "*" } }))
    write("node_modules/@modelcontextprotocol/server-everything/package.json", JSON.stringify({
      name: "@modelcontextprotocol/server-everything",
      version: "9.9.9",
      bin: { "mcp-server-everything": "planted.sh" },
    }))
    write("node_modules/@modelcontextprotocol/server-everything/planted.sh", script, 0o755)
    write("node_modules/.bin/mcp-server-everything", script, 0o755)
    write("node_modules/.bin/planted-server", script, 0o755)
    write("bin/linked-server", script, 0o755)
    const linkedBins = tempDir("core-remote-bin-")
    symlinkSync(join(directory, "bin/linked-server"), join(linkedBins, "linked-server"))
    // As a developer whose shell puts the project's bins on PATH (direnv, `export PATH=./node_modules/.bin:$PATH`).
    const path = `node_modules/.bin:${join(directory, "node_modules/.bin")}:${linkedBins}:${process.env.PATH}`
    const listed = await run(["mcp", "list", "--json", "--location", directory], { env: { ...env(environment), PATH: path } })
    const states = JSON.parse(listed.stdout) as Array<{ name: string; status: string; error?: string }>
    const byName = Object.fromEntries(states.map((state) => [state.name, state]))
    expect(existsSync(marker)).toBe(false)
    expect(byName.bare).toMatchObject({ status: "failed", error: expect.stringContaining("not found on PATH") })
    expect(byName.relative).toMatchObject({ status: "failed", error: expect.stringContaining("relative path") })
    expect(byName.inside).toMatchObject({ status: "failed", error: expect.stringContaining("inside the Location") })
    expect(byName.linked).toMatchObject({
      status: "failed",
      error: expect.stringContaining(`found on PATH at ${join(linkedBins, "linked-server")}, a link to ${join(realpathSync(directory), "bin/linked-server")} inside the Location`),
    })
  }, 120_000)

  // Ajv's logger wrote `unknown format "<the server's text>" ignored` to stderr raw (escape sequences clearing the
  // screen, writing the clipboard), twice, unattributed.
  test("a server's schema text never reaches the terminal through the schema validator", async () => {
    const { directory, environment } = location({ mcp: { fix: { command: [BUN, FIXTURE, "format"] } }, permission: { "fix_*": "allow" } })
    for (const args of [
      ["tools", "--location", directory],
      ["mcp", "list", "--location", directory],
      ["exec", "fix_formatted", "--input", '{"text":"hi"}', "--location", directory],
    ]) {
      const result = await run(args, { env: env(environment) })
      expect([args[0], result.stderr]).toEqual([args[0], ""])
      expect(result.stdout).not.toContain("\u001b")
    }
    const called = await run(["exec", "fix_formatted", "--input", '{"text":"hi"}', "--location", directory], { env: env(environment) })
    expect(JSON.parse(called.stdout)).toMatchObject({ status: "success", structured: { text: "hi" } })
  }, 60_000)

  test("core mcp list shows each server's state and problems, exiting 1 when one failed", async () => {
    const { directory, environment } = location({
      mcp: { fix: { command: [BUN, FIXTURE, "bad-names"] }, ghost: { command: ["/nonexistent/server"] } },
    })
    const listed = await run(["mcp", "list", "--location", directory], { env: env(environment) })
    expect(listed.code).toBe(1)
    expect(listed.stdout).toContain("fix  stdio  connected  15 tools")
    expect(listed.stdout).toContain('not offered: tool "has space"')
    expect(listed.stdout).toContain('ghost  stdio  failed  /nonexistent/server\n  error: command "/nonexistent/server" not found')
    const json = await run(["mcp", "list", "--json", "--location", directory], { env: env(environment) })
    const states = JSON.parse(json.stdout) as Array<{ name: string; status: string }>
    expect(states.map((state) => [state.name, state.status])).toEqual([
      ["fix", "connected"],
      ["ghost", "failed"],
    ])
    const tools = await run(["tools", "--location", directory], { env: env(environment) })
    expect(tools.code).toBe(0)
    expect(tools.stderr).toContain('core: warning: ')
    expect(tools.stderr).toContain('MCP server "ghost": command "/nonexistent/server" not found')
    // Its tool, asked for by name: the server is named with why, and nothing is settled (it said "Unknown tool").
    const exec = await run(["exec", "ghost_echo", "--input", "{}", "--location", directory], { env: env(environment) })
    expect(exec.code).toBe(2)
    expect(exec.stdout).toBe("")
    expect(exec.stderr).toStartWith(
      'core exec: the tool "ghost_echo" is not offered: MCP server "ghost" could not be connected: command "/nonexistent/server" not found',
    )
    expect(exec.stderr).toContain("See each server's state and why: core mcp list")
  }, 120_000)

  for (const mode of ["serve", "stubborn"]) {
    test(`a server core started ends when core is killed outright (${mode === "serve" ? "one that exits when its stdin closes" : "one that would not"})`, async () => {
      const { directory, environment } = location({})
      const pidFile = join(directory, "server.pid")
      await Bun.write(
        `${directory}/core.json`,
        JSON.stringify({ mcp: { fix: { command: [BUN, FIXTURE, mode], env: { PID_FILE: pidFile } } } }),
      )
      const core = Bun.spawn([await binary(), "mcp", "--location", directory], {
        env: { ...process.env, ...env(environment) },
        stdin: "pipe",
        stdout: "pipe",
        stderr: "ignore",
      })
      // `core mcp` connects its servers when the client lists the tools; the server writes its pid before it answers.
      const initialize = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      core.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: initialize })}\n`)
      core.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
      core.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })}\n`)
      core.stdin.flush()
      let answered = ""
      const decoder = new TextDecoder()
      for await (const chunk of core.stdout) {
        answered += decoder.decode(chunk, { stream: true })
        if (answered.split("\n").slice(0, -1).some((line) => JSON.parse(line).id === 1)) break
      }
      expect(answered).toContain('"fix_')
      const server = Number(readFileSync(pidFile, "utf8"))
      expect(alive(server)).toBe(true)
      core.kill("SIGKILL")
      await core.exited
      for (let tries = 0; tries < 250 && alive(server); tries++) await Bun.sleep(20)
      expect(alive(server)).toBe(false)
    }, 120_000)
  }

  test("a malformed mcp entry is a usage error naming the file, line and column", async () => {
    const { directory, environment } = location({})
    await Bun.write(`${directory}/core.json`, `{\n  "mcp": {\n    "gh": { "command": "npx gh" }\n  }\n}\n`)
    const listed = await run(["tools", "--location", directory], { env: env(environment) })
    expect(listed.code).toBe(2)
    expect(listed.stderr).toContain(`${directory}/core.json:3:24: mcp.gh.command: expected a command as an array of strings`)
  }, 120_000)
})
