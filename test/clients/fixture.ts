// What the client tests share: a project Location for a host's loop (a text file to list, read and edit, sources to
// grep and glob, a PNG, a rule that makes bash ask), and the compiled binary they drive through the clients.

import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { sandbox, type Sandbox } from "../cli/fixture"

/** A 1×1 PNG. */
export const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

/** The project a host's loop works in; bash asks, everything else is allowed. */
export const project = (extra: Record<string, string> = {}): Sandbox => {
  const box = sandbox({
    "core.json": '{ "permission": { "bash": { "*": "ask" } } }',
    "notes.txt": "alpha\nbeta\ngamma\n",
    "src/app.ts": "export const greet = (name: string) => `hello ${name}`\n",
    "src/util.ts": "export const twice = (n: number) => n * 2 // hello again\n",
    ...extra,
  })
  writeFileSync(join(box.location, "pixel.png"), Buffer.from(PNG_BASE64, "base64"))
  return box
}
