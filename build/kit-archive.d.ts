// The author kit archive that build/kit.ts writes to dist/kit.json.zst and src/cli/init.ts embeds with
// `import(..., { with: { type: "file" } })`. It does not exist in a fresh clone until the build runs, so the
// typecheck (which runs first) learns its type here: a file import answers the file's path.
declare module "*/kit.json.zst" {
  const path: string
  export default path
}
