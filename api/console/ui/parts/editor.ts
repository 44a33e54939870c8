/**
 * The code editor (CodeMirror 6): syntax highlighting for JavaScript, TypeScript and Python,
 * line numbers, undo, search, bracket matching.
 */
import { javascript } from '@codemirror/lang-javascript';
import { python } from '@codemirror/lang-python';
import { EditorState } from '@codemirror/state';
import { basicSetup, EditorView } from 'codemirror';

export interface CodeEditor {
  readonly element: HTMLElement;
  text(): string;
  /** Called after each change of the text. */
  onChange(listener: () => void): void;
}

export function codeEditor(options: {
  text: string;
  runtime: string;
  readOnly: boolean;
  label: string;
  id?: string;
}): CodeEditor {
  // The editor lives in a shadow root: CodeMirror then styles it with constructed style sheets
  // (adoptedStyleSheets) instead of <style> elements, which the console's CSP refuses.
  const element = document.createElement('div');
  element.className = 'editor';
  if (options.id) element.id = options.id;
  const root = element.attachShadow({ mode: 'open' });
  const listeners: Array<() => void> = [];
  const language =
    options.runtime === 'python3.11'
      ? python()
      : javascript({ typescript: options.runtime === 'typescript' });
  const view = new EditorView({
    root,
    parent: root,
    state: EditorState.create({
      doc: options.text,
      extensions: [
        basicSetup,
        language,
        EditorView.theme({
          '&': { maxHeight: '480px', fontSize: '13px', backgroundColor: '#ffffff' },
          '.cm-scroller': { fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace" },
        }),
        EditorState.readOnly.of(options.readOnly),
        EditorView.editable.of(!options.readOnly),
        // Reached with the keyboard, read-only code too (to scroll and select it).
        EditorView.contentAttributes.of({
          'aria-label': options.label,
          tabindex: '0',
          ...(options.readOnly ? { 'aria-readonly': 'true' } : {}),
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) for (const listener of listeners) listener();
        }),
      ],
    }),
  });
  return {
    element,
    text: () => view.state.doc.toString(),
    onChange: (listener) => listeners.push(listener),
  };
}
