// `@core/client`: a typed client of core's HTTP sidecar for agent hosts. The AI SDK adapter is `@core/client/ai`.

export { Core, DEFAULT_RETRIES } from "./client.js"
export { CoreError } from "./error.js"
export { DEFAULT_MAX_LINE_LENGTH, LineTooLong } from "./sse.js"
export type { CallOptions, CallRequest, ConnectOptions, EventStream, MaterializeOptions, OutputRange, OutputRead, SpawnOptions } from "./client.js"
export { Session } from "./session.js"
export type { SessionCall, SessionOptions } from "./session.js"
export type {
  CallEvent,
  Check,
  Definition,
  ErrorKind,
  HostCall,
  HostCallResult,
  HostToolDefinition,
  HostToolsRequest,
  Part,
  PermissionRequest,
  Progress,
  RecordedCall,
  Reply,
  ServerEvent,
  Settlement,
  Todo,
  Todos,
  Turn,
  Verdict,
} from "./types.js"
