// A tool with a plain string output: the model gets the digest as one text part.
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

export default Tool.make({
  description:
    "Compute a cryptographic digest of a text and return it as lowercase hex. Use it to compare contents or to " +
    "fingerprint a value; it does not read files (pass the text itself).",
  input: Schema.Struct({
    text: Schema.String.annotate({ description: "The text to hash, as UTF-8" }),
    algorithm: Schema.optionalKey(
      Schema.Literals(["sha256", "sha512", "sha1", "md5"]).annotate({ description: "Digest algorithm (default sha256)" }),
    ),
  }),
  output: Schema.String,
  execute: (input) =>
    Effect.sync(() => new Bun.CryptoHasher(input.algorithm ?? "sha256").update(input.text).digest("hex")),
})
