export * as Secrets from "./secrets"

// What of an MCP server's configuration a model must never read: the values core.json gives the server (its `env`,
// its HTTP `headers`, what its `url` carries: tokens, mostly), which a server may quote back (logging its configuration, crashing with it,
// an error or a progress message that says what it sent upstream). Whatever core says of or from a server that a
// model reads goes through `redact`. Imports nothing: the connection and the process both use it.

/** The shortest value taken for a secret: shorter ones (`1`, `true`, `json`) are settings. */
export const MIN_CHARS = 6

/** What core.json gives a server that may hold secrets. */
export interface ServerSecrets {
  readonly env?: Record<string, string>
  readonly headers?: Record<string, string>
  readonly url?: string
}

/** A header's credentials after its scheme (`Bearer TOKEN`, `Basic BASE64`), and the scheme. */
const SCHEMED = /^([A-Za-z][\w-]*)\s+(\S.*)$/

/** A path segment of a server's URL this long is taken for a key (`/mcp/k-3f9a…`); shorter ones are names. */
const KEY_SEGMENT_CHARS = 16

/** What a server's URL holds that may be a secret: its user and password, its query's values, a long path segment. */
const secretsInUrl = (url: string | undefined): Array<string> => {
  if (url === undefined) return []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text)
    } catch {
      return text
    }
  }
  const found = [parsed.username, parsed.password, ...parsed.searchParams.values()]
  for (const segment of parsed.pathname.split("/")) if (segment.length >= KEY_SEGMENT_CHARS) found.push(segment, decode(segment))
  for (const value of [parsed.username, parsed.password]) found.push(decode(value))
  return found
}

/**
 * The secrets a server's `env`, `headers` and `url` hold: each env and header value, a header's credentials without
 * their scheme, and what its URL may carry (secretsInUrl).
 */
const secretsOf = (server: ServerSecrets): Array<string> => {
  const secrets = [...Object.values(server.env ?? {}), ...secretsInUrl(server.url)]
  for (const value of Object.values(server.headers ?? {})) {
    secrets.push(value)
    const schemed = SCHEMED.exec(value.trim())
    if (schemed === null) continue
    secrets.push(schemed[2]!)
    // Basic credentials are `user:password` in base64: a server may quote them decoded.
    if (schemed[1]!.toLowerCase() === "basic") {
      const decoded = Buffer.from(schemed[2]!, "base64").toString("utf8")
      secrets.push(decoded, decoded.slice(decoded.indexOf(":") + 1))
    }
  }
  return secrets.filter((secret) => secret.length >= MIN_CHARS)
}

/** Each of a server's secrets as it may write one: as it is, JSON-escaped, percent-encoded and in base64; longest first. */
export const spellingsOf = (server: ServerSecrets): ReadonlyArray<string> =>
  [
    ...new Set(
      secretsOf(server).flatMap((secret) => {
        const base64 = Buffer.from(secret).toString("base64")
        return [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), base64, base64.replace(/=+$/, "")]
      }),
    ),
  ].sort((a, b) => b.length - a.length)

/** `text` with every one of `spellings` (spellingsOf) shown as `[redacted]`. */
export const redact = (text: string, spellings: ReadonlyArray<string>): string =>
  spellings.length === 0 ? text : spellings.reduce((shown, secret) => shown.replaceAll(secret, "[redacted]"), text)
