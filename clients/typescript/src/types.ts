// The wire shapes of core's HTTP sidecar (docs/serve.md), as the client hands them to a host. Written out here so
// the package needs nothing at run time; a test checks them against the schemas the server decodes and encodes with.

/** A model-facing part of a settlement: text, or a file (an image) as a `data:` URI. */
export type Part =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "file"; readonly mime: string; readonly uri: string; readonly name?: string }

export type ErrorKind = "failure" | "unknown" | "invalid_input" | "invalid_output" | "stale" | "denied" | "interrupted" | "conflict"

/** The outcome of one call (DESIGN §5). `success` and `error` go to the model; `declined` and `cancelled` are runner outcomes. */
export interface Settlement {
  readonly tool: string
  readonly callID: string
  readonly status: "success" | "error" | "declined" | "cancelled"
  readonly content: ReadonlyArray<Part>
  readonly structured: unknown
  readonly error?: { readonly kind: ErrorKind; readonly message: string }
  readonly outputs: ReadonlyArray<{ readonly id: string; readonly bytes: number }>
  /** Through a turn prepared for a provider: the settlement as that provider's tool-result block. */
  readonly result?: unknown
}

/** A recorded call as `GET /v1/settlements` (and `core log --json`) lists it. */
export interface RecordedCall {
  readonly sessionID: string
  readonly toolCallID: string
  readonly tool: string
  /** A settlement's status; or running, interrupted (begun by a core that stopped), failed (core failed operationally). */
  readonly status: "success" | "error" | "declined" | "cancelled" | "running" | "interrupted" | "failed"
  readonly error?: { readonly kind: ErrorKind; readonly message: string }
  /** With failed: what failed. */
  readonly reason?: string
  readonly agent: string | null
  readonly location: string
  /** The assistant message (the model's turn) that made the call. */
  readonly messageID: string | null
  /** The input; when over 8 KiB of JSON, the first 8 KiB of that JSON as a string (inputTruncated). */
  readonly input: unknown
  readonly inputTruncated: boolean
  readonly inputBytes: number | null
  /** ISO 8601. */
  readonly startedAt: string | null
  readonly settledAt: string | null
  readonly durationMs: number | null
  readonly outputs: ReadonlyArray<{ readonly id: string; readonly bytes: number }>
}

/** A tool as a turn advertises it, in core's own shape. */
export interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, unknown>>
  readonly outputSchema: Readonly<Record<string, unknown>>
  /** What the tool declares of itself, for a host deciding which calls may run without asking. */
  readonly annotations?: {
    readonly readOnly?: boolean
    readonly destructive?: boolean
    readonly idempotent?: boolean
    readonly openWorld?: boolean
  }
  readonly [extra: string]: unknown
}

/** A materialized catalog: settle the model's calls through its `turnID`. */
export interface Turn {
  readonly turnID: string
  readonly definitions: ReadonlyArray<Definition>
  /** The provider mapping the turn was prepared for, if any (docs/providers.md). */
  readonly provider?: string
  /** With a provider: one tool per definition, in the same order, in that provider's shape. */
  readonly tools?: ReadonlyArray<unknown>
  /** Present once the Location (or the application's tools) reported a load problem since the serve started. */
  readonly warnings?: true
}

export interface PermissionRequest {
  readonly id: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly action: string
  readonly resources: ReadonlyArray<string>
  /** The patterns an `always` reply saves. */
  readonly save: ReadonlyArray<string>
  /** Present when the ask would change core's own configuration (what it is): only a person may approve it. */
  readonly protected?: string
}

/**
 * How to answer an ask: `reject` with a message fails the call with it; without one, the call is declined; with
 * `unattended`, the model is told nobody could be asked (and `why`).
 */
export type Reply =
  | "once"
  | "always"
  | "reject"
  | { readonly reply: "reject"; readonly message: string }
  | { readonly reply: "reject"; readonly unattended: true; readonly why?: string }

export interface Progress {
  readonly message: string
  readonly metadata?: Readonly<Record<string, unknown>>
}

export type Verdict = "allow" | "deny" | "ask"

/** What `POST /v1/turns/{turnID}/check` answers: the permission decision of a call, found without running it. */
export interface Check {
  readonly tool: string
  readonly agent: string
  readonly decision: Verdict
  readonly checks: ReadonlyArray<{
    readonly action: string
    readonly decision: Verdict
    readonly alwaysAsked?: true
    readonly protected?: string
    readonly resources: ReadonlyArray<{
      readonly resource: string
      readonly decision: Verdict
      readonly rule: {
        readonly action: string
        readonly resource: string
        readonly effect: Verdict
        readonly file: string
        readonly path: string
      } | null
      readonly approvedBy?: string
    }>
    readonly alwaysSaves?: ReadonlyArray<string>
  }>
  /** The plugins whose hooks the call meets after the permission checks, in installation order; absent when none. */
  readonly hooks?: ReadonlyArray<{
    readonly plugin: string
    readonly hooks: ReadonlyArray<"tool.definition" | "tool.execute.before" | "tool.execute.after">
  }>
}

/** A tool the host performs itself (`POST /v1/host-tools`). */
export interface HostToolDefinition {
  readonly name: string
  readonly description: string
  /** JSON Schema of the input; its root is an object. */
  readonly inputSchema: Readonly<Record<string, unknown>>
  /** JSON Schema the host's output is checked against. */
  readonly outputSchema?: Readonly<Record<string, unknown>>
  /** How long a call waits for the host's answer (default 10 minutes). */
  readonly timeoutMs?: number
  readonly annotations?: {
    readonly readOnly?: boolean
    readonly destructive?: boolean
    readonly idempotent?: boolean
    readonly openWorld?: boolean
  }
}

/** What `POST /v1/host-tools` takes: shipped tools by name (`question`, `task`), the host's own definitions, or both. */
export interface HostToolsRequest {
  readonly enable?: ReadonlyArray<string>
  readonly tools?: ReadonlyArray<HostToolDefinition>
}

/** A call of a host tool waiting for the host's answer. */
export interface HostCall {
  readonly id: string
  readonly sessionID: string
  readonly toolCallID: string
  readonly name: string
  readonly input: unknown
  /** When the call stops waiting (ms since the epoch). */
  readonly deadline: number
}

/** The host's answer to a delegated call: its output, or a failure the model reads. */
export type HostCallResult = { readonly output: unknown } | { readonly error: { readonly message: string } }

/** One item of a session's todo list. */
export interface Todo {
  readonly content: string
  readonly status: "pending" | "in_progress" | "completed" | "cancelled"
  readonly priority: "high" | "medium" | "low"
}

/** A session's todo list (`GET /v1/sessions/{id}/todos`, and the `todo.updated` event). */
export interface Todos {
  readonly sessionID: string
  readonly todos: ReadonlyArray<Todo>
}

interface CallKey {
  readonly sessionID: string
  readonly toolCallID: string
}

/** What `GET /v1/events` streams. */
export type ServerEvent =
  | { readonly event: "call.started"; readonly data: CallKey & { readonly tool: string; readonly turnID: string } }
  | { readonly event: "call.progress"; readonly data: CallKey & Progress }
  | { readonly event: "call.settled"; readonly data: CallKey & { readonly replayed: boolean; readonly settlement: Settlement } }
  | { readonly event: "call.failed"; readonly data: CallKey & { readonly tool: string; readonly message: string } }
  | { readonly event: "permission.asked"; readonly data: PermissionRequest }
  | { readonly event: "permission.replied"; readonly data: { readonly id: string; readonly sessionID: string; readonly reply: "once" | "always" | "reject" } }
  | { readonly event: "host_call"; readonly data: HostCall }
  | { readonly event: "tools.changed"; readonly data: { readonly reason: "tools" | "config"; readonly files: ReadonlyArray<string> } }
  | { readonly event: "todo.updated"; readonly data: Todos }
  | { readonly event: "diagnostic"; readonly data: { readonly file: string; readonly message: string } }

/** What the stream of one call sends. */
export type CallEvent =
  | { readonly event: "progress"; readonly data: Progress }
  | { readonly event: "permission"; readonly data: PermissionRequest }
  | { readonly event: "host_call"; readonly data: HostCall }
  | { readonly event: "settlement"; readonly data: Settlement }
  | { readonly event: "error"; readonly data: { readonly error: { readonly kind: string; readonly message: string } } }
