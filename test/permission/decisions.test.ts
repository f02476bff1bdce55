import { describe, expect, test } from "bun:test"
import { Effect, Exit, Fiber, Layer, PubSub, Scope } from "effect"
import { Agent } from "../../src/permission/agent"
import { Permission } from "../../src/permission/permission"
import { Approvals } from "../../src/store/approvals"
import { deniedText } from "../../src/tool/refusal"
import * as Reference from "./reference"

// Every way a call is authorized (authorize, assert, refuseDenied) and explained (decide) answers generated hostile
// checks as the reference says the rules, the saved approvals and the order of checks decide them: the last matching
// rule, a saved approval answering only an ask, a check marked ask or protected never allowed, the first deny refusing
// the whole call before anything is asked, and otherwise the first check left to ask asked.

const PROJECT = "/work/project"
const AGENTS = ["build", "plan", "review", "ghost", "", "BUILD", "build ", "__proto__", "constructor", "hasOwnProperty"]

type Check = Permission.Check

interface Approval {
  readonly action: string
  readonly pattern: string
}

/** What a call's checks end in. */
type Outcome =
  | { readonly allowed: true }
  | { readonly denied: { readonly action: string; readonly resource: string; readonly message: string } }
  | { readonly asked: { readonly action: string; readonly resources: ReadonlyArray<string> } }

const sourced = (rule: { action: string; resource: string; effect: Agent.SourcedRule["effect"] }, path: string): Agent.SourcedRule => ({
  ...rule,
  source: { file: "/work/project/core.json", path },
})

/** The reference's decision of each resource of each check. */
const expectedDecisions = (configured: Agent.Configured, approvals: ReadonlyArray<Approval>, agent: string, checks: ReadonlyArray<Check>) => {
  const rules = Agent.rules(configured, agent)
  return checks.map((check) =>
    (check.resources.length === 0 ? ["*"] : check.resources).map((resource) => {
      const rule = Reference.find(rules, check.action, resource)
      let effect = rule?.effect ?? "ask"
      const approval =
        effect === "ask"
          ? approvals.find((entry) => entry.action === check.action && Reference.matches(entry.pattern, resource))
          : undefined
      if (approval !== undefined) effect = "allow"
      const always = check.ask === true || check.protected !== undefined
      if (always && effect === "allow") return { resource, effect: "ask" as const, rule, approvedBy: undefined }
      return { resource, effect, rule, approvedBy: approval?.pattern }
    }),
  )
}

const expectedOutcome = (
  configured: Agent.Configured,
  approvals: ReadonlyArray<Approval>,
  agent: string,
  checks: ReadonlyArray<Check>,
): Outcome => {
  const decided = expectedDecisions(configured, approvals, agent, checks)
  for (const [index, decisions] of decided.entries()) {
    const denied = decisions.find((decision) => decision.effect === "deny")
    const action = checks[index]!.action
    if (denied !== undefined) {
      return { denied: { action, resource: denied.resource, message: deniedText({ action, resource: denied.resource, agent, rule: denied.rule }) } }
    }
  }
  for (const [index, decisions] of decided.entries()) {
    const asked = decisions.filter((decision) => decision.effect === "ask").map((decision) => decision.resource)
    if (asked.length > 0) return { asked: { action: checks[index]!.action, resources: asked } }
  }
  return { allowed: true }
}

/**
 * What `effect` ends in: it is run until it ends or asks; an ask is declined, and the call must then end declined.
 * Neither waits on time: the ask is the event the permission service publishes.
 */
const outcomeOf = (permission: Permission.Interface, effect: Effect.Effect<unknown, Permission.Refusal>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const events = yield* permission.subscribe
      const fiber = yield* Effect.forkChild(effect)
      const first = yield* Effect.raceFirst(
        Effect.map(Fiber.await(fiber), (exit) => ({ exit }) as const),
        Effect.map(PubSub.take(events), (event) => ({ event }) as const),
      )
      if ("event" in first) {
        if (first.event.type !== "asked") throw new Error(`expected an ask, got ${first.event.type}`)
        const { request } = first.event
        yield* permission.reply(request.id, { reply: "reject" })
        const exit = yield* Fiber.await(fiber)
        expect(Exit.isFailure(exit) && Exit.findErrorOption(exit)).toMatchObject({ value: { _tag: "Permission.Declined" } })
        return { asked: { action: request.action, resources: request.resources } } satisfies Outcome
      }
      const { exit } = first
      if (Exit.isSuccess(exit)) return { allowed: true } satisfies Outcome
      const error = Exit.findErrorOption(exit)
      if (error._tag === "Some" && error.value instanceof Permission.Denied) {
        const { action, resource, message } = error.value
        return { denied: { action, resource, message } } satisfies Outcome
      }
      throw new Error(`unexpected end: ${String(exit)}`)
    }),
  )

const hostileCheck = (rng: Reference.Random, rules: ReadonlyArray<Agent.SourcedRule>): Check => {
  const count = rng.pick([0, 1, 1, 1, 2, 3])
  const resources = Array.from({ length: count }, () => (rng.next() < 0.1 ? "*" : Reference.resource(rng, rules)))
  const flag = rng.next()
  return {
    action: Reference.action(rng, rules),
    resources,
    save: resources,
    ...(flag < 0.08 ? { ask: true as const } : flag < 0.14 ? { protected: "core.json" } : {}),
  }
}

const run = <A, E>(configured: Agent.Configured, program: Effect.Effect<A, E, Permission.Service | Approvals.Service | Scope.Scope>) =>
  Effect.runPromise(
    Effect.scoped(program).pipe(
      Effect.provide(Permission.layer({ project: PROJECT, configured }).pipe(Layer.provideMerge(Approvals.layerMemory))),
    ) as Effect.Effect<A, E>,
  )

describe("Permission decisions against the reference", () => {
  test("authorize, assert, refuseDenied and decide answer generated hostile checks as the reference does", async () => {
    const rng = Reference.random(0xc0de)
    const seen = { allowed: 0, denied: 0, asked: 0 }
    for (let setup = 0; setup < 12; setup++) {
      const top = Reference.rules(rng, rng.int(12)).map((rule, index) => sourced(rule, `permission[${index}]`))
      const review = Reference.rules(rng, rng.int(6)).map((rule, index) => sourced(rule, `agents.review.permission[${index}]`))
      const configured: Agent.Configured = { rules: top, agents: new Map([["review", { rules: review }]]) }
      const all = [...top, ...review]
      const approvals: Array<Approval> = Array.from({ length: rng.int(4) }, () => {
        const rule = all.length > 0 ? rng.pick(all) : { action: "bash", resource: "git *" }
        return { action: Reference.action(rng, all), pattern: rng.next() < 0.5 ? rule.resource : Reference.instance(rng, rule.resource) }
      })
      await run(
        configured,
        Effect.gen(function* () {
          const permission = yield* Permission.Service
          const store = yield* Approvals.Service
          for (const { action, pattern } of approvals) yield* store.save(PROJECT, action, [pattern])
          for (let index = 0; index < 40; index++) {
            const agent = rng.pick(AGENTS)
            const checks = Array.from({ length: 1 + rng.int(3) }, () => hostileCheck(rng, all))
            const caller = { sessionID: `ses_${index}`, agent, source: { messageID: "msg", callID: `call_${index}` } }
            const expected = expectedOutcome(configured, approvals, agent, checks)
            const expectedFirst = expectedOutcome(configured, approvals, agent, checks.slice(0, 1))
            const context = { agent, checks }
            expect({ ...context, outcome: yield* outcomeOf(permission, permission.authorize(caller, checks)) }).toEqual({ ...context, outcome: expected })
            expect({ ...context, outcome: yield* outcomeOf(permission, permission.assert({ ...caller, ...checks[0]! })) }).toEqual({
              ...context,
              outcome: expectedFirst,
            })
            // refuseDenied asks nothing: it refuses as authorize would, else answers whether everything is allowed.
            const refused = yield* permission.refuseDenied(agent, checks).pipe(
              Effect.catchTag("Permission.Denied", ({ action, resource, message }) => Effect.succeed({ denied: { action, resource, message } })),
            )
            expect({ ...context, refused }).toEqual({ ...context, refused: "denied" in expected ? expected : "allowed" in expected })
            const decided = yield* permission.decide(agent, checks)
            expect({ ...context, decided: decided.map((entry) => entry.decisions) }).toEqual({
              ...context,
              decided: expectedDecisions(configured, approvals, agent, checks),
            })
            seen["allowed" in expected ? "allowed" : "denied" in expected ? "denied" : "asked"]++
          }
          expect(yield* permission.pending).toEqual([])
        }),
      )
    }
    // The cases reach every outcome, each many times.
    expect(seen.allowed).toBeGreaterThan(40)
    expect(seen.denied).toBeGreaterThan(40)
    expect(seen.asked).toBeGreaterThan(40)
  })

  test("an unknown agent, whatever its name, may do nothing, and is offered no rules of a known one", () =>
    run(
      { rules: [sourced({ action: "*", resource: "*", effect: "allow" }, "permission")], agents: new Map() },
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        for (const agent of ["ghost", "", "BUILD", "build ", "__proto__", "constructor", "toString", "hasOwnProperty"]) {
          const caller = { sessionID: "ses", agent, source: { messageID: "msg", callID: "call" } }
          const denied = yield* permission.authorize(caller, [{ action: "read", resources: ["a"], save: ["a"] }]).pipe(Effect.flip)
          expect(denied).toMatchObject({ _tag: "Permission.Denied", action: "read", resource: "a" })
          expect(permission.rules(agent)).toEqual(Agent.DENY_ALL)
        }
        expect(permission.rules("build")).toEqual(Agent.rules({ rules: [sourced({ action: "*", resource: "*", effect: "allow" }, "permission")], agents: new Map() }, "build"))
      }),
    ))

  test("the saved approvals are read only for a resource the rules leave to ask, even beside a deny", async () => {
    let reads = 0
    const counting = Layer.succeed(Approvals.Service, {
      list: () => Effect.sync(() => (reads++, [])),
      save: () => Effect.void,
      reset: () => Effect.succeed(0),
    })
    const configured: Agent.Configured = {
      rules: [
        sourced({ action: "deploy", resource: "*", effect: "ask" }, "permission.deploy"),
        sourced({ action: "deploy", resource: "prod", effect: "deny" }, "permission.deploy"),
      ],
      agents: new Map(),
    }
    const caller = { sessionID: "ses", agent: "build", source: { messageID: "msg", callID: "call" } }
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const permission = yield* Permission.Service
          yield* permission.authorize(caller, [{ action: "read", resources: ["a", "b"], save: [] }])
          yield* permission.assert({ ...caller, action: "read", resources: [], save: [] })
          expect(yield* permission.refuseDenied("build", [{ action: "read", resources: ["a"], save: [] }])).toBe(true)
          const denied = yield* permission
            .authorize(caller, [
              { action: "read", resources: ["a"], save: [] },
              { action: "deploy", resources: ["prod"], save: [] },
            ])
            .pipe(Effect.flip)
          expect(denied).toMatchObject({ _tag: "Permission.Denied", action: "deploy", resource: "prod" })
          expect(reads).toBe(0)
          // "staging" is left to ask by the rules: its check reads the approvals before the deny refuses the call.
          const refused = yield* permission
            .authorize(caller, [{ action: "deploy", resources: ["staging", "prod"], save: [] }])
            .pipe(Effect.flip)
          expect(refused).toMatchObject({ _tag: "Permission.Denied", action: "deploy", resource: "prod" })
          expect(reads).toBe(1)
          expect(yield* permission.pending).toEqual([])
        }),
      ).pipe(Effect.provide(Permission.layer({ project: PROJECT, configured }).pipe(Layer.provide(counting)))),
    )
  })

  test("an assert made once decides each time it runs: an approval saved meanwhile answers it", () =>
    run(
      { rules: [sourced({ action: "deploy", resource: "*", effect: "ask" }, "permission.deploy")], agents: new Map() },
      Effect.gen(function* () {
        const permission = yield* Permission.Service
        const assert = permission.assert({
          sessionID: "ses",
          agent: "build",
          source: { messageID: "msg", callID: "call" },
          action: "deploy",
          resources: ["prod"],
          save: ["prod"],
        })
        const events = yield* permission.subscribe
        const first = yield* Effect.forkChild(assert)
        const asked = yield* PubSub.take(events)
        if (asked.type !== "asked") throw new Error("expected an ask")
        yield* permission.reply(asked.request.id, { reply: "always" })
        yield* Fiber.join(first)
        yield* PubSub.take(events) // replied
        yield* assert
        expect(yield* PubSub.takeUpTo(events, 10)).toEqual([])
      }),
    ))
})
