export * as WebFetch from "./webfetch"

// The webfetch built-in: GETs one http(s) URL and answers its content as markdown, text or HTML, or an image as
// a file part. Each URL it requests, the first and every redirect, is checked with the `webfetch` action (the
// URL is the resource; "always" saves its origin, `https://host/*`), and its host is resolved here and every
// address checked: loopback, private, link-local and other reserved addresses are refused unless a core.json rule
// allowing the URL names its host. The request then connects to exactly the addresses checked (./web-request), so
// a second resolution cannot lead elsewhere. It returns the whole content; bounding it is the settlement's job.

import type { LookupAddress } from "node:dns"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Permission } from "../permission/permission"
import { Rule } from "../permission/rule"
import { Tool } from "../tool/tool"
import { Address } from "./address"
import { Builtin } from "./builtin"
import { Running } from "./running"
import { HtmlConverter } from "./html-converter"
import { WebPage } from "./web-page"
import { WebRequest } from "./web-request"

const NAME = "webfetch"
/** The most bytes downloaded (after decompression); a larger body is refused, not cut. */
export const MAX_BYTES = 5 * 1024 * 1024
export const DEFAULT_TIMEOUT_MS = 30_000
export const MAX_TIMEOUT_MS = 120_000
/** Redirects followed before the fetch is refused. */
export const MAX_REDIRECTS = 10
/** How much of an error page's content a failure quotes. */
const ERROR_EXCERPT_CHARS = 2_000

const ACCEPT: Record<WebPage.Format, string> = {
  markdown: "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1",
  text: "text/plain;q=1.0, text/html;q=0.9, text/markdown;q=0.8, */*;q=0.1",
  html: "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, */*;q=0.1",
}

export const Input = Schema.Struct({
  url: Schema.String.annotate({ description: "The http:// or https:// URL to fetch" }),
  format: Schema.optionalKey(
    Schema.Literals(["markdown", "text", "html"]).annotate({
      description: "How to return an HTML page: markdown (default), text (what a reader sees) or html (as sent). Other text comes back as sent.",
    }),
  ),
  timeoutMs: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TIMEOUT_MS })).annotate({
      description: `Time limit for the whole download in milliseconds, redirects included (default ${DEFAULT_TIMEOUT_MS})`,
    }),
  ),
})
export type Input = typeof Input.Type

const Redirect = Schema.Struct({
  status: Schema.Int,
  from: Schema.String,
  to: Schema.String,
})

const Common = {
  url: Schema.String.annotate({ description: "The URL asked for (without credentials or fragment)" }),
  finalUrl: Schema.String.annotate({ description: "Where the content came from, after redirects" }),
  status: Schema.Int,
  statusText: Schema.String,
  contentType: Schema.String.annotate({ description: 'The Content-Type header ("" when none was sent)' }),
  bytes: Schema.Int.annotate({ description: "The size of the body downloaded, after decompression" }),
  redirects: Schema.Array(Redirect).annotate({ description: "The redirects followed, in order" }),
}

const Page = Schema.Struct({
  kind: Schema.Literal("page"),
  ...Common,
  format: Schema.Literals(["markdown", "text", "html"]).annotate({
    description: "How content is shown: markdown, text or html for an HTML page; text for any other text",
  }),
  title: Schema.optionalKey(Schema.String),
  charset: Schema.String.annotate({ description: "The charset the body was decoded from" }),
  note: Schema.optionalKey(Schema.String),
  content: Schema.String,
})

const Image = Schema.Struct({
  kind: Schema.Literal("image"),
  ...Common,
  mime: Schema.String.annotate({ description: "The image format, by its bytes" }),
  data: Schema.String.annotate({ description: "The image, base64" }),
})

export const Output = Schema.Union([Page, Image])
export type Output = typeof Output.Type

const failure = (message: string) => new Tool.Failure({ message })

// ---------------------------------------------------------------------------------------------------------------
// URLs and the hosts a rule opens

/**
 * Parses a URL the model gave or a server redirected to: http and https only, no credentials (refused rather than
 * stripped, so the model never believes it sent them). The fragment is dropped: it is never sent.
 */
export const parseUrl = (text: string, base?: string): URL | Tool.Failure => {
  if (!URL.canParse(text, base)) return failure(`Invalid URL: ${JSON.stringify(text)}. Give an absolute http:// or https:// URL.`)
  const url = new URL(text, base)
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return failure(`webfetch fetches http:// and https:// URLs only, not ${url.protocol} (${JSON.stringify(text)}).`)
  }
  if (url.username !== "" || url.password !== "") {
    return failure(
      `URLs with credentials (user:password@host) are refused: webfetch sends no credentials. Remove them from the URL.`,
    )
  }
  url.hash = ""
  return url
}

/** What "always" saves for a URL: its origin, every path under it. */
export const savedPattern = (url: URL): string => `${url.origin}/*`

/**
 * The literal host a rule's resource pattern names, or undefined when its host part has a wildcard or it is not
 * a URL pattern: `http://127.0.0.1:*` names 127.0.0.1, `https://docs.example.com/*` names docs.example.com, while
 * `*` and `https://*` name none.
 */
export const hostNamedBy = (pattern: string): string | undefined => {
  const match = /^https?:\/\/([^/?#]+)/i.exec(pattern)
  if (match === null) return undefined
  let authority = match[1]!
  if (authority.startsWith("[")) {
    const end = authority.indexOf("]")
    if (end === -1) return undefined
    authority = authority.slice(0, end + 1)
  } else {
    const colon = authority.indexOf(":")
    if (colon !== -1) authority = authority.slice(0, colon)
  }
  if (authority === "" || /[*?@]/.test(authority)) return undefined
  return authority.toLowerCase()
}

/**
 * The URL as servers read it, where its spelling differs: the host without its trailing dots, the path with its
 * percent-escapes decoded, runs of slashes as one, and the `.` and `..` segments the decoding made resolved
 * (`https://x.example./%61dmin//a` and `https://x.example/pub/..%2fadmin/a` are `https://x.example/admin/a` to most
 * servers); and, where it differs again, the path as the servers read it that decode it twice (a proxy, then the
 * application: `%2561dmin`), take a segment's `;parameters` off (Tomcat, Jetty, Spring: `/admin;x/a`,
 * `/pub/..;/admin`) or read it as Windows does (`/pub/..%5cadmin`, `/admin./a`, `%u0061`). Checked beside the URL
 * as given, so that a rule denying a host or a path holds for every spelling of it: a deny of any refuses the call
 * (one rule per resource, whichever spelling reaches it), and a rule opening a host must match them all.
 */
const pathSpellings = (url: URL): ReadonlyArray<string> => {
  const host = url.host.replace(/\.+(?=:\d+$|$)/, "")
  const read = (path: string) => `${url.protocol}//${host}${withoutDots(path.replace(/\/{2,}/g, "/"))}${url.search}`
  const once = decoded(url.pathname)
  // IIS's `%u0061` escapes too.
  let again = decoded(url.pathname.replace(/%u([0-9A-Fa-f]{4})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))))
  for (let round = 0; round < DECODING_ROUNDS && /%[0-9A-Fa-f]{2}/.test(again); round++) again = decoded(again)
  return [...new Set([url.href, read(once), read(withoutParameters(asWindowsReads(again)))])]
}

/**
 * Every spelling of `url` a server reads (`pathSpellings`), and where its host is an IPv6 address carrying an IPv4
 * one (`[::ffff:1.2.3.4]`, NAT64, 6to4: the connection reaches 1.2.3.4), each again with that IPv4 address as its
 * host: a rule denying or asking about `http://1.2.3.4/*` holds for `http://[::ffff:102:304]/` too.
 */
const spellings = (url: URL): ReadonlyArray<string> => {
  const read = pathSpellings(url)
  const carried = carriedBy(url)
  return carried === undefined ? read : [...read, ...read.map((spelling) => spelling.replace(`//${url.host}`, `//${carried}`))]
}

/** The host and port of the IPv4 address `url`'s IPv6 host carries (`1.2.3.4:8080` for `[::ffff:102:304]:8080`), if any. */
const carriedBy = (url: URL): string | undefined => {
  const carried = url.hostname.startsWith("[") ? Address.carriedIpv4(url.hostname.slice(1, -1)) : undefined
  return carried === undefined ? undefined : `${carried}${url.port === "" ? "" : `:${url.port}`}`
}

/**
 * `path` as Windows servers (IIS) read it: `\` a separator as `/` is, and a segment's trailing dots and spaces
 * dropped (`/admin./a` and `/admin%20/a` are `/admin/a`), but for `.` and `..`.
 */
const asWindowsReads = (path: string): string =>
  path
    .replaceAll("\\", "/")
    .split("/")
    .map((segment) => (segment === "." || segment === ".." ? segment : segment.replace(/[. ]+$/, "")))
    .join("/")

/** How many more times a path is decoded for the spelling of the servers that decode it again. */
const DECODING_ROUNDS = 3

/**
 * `path` with its percent-escapes decoded, each run of them alone, bytes that are no UTF-8 as U+FFFD: one such escape
 * (`%ff`) must not keep the others (`%61dmin`, `..%2f`) from being read as the server reads them.
 */
const decoded = (path: string): string =>
  path.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
    new TextDecoder().decode(Uint8Array.from(run.slice(1).split("%"), (hex) => Number.parseInt(hex, 16))),
  )

/** `path` with each segment's `;parameters` taken off (`/admin;jsessionid=1/a` is `/admin/a`; `..;` is `..`). */
const withoutParameters = (path: string): string =>
  path
    .split("/")
    .map((segment) => {
      const at = segment.indexOf(";")
      return at === -1 ? segment : segment.slice(0, at)
    })
    .join("/")

/** An absolute path with its `.` and `..` segments resolved, as RFC 3986 removes them (a `..` at the root stays there). */
const withoutDots = (path: string): string => {
  const segments = path.split("/")
  const kept: Array<string> = []
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!
    const last = index === segments.length - 1
    if (segment === "." || segment === "..") {
      if (segment === ".." && kept.length > 1) kept.pop()
      // A path ending in one names the directory: its slash stays.
      if (last) kept.push("")
      continue
    }
    kept.push(segment)
  }
  return kept.join("/") || "/"
}

/**
 * The check a request of `url` makes. "Always" saves its origin, and where its host carries an IPv4 address, that
 * address's origin too: the IPv4 spelling is checked beside it, and would be asked again otherwise.
 */
const checkOf = (url: URL): Permission.Check => {
  const carried = carriedBy(url)
  return {
    action: NAME,
    resources: spellings(url),
    save: carried === undefined ? [savedPattern(url)] : [savedPattern(url), `${url.protocol}//${carried}/*`],
  }
}

/**
 * Whether the agent's rules let `url` reach reserved addresses: a rule of theirs allows `webfetch` on it and names
 * its host literally (whatever later rule decides whether the URL is asked). The default "allow everything" rule,
 * a bare `"webfetch": "allow"`, wildcard hosts and saved approvals never do.
 */
const opensReserved = (permission: Permission.Interface, agent: string, url: URL): boolean => {
  const host = url.hostname.toLowerCase()
  return permission
    .rules(agent)
    .some(
      (rule) =>
        rule.effect === "allow" &&
        Rule.matches(rule.action, NAME) &&
        // Every spelling: a rule opening `/pub/*` does not open `/pub/..%2fadmin`, which the server reads as `/admin`.
        // The host as written (a rule names `[::ffff:7f00:1]` to open it; the IPv4 spelling still meets rules of its own).
        pathSpellings(url).every((spelling) => Rule.matches(rule.resource, spelling)) &&
        hostNamedBy(rule.resource) === host,
    )
}

/**
 * How a URL was reached: the URL the call named and the redirects that led from it (none when it is that URL), and
 * whether the page that redirected to it was at a reserved address (every address its host stood for was one).
 */
interface Reached {
  readonly start: string
  /** Appended to as the fetch follows them. */
  readonly redirects: Array<typeof Redirect.Type>
  fromReserved: boolean
}

/**
 * Whether `url`, reached as `reached` says, may go to reserved addresses: its host opened by a rule (`opensReserved`),
 * and, for a redirect, only from a page itself at a reserved address. A rule opening a local server is the user's
 * word for that server, not for any page on the internet to send the fetch there (a public page redirecting to
 * `http://127.0.0.1:8080/admin/reset`).
 */
const mayReachReserved = (permission: Permission.Interface, agent: string, url: URL, reached: Reached): boolean =>
  (reached.redirects.length === 0 || reached.fromReserved) && opensReserved(permission, agent, url)

const refusedAddress = (url: URL, address: string, kind: string, reached?: Reached) => {
  const what = `${url.host} ${Address.isIp(url.hostname) ? "is" : `resolves to ${address},`} ${kind}`
  // Where a page's redirect led: the call never named that address, and no one should be asked to open it for it.
  if (reached !== undefined && reached.redirects.length > 0) {
    return failure(
      `Refused: ${reached.start} redirected to ${url.href}, and ${what}. webfetch follows a redirect to a loopback, ` +
        `private or link-local address only from a page at such an address, and only where the user's rules open it; ` +
        `nothing was fetched from it. The page chose that address, not this call. Redirects: ` +
        chainText(reached.start, reached.redirects),
    )
  }
  return failure(
    `Refused: ${what}. webfetch reaches loopback, private and link-local addresses only when a core.json rule ` +
      `allowing the URL names its host, e.g. "permission": { "webfetch": { "${url.protocol}//${url.host}/*": ` +
      `"allow" } }. Ask the user to add one if this fetch is meant.`,
  )
}

/** Refuses a URL whose host is a literal reserved address it may not reach (`open`); a host name passes (resolved later). */
const literalRefusal = (url: URL, open: boolean, reached: Reached): Effect.Effect<void, Tool.Failure> =>
  Effect.gen(function* () {
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
    if (!Address.isIp(host)) return
    const kind = Address.reserved(host)
    if (kind !== undefined && !open) return yield* refusedAddress(url, host, kind, reached)
  })

/**
 * The resolver, loaded on first use: node:dns costs milliseconds to load, and every core that settles in process
 * imports this module.
 */
const lookupAll = (host: string): Promise<ReadonlyArray<LookupAddress>> =>
  (require("node:dns/promises") as typeof import("node:dns/promises")).lookup(host, { all: true, verbatim: true })

/** The addresses a host stands for: the literal itself, or every address it resolves to. */
const resolve = (url: URL): Effect.Effect<ReadonlyArray<LookupAddress>, Tool.Failure> => {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  if (Address.parseIpv4(host) !== undefined) return Effect.succeed([{ address: host, family: 4 }])
  if (Address.parseIpv6(host) !== undefined) return Effect.succeed([{ address: host, family: 6 }])
  return Effect.tryPromise({
    try: () => lookupAll(host),
    catch: (error) =>
      failure(`Could not resolve ${host} (${(error as NodeJS.ErrnoException).code ?? String(error)}). Check the URL's host name.`),
  }).pipe(
    Effect.flatMap((addresses) =>
      addresses.length === 0 ? Effect.fail(failure(`Could not resolve ${host}: it has no address.`)) : Effect.succeed(addresses),
    ),
  )
}

// ---------------------------------------------------------------------------------------------------------------
// What the model reads

const chainText = (url: string, redirects: ReadonlyArray<typeof Redirect.Type>) =>
  [url, ...redirects.map((redirect) => `(${redirect.status}) ${redirect.to}`)].join(" → ")

const headerLines = (output: {
  readonly url: string
  readonly finalUrl: string
  readonly status: number
  readonly statusText: string
  readonly contentType: string
  readonly bytes: number
  readonly redirects: ReadonlyArray<typeof Redirect.Type>
}, shownAs: string): Array<string> => [
  `URL: ${output.finalUrl}`,
  `Status: ${output.status}${output.statusText === "" ? "" : ` ${output.statusText}`}`,
  `Content-Type: ${output.contentType === "" ? "(none)" : output.contentType} (${output.bytes} bytes${shownAs})`,
  ...(output.redirects.length === 0 ? [] : [`Redirects: ${chainText(output.url, output.redirects)}`]),
]

const render = (output: Output): string | ReadonlyArray<Tool.Content> => {
  if (output.kind === "image") {
    // The last path segment as sent (never decoded here: a malformed escape must not break the projection).
    const name = new URL(output.finalUrl).pathname.split("/").pop() || "image"
    return [
      { type: "text", text: headerLines(output, `; image ${output.mime}`).join("\n") },
      { type: "file", data: output.data, mime: output.mime, name },
    ]
  }
  const lines = headerLines(output, `; shown as ${output.format}`)
  if (output.title !== undefined) lines.push(`Title: ${output.title}`)
  if (output.note !== undefined) lines.push(`Note: ${output.note}`)
  return `${lines.join("\n")}\n\n${output.content}`
}

// ---------------------------------------------------------------------------------------------------------------
// The tool

interface Fetched {
  readonly url: URL
  readonly head: WebRequest.Head
  readonly body: Uint8Array
  readonly redirects: ReadonlyArray<typeof Redirect.Type>
}

const makeTool = (services: Builtin.Services) => {
  /**
   * The checks of one request, before it is made: a literal reserved address it may not reach refused, then its
   * permission decided. Answers whether it may go to reserved addresses.
   */
  const check = (url: URL, context: Tool.Context, reached: Reached) =>
    Effect.gen(function* () {
      const open = mayReachReserved(services.permission, context.agent, url, reached)
      // A literal reserved address is refused before anyone is asked; a name is resolved only once the URL is
      // authorized (resolving a name the user would refuse already sends it to a DNS server).
      yield* literalRefusal(url, open, reached)
      // A redirect's hop comes after a request was made: stopped in its checks, the call had done something.
      yield* Builtin.authorize(services, context, [checkOf(url)], { tool: NAME, url: url.href }, reached.redirects.length === 0)
      return open
    })

  /** One request, checked (`open`: `check`'s answer): resolved, every address checked, then made to those addresses within `budget`. */
  const request = (url: URL, open: boolean, input: Input, context: Tool.Context, budget: { remaining: number }, reached: Reached) =>
    Effect.gen(function* () {
      yield* context.progress({ message: `GET ${url.href}` })
      const started = Date.now()
      const network = Effect.gen(function* () {
        const addresses = yield* resolve(url)
        if (!open) {
          for (const { address } of addresses) {
            const kind = Address.reserved(address)
            if (kind !== undefined) return yield* refusedAddress(url, address, kind, reached)
          }
        }
        // What the next hop, if this page redirects, was sent from: a reserved address only where every address
        // the host stands for is one (a name that also resolves to a public one may have been answered from there).
        reached.fromReserved = addresses.every(({ address }) => Address.reserved(address) !== undefined)
        return yield* Effect.promise((signal) =>
          WebRequest.get({ url, addresses, maxBytes: MAX_BYTES, accept: ACCEPT[input.format ?? "markdown"], signal }),
        )
      })
      const outcome = yield* network.pipe(
        Effect.timeoutOrElse({
          duration: Math.max(budget.remaining, 0),
          orElse: () =>
            Effect.fail(
              failure(
                `Timed out after ${input.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms fetching ${url.href}. The server did not ` +
                  "answer in time: try again with a larger timeoutMs (at most " +
                  `${MAX_TIMEOUT_MS}), or another URL.`,
              ),
            ),
        }),
      )
      budget.remaining -= Date.now() - started
      return outcome
    })

  /** Every request from `start` (`open`: its checks' answer) through its redirects, to the response it settles on. */
  const fetchAll = (start: URL, open: boolean, input: Input, context: Tool.Context, reached: Reached) =>
    Effect.gen(function* () {
      const budget = { remaining: input.timeoutMs ?? DEFAULT_TIMEOUT_MS }
      const { redirects } = reached
      const seen = new Set<string>([start.href])
      let url = start
      let checked = open
      for (;;) {
        const outcome = yield* request(url, checked, input, context, budget, reached)
        switch (outcome._tag) {
          case "Failed":
            return yield* failure(
              `Could not fetch ${url.href}: ${outcome.reason}. Check that the host is up and the URL is right.` +
                (redirects.length === 0 ? "" : ` Redirects: ${chainText(start.href, redirects)}`),
            )
          case "TooLarge":
            return yield* failure(
              `${url.href} is larger than webfetch's download cap of ${MAX_BYTES} bytes (5 MiB)` +
                (outcome.declared === undefined ? "" : `: its Content-Length is ${outcome.declared} bytes`) +
                `. Nothing was kept. Fetch a smaller or more specific URL (a single page or an API with paging).`,
            )
          case "Response":
            return { url, head: outcome.head, body: outcome.body, redirects } satisfies Fetched
          case "Redirect": {
            const next = parseUrl(outcome.head.location!, url.href)
            const chain = chainText(start.href, redirects)
            if (next instanceof Tool.Failure) {
              return yield* failure(`${url.href} redirected (${outcome.head.status}) to a URL webfetch refuses: ${next.message} Redirects: ${chain}`)
            }
            redirects.push({ status: outcome.head.status, from: url.href, to: next.href })
            if (seen.has(next.href)) {
              return yield* failure(`Redirect loop: ${chainText(start.href, redirects)}. The URL never settles on a page.`)
            }
            if (redirects.length > MAX_REDIRECTS) {
              return yield* failure(
                `Too many redirects (more than ${MAX_REDIRECTS}): ${chainText(start.href, redirects)}. The URL never settles on a page.`,
              )
            }
            seen.add(next.href)
            url = next
            checked = yield* check(url, context, reached)
          }
        }
      }
    })

  return Builtin.tool({
    description:
      "Fetch an http:// or https:// URL and read its content. An HTML page comes back as markdown (default), plain " +
      "text or the HTML as sent (format); JSON, XML and other text as sent; PNG, JPEG, GIF and WEBP images as " +
      `images. Redirects are followed (at most ${MAX_REDIRECTS}) and shown. The answer starts with the final URL, ` +
      `the HTTP status, the content type and size. Downloads over 5 MiB, other binary content (PDF, archives) and ` +
      "HTTP errors (4xx, 5xx) are refused with the reason. Loopback and private network addresses are refused " +
      "unless the user's rules allow that host. Credentials in the URL are refused.",
    input: Input,
    output: Output,
    checksPermissions: true,
    annotations: { readOnly: true, idempotent: true, openWorld: true },
    execute: (input, context) =>
      Effect.gen(function* () {
        const start = parseUrl(input.url)
        if (start instanceof Tool.Failure) return yield* start
        const reached: Reached = { start: start.href, redirects: [], fromReserved: false }
        // The URL's permission is decided first; then the fetch (its redirects' checks among it) and the conversion
        // take one of the session's turns (./running): each holds a socket and up to 5 MiB until it ends, and a
        // thousand fetches of a page that never finishes would take every descriptor and all the memory.
        const open = yield* check(start, context, reached)
        return yield* Effect.flatMap(fetchAll(start, open, input, context, reached), (fetched) =>
          outputOf(start, fetched, input.format ?? "markdown", context.sessionID),
        ).pipe(Running.inTurn(context, services.shell.limits.maxRunning))
      }),
    toModelOutput: ({ output }) => render(output),
  })
}

/** The answer for a response: an image, a page in its format, or a failure for an HTTP error or binary body. */
const outputOf = (start: URL, fetched: Fetched, format: WebPage.Format, party: string): Effect.Effect<Output, Tool.Failure> =>
  Effect.gen(function* () {
    const { head, body } = fetched
    const common = {
      url: start.href,
      finalUrl: fetched.url.href,
      status: head.status,
      statusText: head.statusText,
      contentType: head.contentType,
      bytes: body.length,
      redirects: fetched.redirects,
    }
    const type = WebPage.mediaType(head.contentType)
    const mime = WebPage.imageOf(body)
    const binary = mime === undefined ? WebPage.binaryReason(type, body, head.contentType) : undefined
    const decoded = mime === undefined && binary === undefined ? WebPage.decode(body, head.contentType, type === "text/html") : undefined
    const html = decoded !== undefined && WebPage.isHtml(type, decoded.text)
    // The converter (a DOM and turndown) runs in a process of its own, started on the first page that needs it, never
    // at start-up, and within a time budget: some markup takes it time quadratic in its size (./html-converter).
    const convert = (text: string, as: WebPage.Format) =>
      as === "html"
        ? Effect.succeed({ content: text })
        : Effect.flatMap(
            Effect.promise((signal) => HtmlConverter.convert({ html: text, url: fetched.url.href, format: as }, { signal, party })),
            (outcome) => {
              if (outcome.kind === "converted") return Effect.succeed(outcome.converted)
              // The page is then the model's to take another way, not core's failure.
              const instead =
                as === "markdown" ? 'format "text" (its text, converted faster) or "html" (its markup as it is).' : 'format "html" to get its markup as it is.'
              switch (outcome.kind) {
                case "deep":
                  return failure(
                    `${fetched.url.href} is HTML nested too deeply to convert to ${as}. Fetch it again with format "html" ` +
                      "to get its markup as it is.",
                  )
                case "slow":
                  return failure(
                    `${fetched.url.href} is HTML that took longer than ${HtmlConverter.BUDGET_MS / 1000} s to convert to ${as}, ` +
                      `and was left unconverted. Fetch it again with ${instead}`,
                  )
                case "busy":
                  return failure(
                    `${fetched.url.href} was not converted to ${as}: core was converting other pages (at most ` +
                      `${HtmlConverter.MAX_PROCESSES} at once) for longer than ${HtmlConverter.WAIT_MS / 1000} s. Fetch it again later, or with ` +
                      'format "html" to get its markup as it is.',
                  )
                case "failed":
                  return failure(
                    `${fetched.url.href} could not be converted to ${as}: ${outcome.message}. Fetch it again with ${instead}`,
                  )
              }
            },
          )
    if (head.status >= 400) {
      const excerpt =
        decoded === undefined ? "" : (html ? (yield* convert(decoded.text, "text")).content : decoded.text).slice(0, ERROR_EXCERPT_CHARS)
      return yield* failure(
        [
          `HTTP ${head.status}${head.statusText === "" ? "" : ` ${head.statusText}`} from ${fetched.url.href}: the server did not return the page.`,
          ...headerLines(common, "").slice(2),
          ...(excerpt === "" ? [] : ["", excerpt]),
        ].join("\n"),
      )
    }
    if (mime !== undefined) {
      return { kind: "image" as const, ...common, mime, data: Buffer.from(body).toString("base64") }
    }
    if (binary !== undefined || decoded === undefined) {
      return yield* failure(
        `${fetched.url.href} is ${binary} of ${body.length} bytes: webfetch returns web pages, other text and ` +
          "PNG, JPEG, GIF or WEBP images, not other binary content.",
      )
    }
    const note = decoded.unknownCharset === undefined ? {} : { note: `unknown charset "${decoded.unknownCharset}": decoded as UTF-8` }
    if (!html) {
      return { kind: "page" as const, ...common, format: "text" as const, charset: decoded.charset, ...note, content: decoded.text }
    }
    const converted = yield* convert(decoded.text, format)
    return { kind: "page" as const, ...common, format, charset: decoded.charset, ...note, ...converted }
  })

/**
 * The checks a call makes before its first request (Builtin.planned): `webfetch` on the URL. A URL webfetch
 * refuses, or a literal reserved address no rule opens, is a failure here as at the call. A host name is not
 * resolved to explain a call (that would reach a DNS server); its addresses are checked when it is fetched.
 */
const plan = (services: Builtin.Services) => (input: Input, agent: string) =>
  Effect.gen(function* () {
    const url = parseUrl(input.url)
    if (url instanceof Tool.Failure) return yield* url
    const reached: Reached = { start: url.href, redirects: [], fromReserved: false }
    yield* literalRefusal(url, mayReachReserved(services.permission, agent, url, reached), reached)
    return [checkOf(url)]
  })

/** The webfetch built-in, with the checks it makes recorded for explaining a call (Builtin.planned). */
export const make = (services: Builtin.Services) => Builtin.planned(makeTool(services), plan(services))
