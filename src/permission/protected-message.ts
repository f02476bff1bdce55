export * as ProtectedMessage from "./protected-message"

// What the model is told when a change to core's own configuration (see ./protected) cannot be asked of a person.
// Apart from ./protected so that an answerer loads the words without the checks.

/** What a person is told when a protected change cannot be asked: nobody is there to approve it. */
export const personRequired = (what: string, resources: ReadonlyArray<string>): string =>
  `Refused: ${resources.map((resource) => JSON.stringify(resource)).join(", ")} would change ${what}. Core's own ` +
  "configuration changes only with a person's approval, asked each time; no rule, saved approval or --yes can " +
  "give it, and there is no person here to ask. A person must make that change (or run the call where core can " +
  "ask them). Do not retry it as it is."
