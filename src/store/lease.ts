export * as Lease from "./lease"

// Whether a call begun elsewhere is still running is told by its lease, not by its process id: a process can only
// check processes on its own host, and hosts sharing a store (a shared data directory, one Postgres) cannot check
// each other's. The process that begins a call holds a lease on it until `lease_until`, renewed every third of the
// lease while the call runs; renewal stops when the call is settled or fails, or the process dies. A waiter waits
// while the lease is live, and replays the call as interrupted only once it has lapsed.
//
// The clock is the store's: the database's for Postgres, the hosts' wall clocks for SQLite (hosts sharing a data
// directory are assumed to agree on the time to well within a lease).

/** How long a lease lasts unless renewed, unless `CORE_LEASE_MS` says otherwise. */
export const DEFAULT_MS = 5_000
/** Shorter leases would be renewed more often than a store write can be trusted to take. */
export const MIN_MS = 300
export const MAX_MS = 3_600_000

/** The lease duration from the environment (`CORE_LEASE_MS`); a value that is not a whole number in range is refused. */
export const durationMs = (env: Record<string, string | undefined> = process.env): number => {
  const text = env.CORE_LEASE_MS
  if (text === undefined || text === "") return DEFAULT_MS
  const value = Number(text)
  if (!Number.isInteger(value) || value < MIN_MS || value > MAX_MS) {
    throw new Error(`CORE_LEASE_MS must be a whole number of milliseconds from ${MIN_MS} to ${MAX_MS}, not ${JSON.stringify(text)}`)
  }
  return value
}

export interface Renewer<K> {
  /** Starts renewing the lease on `key` (a call this process has just begun). */
  readonly add: (id: string, key: K) => void
  /** Stops renewing it (the call was settled or failed). */
  readonly remove: (id: string) => void
  /** Whether this process holds the lease on `id`. */
  readonly has: (id: string) => boolean
  /** Stops renewing every lease (the store is closing). */
  readonly close: () => void
}

/** A renewal given up after a whole lease without an answer. */
export class RenewalTimeout extends Error {}

/**
 * Renews, every third of `leaseMs`, the leases of the calls this process is running, all in one `renew` (one
 * statement per interval whatever the number of calls). The timer does not keep the process alive; a failed
 * renewal is reported to `onError` and retried at the next interval (the lease outlives two of them).
 */
export const renewer = <K>(
  leaseMs: number,
  renew: (keys: ReadonlyArray<K>) => unknown,
  onError: (cause: unknown) => void = () => undefined,
): Renewer<K> => {
  const held = new Map<string, K>()
  let timer: ReturnType<typeof setInterval> | undefined
  let renewing = false
  const tick = async () => {
    // Nothing left to renew: the timer stops here rather than as the last call ends, so calls made one after another
    // set no timer each.
    if (held.size === 0) return stop()
    if (renewing) return
    renewing = true
    // A renewal unanswered for a whole lease is given up (the lease has lapsed by then): the next interval tries
    // again, rather than every later one waiting behind a statement a stalled connection will never answer.
    let gaveUp: ReturnType<typeof setTimeout> | undefined
    try {
      await Promise.race([
        renew([...held.values()]),
        new Promise((_, reject) => {
          gaveUp = setTimeout(() => reject(new RenewalTimeout(`a lease renewal got no answer within ${leaseMs} ms`)), leaseMs)
          gaveUp.unref?.()
        }),
      ])
    } catch (cause) {
      onError(cause)
    } finally {
      clearTimeout(gaveUp)
      renewing = false
    }
  }
  const stop = () => {
    if (timer !== undefined) clearInterval(timer)
    timer = undefined
  }
  return {
    add: (id, key) => {
      held.set(id, key)
      if (timer === undefined) {
        timer = setInterval(tick, Math.max(1, Math.floor(leaseMs / 3)))
        timer.unref?.()
      }
    },
    remove: (id) => {
      held.delete(id)
    },
    has: (id) => held.has(id),
    close: () => {
      held.clear()
      stop()
    },
  }
}
