// The part of @mixmark-io/domino's DOM that webfetch uses (the package types only the module "domino", and the
// project's lib has no DOM types).

declare module "@mixmark-io/domino" {
  export interface DomNode {
    readonly nodeType: number
    readonly nodeValue: string | null
    readonly localName: string
    readonly childNodes: ArrayLike<DomNode>
    getAttribute(name: string): string | null
    setAttribute(name: string, value: string): void
    querySelectorAll(selector: string): ArrayLike<DomNode>
    remove(): void
  }
  export interface DomDocument extends DomNode {
    readonly title: string
    readonly body: DomNode | null
    readonly documentElement: DomNode
  }
  const domino: { createDocument(html?: string, force?: boolean): DomDocument }
  export default domino
}
