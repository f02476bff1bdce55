import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect, Fiber, Layer, PubSub, Schema, Scope } from "effect"
import { Kernel as CoreKernel } from "../../src/host/kernel"
import { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import { Registry } from "../../src/registry/registry"
import { Settler } from "../../src/settlement/settler"
import { Approvals } from "../../src/store/approvals"
import { Store } from "../../src/store/store"
import { Tool } from "../../src/tool/tool"
import * as Kernel from "../support/kernel"
import { tempDir } from "../support/temp"

const rule = (action: string, resource: string, effect: "allow" | "deny" | "ask"): Agent.SourcedRule => ({
  action,
  resource,
  effect,
  source: { file: "core.json", path: `permission.${action}` },
})

let runs = 0
const counted = (label: string) =>
  Tool.make({
    description: label,
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.sync(() => (runs++, label)),
  })

/** A kernel whose permission service has `rules` configured, with `edit` and `deploy` registered. */
const withRules = <A, E>(
  rules: ReadonlyArray<Agent.SourcedRule>,
  program: Effect.Effect<A, E, Settler.Service | Permission.Service | Store.Service | Registry.Service | Scope.Scope>,
) => {
  const permission = Permission.layer({ project: "/p", configured: { rules, agents: new Map() } }).pipe(
    Layer.provide(Approvals.layerMemory),
  )
  return Effect.runPromise(
    Effect.gen(function* () {
      yield* (yield* Registry.Service).tools.register({ edit: counted("edit"), deploy: counted("deploy") })
      return yield* program
    }).pipe(
      Effect.scoped,
      Kernel.onPath,
      Effect.provide(
        CoreKernel.layer({ store: Store.layerMemory, outputsDirectory: join(tempDir(), "outputs"), permission }),
      ),
    ) as Effect.Effect<A, E>,
  )
}

/** `program` under a rule asking about `deploy`, given the permission service and its events. */
const askingDeploy = <A, E>(
  program: (
    permission: Permission.Interface,
    events: PubSub.Subscription<Permission.Event>,
  ) => Effect.Effect<A, E, Settler.Service | Permission.Service | Store.Service | Registry.Service | Scope.Scope>,
) =>
  withRules(
    [rule("deploy", "*", "ask")],
    Effect.gen(function* () {
      const permission = yield* Permission.Service
      return yield* program(permission, yield* permission.subscribe)
    }),
  )

const settle = (name: string, agent = "build") =>
  Effect.gen(function* () {
    const turn = yield* (yield* Settler.Service).materialize()
    return (yield* turn.settle(Kernel.call(name, {}, { agent }))).settlement
  })

// Every law here holds on both settle paths: the immediate one (where it applies) and the fiber path alone.
for (const path of Kernel.PATHS) {
  describe(`on the ${path} path`, () => {
    Kernel.settleOn(path)

    describe("Settlement authorization", () => {
      test("a denied action settles as an error of kind denied naming the action, and never runs", async () => {
        runs = 0
        const settlement = await withRules([rule("deploy", "*", "deny")], settle("deploy"))
        expect(runs).toBe(0)
        expect(settlement.status).toBe("error")
        expect(settlement.error?.kind).toBe("denied")
        expect(settlement.error?.message).toContain("deploy")
      })

      test("catalog filtering is not authorization: a tool the turn advertised is still refused for the calling agent", async () => {
        runs = 0
        const result = await withRules(
          [],
          Effect.gen(function* () {
            // No rules given to materialize: edit is advertised.
            const turn = yield* (yield* Settler.Service).materialize()
            expect(turn.definitions.map((definition) => definition.name)).toContain("edit")
            return (yield* turn.settle(Kernel.call("edit", {}, { agent: "plan" }))).settlement
          }),
        )
        expect(runs).toBe(0)
        expect(result.error?.kind).toBe("denied")
      })

      test("an asked call runs once approved, fails with the feedback when rejected with a message, and is declined otherwise", async () => {
        runs = 0
        const outcomes = await askingDeploy((permission, events) =>
          Effect.gen(function* () {
            const answer = (reply: Permission.Reply) =>
              Effect.gen(function* () {
                const fiber = yield* Effect.forkChild(settle("deploy"))
                const event = yield* PubSub.take(events)
                if (event.type !== "asked") throw new Error("expected an ask")
                expect(event.request).toMatchObject({ action: "deploy", resources: ["*"], metadata: { tool: "deploy" } })
                yield* permission.reply(event.request.id, reply)
                yield* PubSub.take(events) // the replied event
                return yield* Fiber.join(fiber)
              })
            return {
              approved: yield* answer({ reply: "once" }),
              rejected: yield* answer({ reply: "reject", message: "Not on a Friday." }),
              declined: yield* answer({ reply: "reject" }),
            }
          }),
        )
        expect(runs).toBe(1)
        expect(outcomes.approved).toMatchObject({ status: "success", structured: "deploy" })
        expect(outcomes.rejected).toMatchObject({ status: "error", error: { kind: "failure", message: "Not on a Friday." } })
        expect(outcomes.declined).toMatchObject({ status: "declined" })
      })

      test("a call waiting on its ask holds its ids: under another tool or agent they are a conflict at once, and the asked call runs once approved", async () => {
        runs = 0
        const outcomes = await askingDeploy((permission, events) =>
          Effect.gen(function* () {
            const turn = yield* (yield* Settler.Service).materialize()
            const asked = Kernel.call("deploy", {})
            const fiber = yield* Effect.forkChild(turn.settle(asked))
            const event = yield* PubSub.take(events)
            if (event.type !== "asked") throw new Error("expected an ask")
            // Nothing is recorded while the person is asked: the running call alone holds the ids.
            const sameIds = { toolCallID: asked.toolCallID, sessionID: asked.sessionID }
            const otherTool = (yield* turn.settle(Kernel.call("edit", {}, sameIds))).settlement
            const otherAgent = (yield* turn.settle(Kernel.call("deploy", {}, { ...sameIds, agent: "plan" }))).settlement
            yield* permission.reply(event.request.id, { reply: "once" })
            return { otherTool, otherAgent, approved: (yield* Fiber.join(fiber)).settlement }
          }),
        )
        expect(outcomes.otherTool).toMatchObject({ tool: "edit", status: "error", error: { kind: "conflict" } })
        expect(outcomes.otherTool.error?.message).toContain("another tool")
        expect(outcomes.otherAgent).toMatchObject({ status: "error", error: { kind: "conflict" } })
        expect(outcomes.otherAgent.error?.message).toContain("another agent")
        expect(outcomes.approved).toMatchObject({ status: "success", structured: "deploy" })
        expect(runs).toBe(1)
      })

      test("a tool that checks each command itself is not also checked as a whole", async () => {
        runs = 0
        const settlement = await withRules(
          [rule("shell", "*", "ask"), rule("shell", "git status", "allow")],
          Effect.gen(function* () {
            const permission = yield* Permission.Service
            const shell = Tool.make({
              description: "runs a command",
              input: Schema.Struct({ command: Schema.String }),
              output: Schema.String,
              checksPermissions: true,
              execute: (input, context) =>
                permission
                  .assert({
                    sessionID: context.sessionID,
                    agent: context.agent,
                    source: { messageID: context.assistantMessageID, callID: context.toolCallID },
                    action: "shell",
                    resources: [input.command],
                    save: [input.command],
                  })
                  .pipe(Effect.as((runs++, input.command))),
            })
            yield* (yield* Registry.Service).tools.register({ shell })
            const turn = yield* (yield* Settler.Service).materialize()
            // "git status" is allowed by its own rule: no ask for the action as a whole gets in the way.
            const settled = yield* turn.settle(Kernel.call("shell", { command: "git status" }))
            expect(yield* permission.pending).toEqual([])
            return settled.settlement
          }),
        )
        expect(settlement).toMatchObject({ status: "success", structured: "git status" })
      })
    })
  })
}
