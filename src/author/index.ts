// `@core/tool`: what tool authors import. A curated surface, named export by export; nothing internal leaks.

export { Tool } from "../tool/tool"
export { Plugin } from "./plugin"
