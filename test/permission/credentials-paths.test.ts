// Which paths are secrets core keeps from every tool (src/permission/credentials.ts), by path alone: the system's,
// the user's credential stores, and those of every other user's home.

import { describe, expect, test } from "bun:test"
import { Credentials } from "../../src/permission/credentials"
import { Homes } from "../../src/permission/homes"

describe("Credentials.systemOf", () => {
  test("names the system's secrets and what lies in them, and nothing beside them", () => {
    const secrets: ReadonlyArray<readonly [string, string]> = [
      ["/etc/shadow", "/etc/shadow"],
      ["/etc/security/opasswd", "/etc/security/opasswd"],
      ["/etc/pki/tls/private/server.key", "/etc/pki/tls/private"],
      ["/etc/wireguard/wg0.conf", "/etc/wireguard"],
      ["/etc/openvpn/client/me.key", "/etc/openvpn"],
      ["/var/lib/iwd/home.psk", "/var/lib/iwd"],
      ["/etc/netplan/50-wifi.yaml", "/etc/netplan"],
      ["/etc/docker/key.json", "/etc/docker/key.json"],
      ["/var/lib/rancher/k3s/server/token", "/var/lib/rancher"],
      ["/run/credentials/app.service/token", "/run/credentials"],
      ["/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets"],
      ["/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_ed25519_key"],
      ["/run/user/1000/containers/auth.json", "/run/user/1000/containers"],
    ]
    for (const [path, secret] of secrets) expect([path, Credentials.systemOf(path)]).toEqual([path, secret])
    for (const path of ["/etc/hosts", "/etc/ssh/ssh_host_ed25519_key.pub", "/etc/ssh/ssh_config", "/etc/shadows", "/etc/docker/daemon.json", "/home/me/etc/shadow", "/run/user/1000/bus"]) {
      expect([path, Credentials.systemOf(path)]).toEqual([path, undefined])
    }
  })
})

describe("Credentials.anyStoreOf", () => {
  test("the user's stores, unless granted; every other user's home's stores, whatever is granted", () => {
    expect(Credentials.anyStoreOf("/home/me", "/home/me/.ssh/id_ed25519")).toBe("/home/me/.ssh")
    expect(Credentials.anyStoreOf("/home/me", "/home/me/.aws/credentials", ["/home/me/.aws"])).toBeUndefined()
    expect(Credentials.anyStoreOf("/home/me", "/home/bob/.ssh/id_ed25519")).toBe("/home/bob/.ssh")
    expect(Credentials.anyStoreOf("/home/me", "/home/bob/.aws/credentials", ["/home/bob/.aws"])).toBe("/home/bob/.aws")
    expect(Credentials.anyStoreOf("/home/me", "/root/.ssh/authorized_keys")).toBe("/root/.ssh")
    expect(Credentials.anyStoreOf("/srv/me", "/home/bob/.netrc")).toBe("/home/bob/.netrc")
    // A store whose place has a Node version in it.
    expect(Credentials.anyStoreOf("/home/me", "/home/me/.nvm/versions/node/v22.1.0/etc/npmrc")).toBe("/home/me/.nvm/versions/node/v22.1.0/etc/npmrc")
    expect(Credentials.anyStoreOf("/home/me", "/home/me/.volta/tools/image/node/20.0.0/etc/npmrc")).toBe("/home/me/.volta/tools/image/node/20.0.0/etc/npmrc")
    for (const path of ["/home/me/.nvm/versions/node/v22.1.0/bin/node", "/home/me/.nvm/versions/node/etc/npmrc", "/home/me/.cache/huggingface/hub/model.bin"]) {
      expect([path, Credentials.anyStoreOf("/home/me", path)]).toEqual([path, undefined])
    }
    for (const path of ["/home/bob/project/.sshrc", "/home/bob/notes.txt", "/home", "/home/bob", "/srv/.ssh/x"]) {
      expect([path, Credentials.anyStoreOf("/home/me", path)]).toEqual([path, undefined])
    }
  })
})

describe("the homes of the system's other users", () => {
  test("Homes.named reads every home /etc/passwd names, service accounts' too, and none that is no home", () => {
    const passwd = [
      "root:x:0:0:root:/root:/bin/bash",
      "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
      "bin:x:2:2:bin:/bin:/usr/sbin/nologin",
      "www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin",
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
      "postgres:x:104:110:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash",
      "bob:x:1000:1000::/var/home/bob:/bin/bash",
      "odd:x:1001:1001::relative/home:/bin/sh",
      "# a comment",
      "",
    ].join("\n")
    expect(Homes.named(passwd)).toEqual(["/root", "/var/www", "/var/lib/postgresql", "/var/home/bob"])
  })

  test("a service account's home and a home reached through a link keep their stores, as /home/NAME does", () => {
    const others = Credentials.storesUnder(["/var/lib/postgresql", "/var/home/bob"])
    expect(Credentials.anyStoreOf("/root", "/var/lib/postgresql/.pgpass", [], others)).toBe("/var/lib/postgresql/.pgpass")
    expect(Credentials.anyStoreOf("/root", "/var/lib/postgresql/.ssh/id_ed25519", [], others)).toBe("/var/lib/postgresql/.ssh")
    expect(Credentials.anyStoreOf("/root", "/var/home/bob/.aws/credentials", ["/var/home/bob/.aws"], others)).toBe("/var/home/bob/.aws")
    for (const path of ["/var/lib/postgresql/15/main/base/1", "/var/lib/other/.ssh/x", "/var/home/bob/src/app.ts", "/work/.ssh/x"]) {
      expect([path, Credentials.anyStoreOf("/root", path, [], others)]).toEqual([path, undefined])
    }
  })
})
