export * as Terminal from "./terminal"

// Text core did not write (a model's input, a command's output, a file or tool name, a server's description, an
// error's message) as core shows it on a terminal or in a log line: every character a terminal acts on is escaped
// (`\u001b`), so that no such text can move the cursor, hide or rewrite what a person reads (an ask above all),
// write the clipboard, reorder what is shown, or pass for a line of core's own. One place for every edge: the CLI,
// the sidecar's log lines and its warnings, the MCP faces' notes. Imports nothing: the forwarding path loads it.

/**
 * What a terminal acts on that JSON.stringify leaves as it is: DEL and the C1 controls (U+009B starts a control
 * sequence as ESC [ does), the line and paragraph separators, and every format character (Unicode's Cf: the
 * bidirectional controls, which reorder what is shown, zero-width spaces, the soft hyphen, the byte order mark, the
 * tag characters and the rest); and what is shown as nothing though it is no format character (`ba\u200bsh` shows
 * as bash, and variation selectors can carry text a reader cannot see): the combining grapheme joiner, the Hangul
 * fillers, Khmer's inherent vowels, Mongolian's variation selectors, the braille blank, the variation selectors but
 * the one asking for an emoji's presentation (U+FE0F, in many emoji), and code points set aside to be ignored where
 * not yet assigned (the rest of the tag block, U+2065, U+FFF0-FFF8): a newer terminal may show them as nothing. The
 * zero-width joiner and non-joiner stay: emoji sequences and scripts such as Persian are written with them.
 */
const INVISIBLE =
  "\\p{Cf}\\u034f\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u2065\\u2800\\u3164\\ufe00-\\ufe0e\\uffa0\\ufff0-\\ufff8\\u{e0000}-\\u{e0fff}"
/** What stays of INVISIBLE: the zero-width non-joiner and joiner. */
const KEPT = "[\\u200c\\u200d]"
const UNSAFE = new RegExp(`[[\\u007f-\\u009f\\u2028\\u2029${INVISIBLE}]--${KEPT}]`, "gv")
/** Any of UNSAFE, or a C0 control but tab. */
const ACTED_ON = new RegExp(`[[\\u0000-\\u0008\\u000a-\\u001f\\u007f-\\u009f\\u2028\\u2029${INVISIBLE}]--${KEPT}]`, "v")
/** The C0 controls but tab and line feed. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f]/g
/** Where a line ends, as a terminal or a reader takes it. */
const BREAK = /\r\n|[\r\n\u2028\u2029]/g

/** `character` as JSON escapes: one per UTF-16 unit (a tag character is two), so the text stays JSON. */
const escaped = (character: string) =>
  Array.from({ length: character.length }, (_, index) => `\\u${character.charCodeAt(index).toString(16).padStart(4, "0")}`).join("")

/** `text` as a JSON string, every character a terminal acts on escaped: it shows on one line as it is. */
export const quoted = (text: string): string => JSON.stringify(text).replace(UNSAFE, escaped)

/** JSON text (JSON.stringify's) with what a terminal acts on escaped: the same JSON to a parser, inert on a terminal. */
export const json = (text: string): string => text.replace(UNSAFE, escaped)

/** `value` as indented JSON for stdout (a settlement), inert on a terminal: the same JSON to a parser. */
export const pretty = (value: unknown): string => json(JSON.stringify(value, null, 2))

/**
 * Free text on stderr (an error's message, a stack): every character a terminal acts on escaped but tab and line
 * feed, each line after the first indented, so that what it says cannot pass for a line of core's own.
 */
export const block = (text: string): string => text.replace(CONTROL, escaped).replace(UNSAFE, escaped).replaceAll("\n", "\n  ")

/** The C0 controls but tab, line feed and a carriage return that ends a line before its line feed (CRLF). */
const ACTING_CONTROL = /\r(?!\n)|[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g

/**
 * Text as a person reads it on a terminal (a managed output printed there): every character a terminal acts on
 * escaped but tab, line feed and CRLF, with no indent, so that its lines show as they are and none can move the
 * cursor, rewrite a line, write the clipboard or reorder what is shown. A text cut into pieces is escaped piece by
 * piece the same way as whole, but for a carriage return ending a piece, which its caller holds for the next.
 */
export const text = (text: string): string => text.replace(ACTING_CONTROL, escaped).replace(UNSAFE, escaped)

/** A warning line on stderr (a file that did not load, and why): `core: warning: TEXT`, the text a block. */
export const warning = (text: string): string => `core: warning: ${block(text)}`

/** Free text on one line (a progress update, a description's first line): line breaks as spaces, the rest escaped. */
export const inline = (text: string): string =>
  text.replace(BREAK, " ").replace(CONTROL, escaped).replace(UNSAFE, escaped)

/** Whether `text` shows as it is: nothing in it a terminal acts on, no line break. */
export const inert = (text: string): boolean => !ACTED_ON.test(text)

/** `text` as it is where it is inert, else quoted: a name or a pattern in a listing. */
export const shown = (text: string): string => (inert(text) ? text : quoted(text))

/**
 * Written before an ask's prompt on a terminal: the default rendition (what earlier output may have left on, such
 * as concealed or invisible text), at the start of a cleared line, so the prompt shows as it is, where it is.
 */
export const PROMPT_START = "\r\x1b[0m\x1b[2K"
