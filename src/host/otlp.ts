export * as Otlp from "./otlp"

// Exports spans over OTLP/HTTP with Effect's own exporter (effect/observability), configured by the standard
// OpenTelemetry variables. Loaded only when an endpoint is set (see ../cli/telemetry): without one, core installs no
// tracer and creates no spans. Spans are batched, sent in the background, and flushed when the layer's scope
// closes, within a bound, so an endpoint that is down never holds a call and delays an exit by at most that bound.

import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import packageJson from "../../package.json" with { type: "json" }

/** How long spans wait to be sent together (OTEL_BSP_SCHEDULE_DELAY overrides). */
export const EXPORT_INTERVAL_MS = 5_000
/** How long core waits at exit for its last spans to be sent (OTEL_EXPORTER_OTLP_TIMEOUT overrides). */
export const EXIT_FLUSH_MS = 1_000

export interface Settings {
  /** Where spans are POSTed: `<endpoint>/v1/traces`, or the traces endpoint as given. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: "http/protobuf" | "http/json"
  readonly compression: "gzip" | "none"
  readonly serviceName: string
  readonly exportIntervalMs: number
  readonly flushMs: number
}

/** A tracer exporting to `settings.url` for the life of the layer. */
export const layer = (settings: Settings) =>
  OtlpTracer.layer({
    url: settings.url,
    headers: settings.headers,
    compression: settings.compression,
    resource: { serviceName: settings.serviceName, serviceVersion: packageJson.version },
    exportInterval: Duration.millis(settings.exportIntervalMs),
    shutdownTimeout: Duration.millis(settings.flushMs),
  }).pipe(
    Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer),
  )
