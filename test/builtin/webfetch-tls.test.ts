// webfetch over HTTPS against a local Bun.serve with a certificate made for the test: the connection goes to the
// checked address while TLS verifies the certificate for the URL's host name, so an untrusted certificate, or a
// name the certificate does not carry, is refused; trusted (NODE_EXTRA_CA_CERTS), the compiled core fetches it.

import { afterAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { WebRequest } from "../../src/builtin/web-request"
import { sandbox } from "../cli/fixture"
import { run } from "../support/binary"
import { tempDir } from "../support/temp"

const dir = tempDir("core-webfetch-tls-")
const made = Bun.spawnSync([
  "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
  "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
  "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
], { stdout: "pipe", stderr: "pipe" })
if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  tls: { cert: Bun.file(join(dir, "cert.pem")), key: Bun.file(join(dir, "key.pem")) },
  fetch: (request) => new Response(`<html><body><h1>Secure</h1><p>${request.headers.get("host")}</p></body></html>`, { headers: { "content-type": "text/html" } }),
})
afterAll(() => server.stop(true))

const get = (host: string) =>
  WebRequest.get({
    url: new URL(`https://${host}:${server.port}/`),
    addresses: [{ address: "127.0.0.1", family: 4 }],
    maxBytes: 1024,
    accept: "*/*",
    signal: new AbortController().signal,
  })

describe("webfetch over HTTPS", () => {
  test("a certificate nobody trusts is refused", async () => {
    const outcome = await get("localhost")
    expect(outcome).toMatchObject({ _tag: "Failed", reason: expect.stringContaining("self signed certificate") })
  })

  test("trusted, a name the certificate does not carry is refused though it connects to the same address", async () => {
    // A rebinding name led to 127.0.0.1 still meets TLS for its own name. Run in a child for NODE_EXTRA_CA_CERTS.
    const script = join(dir, "mismatch.ts")
    await Bun.write(
      script,
      `import { WebRequest } from ${JSON.stringify(join(import.meta.dir, "../../src/builtin/web-request.ts"))}\n` +
        `const get = (host: string) => WebRequest.get({ url: new URL("https://" + host + ":${server.port}/"), addresses: [{ address: "127.0.0.1", family: 4 }], maxBytes: 1024, accept: "*/*", signal: new AbortController().signal })\n` +
        `console.log(JSON.stringify([await get("localhost"), await get("rebind.invalid")]))\n`,
    )
    const child = Bun.spawn([process.execPath, script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") }, stdout: "pipe", stderr: "pipe" })
    const [trusted, mismatched] = JSON.parse(await new Response(child.stdout).text())
    expect(trusted._tag).toBe("Response")
    expect(mismatched).toMatchObject({ _tag: "Failed", reason: expect.stringContaining("ERR_TLS_CERT_ALTNAME_INVALID") })
  })

  test("trusted, the page is fetched through the compiled core; the certificate is checked for the URL's host", async () => {
    const box = sandbox({ "core.json": JSON.stringify({ permission: { webfetch: { "https://localhost:*": "allow" } } }) })
    const result = await run(
      ["exec", "webfetch", "--input", JSON.stringify({ url: `https://localhost:${server.port}/` }), "--location", box.location],
      { env: { ...box.env, NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") } },
    )
    expect(result.code).toBe(0)
    const settlement = JSON.parse(result.stdout)
    expect(settlement.content[0].text).toStartWith(`URL: https://localhost:${server.port}/\nStatus: 200 OK\n`)
    expect(settlement.content[0].text).toContain(`# Secure\n\nlocalhost:${server.port}`)
  })
})
