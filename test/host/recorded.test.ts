// Reading a --since (core log, GET /v1/settlements): an ISO time as written, any year, or a duration back from now.

import { describe, expect, test } from "bun:test"
import { Recorded } from "../../src/host/recorded"

const NOW = Date.parse("2026-11-30T12:00:00Z")

describe("Recorded.parseSince", () => {
  test("an ISO time is the instant it names, whatever its year: Date.UTC read 0050 as 1950", () => {
    expect(Recorded.parseSince("0050-01-01", NOW)).toEqual({ at: Date.parse("0050-01-01T00:00:00Z") })
    expect(Recorded.parseSince("0001-03-04T05:06:07Z", NOW)).toEqual({ at: Date.parse("0001-03-04T05:06:07Z") })
    expect(Recorded.parseSince("2024-02-29", NOW)).toEqual({ at: Date.parse("2024-02-29T00:00:00Z") })
    expect(Recorded.parseSince("2026-01-31T10:00:00+02:00", NOW)).toEqual({ at: Date.parse("2026-01-31T08:00:00Z") })
    expect(Recorded.parseSince("10m", NOW)).toEqual({ at: NOW - 600_000 })
  })

  test("a fraction of a second is cut to milliseconds, however long", () => {
    expect(Recorded.parseSince("2026-01-31T10:00:00.5Z", NOW)).toEqual({ at: Date.parse("2026-01-31T10:00:00.500Z") })
    expect(Recorded.parseSince("2026-01-31T10:00:00.1239Z", NOW)).toEqual({ at: Date.parse("2026-01-31T10:00:00.123Z") })
    expect(Recorded.parseSince(`2026-01-31T10:00:00.${"9".repeat(30)}+05:30`, NOW)).toEqual({ at: Date.parse("2026-01-31T04:30:00.999Z") })
  })

  test("a day no calendar has is refused, not moved", () => {
    for (const text of ["2026-02-31", "1900-02-29", "2025-02-29", "2026-13-01", "2026-01-01T24:00:00Z"]) {
      expect({ text, refused: "problem" in Recorded.parseSince(text, NOW) }).toEqual({ text, refused: true })
    }
  })
})
