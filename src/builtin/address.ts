export * as Address from "./address"

// Which IP addresses webfetch may connect to without a rule naming the host: only public (global unicast) ones.
// Pure: it parses the address forms a resolver or a URL's host hands back (dotted IPv4, IPv6 with embedded IPv4)
// and names the reserved range an address falls in. It resolves nothing and never reads a URL's raw text (the
// WHATWG URL parser has already turned decimal, octal and hex IPv4 spellings into dotted form).

/** A reserved range: the first bits of the address and what the range is, as the model reads it. */
interface Range {
  readonly prefix: ReadonlyArray<number>
  readonly bits: number
  readonly kind: string
}

const range = (prefix: ReadonlyArray<number>, bits: number, kind: string): Range => ({ prefix, bits, kind })

const IPV4_RANGES: ReadonlyArray<Range> = [
  range([0], 8, "a \"this network\" address (0.0.0.0/8)"),
  range([10], 8, "a private address (10.0.0.0/8)"),
  range([100, 64], 10, "a shared carrier-grade NAT address (100.64.0.0/10)"),
  range([127], 8, "a loopback address (127.0.0.0/8)"),
  range([169, 254, 169, 254], 32, "the cloud metadata address (169.254.169.254)"),
  range([169, 254], 16, "a link-local address (169.254.0.0/16)"),
  range([172, 16], 12, "a private address (172.16.0.0/12)"),
  range([192, 0, 0], 24, "an IETF protocol address (192.0.0.0/24)"),
  range([192, 0, 2], 24, "a documentation address (192.0.2.0/24)"),
  range([192, 88, 99], 24, "a 6to4 relay address (192.88.99.0/24)"),
  range([192, 168], 16, "a private address (192.168.0.0/16)"),
  range([198, 18], 15, "a benchmarking address (198.18.0.0/15)"),
  range([198, 51, 100], 24, "a documentation address (198.51.100.0/24)"),
  range([203, 0, 113], 24, "a documentation address (203.0.113.0/24)"),
  range([224], 4, "a multicast address (224.0.0.0/4)"),
  range([240], 4, "a reserved address (240.0.0.0/4)"),
]

const IPV6_RANGES: ReadonlyArray<Range> = [
  range([], 128, "the unspecified address (::)"),
  range([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, "the loopback address (::1)"),
  range([], 96, "an IPv4-compatible address (::/96)"),
  range([0x01, 0x00], 64, "a discard-only address (100::/64)"),
  range([0x20, 0x01, 0x0d, 0xb8], 32, "a documentation address (2001:db8::/32)"),
  range([0x20, 0x01, 0x00, 0x00], 32, "a Teredo address (2001::/32)"),
  range([0x20, 0x01, 0x00, 0x10], 28, "an ORCHID address (2001:10::/28)"),
  range([0x3f, 0xff], 20, "a documentation address (3fff::/20)"),
  // Translated to IPv4 by a gateway of the local network, at whichever bits it chose to carry the IPv4 address in:
  // where it leads cannot be read from the address.
  range([0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, "a local-use NAT64 address (64:ff9b:1::/48)"),
  range([0xfc], 7, "a unique local (private) address (fc00::/7)"),
  range([0xfe, 0x80], 10, "a link-local address (fe80::/10)"),
  range([0xfe, 0xc0], 10, "a site-local address (fec0::/10)"),
  range([0xff], 8, "a multicast address (ff00::/8)"),
]

const inRange = (bytes: Uint8Array, entry: Range): boolean => {
  const prefix = new Uint8Array(bytes.length)
  prefix.set(entry.prefix)
  for (let bit = 0; bit < entry.bits; bit++) {
    const index = bit >> 3
    const mask = 0x80 >> (bit & 7)
    if ((bytes[index]! & mask) !== (prefix[index]! & mask)) return false
  }
  return true
}

/** The four bytes of a dotted-decimal IPv4 address, or undefined when it is not one. */
export const parseIpv4 = (text: string): Uint8Array | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  const bytes = new Uint8Array(4)
  for (let index = 0; index < 4; index++) {
    const part = parts[index]!
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined
    const value = Number(part)
    if (value > 255) return undefined
    bytes[index] = value
  }
  return bytes
}

/** The sixteen bytes of an IPv6 address (brackets and a zone id allowed), or undefined when it is not one. */
export const parseIpv6 = (text: string): Uint8Array | undefined => {
  let body = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  const zone = body.indexOf("%")
  if (zone !== -1) body = body.slice(0, zone)
  if (!body.includes(":")) return undefined
  const words: Array<number> = []
  let tail: Uint8Array | undefined
  const last = body.lastIndexOf(":")
  if (body.slice(last + 1).includes(".")) {
    tail = parseIpv4(body.slice(last + 1))
    if (tail === undefined) return undefined
    body = `${body.slice(0, last + 1)}0:0`
  }
  const halves = body.split("::")
  if (halves.length > 2) return undefined
  const wordsOf = (half: string): Array<number> | undefined => {
    if (half === "") return []
    const out: Array<number> = []
    for (const word of half.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(word)) return undefined
      out.push(parseInt(word, 16))
    }
    return out
  }
  const head = wordsOf(halves[0]!)
  const rest = halves.length === 2 ? wordsOf(halves[1]!) : []
  if (head === undefined || rest === undefined) return undefined
  if (halves.length === 1) {
    if (head.length !== 8) return undefined
    words.push(...head)
  } else {
    if (head.length + rest.length > 7) return undefined
    words.push(...head, ...Array<number>(8 - head.length - rest.length).fill(0), ...rest)
  }
  const bytes = new Uint8Array(16)
  words.forEach((word, index) => {
    bytes[index * 2] = word >> 8
    bytes[index * 2 + 1] = word & 0xff
  })
  if (tail !== undefined) bytes.set(tail, 12)
  return bytes
}

/** Whether `text` is an IP address literal (IPv4 dotted, or IPv6 with or without brackets). */
export const isIp = (text: string): boolean => parseIpv4(text) !== undefined || parseIpv6(text) !== undefined

const ipv4Of = (bytes: Uint8Array) => Array.from(bytes).join(".")

const startsWithBytes = (bytes: Uint8Array, prefix: ReadonlyArray<number>) => prefix.every((byte, index) => bytes[index] === byte)

/**
 * The IPv4 address an IPv6 address carries and is routed to: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
 * (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::); undefined
 * for any other address.
 */
const embeddedIpv4 = (bytes: Uint8Array): Uint8Array | undefined => {
  if (startsWithBytes(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return bytes.slice(12)
  // IPv4-translated (SIIT, ::ffff:0:a.b.c.d): where a translator is, it leads there.
  if (startsWithBytes(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0])) return bytes.slice(12)
  if (startsWithBytes(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) && (bytes[12]! | bytes[13]!) !== 0) return bytes.slice(12)
  if (startsWithBytes(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return bytes.slice(12)
  if (startsWithBytes(bytes, [0x20, 0x02])) return bytes.slice(2, 6)
  return undefined
}

/**
 * The IPv4 address, dotted, that the IPv6 address `address` carries and is routed to (`::ffff:102:304` carries
 * `1.2.3.4`; see `embeddedIpv4`), or undefined: a connection to the one reaches the other.
 */
export const carriedIpv4 = (address: string): string | undefined => {
  const v6 = parseIpv6(address)
  const embedded = v6 === undefined ? undefined : embeddedIpv4(v6)
  return embedded === undefined ? undefined : ipv4Of(embedded)
}

/**
 * What reserved range an address is in ("a loopback address (127.0.0.0/8)"), or undefined for a public address.
 * Anything that does not parse as an address is reported as such, never taken for public.
 */
export const reserved = (address: string): string | undefined => {
  const v4 = parseIpv4(address)
  if (v4 !== undefined) {
    if (v4.every((byte) => byte === 255)) return "the broadcast address (255.255.255.255)"
    return IPV4_RANGES.find((entry) => inRange(v4, entry))?.kind
  }
  const v6 = parseIpv6(address)
  if (v6 === undefined) return "not an IP address"
  const embedded = embeddedIpv4(v6)
  if (embedded !== undefined) {
    const kind = reserved(ipv4Of(embedded))
    return kind === undefined ? undefined : `${kind.replace(/ \([^)]*\)$/, "")} (${ipv4Of(embedded)}) inside an IPv6 address`
  }
  return IPV6_RANGES.find((entry) => inRange(v6, entry))?.kind
}
