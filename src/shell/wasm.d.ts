// The WebAssembly files ./command.ts embeds with `import ... with { type: "file" }`: such an import answers the
// file's path (inside the compiled binary, a path Bun.file can read), not a module.
declare module "*.wasm" {
  const path: string
  export default path
}
