import { describe, expect, test } from "bun:test"
import { Mapping } from "../../src/mcp-server/mapping"
import type { Permission } from "../../src/permission/permission"

const ACTED_ON = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

describe("an ask as an MCP client shows it", () => {
  test("the model's command and the saved patterns show inert: no C1 control, bidi override or escape acts", () => {
    const request: Permission.Request = {
      id: "per_1",
      sessionID: "s",
      agent: "build",
      source: { messageID: "m", callID: "c" },
      action: "bash",
      resources: ['rm -rf victim "\u009b1G\u009b2Kls\u202e\u001b[8m'],
      save: ["rm \u2066*"],
    }
    const form = Mapping.askForm(request)
    expect(form.message).not.toMatch(ACTED_ON)
    expect(form.message).toContain('Allow bash on "rm -rf victim \\"\\u009b1G\\u009b2Kls\\u202e\\u001b[8m"?')
    expect(form.message).toContain('"always" saves "rm \\u2066*"')
    expect(Mapping.describe(request)).not.toMatch(ACTED_ON)
  })
})
