/**
 * A paged list of one resource, newest first, with the API's page tokens kept in the address
 * (`pages`: the tokens of the pages before this one), so Back and a reload keep the page.
 */
import { call, query } from '../api';
import { h, replace } from '../dom';
import { errorBox, link } from './elements';
import { frame } from './frame';
import { type Column, listTable } from './table';

export async function pagedList<T>(options: {
  active: string;
  title: string;
  path: string;
  key: string;
  params: URLSearchParams;
  base: string;
  columns: Column<T>[];
  extra?: Record<string, string>;
  filters?: HTMLElement;
  id: string;
}): Promise<void> {
  const tokens = (options.params.get('pages') ?? '').split(',').filter(Boolean);
  const body = h('div', null, h('p', { class: 'note' }, 'Loading…'));
  await frame(options.active, h('div', null, h('h1', null, options.title), options.filters ?? null, body));
  try {
    const page = await call<Record<string, unknown> & { next_page_token: string | null }>(
      'GET',
      `${options.path}${query({ ...options.extra, page_size: 20, page_token: tokens[tokens.length - 1] })}`,
    );
    const rows = (page[options.key] ?? []) as T[];
    const pageLink = (pages: string[]) => {
      const next = new URLSearchParams(options.params);
      if (pages.length) next.set('pages', pages.join(','));
      else next.delete('pages');
      const text = next.toString();
      return `${options.base}${text ? `?${text}` : ''}`;
    };
    replace(
      body,
      rows.length === 0
        ? h('p', { class: 'note' }, 'Nothing here.')
        : listTable(rows, options.columns, { id: options.id }),
      h(
        'div',
        { class: 'pager' },
        tokens.length > 0 ? link(pageLink(tokens.slice(0, -1)), '← Newer') : null,
        page.next_page_token ? link(pageLink([...tokens, page.next_page_token]), 'Older →') : null,
      ),
    );
  } catch (error) {
    replace(body, errorBox(error));
  }
}
