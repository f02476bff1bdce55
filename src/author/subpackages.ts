// The Effect sub-packages served to tool files besides every top-level module: an HTTP client, process
// spawning, encodings and schema helpers. The rest (cluster, sql, ai, ...) would weigh on every start-up.
export const SUBPACKAGES = ["encoding", "http", "process", "schema"] as const
