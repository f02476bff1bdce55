// What a message too long to read says of itself: its id, read from its beginning or its end alone, and whether it
// answers a request. A wrong id would fail (or answer) another request than the one the message was.

import { describe, expect, test } from "bun:test"
import { JsonRpcId } from "../../src/contract/json-rpc-id"

const BIG = "x".repeat(100_000)
/** A long line's beginning and end, as the transports keep them. */
const glimpse = (line: string) => JsonRpcId.glimpse(line.slice(0, JsonRpcId.HEAD_CHARS), line.slice(-JsonRpcId.TAIL_CHARS))
const asText = (id: unknown) => (id === undefined ? undefined : JSON.stringify(id))

describe("JsonRpcId", () => {
  test("an id written first or last is found; a number as written", () => {
    expect(asText(glimpse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"text":"${BIG}"}}`).id)).toBe("7")
    expect(asText(glimpse(`{"result":{"text":"${BIG}"},"jsonrpc":"2.0","id":"call-1"}`).id)).toBe('"call-1"')
    expect(asText(glimpse(`{"result":{"text":"${BIG}"},"jsonrpc":"2.0","id" : 9007199254740993 }\r`).id)).toBe("9007199254740993")
  })

  test("an id in the middle, nested, inside a string or unreadable is not taken", () => {
    // Neither end shows it.
    expect(glimpse(`{"jsonrpc":"2.0","result":{"text":"${BIG}"},"id":3,"x":1}`).id).toBeUndefined()
    // The last member of a nested object, not of the message.
    expect(glimpse(`{"jsonrpc":"2.0","result":{"text":"${BIG}","id":4}}`).id).toBeUndefined()
    // Text that looks like an id member inside a string at the end.
    expect(glimpse(`{"jsonrpc":"2.0","result":{"text":"${BIG}"},"note":"\\",\\"id\\":5}"}`).id).toBeUndefined()
    // An id at the start that is not JSON (`01`): the one at the end (a key given twice) is not taken instead.
    expect(glimpse(`{"jsonrpc":"2.0","id":01,"params":{"text":"${BIG}"},"id":6}`).id).toBeUndefined()
    // A nested "id" at the start is not the message's.
    expect(glimpse(`{"params":{"id":8,"text":"${BIG}"}`).id).toBeUndefined()
  })

  test("its kind: an answer shows result or error, a request or notification a method; else unknown", () => {
    expect(glimpse(`{"result":{"text":"${BIG}"},"jsonrpc":"2.0","id":1}`).kind).toBe("answer")
    expect(glimpse(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"${BIG}"}}`).kind).toBe("answer")
    expect(glimpse(`{"method":"sampling/createMessage","params":{"text":"${BIG}"},"jsonrpc":"2.0","id":1}`).kind).toBe("request")
    // A "method" member beside a result is no answer to fail a request with.
    expect(glimpse(`{"result":{},"method":"x","params":{"text":"${BIG}"},"id":1}`).kind).toBe("request")
    // "result" named inside the params is not the message's own.
    expect(glimpse(`{"params":{"result":"${BIG}"},"jsonrpc":"2.0","id":1}`).kind).toBeUndefined()
  })

  test("scanId reads the beginning alone, as before: the first top-level id", () => {
    expect(asText(JsonRpcId.scanId('{"jsonrpc":"2.0","id":"a","params":{"id":"b"'))).toBe('"a"')
    expect(JsonRpcId.scanId('{"params":{"id":"b"},"jsonrpc":"2.0"')).toBeUndefined()
    expect(JsonRpcId.scanId('{"jsonrpc":"2.0","id":{"a":1}')).toBeUndefined()
  })
})
