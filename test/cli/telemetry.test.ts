// What the standard OpenTelemetry variables ask of core's exporter (src/cli/telemetry.ts): nothing unless an endpoint
// is set and tracing is not turned off; the endpoint, headers, resource, batch and queue sizes as OTel reads them;
// values that are not numbers fall back to the defaults.

import { describe, expect, test } from "bun:test"
import { Telemetry } from "../../src/cli/telemetry"

const DEFAULTS = { exportIntervalMs: 5_000, flushMs: 1_000 }

const settingsOf = (env: Record<string, string>) => {
  const found = Telemetry.settings(env, DEFAULTS)
  if (found === undefined || !("settings" in found)) throw new Error(`no settings: ${JSON.stringify(found)}`)
  return found.settings
}

describe("Telemetry.settings", () => {
  test("nothing without an endpoint, or with tracing turned off", () => {
    expect(Telemetry.settings({}, DEFAULTS)).toBeUndefined()
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " }, DEFAULTS)).toBeUndefined()
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_SDK_DISABLED: "TRUE" }, DEFAULTS)).toBeUndefined()
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_TRACES_EXPORTER: "none" }, DEFAULTS)).toBeUndefined()
    expect(Telemetry.asked({})).toBe(false)
    expect(Telemetry.asked({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://x/t" })).toBe(true)
  })

  test("the endpoint, headers, resource and batching as OTel reads them", () => {
    const settings = settingsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20t,bad,=x",
      OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource,deployment.environment=prod",
      OTEL_BSP_SCHEDULE_DELAY: "250",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "64",
      OTEL_BSP_MAX_QUEUE_SIZE: "4096",
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
    })
    expect(settings).toEqual({
      url: "http://collector:4318/v1/traces",
      headers: { authorization: "Bearer t" },
      protocol: "http/protobuf",
      compression: "gzip",
      serviceName: "from-resource",
      resource: { "service.name": "from-resource", "deployment.environment": "prod" },
      exportIntervalMs: 250,
      flushMs: 1_000,
      maxBatchSpans: 64,
      maxQueuedSpans: 4_096,
    })
  })

  // Left to the defaults as the OTel SDKs do, but said: a user who set one meant something by it.
  test("sizes and delays that are not numbers are left to the defaults, each said in a warning", () => {
    const found = Telemetry.settings(
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/custom",
        OTEL_BSP_SCHEDULE_DELAY: "soon",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0",
        OTEL_BSP_MAX_QUEUE_SIZE: "1.5",
        OTEL_EXPORTER_OTLP_TIMEOUT: "-3",
        OTEL_EXPORTER_OTLP_COMPRESSION: "zstd",
      },
      DEFAULTS,
    )
    if (found === undefined || !("settings" in found)) throw new Error("no settings")
    const { settings, warnings } = found
    expect(settings.url).toBe("http://collector:4318/custom")
    expect(settings.exportIntervalMs).toBe(5_000)
    expect(settings.flushMs).toBe(1_000)
    expect(settings.maxBatchSpans).toBeUndefined()
    expect(settings.maxQueuedSpans).toBeUndefined()
    expect(settings.compression).toBe("none")
    expect(warnings).toEqual([
      'core: warning: exporting traces uncompressed: core compresses with gzip or none, not "zstd"',
      'core: warning: OTEL_BSP_SCHEDULE_DELAY="soon" is not a number of milliseconds (0 or more); the default is used',
      'core: warning: OTEL_EXPORTER_OTLP_TIMEOUT="-3" is not a number of milliseconds (0 or more); the default is used',
      'core: warning: OTEL_BSP_MAX_EXPORT_BATCH_SIZE="0" is not a whole number above 0; the default is used',
      'core: warning: OTEL_BSP_MAX_QUEUE_SIZE="1.5" is not a whole number above 0; the default is used',
    ])
    // The traces' own variable is read first; only the one read is said.
    expect(
      Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "x", OTEL_EXPORTER_OTLP_TIMEOUT: "7" }, DEFAULTS),
    ).toMatchObject({ settings: { flushMs: 1_000 }, warnings: ['core: warning: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="x" is not a number of milliseconds (0 or more); the default is used'] })
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_COMPRESSION: "GZIP", OTEL_BSP_SCHEDULE_DELAY: "0" }, DEFAULTS)).toMatchObject({
      settings: { compression: "gzip", exportIntervalMs: 0 },
      warnings: [],
    })
  })

  // A header HTTP cannot carry failed every export request, silently: each was dropped, reported only as a count.
  test("a header whose name or value HTTP cannot carry is left out and said; the others are sent", () => {
    const found = Telemetry.settings(
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_HEADERS: "x-team=a,bad key=1,x-line=v%0Ax,x-euro=%E2%82%AC,x-latin=%C3%A9" },
      DEFAULTS,
    )
    if (found === undefined || !("settings" in found)) throw new Error("no settings")
    expect(found.settings.headers).toEqual({ "x-team": "a", "x-latin": "é" })
    expect(found.warnings).toHaveLength(1)
    expect(found.warnings[0]).toContain('"bad key", "x-line", "x-euro"')
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_HEADERS: "x-team=a" }, DEFAULTS)).toMatchObject({
      warnings: [],
    })
  })

  // A mistyped API key failed every export, said only as a count of spans not exported.
  test("a pair that is not name=value, or does not decode, is left out and said by its place, never its value", () => {
    const found = Telemetry.settings(
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_HEADERS: "x-team=a,SECRET1,=SECRET2,x-key=%ZZSECRET3, =SECRET4" },
      DEFAULTS,
    )
    if (found === undefined || !("settings" in found)) throw new Error("no settings")
    expect(found.settings.headers).toEqual({ "x-team": "a" })
    expect(found.warnings).toHaveLength(1)
    expect(found.warnings[0]).toContain("pair 2 (no =), pair 3 (no name), pair 4 (not URL-encoded as it should be), pair 5 (no name)")
    expect(found.warnings[0]).not.toContain("SECRET")
  })

  // A timer set past 2^31 - 1 ms fires at once: a wait for the last spans then spun, writing a warning each time.
  test("a timeout past what a timer can wait is taken as that longest wait", () => {
    for (const timeout of ["3000000000", "1e12"]) {
      expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_TIMEOUT: timeout }).flushMs).toBe(2_147_483_647)
    }
    expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_TIMEOUT: "15000" }).flushMs).toBe(15_000)
  })

  test("a protocol core does not speak, or an endpoint that is not a URL, is said and not exported to", () => {
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, DEFAULTS)).toEqual({
      problem: "core: warning: not exporting traces: core sends OTLP over HTTP (http/protobuf or http/json), not grpc",
    })
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, DEFAULTS)).toEqual({
      problem: "core: warning: not exporting traces: OTEL_EXPORTER_OTLP_ENDPOINT is not a URL",
    })
    // Named, never shown: what does not parse may still hold a key.
    expect(Telemetry.settings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://u:SECRET@host:99999" }, DEFAULTS)).toEqual({
      problem: "core: warning: not exporting traces: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL",
    })
  })
})
