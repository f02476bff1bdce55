export * as ToolName from "./tool-name"

// The registration name grammar (DESIGN §2 law 4). Provider-specific limits are checked elsewhere, when
// definitions are prepared for a provider.

export const PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/

export const isValid = (name: string): boolean => PATTERN.test(name)

/** Why a name is invalid, in words a tool author can act on; undefined when it is valid. */
export const problem = (name: string): string | undefined => {
  if (isValid(name)) return undefined
  if (name.length === 0) return "a name cannot be empty"
  if (name.length > 64) return `"${name.slice(0, 20)}…" is ${name.length} characters long; the limit is 64`
  if (!/^[A-Za-z]/.test(name)) return `"${name}" must start with a letter`
  return `"${name}" may contain only letters, digits, "_" and "-"`
}
