// Preloaded by test/cli/startup.test.ts: at exit, writes to the file named by CORE_TEST_LOADED the modules this
// process evaluated (Bun's module cache lists ES modules and CommonJS ones alike).
import { writeFileSync } from "node:fs"

process.on("exit", () => {
  writeFileSync(process.env.CORE_TEST_LOADED!, JSON.stringify(Object.keys(require.cache)))
})
