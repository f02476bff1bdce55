export * as Direct from "./direct"

// The sidecar's most frequent request answered without the router: `POST /v1/turns/{turnID}/calls` in the serve's
// own Location, answered with its settlement as JSON. It passes the same checks in the same order as every request
// (./router: Host, token, declared body size, then the body read and the request released from the read deadline)
// and answers exactly as the routed handler would (./handlers), with no per-request Scope or fiber of its own: one
// fiber starts (or joins) the call and waits for its outcome. Anything else, or anything unusual about such a
// request (a refusal to answer, a chunked body, another Location, an event stream, a tracer keeping spans), is
// left to the router (`handle` answers undefined), which answers it as for any request.

import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Sidecar } from "../host/sidecar"
import type { Settler } from "../settlement/settler"
import { Api } from "./api"
import { Handlers } from "./handlers"
import { Respond } from "./respond"

export interface Options {
  readonly sidecar: Sidecar.Interface
  readonly checkToken: (authorization: string | undefined) => boolean
  readonly checkHost: (host: string | undefined) => boolean
  readonly log: (line: string) => void
  readonly release?: (request: Request) => void
}

type Held = NonNullable<ReturnType<Sidecar.Interface["locations"]["hold"]>>

const PREFIX = "/v1/turns/"
const SUFFIX = "/calls"
/** A turn id the router would pass as it is: no escapes to decode, within its parameter limit. */
const PLAIN_ID = /^[A-Za-z0-9_.~-]{1,4096}$/

/** The headers of every JSON answer (Respond.text's, as the router's web handler writes them). */
const JSON_HEADERS = { ...Respond.COMMON_HEADERS, "content-type": "application/json" } as const
const REPLAYED_HEADERS = { ...JSON_HEADERS, ...Handlers.REPLAYED } as const

/** A JSON answer, with its length declared as the router's answers declare it. */
const answer = (status: number, body: string, headers: Record<string, string> = JSON_HEADERS): Response => {
  const response = new Response(body, { status, headers })
  response.headers.set("content-length", String(Buffer.byteLength(body)))
  return response
}

const problem = (refusal: Respond.Problem): Response =>
  answer(refusal.status, JSON.stringify({ error: { kind: refusal.kind, message: refusal.message } } satisfies Api.ErrorBody))

/** The turn id of a `POST /v1/turns/{turnID}/calls` URL, when it is one this module answers. */
export const turnOf = (url: string): string | undefined => {
  // The path starts after the scheme and authority.
  const path = url.indexOf("/", url.indexOf("//") + 2)
  if (path < 0 || !url.startsWith(PREFIX, path) || !url.endsWith(SUFFIX)) return undefined
  const id = url.slice(path + PREFIX.length, url.length - SUFFIX.length)
  return PLAIN_ID.test(id) ? id : undefined
}

/** A body without a declared length, read up to Respond.MAX_BODY_BYTES: undefined once it is past them. */
const readCounting = async (request: Request): Promise<string | undefined> => {
  if (request.body === null) return ""
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.length
    if (bytes > Respond.MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

/** The direct answerer; `handle` answers undefined for a request the router must answer. */
export const make = (options: Options) => {
  const { sidecar } = options
  const calls = sidecar.calls

  /** Settles the call `request` asks of turn `turnID`, in the Location `held` (let go once answered). */
  const settle = async (request: Request, turnID: string, held: Held, declared: boolean): Promise<Response> => {
    try {
      let raw: string | undefined
      try {
        raw = declared ? await request.text() : await readCounting(request)
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause)
        return problem(Respond.badRequest(`The request body could not be read: ${reason}`))
      }
      if (raw === undefined) return problem(Respond.tooLarge)
      options.release?.(request)
      const served = held.served
      const turn = served.turn(turnID)
      if (turn === undefined) {
        return problem(
          Respond.notFound(
            `Unknown or expired turn "${turnID}" in ${served.directory}: materialize again with POST /v1/turns ` +
              `(send the same X-Core-Location with every request of a turn)`,
          ),
        )
      }
      const decoded = Respond.decode(raw, Api.CallRequest)
      if (!decoded.ok) return problem(decoded.problem)
      const call: Settler.Call = {
        ...decoded.value,
        input: Handlers.inputOf(turn, decoded.value.name, decoded.value.input),
        agent: turn.agent,
      }
      const exit = await Effect.runPromiseExit(Effect.flatMap(calls.start(served, turn, call), (entry) => Deferred.await(entry.done)))
      if (Exit.isSuccess(exit)) {
        const { settlement, replayed } = exit.value
        return answer(200, JSON.stringify(Handlers.answerOf(turn, settlement)), replayed ? REPLAYED_HEADERS : JSON_HEADERS)
      }
      const error = Cause.findError(exit.cause)
      if (error._tag === "Success") {
        options.log(`core: operational failure: ${error.success.message}`)
        return problem(new Respond.Problem({ status: 500, kind: "operational", message: error.success.message }))
      }
      options.log(`core: operational failure answering a request:\n${Cause.pretty(exit.cause)}`)
      return problem(new Respond.Problem({ status: 500, kind: "operational", message: "core failed to answer; the server log has the details" }))
    } finally {
      held.release()
    }
  }

  return {
    handle: (request: Request): Promise<Response> | undefined => {
      if (request.method !== "POST") return undefined
      const turnID = turnOf(request.url)
      if (turnID === undefined) return undefined
      const headers = request.headers
      const accept = headers.get("accept")
      if (accept !== null && accept.includes("text/event-stream")) return undefined
      const location = headers.get("x-core-location")
      if (location !== null && location !== "") return undefined
      if (!options.checkHost(headers.get("host") ?? undefined)) return undefined
      if (!options.checkToken(headers.get("authorization") ?? undefined)) return undefined
      // A declared length over the limit (or not a number) is the router's refusal; a body without one is read
      // counting, and refused once past the limit.
      const length = headers.get("content-length")
      if (length !== null && !(Number(length) <= Respond.MAX_BODY_BYTES)) return undefined
      // Held from here, as the router holds a request's Location until it is answered.
      const held = sidecar.locations.hold(sidecar.primary.directory)
      if (held === undefined) return undefined
      return settle(request, turnID, held, length !== null)
    },
  }
}
