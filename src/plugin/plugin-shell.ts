export * as PluginShell from "./plugin-shell"

// The shell producer as a plugin's `Plugin.Shell` capability: the same supervised process groups, capture
// limits, timeouts and OS sandbox (writes in the Location and temp only) that built-in `bash` runs on. Kept
// apart from ./plugins.ts so that the author kit, which installs plugins without a shell, never reaches it.

import { isAbsolute, resolve } from "node:path"
import * as Effect from "effect/Effect"
import type { Capture } from "../shell/capture"
import { Shell } from "../shell/shell"
import { Tool } from "../tool/tool"
import type { Plugin } from "../author/plugin"

const captured = (capture: Capture.Captured): Plugin.Captured => ({
  text: capture.text,
  bytes: capture.seen,
  complete: capture.gap === undefined,
})

/** Core's environment less its secrets: what the plugin runs may be code the model wrote. */
const environment = (): Record<string, string | undefined> => Shell.withoutSecrets(process.env)

/** `shell` as the capability a plugin of the Location at `directory` runs processes with. */
export const capability = (shell: Shell.Interface, directory: string): (typeof Plugin.Shell)["Service"] => ({
  run: (request) =>
    shell
      .run({
        argv: request.argv,
        cwd: request.cwd === undefined ? directory : isAbsolute(request.cwd) ? request.cwd : resolve(directory, request.cwd),
        env: environment(),
        sandbox: { location: directory, approved: [] },
        ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
        ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }),
      })
      .pipe(
        Effect.map(
          (result): Plugin.Ran => ({
            exitCode: result.exitCode,
            signal: result.signal,
            timedOut: result.timedOut !== undefined,
            stdout: captured(result.stdout),
            stderr: captured(result.stderr),
          }),
        ),
        Effect.mapError((error) => new Tool.Failure({ message: error.message })),
      ),
})
