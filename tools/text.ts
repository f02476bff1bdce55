// Named exports: each exported tool `x` of tools/text.ts is registered as `text_x`.
import { Tool } from "@core/tool"
import { Effect, Schema } from "effect"

const words = (text: string) =>
  text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word.length > 0)
    .map((word) => word.toLowerCase())

/** text_slug */
export const slug = Tool.make({
  description: "Turn a title into a URL slug: lowercase ASCII words joined by '-' (accents removed).",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: (input) => Effect.succeed(words(input.text).join("-")),
})

/** text_identifier */
export const identifier = Tool.make({
  description: "Rewrite a phrase or identifier in another naming convention: camel, pascal, snake, kebab or constant.",
  input: Schema.Struct({
    text: Schema.String,
    style: Schema.Literals(["camel", "pascal", "snake", "kebab", "constant"]),
  }),
  output: Schema.String,
  execute: (input) =>
    Effect.sync(() => {
      const parts = words(input.text)
      const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)
      switch (input.style) {
        case "camel":
          return parts.map((word, index) => (index === 0 ? word : capital(word))).join("")
        case "pascal":
          return parts.map(capital).join("")
        case "snake":
          return parts.join("_")
        case "kebab":
          return parts.join("-")
        case "constant":
          return parts.join("_").toUpperCase()
      }
    }),
})
