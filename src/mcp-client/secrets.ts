export * as Secrets from "./secrets"

// What of an MCP server's configuration a model must never read: the values core.json gives the server (its `env`,
// its HTTP `headers`: tokens, mostly), which a server may quote back (logging its configuration, crashing with it,
// an error or a progress message that says what it sent upstream). Whatever core says of or from a server that a
// model reads goes through `redact`. Imports nothing: the connection and the process both use it.

/** The shortest value taken for a secret: shorter ones (`1`, `true`, `json`) are settings. */
export const MIN_CHARS = 6

/** A header's credentials after its scheme (`Bearer TOKEN`, `Basic BASE64`), and the scheme. */
const SCHEMED = /^([A-Za-z][\w-]*)\s+(\S.*)$/

/** The secrets a server's `env` and `headers` hold: each value, and a header's credentials without their scheme. */
const secretsOf = (server: { readonly env?: Record<string, string>; readonly headers?: Record<string, string> }): Array<string> => {
  const secrets = Object.values(server.env ?? {})
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
export const spellingsOf = (server: { readonly env?: Record<string, string>; readonly headers?: Record<string, string> }): ReadonlyArray<string> =>
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
