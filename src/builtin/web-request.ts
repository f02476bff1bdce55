export * as WebRequest from "./web-request"

// One HTTP GET of webfetch, on the platform edge (node:http and node:https, as Bun provides them), made to the
// addresses the caller already resolved and checked: the connection's DNS lookup answers with exactly those, so a
// name that resolves elsewhere a second time (DNS rebinding) cannot lead the request to an unchecked address,
// while TLS still verifies the certificate for the URL's host name. It follows no redirect, sends no cookie or
// credential, decompresses what it accepts, and stops reading at the size cap.

import type { ClientRequest, IncomingMessage } from "node:http"
import type { LookupAddress } from "node:dns"
import type { Readable } from "node:stream"

// node:http, node:https and node:zlib load on the first request: loading them costs every start of core.
const zlib = () => require("node:zlib") as typeof import("node:zlib")
const requestOf = (secure: boolean): typeof import("node:http").request =>
  secure ? (require("node:https") as typeof import("node:https")).request : (require("node:http") as typeof import("node:http")).request

export const USER_AGENT = "core-webfetch/0.1"

export interface Head {
  readonly status: number
  readonly statusText: string
  readonly contentType: string
  /** The Location header of a redirect, as sent. */
  readonly location: string | undefined
  /** The Content-Length header, when sent. */
  readonly length: number | undefined
}

export type Outcome =
  | { readonly _tag: "Response"; readonly head: Head; readonly body: Uint8Array }
  | { readonly _tag: "Redirect"; readonly head: Head }
  /** Over the cap: `declared` when the Content-Length said so (nothing read), else once `read` bytes passed it. */
  | { readonly _tag: "TooLarge"; readonly head: Head; readonly read: number; readonly declared?: number }
  | { readonly _tag: "Failed"; readonly reason: string }

export interface Input {
  readonly url: URL
  /** Where the host name resolved, every address already checked; unused for an IP literal host. */
  readonly addresses: ReadonlyArray<LookupAddress>
  readonly maxBytes: number
  readonly accept: string
  readonly signal: AbortSignal
}

const isRedirect = (status: number) => status === 301 || status === 302 || status === 303 || status === 307 || status === 308

/**
 * A Location header as browsers read it: node:http gives a header's bytes one character each (latin1), and a server
 * sending a path of UTF-8 (`/café`) means that; bytes that are not UTF-8 stay as they came.
 */
const locationOf = (raw: string | undefined): string | undefined => {
  if (raw === undefined || !/[\u0080-\u00ff]/.test(raw) || /[^\u0000-\u00ff]/.test(raw)) return raw
  const bytes = Buffer.from(raw, "latin1")
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return raw
  }
}

const headOf = (response: IncomingMessage): Head => {
  const length = Number(response.headers["content-length"])
  return {
    status: response.statusCode ?? 0,
    statusText: response.statusMessage ?? "",
    contentType: response.headers["content-type"] ?? "",
    location: locationOf(response.headers.location),
    length: Number.isSafeInteger(length) && length >= 0 ? length : undefined,
  }
}

/** The body stream, decompressed as its Content-Encoding says (only what was offered in Accept-Encoding). */
const decoded = (response: IncomingMessage): Readable | string => {
  const encoding = (response.headers["content-encoding"] ?? "identity").trim().toLowerCase()
  switch (encoding) {
    case "identity":
    case "":
      return response
    case "gzip":
    case "x-gzip":
      return response.pipe(zlib().createGunzip())
    case "deflate":
      return response.pipe(zlib().createInflate())
    case "br":
      return response.pipe(zlib().createBrotliDecompress())
    default:
      return `the server sent an unsupported Content-Encoding (${encoding})`
  }
}

/** Makes one GET and reads its answer: a redirect's head, a body up to `maxBytes`, or why it failed. */
export const get = (input: Input): Promise<Outcome> =>
  new Promise<Outcome>((resolve) => {
    const { url } = input
    const secure = url.protocol === "https:"
    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
    let settled = false
    /** The body's decompressor, once there is one: ended with the request, or it inflates what it holds on. */
    let body: Readable | undefined
    const finish = (outcome: Outcome) => {
      if (settled) return
      settled = true
      input.signal.removeEventListener("abort", abort)
      request.destroy()
      // A compressed body cut at the limit still holds input: a bomb of a few KB inflated for a minute after the
      // call had settled, a processor's worth, unless its stream ends here too.
      body?.destroy()
      resolve(outcome)
    }
    const abort = () => finish({ _tag: "Failed", reason: "aborted" })
    const lookup = (
      _host: string,
      options: { readonly all?: boolean },
      callback: (error: NodeJS.ErrnoException | null, address: string | ReadonlyArray<LookupAddress>, family?: number) => void,
    ) => {
      const first = input.addresses[0]
      if (first === undefined) return callback(Object.assign(new Error("no checked address"), { code: "ENOTFOUND" }), "")
      if (options.all === true) return callback(null, input.addresses)
      callback(null, first.address, first.family)
    }
    let request: ClientRequest
    try {
      request = requestOf(secure)({
        protocol: url.protocol,
        hostname,
        port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: "GET",
        agent: false,
        lookup: lookup as never,
        headers: {
          "user-agent": USER_AGENT,
          accept: input.accept,
          "accept-encoding": "gzip, deflate, br",
          "accept-language": "en;q=0.9, *;q=0.5",
        },
      })
    } catch (error) {
      // A request the client refuses to make (a host or path it will not send) fails like a connection would.
      return resolve({ _tag: "Failed", reason: `the request could not be made (${error instanceof Error ? error.message : String(error)})` })
    }
    input.signal.addEventListener("abort", abort)
    request.on("error", (error: NodeJS.ErrnoException) =>
      finish({ _tag: "Failed", reason: error.code === undefined ? error.message : `${error.code}: ${error.message}` }),
    )
    request.on("response", (response) => {
      const head = headOf(response)
      if (isRedirect(head.status) && head.location !== undefined) return finish({ _tag: "Redirect", head })
      if (head.length !== undefined && head.length > input.maxBytes) return finish({ _tag: "TooLarge", head, read: 0, declared: head.length })
      const stream = decoded(response)
      if (typeof stream === "string") return finish({ _tag: "Failed", reason: stream })
      body = stream
      const chunks: Array<Uint8Array> = []
      let read = 0
      stream.on("data", (chunk: Uint8Array) => {
        read += chunk.length
        if (read > input.maxBytes) return finish({ _tag: "TooLarge", head, read })
        chunks.push(chunk)
      })
      stream.on("error", (error: NodeJS.ErrnoException) =>
        finish({ _tag: "Failed", reason: `the body could not be read (${error.code ?? error.message})` }),
      )
      stream.on("end", () => finish({ _tag: "Response", head, body: Buffer.concat(chunks) }))
      // A connection that closes before the body ends (after "end", finishing again changes nothing).
      stream.on("close", () => finish({ _tag: "Failed", reason: `the connection closed after ${read} bytes of the body` }))
      response.on("error", (error: NodeJS.ErrnoException) =>
        finish({ _tag: "Failed", reason: `the connection failed after ${read} bytes of the body (${error.code ?? error.message})` }),
      )
    })
    if (input.signal.aborted) abort()
    else request.end()
  })
