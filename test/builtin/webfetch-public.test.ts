// webfetch where a public address is reachable: a network namespace of its own in which 1.2.3.4 is on the loopback
// device (./webfetch-public-child.ts), so that a "public" page can redirect and an IPv4 address can be written as
// IPv6, as on the internet. Root makes the namespace; elsewhere a user namespace does.

import { describe, expect, test } from "bun:test"
import { join } from "node:path"

const CHILD = join(import.meta.dir, "webfetch-public-child.ts")

interface Outcome {
  readonly status: string
  readonly kind?: string
  readonly message?: string
  readonly asks: number
}

const run = async () => {
  const namespace = process.getuid?.() === 0 ? ["unshare", "--net"] : ["unshare", "--user", "--map-root-user", "--net"]
  const script = `ip link set lo up && ip addr add 1.2.3.4/32 dev lo && exec "${process.execPath}" "${CHILD}"`
  const child = Bun.spawn([...namespace, "sh", "-c", script], { stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect({ code, err }).toEqual({ code: 0, err: "" })
  return JSON.parse(out) as {
    readonly publicDirect: Outcome
    readonly publicToLocal: Outcome
    readonly localToLocal: Outcome
    readonly mappedDenied: ReadonlyArray<Outcome>
    readonly mappedAsked: ReadonlyArray<Outcome>
    readonly got: { readonly public: ReadonlyArray<string>; readonly local: ReadonlyArray<string> }
  }
}

/** The child's run, made once for both tests. */
let ran: ReturnType<typeof run> | undefined

describe("webfetch with a public address", () => {
  test("a rule opening a loopback server opens it to the call and to that server's own redirects, never to a public page's", async () => {
    const results = await (ran ??= run())
    expect(results.publicDirect.status).toBe("success")
    // A public page sending the fetch to a loopback server the user opened: refused at that hop, before it is requested.
    expect(results.publicToLocal).toMatchObject({ status: "error", kind: "failure" })
    expect(results.publicToLocal.message).toStartWith("Refused: http://1.2.3.4:")
    expect(results.publicToLocal.message).toContain("only from a page at such an address")
    expect(results.got.local).not.toContain("/secret")
    // The loopback server redirecting within itself is followed.
    expect(results.localToLocal.status).toBe("success")
    expect(results.got.local).toEqual(["/away", "/inside"])
  }, 60_000)

  // Written as [::ffff:102:304], 1.2.3.4 met no rule written for it, and Linux connected it to 1.2.3.4.
  test("an IPv4 address written as IPv6 meets the rules written for it", async () => {
    const results = await (ran ??= run())
    // 1.2.3.4 written as IPv6 meets the rules written for 1.2.3.4: denied, or asked (and declined), nothing requested.
    expect(results.mappedDenied.map((outcome) => outcome.kind)).toEqual(["denied", "denied", "denied", "denied"])
    expect(results.mappedAsked.map((outcome) => [outcome.asks, outcome.status])).toEqual([[1, "declined"], [1, "declined"], [1, "declined"], [1, "declined"]])
    expect(results.got.public.filter((path) => path === "/mapped")).toEqual([])
    expect(results.got.public).toEqual(["/page", "/away"])
  }, 60_000)
})
