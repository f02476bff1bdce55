// Which paths are secrets core keeps from every tool (src/permission/credentials.ts), by path alone: the system's,
// the user's credential stores, and those of every other user's home.

import { describe, expect, test } from "bun:test"
import { Credentials } from "../../src/permission/credentials"

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
    for (const path of ["/home/bob/project/.sshrc", "/home/bob/notes.txt", "/home", "/home/bob", "/srv/.ssh/x"]) {
      expect([path, Credentials.anyStoreOf("/home/me", path)]).toEqual([path, undefined])
    }
  })
})
