export * as Telemetry from "./telemetry"

// Whether this run exports traces, read from the standard OpenTelemetry variables: only when an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces) and tracing is not
// turned off (OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER without otlp). Reading them loads nothing; the
// exporter (../host/otlp) is imported only when it is needed.

import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Otlp } from "../host/otlp"

type Env = Readonly<Record<string, string | undefined>>

const first = (env: Env, ...names: ReadonlyArray<string>): string | undefined => {
  for (const name of names) {
    const value = env[name]?.trim()
    if (value !== undefined && value !== "") return value
  }
  return undefined
}

/**
 * `k=v,k2=v2` with URL-encoded parts, as OTel writes headers and resource attributes; malformed pairs are skipped
 * (as the OTel SDKs skip them), each said in `malformed` without its value, which may be a secret.
 */
export const pairs = (text: string | undefined, malformed: Array<string> = []): Record<string, string> => {
  const found: Record<string, string> = {}
  ;(text ?? "").split(",").forEach((pair, index) => {
    const equals = pair.indexOf("=")
    if (equals === -1 || pair.slice(0, equals).trim() === "") {
      if (pair.trim() !== "") malformed.push(equals === -1 ? `pair ${index + 1} (no =)` : `pair ${index + 1} (no name)`)
      return
    }
    try {
      found[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim())
    } catch {
      malformed.push(`pair ${index + 1} (not URL-encoded as it should be)`)
    }
  })
  return found
}

/** A header's name as HTTP has it (a token), and a value it can carry (no line break or NUL, Latin-1 only). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const HEADER_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/

/**
 * The export headers of OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (`pairs`), and what was left out of them and why: a
 * name or value HTTP cannot carry would fail every export request, silently.
 */
const headersOf = (text: string | undefined): { readonly headers: Record<string, string>; readonly skipped: ReadonlyArray<string> } => {
  const headers: Record<string, string> = {}
  const skipped: Array<string> = []
  for (const [name, value] of Object.entries(pairs(text, skipped))) {
    if (HEADER_NAME.test(name) && HEADER_VALUE.test(value)) headers[name] = value
    else skipped.push(JSON.stringify(name))
  }
  return { headers, skipped }
}

/** The longest wait a timer can take (2^31 - 1 ms, about 24.8 days): more would fire at once, again and again. */
const MAX_MS = 2_147_483_647

/**
 * The value of the first of `names` set, read by `read`; one set that `read` refuses is said in `warnings` (it is
 * left to the default, as the OTel SDKs do, but not silently: the user meant something by it).
 */
const numeric = <A>(
  env: Env,
  warnings: Array<string>,
  what: string,
  read: (value: number) => A | undefined,
  ...names: ReadonlyArray<string>
): A | undefined => {
  const name = names.find((each) => first(env, each) !== undefined)
  if (name === undefined) return undefined
  const text = first(env, name)!
  const value = text === "" ? Number.NaN : Number(text)
  const found = Number.isNaN(value) ? undefined : read(value)
  if (found === undefined) warnings.push(`core: warning: ${name}=${JSON.stringify(text)} is not ${what}; the default is used`)
  return found
}

/** Milliseconds: a number, 0 or more; one past what a timer can wait is that longest wait. */
const millis = (value: number): number | undefined => (value >= 0 ? Math.min(value, MAX_MS) : undefined)

/** A positive whole count. */
const count = (value: number): number | undefined => (Number.isSafeInteger(value) && value > 0 ? value : undefined)

const optional = <K extends string>(key: K, value: number | undefined): { readonly [P in K]?: number } =>
  (value === undefined ? {} : { [key]: value }) as { readonly [P in K]?: number }

/**
 * What to export to, with what was left out of it (`warnings`, for stderr), or why not (`problem`); undefined when
 * tracing is not asked for.
 */
export const settings = (
  env: Env,
  defaults: { readonly exportIntervalMs: number; readonly flushMs: number },
): { readonly settings: Otlp.Settings; readonly warnings: ReadonlyArray<string> } | { readonly problem: string } | undefined => {
  const traces = first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  const base = first(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  if (traces === undefined && base === undefined) return undefined
  if (first(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined
  const exporters = first(env, "OTEL_TRACES_EXPORTER")
  if (exporters !== undefined && !exporters.split(",").some((name) => name.trim().toLowerCase() === "otlp")) return undefined
  let url: string
  try {
    url = traces !== undefined ? new URL(traces).toString() : new URL(`${base!.replace(/(?<!\/)\/+$/, "")}/v1/traces`).toString()
  } catch {
    // Named, not shown: a URL that does not parse may still hold a key in its user part.
    const name = traces !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT"
    return { problem: `core: warning: not exporting traces: ${name} is not a URL` }
  }
  const protocol = first(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf"
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return { problem: `core: warning: not exporting traces: core sends OTLP over HTTP (http/protobuf or http/json), not ${protocol}` }
  }
  const compression = first(env, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")?.toLowerCase()
  const resource = pairs(first(env, "OTEL_RESOURCE_ATTRIBUTES"))
  const { headers, skipped } = headersOf(first(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"))
  const warnings: Array<string> = []
  if (skipped.length > 0) {
    warnings.push(
      `core: warning: exporting traces without the headers ${skipped.join(", ")} of OTEL_EXPORTER_OTLP_HEADERS: ` +
        "each is name=value, pairs apart by commas, with % escapes that decode; a header's name must be a token " +
        "(letters, digits and !#$%&'*+.^_`|~-) and its value hold no line break and no character past U+00FF " +
        "(URL-encode it)",
    )
  }
  if (compression !== undefined && compression !== "gzip" && compression !== "none") {
    warnings.push(`core: warning: exporting traces uncompressed: core compresses with gzip or none, not ${JSON.stringify(compression)}`)
  }
  const ms = "a number of milliseconds (0 or more)"
  const positive = "a whole number above 0"
  return {
    warnings,
    settings: {
      url,
      headers,
      protocol,
      compression: compression === "gzip" ? "gzip" : "none",
      serviceName: first(env, "OTEL_SERVICE_NAME") ?? resource["service.name"] ?? "core",
      resource,
      exportIntervalMs: numeric(env, warnings, ms, millis, "OTEL_BSP_SCHEDULE_DELAY") ?? defaults.exportIntervalMs,
      flushMs: numeric(env, warnings, ms, millis, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT") ?? defaults.flushMs,
      ...optional("maxBatchSpans", numeric(env, warnings, positive, count, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")),
      ...optional("maxQueuedSpans", numeric(env, warnings, positive, count, "OTEL_BSP_MAX_QUEUE_SIZE")),
    },
  }
}

/** Whether the environment names an OTLP endpoint at all (the cheap check made before anything is loaded). */
export const asked = (env: Env): boolean =>
  first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined

/**
 * `effect` with spans exported as the environment says, flushed (within the bound) before it completes, under one
 * `root` span when named (a command's spans then form one trace); as it is when the environment asks for no export.
 */
export const traced = <A, E>(
  effect: Effect.Effect<A, E>,
  env: Env,
  warn: (line: string) => void,
  root?: string,
): Effect.Effect<A, E> =>
  Effect.flatMap(
    Effect.promise(() => import("../host/otlp")),
    ({ Otlp }) => {
      const found = settings(env, { exportIntervalMs: Otlp.EXPORT_INTERVAL_MS, flushMs: Otlp.EXIT_FLUSH_MS })
      if (found === undefined) return effect
      if ("problem" in found) {
        warn(found.problem)
        return effect
      }
      for (const warning of found.warnings) warn(warning)
      const spanned = root === undefined ? effect : Effect.withSpan(effect, root)
      return Effect.provide(spanned, Layer.fresh(Otlp.layer(found.settings, warn)))
    },
  )
