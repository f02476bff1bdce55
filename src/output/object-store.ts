export * as ObjectStore from "./object-store"

// Managed outputs in an S3-compatible object store (`CORE_OUTPUTS_URL=s3://bucket/prefix`), through Bun's own S3
// client: putting a file's bytes under a key (streamed, multipart when large), reading an object whole or a byte
// range of it (ranged GETs), listing and removing for retention. The platform edge for objects: it knows keys and
// bytes only, never ids, Locations or what to keep (./managed-outputs decides that).

import { S3Client, type S3File } from "bun"
import * as Schema from "effect/Schema"

/** The parts a large upload is cut in, and how many are in flight: what an upload holds in memory at most. */
const PART_BYTES = 16 * 1024 * 1024
const PARTS_IN_FLIGHT = 2
/** Keys asked for per listing page (S3's own maximum). */
const LIST_PAGE = 1_000
/** S3's rules for a bucket name (lower case letters, digits, dots and hyphens, 3 to 63 characters). */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

export class ConfigError extends Schema.TaggedError<ConfigError>()("ObjectStore.ConfigError", {
  url: Schema.String,
  message: Schema.String,
}) {}

/** Where the objects are and how to reach them: `CORE_OUTPUTS_URL` and the standard `AWS_*` variables. */
export interface Settings {
  /** The URL as given, for messages. */
  readonly url: string
  readonly bucket: string
  /** Every key starts with it (no leading or trailing slash; empty for the bucket's root). */
  readonly prefix: string
  readonly endpoint?: string
  readonly region?: string
  readonly accessKeyId?: string
  readonly secretAccessKey?: string
  readonly sessionToken?: string
}

/**
 * A URL as messages show it, as it was written: its user part (keys) and its query and fragment replaced by `***`
 * (a URL given with a key in it must not put the key in a log), control characters escaped.
 */
const shown = (url: string): string =>
  JSON.stringify(url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/, "$1***@").replace(/([?#])[\s\S]*$/, "$1***")).slice(1, -1)

/** The path of an `s3://` URL as written, before a URL parser resolves its `.` and `..` segments away. */
const RAW_PATH = /^s3:\/\/[^/?#]*([^?#]*)/i

/**
 * The settings `url` (`s3://BUCKET[/PREFIX]`) and `env` give: the endpoint from `AWS_ENDPOINT_URL_S3`, else
 * `AWS_ENDPOINT_URL` (else AWS's own for the region), the region from `AWS_REGION` (else `AWS_DEFAULT_REGION`),
 * the keys from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
 */
export const settings = (url: string, env: Record<string, string | undefined>): Settings | ConfigError => {
  const bad = (reason: string) =>
    new ConfigError({ url: shown(url), message: `CORE_OUTPUTS_URL "${shown(url)}" is not usable: ${reason}. Give s3://BUCKET or s3://BUCKET/PREFIX.` })
  // A URL parser drops tabs and line breaks: `teamA/.\t.` would be read as `teamA/..`, past the check below.
  if (/[\u0000-\u001f\u007f]/.test(url)) return bad("it holds a control character (a tab or a line break)")
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return bad("it is not a URL")
  }
  if (parsed.protocol !== "s3:") return bad(`only s3:// URLs are supported, not ${parsed.protocol}//`)
  if (parsed.username !== "" || parsed.password !== "") {
    return bad("keys do not go in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
  }
  if (parsed.port !== "" || parsed.search !== "" || parsed.hash !== "") {
    return bad("it may name a bucket and a prefix only (the endpoint comes from AWS_ENDPOINT_URL)")
  }
  if (parsed.hostname === "") return bad("it names no bucket")
  if (!BUCKET_PATTERN.test(parsed.hostname)) return bad(`"${parsed.hostname}" is not a valid bucket name`)
  // Read as written: the parser resolved `teamA/..` to the bucket's root (and `%2e%2e` with it), so a host given it
  // kept its outputs, and swept old ones away, across every other prefix of the bucket.
  let written: string
  try {
    written = decodeURIComponent(RAW_PATH.exec(url)?.[1] ?? "")
  } catch {
    return bad("its prefix is not valid percent-encoded text")
  }
  if (written.split("/").some((segment) => segment === "." || segment === "..")) return bad("the prefix may not contain . or ..")
  const prefix = decodeURIComponent(parsed.pathname).replace(/^\/+|(?<!\/)\/+$/g, "")
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL
  if (endpoint !== undefined) {
    let given: URL | undefined
    try {
      given = new URL(endpoint)
    } catch {
      given = undefined
    }
    if (given === undefined || (given.protocol !== "http:" && given.protocol !== "https:")) {
      return new ConfigError({ url: shown(url), message: `The S3 endpoint "${shown(endpoint)}" (AWS_ENDPOINT_URL) is not an http:// or https:// URL.` })
    }
  }
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION
  return {
    url,
    bucket: parsed.hostname,
    prefix,
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(region ? { region } : {}),
    ...(env.AWS_ACCESS_KEY_ID ? { accessKeyId: env.AWS_ACCESS_KEY_ID } : {}),
    ...(env.AWS_SECRET_ACCESS_KEY ? { secretAccessKey: env.AWS_SECRET_ACCESS_KEY } : {}),
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  }
}

/** One object, its key relative to the prefix. */
export interface Listed {
  readonly key: string
  readonly bytes: number
  /** When it was last written, by the store's clock; undefined where the store does not say (it is then kept). */
  readonly modifiedMs: number | undefined
}

export interface Interface {
  /** `s3://bucket/prefix`, for messages. */
  readonly where: string
  /** Puts the bytes of the file at `path` under `key`, streamed; answers how many were put. */
  readonly put: (key: string, path: string) => Promise<number>
  /** Puts `text` under `key`. */
  readonly putText: (key: string, text: string) => Promise<number>
  /** The object under `key`: `.slice(start, end)` reads a range with a ranged GET, `.stream()` the whole. */
  readonly content: (key: string) => Blob
  /** Every object whose key starts with `under`, page by page. */
  readonly list: (under: string) => AsyncGenerator<Listed>
  readonly remove: (key: string) => Promise<void>
  /**
   * The store's own time now (epoch ms, to its second): what its objects' times are compared with, whatever this
   * host's clock says. Read off a small object written for it (`CLOCK_KEY`).
   */
  readonly now: () => Promise<number>
}

/** A time as the store gives it (an ISO string or a Date); undefined where it gives none that reads as one. */
const timeOf = (value: unknown): number | undefined => {
  if (value === undefined || value === null) return undefined
  const at = value instanceof Date ? value.getTime() : Date.parse(String(value))
  return Number.isFinite(at) ? at : undefined
}

/** The object written to read the store's clock off (see `now`): no output's key, so never listed as one. */
export const CLOCK_KEY = ".core-clock"

/** The object store the settings name. Nothing is sent until it is used. */
export const make = (settings: Settings): Interface => {
  const client = new S3Client({
    bucket: settings.bucket,
    ...(settings.endpoint === undefined ? {} : { endpoint: settings.endpoint }),
    ...(settings.region === undefined ? {} : { region: settings.region }),
    ...(settings.accessKeyId === undefined ? {} : { accessKeyId: settings.accessKeyId }),
    ...(settings.secretAccessKey === undefined ? {} : { secretAccessKey: settings.secretAccessKey }),
    ...(settings.sessionToken === undefined ? {} : { sessionToken: settings.sessionToken }),
  })
  const base = settings.prefix === "" ? "" : `${settings.prefix}/`
  const full = (key: string) => `${base}${key}`
  return {
    where: `s3://${settings.bucket}${settings.prefix === "" ? "" : `/${settings.prefix}`}`,
    put: (key, path) =>
      client.write(full(key), Bun.file(path), { partSize: PART_BYTES, queueSize: PARTS_IN_FLIGHT, type: "application/octet-stream" }),
    putText: (key, text) => client.write(full(key), text, { type: "application/json" }),
    content: (key): S3File => client.file(full(key)),
    list: async function* (under) {
      let continuationToken: string | undefined
      do {
        const page = await client.list({
          prefix: full(under),
          maxKeys: LIST_PAGE,
          ...(continuationToken === undefined ? {} : { continuationToken }),
        })
        for (const object of page.contents ?? []) {
          yield {
            key: object.key.slice(base.length),
            bytes: object.size ?? 0,
            modifiedMs: timeOf(object.lastModified),
          }
        }
        continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
      } while (continuationToken !== undefined)
    },
    remove: (key) => client.delete(full(key)),
    now: async () => {
      const clock = client.file(full(CLOCK_KEY))
      await client.write(full(CLOCK_KEY), "", { type: "text/plain" })
      const at = timeOf((await clock.stat()).lastModified)
      if (at === undefined) throw new Error(`${full(CLOCK_KEY)} has no time`)
      return at
    },
  }
}

/** Whether `cause` is the store saying there is no such object (S3's `NoSuchKey`, or a 404), not a failure to ask. */
export const isMissing = (cause: unknown): boolean => {
  if (typeof cause !== "object" || cause === null) return false
  const { code, name } = cause as { readonly code?: unknown; readonly name?: unknown }
  return code === "NoSuchKey" || code === "ENOENT" || name === "NoSuchKey" || String(code) === "404"
}

/** S3's codes (and Bun's) for keys the store refused or core lacks: trying again will not help. */
const KEYS_REFUSED: ReadonlySet<string> = new Set([
  "AccessDenied",
  "ExpiredToken",
  "InvalidAccessKeyId",
  "InvalidToken",
  "SignatureDoesNotMatch",
  "ERR_S3_MISSING_CREDENTIALS",
  "ERR_S3_INVALID_SIGNATURE",
])

/**
 * What to do about `cause` (a failure talking to the store), as a sentence: keys the store refused are checked, a
 * missing bucket is made; anything else (down, unreachable, slow) is tried again once the store answers.
 */
export const nextStep = (cause: unknown): string => {
  const code = typeof cause === "object" && cause !== null ? (cause as { readonly code?: unknown }).code : undefined
  if (typeof code === "string" && KEYS_REFUSED.has(code)) {
    return "Check the keys core was started with (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN): the object store refused them."
  }
  if (code === "NoSuchBucket") return "Check that the bucket CORE_OUTPUTS_URL names exists."
  return "Try again once the object store can be reached."
}

/** What went wrong talking to the store, in a line: S3's code and message (`NoSuchBucket: …`, `ConnectionRefused`). */
export const messageOf = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null) return String(cause)
  const { code, message } = cause as { readonly code?: unknown; readonly message?: unknown }
  const text = typeof message === "string" && message !== "an unexpected error has occurred" ? message : ""
  if (typeof code === "string" && code !== "") return text === "" ? code : `${code}: ${text}`
  return text === "" ? String(cause) : text
}
