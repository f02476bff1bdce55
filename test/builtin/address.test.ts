// Which addresses webfetch reaches without a rule: every reserved IPv4 and IPv6 range is named, IPv6 forms that
// carry an IPv4 address are judged by that address, and the spellings a hostile model tries (decimal, octal, hex,
// short IPv4; bracketed, zoned and mapped IPv6) reach the same verdict once a URL parser has read the host.

import { describe, expect, test } from "bun:test"
import { Address } from "../../src/builtin/address"

const hostOf = (url: string) => {
  const hostname = new URL(url).hostname
  return hostname.startsWith("[") ? hostname.slice(1, -1) : hostname
}

describe("Address.reserved: IPv4", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["0.0.0.0", "this network"],
    ["0.1.2.3", "this network"],
    ["10.0.0.1", "private address (10.0.0.0/8)"],
    ["172.16.0.1", "private address (172.16.0.0/12)"],
    ["172.31.255.255", "private address (172.16.0.0/12)"],
    ["192.168.1.1", "private address (192.168.0.0/16)"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.1.1", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
  ]
  for (const [address, kind] of cases) {
    test(`${address} is ${kind}`, () => {
      expect(Address.reserved(address)).toContain(kind)
    })
  }

  test("public addresses next to the reserved ranges are public", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.63.255.255", "100.128.0.0", "11.0.0.1", "169.253.0.1", "192.169.0.1"]) {
      expect([address, Address.reserved(address)]).toEqual([address, undefined])
    }
  })

  test("what is not an address is never taken for public", () => {
    for (const text of ["", "localhost", "127.1", "1.2.3.256", "01.2.3.4", "example.com"]) {
      expect(Address.reserved(text)).toBe("not an IP address")
    }
  })
})

describe("Address.reserved: IPv6", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["::1", "loopback address (::1)"],
    ["::", "unspecified"],
    ["0:0:0:0:0:0:0:1", "loopback address (::1)"],
    ["fc00::1", "unique local"],
    ["fd12:3456::1", "unique local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::ffff:127.0.0.1", "loopback address (127.0.0.1) inside an IPv6 address"],
    ["::ffff:7f00:1", "loopback address (127.0.0.1) inside an IPv6 address"],
    ["::ffff:169.254.169.254", "cloud metadata address (169.254.169.254) inside"],
    ["::ffff:a00:1", "private address (10.0.0.1) inside"],
    ["::127.0.0.1", "loopback address (127.0.0.1) inside"],
    ["::ffff:0:127.0.0.1", "loopback address (127.0.0.1) inside"],
    ["::ffff:0:a9fe:a9fe", "cloud metadata address (169.254.169.254) inside"],
    ["64:ff9b::7f00:1", "loopback address (127.0.0.1) inside"],
    ["64:ff9b:1::7f00:1", "local-use NAT64 address (64:ff9b:1::/48)"],
    ["64:ff9b:1:7f00:1::", "local-use NAT64 address"],
    ["64:ff9b:1:ffff::8.8.8.8", "local-use NAT64 address"],
    ["3fff::1", "documentation address (3fff::/20)"],
    ["3fff:fff::1", "documentation address (3fff::/20)"],
    ["2002:7f00:1::", "loopback address (127.0.0.1) inside"],
    ["2002:c0a8:101::1", "private address (192.168.1.1) inside"],
    ["::0.0.0.5", "IPv4-compatible"],
  ]
  for (const [address, kind] of cases) {
    test(`${address} is ${kind}`, () => {
      expect(Address.reserved(address)).toContain(kind)
    })
  }

  test("public IPv6 addresses, and IPv6 forms of public IPv4 addresses, are public", () => {
    for (const address of ["2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "2002:808:808::1", "[2606:4700::1]", "64:ff9b::808:808", "64:ff9b:2::1", "3ffe:1::1", "3fff:1000::1"]) {
      expect([address, Address.reserved(address)]).toEqual([address, undefined])
    }
  })

  test("malformed IPv6 text is not an address", () => {
    for (const text of ["1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "::ffff:1.2.3", "g::1", ":"]) {
      expect([text, Address.reserved(text)]).toEqual([text, "not an IP address"])
    }
  })
})

describe("hosts as a URL parser reads them", () => {
  test("decimal, octal, hex and short IPv4 spellings of 127.0.0.1 are the loopback address", () => {
    for (const url of ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f000001/", "http://127.0.0.1./"]) {
      const host = hostOf(url).replace(/\.$/, "")
      expect([url, Address.reserved(host)]).toEqual([url, "a loopback address (127.0.0.0/8)"])
    }
  })

  test("bracketed IPv6 hosts, mapped ones included, are judged by the address they carry", () => {
    expect(Address.reserved(hostOf("http://[::ffff:127.0.0.1]:8080/"))).toContain("loopback")
    expect(Address.reserved(hostOf("http://[::1]/"))).toContain("loopback")
    expect(Address.reserved(hostOf("http://[0:0:0:0:0:ffff:a9fe:a9fe]/"))).toContain("cloud metadata")
    expect(Address.reserved(hostOf("http://0251.0376.0251.0376/"))).toContain("cloud metadata")
  })

  test("isIp tells addresses from names", () => {
    expect(Address.isIp("127.0.0.1")).toBe(true)
    expect(Address.isIp("[::1]")).toBe(true)
    expect(Address.isIp("localhost")).toBe(false)
    expect(Address.isIp("127.0.0.1.nip.io")).toBe(false)
  })
})
