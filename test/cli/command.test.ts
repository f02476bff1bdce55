import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Command } from "../../src/cli/command"

const OPTIONS = { input: { type: "string" }, json: { type: "boolean" } } as const
const parse = (args: ReadonlyArray<string>) => Effect.runPromise(Effect.result(Command.parse("exec", args, OPTIONS)))

describe("Command.parse", () => {
  test("reads string and boolean flags in either form, with positionals anywhere", async () => {
    const result = await parse(["echo", "--input", '{"a":1}', "--json", "extra"])
    expect(result._tag === "Success" && result.success).toEqual({ values: { input: '{"a":1}', json: true }, positionals: ["echo", "extra"] })
    const equals = await parse(["--input={}", "-h"])
    expect(equals._tag === "Success" && equals.success.values).toEqual({ input: "{}", help: true })
  })

  test("a dash alone is a value, and -- ends the flags", async () => {
    const result = await parse(["--input", "-", "--", "--json"])
    expect(result._tag === "Success" && result.success).toEqual({ values: { input: "-" }, positionals: ["--json"] })
  })

  test("unknown flags, missing values and values for booleans are usage errors naming the flag", async () => {
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [["--bogus"], "unknown flag --bogus"],
      [["--bogus=1"], "unknown flag --bogus"],
      [["-x"], "unknown flag -x"],
      [["--constructor"], "unknown flag --constructor"],
      [["--input"], "--input needs a value"],
      [["--json=yes"], "--json does not take a value"],
    ]
    for (const [args, message] of cases) {
      const result = await parse(args)
      expect(result._tag).toBe("Failure")
      expect(result._tag === "Failure" && result.failure).toMatchObject({ command: "exec", message })
    }
  })
})
