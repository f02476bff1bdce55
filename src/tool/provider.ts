export * as Provider from "./provider"

// Model providers' own limits on tool definitions (DESIGN §2 law 4): registration accepts every name of core's
// grammar, and definitions are checked against a provider's rules only when prepared for that provider, with an
// explicit model-compatibility error naming each offending tool.

import * as Schema from "effect/Schema"
import type { Definition } from "./definition"

export interface Profile {
  readonly name: string
  readonly namePattern: RegExp
  /** The rule in words, for the error. */
  readonly nameRule: string
}

const WORDS_AND_DASHES = /^[A-Za-z0-9_-]{1,64}$/

/** Profiles of providers whose rules are published. */
export const PROFILES = {
  anthropic: { name: "anthropic", namePattern: WORDS_AND_DASHES, nameRule: 'letters, digits, "_" and "-", at most 64' },
  openai: { name: "openai", namePattern: WORDS_AND_DASHES, nameRule: 'letters, digits, "_" and "-", at most 64' },
  cohere: {
    name: "cohere",
    namePattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    nameRule: 'letters, digits and "_", not starting with a digit',
  },
} as const satisfies Record<string, Profile>

export class CompatibilityError extends Schema.TaggedError<CompatibilityError>()("Provider.CompatibilityError", {
  provider: Schema.String,
  names: Schema.Array(Schema.String),
  message: Schema.String,
}) {}

/** The definitions, unchanged, when every one suits `profile`; otherwise the error naming those that do not. */
export const prepare = (
  definitions: ReadonlyArray<Definition.Definition>,
  profile: Profile,
): ReadonlyArray<Definition.Definition> | CompatibilityError => {
  const names = definitions.map((definition) => definition.name).filter((name) => !profile.namePattern.test(name))
  if (names.length === 0) return definitions
  return new CompatibilityError({
    provider: profile.name,
    names,
    message:
      `${names.map((name) => JSON.stringify(name)).join(", ")} cannot be offered to ${profile.name} models: tool ` +
      `names there may contain only ${profile.nameRule}. Register ${names.length === 1 ? "it" : "them"} under another name.`,
  })
}
