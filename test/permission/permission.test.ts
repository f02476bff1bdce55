import { describe, expect, test } from "bun:test"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, PubSub, Schema, Scope } from "effect"
import { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import { Approvals } from "../../src/store/approvals"
import { StoreError } from "../../src/store/store"

const PROJECT = "/work/project"

const sourced = (action: string, resource: string, effect: "allow" | "deny" | "ask"): Agent.SourcedRule => ({
  action,
  resource,
  effect,
  source: { file: "/work/project/core.json", path: `permission.${action}` },
})

const configured = (
  rules: ReadonlyArray<Agent.SourcedRule>,
  agents: Record<string, ReadonlyArray<Agent.SourcedRule>> = {},
): Agent.Configured => ({
  rules,
  agents: new Map(Object.entries(agents).map(([name, agentRules]) => [name, { rules: agentRules }])),
})

const run = <A, E>(
  program: Effect.Effect<A, E, Permission.Service | Approvals.Service | Scope.Scope>,
  setup: Agent.Configured = Agent.NOTHING_CONFIGURED,
) =>
  Effect.runPromise(
    Effect.scoped(program).pipe(
      Effect.provide(
        Permission.layer({ project: PROJECT, configured: setup }).pipe(Layer.provideMerge(Approvals.layerMemory)),
      ),
    ) as Effect.Effect<A, E>,
  )

const ask = (action: string, resources: ReadonlyArray<string>, overrides: Partial<Permission.AssertInput> = {}) => ({
  sessionID: "ses_1",
  agent: "build",
  source: { messageID: "msg_1", callID: "call_1" },
  action,
  resources,
  save: resources,
  ...overrides,
})

/** Starts an assert in the background and waits until its request is pending. */
const pendingAssert = (input: Permission.AssertInput) =>
  Effect.gen(function* () {
    const permission = yield* Permission.Service
    const events = yield* permission.subscribe
    const fiber = yield* Effect.forkChild(permission.assert(input))
    const event = yield* PubSub.take(events)
    if (event.type !== "asked") throw new Error(`expected an ask, got ${event.type}`)
    return { fiber, request: event.request }
  })

describe("Permission rules", () => {
  test("with nothing configured, actions inside the Location are allowed and leaving it is asked", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        yield* permission.assert(ask("edit", ["src/a.ts"]))
        yield* permission.assert(ask("mytool", ["*"]))
        const [decision] = yield* permission.explain({ agent: "build", action: "external_directory", resources: ["/etc/*"] })
        expect(decision).toMatchObject({ effect: "ask", rule: { source: { file: Agent.DEFAULTS_SOURCE } } })
      }),
    ))

  test("the plan agent may not edit; an unknown agent may do nothing", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const denied = yield* permission.assert(ask("edit", ["src/a.ts"], { agent: "plan" })).pipe(Effect.flip)
        expect(denied).toBeInstanceOf(Permission.Denied)
        expect(denied.message).toContain("edit")
        expect(denied.message).toContain("plan")
        yield* permission.assert(ask("read", ["src/a.ts"], { agent: "plan" }))
        const unknown = yield* permission.assert(ask("read", ["a"], { agent: "ghost" })).pipe(Effect.flip)
        expect(unknown).toBeInstanceOf(Permission.Denied)
        expect(permission.isAgent("ghost")).toBe(false)
        expect(permission.agents).toEqual(["build", "plan"])
      }),
    ))

  test("the last matching rule decides, agents' rules come after the top-level ones", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const decide = (agent: string, resource: string) =>
          permission.explain({ agent, action: "bash", resources: [resource] }).pipe(Effect.map(([decision]) => decision!.effect))
        expect(yield* decide("build", "git status")).toBe("allow")
        expect(yield* decide("build", "git push")).toBe("ask")
        expect(yield* decide("build", "rm -rf /")).toBe("deny")
        expect(yield* decide("review", "git status")).toBe("deny")
        expect(permission.agents).toEqual(["build", "plan", "review"])
      }),
      configured(
        [sourced("bash", "*", "ask"), sourced("bash", "git status", "allow"), sourced("bash", "rm *", "deny")],
        { review: [sourced("bash", "*", "deny")] },
      ),
    ))

  test("a decision names the rule and the file it came from", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const [decision] = yield* permission.explain({ agent: "build", action: "bash", resources: ["rm -rf /"] })
        expect(decision).toEqual({ resource: "rm -rf /", effect: "deny", rule: sourced("bash", "rm *", "deny"), approvedBy: undefined })
      }),
      configured([sourced("bash", "rm *", "deny")]),
    ))

  test("a refusal says it is the user's rule, not to work round it, and gives no advice on changing rules", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const denied = yield* permission.assert(ask("bash", ["rm -rf /"])).pipe(Effect.flip)
        expect(denied.message).toBe(
          'Denied: bash on "rm -rf /" is forbidden for the build agent by the user\'s rule (rule "bash": "rm *" → deny, ' +
            "/work/project/core.json, permission.bash). Do not try to reach the same result another way.",
        )
        expect(denied.message).not.toMatch(/retry|choose another|--yes|turn|change the rule|allow it/i)
      }),
      configured([sourced("bash", "rm *", "deny")]),
    ))
})

describe("Permission inputs", () => {
  test("an empty list of resources is checked as the whole action, never waved through", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const denied = yield* permission.assert(ask("read", [], { agent: "ghost" })).pipe(Effect.flip)
        expect(denied).toBeInstanceOf(Permission.Denied)
        expect((denied as Permission.Denied).resource).toBe("*")
      }),
    ))
})

describe("Permission replies", () => {
  test("only once, always and reject (with an optional message) are replies", () => {
    const decode = Schema.decodeUnknownExit(Permission.Reply)
    for (const reply of [{ reply: "once" }, { reply: "always" }, { reply: "reject" }, { reply: "reject", message: "no" }]) {
      expect(decode(reply)._tag).toBe("Success")
    }
    for (const reply of [{ reply: "yes" }, { reply: "ONCE" }, { reply: "always", message: 3 }, {}, "once"]) {
      expect(decode(reply, { onExcessProperty: "error" })._tag).toBe("Failure")
    }
  })
})

describe("Permission asks", () => {
  test("an ask waits for a reply; once lets this call through and saves nothing", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const { fiber, request } = yield* pendingAssert(ask("deploy", ["prod"]))
        expect(request).toMatchObject({ action: "deploy", resources: ["prod"], sessionID: "ses_1", source: { callID: "call_1" } })
        expect((yield* permission.pending).map((entry) => entry.id)).toEqual([request.id])
        yield* permission.reply(request.id, { reply: "once" })
        yield* Fiber.join(fiber)
        expect(yield* permission.pending).toEqual([])
        expect(yield* (yield* Approvals.Service).list(PROJECT)).toEqual([])
      }),
      configured([sourced("deploy", "*", "ask")]),
    ))

  test("always saves the patterns for the project, answers later asks, and resolves other pending ones", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const first = yield* pendingAssert(ask("bash", ["git checkout main"], { save: ["git checkout *"] }))
        const second = yield* pendingAssert(ask("bash", ["git checkout dev"], { save: ["git checkout *"], sessionID: "ses_2" }))
        const third = yield* pendingAssert(ask("bash", ["npm publish"], { save: ["npm publish *"] }))
        yield* permission.reply(first.request.id, { reply: "always" })
        yield* Fiber.join(first.fiber)
        yield* Fiber.join(second.fiber)
        expect((yield* permission.pending).map((entry) => entry.id)).toEqual([third.request.id])
        expect((yield* (yield* Approvals.Service).list(PROJECT)).map((approval) => [approval.action, approval.pattern])).toEqual([
          ["bash", "git checkout *"],
        ])
        // A later call matching the saved pattern is not asked at all.
        yield* permission.assert(ask("bash", ["git checkout feature"]))
        const [decision] = yield* permission.explain({ agent: "build", action: "bash", resources: ["git checkout x"] })
        expect(decision).toMatchObject({ effect: "allow", approvedBy: "git checkout *" })
      }),
      configured([sourced("bash", "*", "ask")]),
    ))

  test("a saved approval never overrides a configured deny", () =>
    run(
      Effect.gen(function* () {
        yield* (yield* Approvals.Service).save(PROJECT, "bash", ["*"])
        const denied = yield* (yield* Permission.Service).assert(ask("bash", ["rm -rf /"])).pipe(Effect.flip)
        expect(denied).toBeInstanceOf(Permission.Denied)
      }),
      configured([sourced("bash", "*", "ask"), sourced("bash", "rm *", "deny")]),
    ))

  test("reject with a message fails this call with that feedback for the model", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const { fiber, request } = yield* pendingAssert(ask("deploy", ["prod"]))
        yield* permission.reply(request.id, { reply: "reject", message: "Deploy to staging first." })
        const error = yield* Fiber.join(fiber).pipe(Effect.flip)
        expect(error).toBeInstanceOf(Permission.Rejected)
        expect(error.message).toBe("Deploy to staging first.")
      }),
      configured([sourced("deploy", "*", "ask")]),
    ))

  test("reject without a message declines this call and every other pending ask of the same session only", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const a = yield* pendingAssert(ask("deploy", ["prod"]))
        const b = yield* pendingAssert(ask("deploy", ["eu"], { source: { messageID: "m", callID: "call_2" } }))
        const other = yield* pendingAssert(ask("deploy", ["us"], { sessionID: "ses_other" }))
        yield* permission.reply(a.request.id, { reply: "reject" })
        expect(yield* Fiber.join(a.fiber).pipe(Effect.flip)).toBeInstanceOf(Permission.Declined)
        expect(yield* Fiber.join(b.fiber).pipe(Effect.flip)).toBeInstanceOf(Permission.Declined)
        expect((yield* permission.pending).map((entry) => entry.id)).toEqual([other.request.id])
      }),
      configured([sourced("deploy", "*", "ask")]),
    ))

  test("a reply to an unknown or already answered request changes nothing", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const { fiber, request } = yield* pendingAssert(ask("deploy", ["prod"]))
        const unknown = yield* permission.reply("per_nope", { reply: "once" }).pipe(Effect.flip)
        expect(unknown).toBeInstanceOf(Permission.UnknownRequest)
        yield* permission.reply(request.id, { reply: "once" })
        yield* Fiber.join(fiber)
        expect(yield* permission.reply(request.id, { reply: "always" }).pipe(Effect.flip)).toBeInstanceOf(Permission.UnknownRequest)
        expect(yield* (yield* Approvals.Service).list(PROJECT)).toEqual([])
      }),
      configured([sourced("deploy", "*", "ask")]),
    ))

  test("a caller that stops waiting withdraws its request", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const { fiber } = yield* pendingAssert(ask("deploy", ["prod"]))
        yield* Fiber.interrupt(fiber)
        expect(yield* permission.pending).toEqual([])
      }),
      configured([sourced("deploy", "*", "ask")]),
    ))

  test("shutting down declines what is still pending", async () => {
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          Permission.layer({ project: PROJECT, configured: configured([sourced("deploy", "*", "ask")]) }).pipe(
            Layer.provide(Approvals.layerMemory),
          ),
          scope,
        )
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkDetach(
          Effect.gen(function* () {
            const permission = yield* Permission.Service
            const events = yield* permission.subscribe
            const waiting = yield* Effect.forkChild(permission.assert(ask("deploy", ["prod"])))
            yield* PubSub.take(events)
            yield* Deferred.succeed(started, undefined)
            return yield* Fiber.join(waiting)
          }).pipe(Effect.scoped, Effect.provide(context)),
        )
        yield* Deferred.await(started)
        yield* Scope.close(scope, { _tag: "Success", value: undefined } as never)
        return yield* Fiber.join(fiber).pipe(Effect.flip)
      }),
    )
    expect(outcome).toBeInstanceOf(Permission.Declined)
  })
})

describe("Permission requests marked ask", () => {
  test("a rule that allows does not answer it: it is asked", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        // Without the mark the same resource passes without asking.
        yield* permission.assert(ask("bash", ["eval $X"]))
        const { fiber, request } = yield* pendingAssert(ask("bash", ["eval $X"], { ask: true, save: [] }))
        expect(request).toMatchObject({ action: "bash", resources: ["eval $X"], save: [], ask: true })
        yield* permission.reply(request.id, { reply: "once" })
        yield* Fiber.join(fiber)
      }),
    ))

  test("a rule that denies still denies it, without asking", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const denied = yield* permission.assert(ask("bash", ["rm $X"], { ask: true, save: [] })).pipe(Effect.flip)
        expect(denied).toBeInstanceOf(Permission.Denied)
        expect(yield* permission.pending).toEqual([])
      }),
      configured([sourced("bash", "rm *", "deny")]),
    ))

  test("a saved approval does not answer it", () =>
    run(
      Effect.gen(function* () {
        yield* (yield* Approvals.Service).save(PROJECT, "bash", ["*"])
        const permission = yield* Permission.Service
        yield* permission.assert(ask("bash", ["ls"]))
        const { fiber, request } = yield* pendingAssert(ask("bash", ["eval $X"], { ask: true, save: [] }))
        yield* permission.reply(request.id, { reply: "once" })
        yield* Fiber.join(fiber)
      }),
      configured([sourced("bash", "*", "ask")]),
    ))

  test("always answers it once and saves nothing, even when patterns were given", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const { fiber, request } = yield* pendingAssert(ask("bash", ["eval $X"], { ask: true, save: ["eval *"] }))
        expect(request.save).toEqual([])
        yield* permission.reply(request.id, { reply: "always" })
        yield* Fiber.join(fiber)
        expect(yield* (yield* Approvals.Service).list(PROJECT)).toEqual([])
      }),
    ))

  test("an always for another request does not answer it", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const opaque = yield* pendingAssert(ask("bash", ["eval ls"], { ask: true, save: [] }))
        const plain = yield* pendingAssert(ask("bash", ["eval ls"], { sessionID: "ses_2", save: ["eval *"] }))
        yield* permission.reply(plain.request.id, { reply: "always" })
        yield* Fiber.join(plain.fiber)
        expect((yield* permission.pending).map((entry) => entry.id)).toEqual([opaque.request.id])
        yield* permission.reply(opaque.request.id, { reply: "once" })
        yield* Fiber.join(opaque.fiber)
      }),
      configured([sourced("bash", "*", "ask")]),
    ))
})

describe("Permission.authorize", () => {
  const caller = { sessionID: "ses_1", agent: "build", source: { messageID: "msg_1", callID: "call_1" } }

  test("a deny in a later check refuses the call before an earlier check is asked", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const events = yield* permission.subscribe
        const refused = yield* permission
          .authorize(caller, [
            { action: "external_directory", resources: ["/elsewhere/*"], save: ["/elsewhere/*"] },
            { action: "deploy", resources: ["prod"], save: ["prod"] },
          ])
          .pipe(Effect.flip)
        expect(refused).toBeInstanceOf(Permission.Denied)
        expect(refused).toMatchObject({ action: "deploy", resource: "prod" })
        expect(yield* permission.pending).toEqual([])
        expect(yield* PubSub.takeUpTo(events, 10)).toEqual([])
      }),
      configured([sourced("deploy", "prod", "deny")]),
    ))

  test("with no deny, the checks are asked in order, each answered before the next is asked", () =>
    run(
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const events = yield* permission.subscribe
        const fiber = yield* Effect.forkChild(
          permission.authorize(caller, [
            { action: "first", resources: ["a"], save: ["a"] },
            { action: "second", resources: ["b"], save: ["b"] },
          ]),
        )
        const one = yield* PubSub.take(events)
        expect(one).toMatchObject({ type: "asked", request: { action: "first", resources: ["a"] } })
        expect((yield* permission.pending).map((request) => request.action)).toEqual(["first"])
        yield* permission.reply((one as { request: Permission.Request }).request.id, { reply: "once" })
        yield* PubSub.take(events) // replied
        const two = yield* PubSub.take(events)
        expect(two).toMatchObject({ type: "asked", request: { action: "second", resources: ["b"] } })
        yield* permission.reply((two as { request: Permission.Request }).request.id, { reply: "once" })
        yield* Fiber.join(fiber)
      }),
      configured([sourced("*", "*", "ask")]),
    ))

  test("a store that cannot be read is a defect, never a refusal or an approval", async () => {
    const failing = Layer.succeed(Approvals.Service, {
      list: () => Effect.fail(new StoreError({ reason: "io", path: "/db", message: "disk gone" })),
      save: () => Effect.void,
      reset: () => Effect.succeed(0),
    })
    const exit = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const permission = yield* Permission.Service
          return yield* permission.authorize(caller, [{ action: "deploy", resources: ["prod"], save: ["prod"] }])
        }),
      ).pipe(
        Effect.provide(Permission.layer({ project: PROJECT, configured: configured([sourced("*", "*", "ask")]) }).pipe(Layer.provide(failing))),
        Effect.exit,
      ),
    )
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
  })
})
