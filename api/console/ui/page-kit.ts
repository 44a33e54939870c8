/**
 * What main.ts lends the pages loaded on demand (Secrets, Integrations): the frame, the workspace
 * chosen at the top right, navigation, and the small parts every page is built from. Passed in
 * rather than imported: a part that a page loaded on demand imported would leave the entry script
 * for a shared chunk, one more file on the first load.
 */
import type { Child, Props } from './dom';
import type { Column } from './parts/table';

export interface PageKit {
  /** The header, the navigation (`active` is the section's name) and the page's content. */
  frame(active: string, content: HTMLElement): Promise<void>;
  /** The workspace chosen at the top right, at the time of the call. */
  workspace(): string;
  go(hash: string): void;
  field(label: string, input: HTMLElement, hint?: HTMLElement | null): HTMLElement;
  section(title: string, ...children: Child[]): HTMLElement;
  listTable<T>(
    rows: T[],
    columns: Column<T>[],
    options?: { id?: string; row?: (item: T) => Props },
  ): HTMLTableElement;
  errorBox(error: unknown): HTMLElement;
}
