export * as ApiDocument from "./api-document"

// The OpenAPI 3.1 document of the sidecar's API (./api), derived from its endpoint declarations and then made fit
// for client generators: identical schemas folded into one, event streams typed by their data, the response headers
// the declarations cannot carry, and the server the document is read from.

import * as OpenApi from "effect/http-api/OpenApi"
import { Api } from "./api"

/** A schema as JSON with object keys and lists of plain values (enums, required) in a fixed order. */
const canonical = (schema: unknown): string =>
  JSON.stringify(schema, (_, value: unknown) => {
    if (Array.isArray(value)) return value.every((item) => typeof item !== "object") ? [...value].sort() : value
    if (typeof value !== "object" || value === null) return value
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  })

/**
 * A schema reached by two paths (directly, and inside an event's JSON data) can be derived twice, its enums in
 * another order, and the second copy kept as `Name_1`: each such copy is folded into its original.
 */
const foldCopies = (schemas: Record<string, unknown>, root: unknown): void => {
  const originals = new Map<string, string>()
  for (const name of Object.keys(schemas)) {
    const original = /^(.+)_\d+$/.exec(name)?.[1]
    if (original !== undefined && original in schemas && canonical(schemas[original]) === canonical(schemas[name])) {
      originals.set(`#/components/schemas/${name}`, `#/components/schemas/${original}`)
      delete schemas[name]
    }
  }
  const visit = (value: unknown): void => {
    if (typeof value !== "object" || value === null) return
    if (Array.isArray(value)) return value.forEach(visit)
    const node = value as Record<string, unknown>
    const target = typeof node.$ref === "string" ? originals.get(node.$ref) : undefined
    if (target !== undefined) node.$ref = target
    for (const child of Object.values(node)) visit(child)
  }
  if (originals.size > 0) visit(root)
}

/** `Schema.Number`'s JSON Schema admits the strings its codec writes for non-finite values. */
const isNonFiniteStrings = (node: unknown): boolean => {
  const values = (node as { enum?: unknown } | undefined)?.enum
  return Array.isArray(values) && values.includes("Infinity") && values.includes("NaN")
}

/**
 * Schemas as generators should type what goes on the wire. Bodies are written with JSON.stringify, which never
 * writes "Infinity" or "NaN", so a number is just a number. An object with no declared keys (a JSON Schema, a
 * free-form value) takes any keys: said with `additionalProperties: {}`, since generators read a bare object type as
 * one with no keys at all.
 */
const forGenerators = (value: unknown): void => {
  if (typeof value !== "object" || value === null) return
  if (Array.isArray(value)) return value.forEach(forGenerators)
  const node = value as Record<string, unknown>
  if (Array.isArray(node.anyOf) && node.anyOf.some(isNonFiniteStrings)) {
    const rest = node.anyOf.filter((branch) => !isNonFiniteStrings(branch))
    delete node.anyOf
    if (rest.length === 1) Object.assign(node, rest[0])
    else node.anyOf = rest
  }
  if (node.type === "object" && !("properties" in node) && !("additionalProperties" in node) && !("patternProperties" in node)) {
    node.additionalProperties = {}
  }
  for (const child of Object.values(node)) forGenerators(child)
}

/**
 * An event stream's schema as what each event's `data:` line holds (the event's name is its `event:` line): a union
 * of the data schemas, the names said in the description. Generators that read event streams (hey-api) type each
 * parsed `data` with it; the derived `{ event, data }` pairs would type a shape never sent.
 */
const eventData = (schema: Record<string, unknown>): Record<string, unknown> => {
  const branches = Array.isArray(schema.anyOf) ? (schema.anyOf as ReadonlyArray<Record<string, any>>) : [schema]
  const events = branches.map((branch) => ({ name: branch.properties?.event?.enum?.[0], data: branch.properties?.data }))
  if (events.some((event) => typeof event.name !== "string" || event.data === undefined)) return schema
  const said = events.map(({ name, data }) => {
    const ref = typeof data.$ref === "string" ? data.$ref.split("/").pop() : undefined
    return ref === undefined ? `\`${name}\`` : `\`${name}\` (${ref.replace(/Encoded$/, "")})`
  })
  // Each data is derived as a JSON string holding the schema (`NameEncoded`); a reader parses it first.
  const parsed = (data: Record<string, any>) =>
    typeof data.$ref === "string" ? { $ref: data.$ref.replace(/Encoded$/, "") } : (data.contentSchema ?? data)
  return {
    anyOf: events.map((event) => parsed(event.data)),
    description: `Server-sent events; each event's data is JSON, by its event name: ${said.join(", ")}`,
  }
}

const header = (description: string, schema: Record<string, unknown> = { type: "string" }) => ({ description, schema })

const REPLAYED_HEADER = {
  "X-Core-Replayed": header("Present when the answer is a settlement recorded before this request and nothing ran", {
    type: "string",
    enum: ["true"],
  }),
}

/** A call's event stream: replayed, or joined (the call was running already, started by another request). */
const STREAM_HEADERS = {
  ...REPLAYED_HEADER,
  "X-Core-Joined": header(
    "On an event stream, present when the call was already running, started by another request: this one joined it",
    { type: "string", enum: ["true"] },
  ),
}

/** Response headers by operation and status, which the endpoint declarations cannot carry. */
const RESPONSE_HEADERS: Partial<Record<Api.Name, Record<string, Record<string, unknown>>>> = {
  settle: { "200": STREAM_HEADERS },
  settleStream: { "200": STREAM_HEADERS },
  output: {
    "200": { "Accept-Ranges": header("Always `bytes`: a Range request may ask for part of the content") },
    "206": { "Content-Range": header("The range sent and the whole size: `bytes FIRST-LAST/SIZE`") },
    "416": { "Content-Range": header("The whole size: `bytes */SIZE`") },
  },
}

/** The document's `servers`: `server` (its own URL, when it serves the document), or where core serve listens. */
export const serversOf = (server?: string): ReadonlyArray<unknown> => [
  server === undefined
    ? {
        url: "http://127.0.0.1:{port}",
        description: "core serve, at the URL its ready line prints",
        variables: { port: { default: "8080", description: "The port core serve listens on (--port)" } },
      }
    : { url: server, description: "This server" },
]

export interface DocumentOptions {
  /** The server's own URL, when the document is served by it. */
  readonly server?: string
}

/** The OpenAPI 3.1 document of `api`, with the bearer token scheme on every guarded route. */
export const openapi = (options: DocumentOptions = {}): Record<string, unknown> => {
  type Media = Record<string, unknown>
  type Operation = {
    operationId?: string
    security?: unknown
    responses?: Record<string, { content?: Record<string, Media>; headers?: Record<string, unknown> }>
  }
  const document = OpenApi.fromApi(Api.api) as unknown as {
    paths: Record<string, Record<string, Operation>>
    components: Record<string, unknown>
    servers?: ReadonlyArray<unknown>
    tags?: Array<{ name: string; description?: string }>
  }
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const name = operation.operationId?.split(".").pop() as Api.Name | undefined
      operation.security = name !== undefined && Api.PUBLIC.has(name) ? [] : [{ bearer: [] }]
      for (const [status, headers] of Object.entries((name === undefined ? undefined : RESPONSE_HEADERS[name]) ?? {})) {
        const response = operation.responses?.[status]
        if (response !== undefined) response.headers = { ...response.headers, ...headers }
      }
      // A managed output's structured part (`?part=structured`) is served as JSON: whole, any JSON value (typed as
      // a string, a generated client would take an object for one); a range of it, bytes that may not parse.
      if (name === "output") {
        for (const status of ["200", "206"]) {
          const content = operation.responses?.[status]?.content
          const text = content?.["text/plain; charset=utf-8"]
          if (content === undefined || text === undefined) continue
          content["application/json"] =
            status === "200" ? { schema: { description: "The structured value (`?part=structured`): any JSON value" } } : structuredClone(text)
        }
      }
      // The SSE streams are plain events, not Effect's streaming protocol, whose extension would mislead.
      for (const response of Object.values(operation.responses ?? {})) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          delete media["x-effect-stream"]
          if (type === "text/event-stream" && typeof media.schema === "object" && media.schema !== null) {
            media.schema = eventData(media.schema as Record<string, unknown>)
          }
        }
      }
    }
  }
  foldCopies(document.components.schemas as Record<string, unknown>, document)
  forGenerators(document.paths)
  forGenerators(document.components.schemas)
  document.servers = serversOf(options.server)
  for (const tag of document.tags ?? []) tag.description ??= "The sidecar's routes"
  document.components = {
    ...document.components,
    securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "The token printed in the ready line" } },
  }
  return document as unknown as Record<string, unknown>
}
