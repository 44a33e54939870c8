import fc from 'fast-check';
import { InvalidInput } from '../../engine/platform/errors';
import {
  FILTER_OPERATORS,
  type ListOptions,
  type ListQuery,
  type ListRequest,
  parseListQuery,
  PROJECTION_MAX,
} from '../../engine/store/list-query';
import {
  decodeKeysetToken,
  decodePageToken,
  encodeKeysetToken,
  encodePageToken,
  PAGE_SIZE_MAX,
} from '../../engine/store/page-token';
import { parsePeriod } from '../../engine/store/period';

const ID = 'port_' + 'a'.repeat(25);
const dated: ListOptions = { isId: (v) => /^port_[A-Za-z0-9]{25}$/.test(v), hasDate: true };
const dateless: ListOptions = { isId: (v) => /^[A-Z]{2,10}$/.test(v), hasDate: false };

const parse = (request: ListRequest, options: ListOptions = dated) => parseListQuery(request, options);
const json = (query: object, extra: ListRequest = {}) => parse({ query: JSON.stringify(query), ...extra });

/** Runs `fn`, expecting an InvalidInput (a 400) whose message matches. */
function invalid(fn: () => unknown, message: string | RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidInput);
  const text = (thrown as Error).message;
  if (typeof message === 'string') expect(text).toBe(message);
  else expect(text).toMatch(message);
}

const EMPTY: ListQuery = {
  id: null,
  tags: [],
  linkUid: null,
  namePrefix: null,
  filters: [],
  order: [],
  projection: null,
  distinctOn: [],
  pageSize: 10,
  period: null,
  json: false,
};

describe('parseListQuery: query modes', () => {
  test('no query: every default', () => {
    expect(parse({})).toEqual(EMPTY);
    expect(parse({ query: '', page_size: '', start: '', period_field: '' })).toEqual(EMPTY);
    expect(parse({ query: null, page_size: null, page_token: null })).toEqual(EMPTY);
  });

  test('an entity id → that one entity', () => {
    expect(parse({ query: ID })).toEqual({ ...EMPTY, id: ID });
    // Symbol-keyed kinds recognise their symbols the same way.
    expect(parse({ query: 'SPX' }, dateless)).toEqual({ ...EMPTY, id: 'SPX' });
  });

  test('text that only looks like an id is a name prefix', () => {
    expect(parse({ query: 'port_short' })).toEqual({ ...EMPTY, namePrefix: 'port_short' });
    expect(parse({ query: ID + 'x' })).toEqual({ ...EMPTY, namePrefix: ID + 'x' });
  });

  test('#tags: every tag, normalised as stored tags are', () => {
    expect(parse({ query: '#alpha beta' }).tags).toEqual(['alpha', 'beta']);
    // Stored tags are lower case with non-alphanumerics as "_": a query must match them.
    expect(parse({ query: '#Equity us-large' }).tags).toEqual(['equity', 'us_large']);
    expect(parse({ query: '#a #b  c,d' }).tags).toEqual(['a', 'b', 'c', 'd']);
    expect(parse({ query: '#a a A' }).tags).toEqual(['a']);
  });

  test('# with no tag → 400', () => {
    invalid(() => parse({ query: '#' }), 'A tag query needs at least one tag after "#".');
    invalid(() => parse({ query: '#   ' }), 'A tag query needs at least one tag after "#".');
  });

  test('&link_uid', () => {
    expect(parse({ query: '&ext-42/a b' })).toEqual({ ...EMPTY, linkUid: 'ext-42/a b' });
    invalid(() => parse({ query: '&' }), 'A link query needs a link UID after "&".');
  });

  test('any other text is a name prefix, taken literally', () => {
    expect(parse({ query: 'Core 50%_x' })).toEqual({ ...EMPTY, namePrefix: 'Core 50%_x' });
    expect(parse({ query: '[1, 2]' })).toEqual({ ...EMPTY, namePrefix: '[1, 2]' });
  });

  test('a NUL character or an unpaired surrogate anywhere → 400, not a database error', () => {
    invalid(() => parse({ query: 'ab\u0000c' }), 'query holds a NUL character or an unpaired surrogate.');
    invalid(() => parse({ query: '&\ud800' }), 'query holds a NUL character or an unpaired surrogate.');
    invalid(
      () => json({ filters: [['name', '=', 'a\u0000']] }),
      'query.filters[0] holds a NUL character or an unpaired surrogate.',
    );
    invalid(
      () => parse({ query: '{"filters": [["name", "IN", ["\\ud800"]]]}' }),
      'query.filters[0] holds a NUL character or an unpaired surrogate.',
    );
  });
});

describe('parseListQuery: JSON queries', () => {
  test('a string that parses to a JSON object is a JSON query (tried first)', () => {
    const q = json({
      filters: [['name', '=', 'x']],
      order: ['-nlv', 'name', '+date'],
      projection: ['id', 'name'],
      distinct_on: ['base_currency'],
      page_size: 25,
    });
    expect(q).toEqual({
      ...EMPTY,
      json: true,
      filters: [{ property: 'name', operator: '=', value: 'x' }],
      order: [
        { property: 'nlv', descending: true },
        { property: 'name', descending: false },
        { property: 'date', descending: false },
      ],
      projection: { mode: 'include', fields: ['id', 'name'] },
      distinctOn: ['base_currency'],
      pageSize: 25,
    });
    // Leading white space still means JSON; an empty object is a JSON query with no filter.
    expect(parse({ query: '  {"page_size": 3}' })).toEqual({ ...EMPTY, json: true, pageSize: 3 });
    expect(parse({ query: '{}' })).toEqual({ ...EMPTY, json: true });
  });

  test('JSON mode wins over the other modes', () => {
    // An object whose text would otherwise be a name prefix, a tag or an id search.
    expect(json({ filters: [['tags', '=', '#x']] }).tags).toEqual([]);
    expect(json({ filters: [['id', '=', ID]] }).id).toBeNull();
  });

  test('{bad json → 400 with a clear message', () => {
    invalid(() => parse({ query: '{bad json' }), /^query looks like a JSON object but is not valid JSON/);
    invalid(
      () => parse({ query: '{"filters": [["a", "=", 1]]' }),
      /^query looks like a JSON object but is not valid JSON/,
    );
    invalid(() => parse({ query: '{"order": ["a"]} trailing' }), /^query looks like a JSON object/);
  });

  test('unknown keys → 400', () => {
    invalid(() => json({ filter: [] }), 'Unknown key in the JSON query: filter.');
  });

  test.each([
    ['=', '='],
    ['!=', '!='],
    ['<', '<'],
    ['<=', '<='],
    ['>', '>'],
    ['>=', '>='],
  ])('operator %s', (given, operator) => {
    expect(json({ filters: [['nlv', given, 5]] }).filters).toEqual([{ property: 'nlv', operator, value: 5 }]);
  });

  test.each([['IN'], ['in'], ['In'], ['NOT_IN'], ['not_in'], ['NOT IN'], ['not  in'], [' NOT IN ']])(
    'list operator spelt %j',
    (given) => {
      const [filter] = json({ filters: [['base_currency', given, ['USD', 'EUR']]] }).filters;
      expect(filter).toEqual({
        property: 'base_currency',
        operator: given.toUpperCase().includes('NOT') ? 'NOT_IN' : 'IN',
        value: ['USD', 'EUR'],
      });
    },
  );

  test.each([['=='], ['<>'], ['LIKE'], ['NOTIN'], ['NOT_ IN'], [''], [3], [null]])(
    'operator %j → 400',
    (operator) => {
      invalid(
        () => json({ filters: [['nlv', operator, 1]] }),
        'query.filters[0]: operator must be one of =, !=, <, <=, >, >=, IN, NOT_IN.',
      );
    },
  );

  test('IN and NOT_IN need a list of plain values', () => {
    invalid(() => json({ filters: [['nlv', 'IN', 5]] }), 'query.filters[0]: IN needs a list value.');
    invalid(
      () => json({ filters: [['nlv', 'NOT IN', 'USD']] }),
      'query.filters[0]: NOT_IN needs a list value.',
    );
    invalid(
      () => json({ filters: [['nlv', 'IN', [1, [2]]]] }),
      'query.filters[0]: the values of IN must be strings, numbers, booleans or null.',
    );
  });

  test('other operators need a plain value; ranges need a string, number or boolean', () => {
    invalid(
      () => json({ filters: [['nlv', '=', [1]]] }),
      'query.filters[0]: the value must be a string, number, boolean or null.',
    );
    invalid(
      () => json({ filters: [['nlv', '=', { a: 1 }]] }),
      'query.filters[0]: the value must be a string, number, boolean or null.',
    );
    invalid(
      () => json({ filters: [['nlv', '<', null]] }),
      'query.filters[0]: < compares with a string, number or boolean, not null.',
    );
    expect(json({ filters: [['nlv', '=', null]] }).filters[0]!.value).toBeNull();
    expect(json({ filters: [['nlv', '!=', null]] }).filters[0]!.value).toBeNull();
  });

  test('a number out of range of a double → 400, not a silent null', () => {
    invalid(
      () => parse({ query: '{"filters": [["nlv", "<", 1e400]]}' }),
      'query.filters[0]: numbers must be finite.',
    );
  });

  test('malformed filters → 400', () => {
    invalid(
      () => json({ filters: 'name = x' }),
      'query.filters must be an array of [property, operator, value].',
    );
    invalid(
      () => json({ filters: [['name', '=']] }),
      'query.filters[0] must be [property, operator, value].',
    );
    invalid(
      () =>
        json({
          filters: [
            ['name', '=', 'x'],
            ['bad name', '=', 1],
          ],
        }),
      'query.filters[1]: "bad name" is not a property name.',
    );
    invalid(() => json({ filters: [[7, '=', 1]] }), 'query.filters[0]: "7" is not a property name.');
  });

  test('order: "-" descending, "+" or nothing ascending; a single string is one key', () => {
    expect(json({ order: '-created' }).order).toEqual([{ property: 'created', descending: true }]);
    expect(json({ order: ['+a.b'] }).order).toEqual([{ property: 'a.b', descending: false }]);
    invalid(() => json({ order: ['-'] }), 'query.order: "" is not a property name.');
    invalid(() => json({ order: [1] }), 'query.order must be a list of property names.');
    invalid(
      () => json({ order: Array.from({ length: 16 }, (_, i) => `p${i}`) }),
      'query.order has 16 elements; at most 15 are allowed.',
    );
  });

  test(`projection: at most ${PROJECTION_MAX}, include or exclude, never mixed`, () => {
    const fields = (n: number, prefix = '') => Array.from({ length: n }, (_, i) => `${prefix}f${i}`);
    expect(json({ projection: fields(15) }).projection).toEqual({ mode: 'include', fields: fields(15) });
    expect(json({ projection: fields(15, '-') }).projection).toEqual({ mode: 'exclude', fields: fields(15) });
    invalid(
      () => json({ projection: fields(16) }),
      'query.projection has 16 elements; at most 15 are allowed.',
    );
    invalid(
      () => json({ projection: fields(16, '-') }),
      'query.projection has 16 elements; at most 15 are allowed.',
    );
    invalid(
      () => json({ projection: ['name', '-securities'] }),
      'query.projection either lists properties to return or, with a "-" prefix, to leave out; not both.',
    );
    invalid(() => json({ projection: ['-'] }), 'query.projection: "" is not a property name.');
    // An empty projection is no projection.
    expect(json({ projection: [] }).projection).toBeNull();
  });

  test('distinct_on: property names', () => {
    expect(json({ distinct_on: ['base_currency', 'date'] }).distinctOn).toEqual(['base_currency', 'date']);
    expect(json({ distinct_on: 'base_currency' }).distinctOn).toEqual(['base_currency']);
    invalid(() => json({ distinct_on: ['-x'] }), 'query.distinct_on: "-x" is not a property name.');
  });
});

describe('parseListQuery: page_size', () => {
  test('default 10; URL and JSON values; the URL wins', () => {
    expect(parse({}).pageSize).toBe(10);
    expect(parse({ page_size: '1' }).pageSize).toBe(1);
    expect(parse({ page_size: 100 }).pageSize).toBe(100);
    expect(json({ page_size: 7 }).pageSize).toBe(7);
    expect(json({ page_size: 7 }, { page_size: '3' }).pageSize).toBe(3);
    expect(json({ page_size: 7 }, { page_size: '' }).pageSize).toBe(7);
  });

  test.each([['0'], ['101'], ['abc'], ['1.5'], ['-1'], [' 5'], ['1e1'], [0], [101], [2.5]])(
    'page_size %j → 400',
    (pageSize) => {
      invalid(() => parse({ page_size: pageSize }), 'page_size must be an integer from 1 to 100.');
    },
  );

  test.each([[0], [101], ['abc'], [true], [null]])('JSON page_size %j', (pageSize) => {
    if (pageSize === null) {
      expect(json({ page_size: pageSize }).pageSize).toBe(10);
      return;
    }
    invalid(() => json({ page_size: pageSize }), 'page_size must be an integer from 1 to 100.');
  });
});

describe('parseListQuery and parsePeriod: periods', () => {
  test('YYYYMMDD covers whole days, UTC, inclusive', () => {
    const { period } = parse({ query: '#a', start: '20240101', end: '20240131' });
    expect(period).toEqual({
      field: 'date',
      start: { day: '20240101', hasTime: false, instant: new Date('2024-01-01T00:00:00.000Z') },
      end: { day: '20240131', hasTime: false, instant: new Date('2024-01-31T23:59:59.999Z') },
    });
  });

  test('"YYYYMMDD HH:MM:SS" covers that second', () => {
    const { period } = parse({
      start: '20240101 10:00:00',
      end: '20240101 10:00:05',
      period_field: 'updated_on',
    });
    expect(period).toEqual({
      field: 'updated_on',
      start: { day: '20240101', hasTime: true, instant: new Date('2024-01-01T10:00:00.000Z') },
      end: { day: '20240101', hasTime: true, instant: new Date('2024-01-01T10:00:05.999Z') },
    });
  });

  test('date_time sets both bounds', () => {
    expect(parsePeriod({ dateTime: '20240229' })).toEqual({
      start: { day: '20240229', hasTime: false, instant: new Date('2024-02-29T00:00:00.000Z') },
      end: { day: '20240229', hasTime: false, instant: new Date('2024-02-29T23:59:59.999Z') },
    });
    invalid(
      () => parsePeriod({ dateTime: '20240101', start: '20240101' }),
      'date_time sets start and end: do not combine it with them.',
    );
  });

  test('one bound alone', () => {
    expect(parsePeriod({ start: '20240101' })?.end).toBeNull();
    expect(parsePeriod({ end: '20240101 23:59:59' })?.start).toBeNull();
    expect(parsePeriod({})).toBeNull();
  });

  test.each([
    ['2024-01-01'],
    ['2024-01-01T10:00:00Z'],
    ['20240230'],
    ['20230229'],
    ['20241301'],
    ['20240100'],
    ['20240101T100000'],
    ['2024010'],
    ['202401011'],
    ['20240101 10:00'],
    ['20240101  10:00:00'],
    ['20240101 1:00:00'],
    [' 20240101'],
    ['２０２４０１０１'],
    ['00990101'],
  ])('start %j → 400', (start) => {
    invalid(
      () => parse({ start, period_field: 'updated_on' }),
      `start must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "${start}".`,
    );
  });

  test.each([['20240101 24:00:00'], ['20240101 23:60:00'], ['20240101 23:59:60']])(
    'end %j → 400 (time of day out of range)',
    (end) => {
      invalid(() => parse({ end, period_field: 'updated_on' }), `end has an invalid time of day: "${end}".`);
    },
  );

  test('start after end → 400; equal bounds are fine', () => {
    invalid(() => parse({ start: '20240102', end: '20240101' }), 'start must not be after end.');
    invalid(
      () => parse({ start: '20240101 10:00:01', end: '20240101 10:00:00', period_field: 'updated_on' }),
      'start must not be after end.',
    );
    expect(parse({ start: '20240101 10:00:00', end: '20240101 10:00:00' }).period).not.toBeNull();
    expect(parse({ start: '20240101 10:00:00', end: '20240101' }).period).not.toBeNull();
  });

  test('a period on date does not combine with a name search; on updated_on it does', () => {
    invalid(
      () => parse({ query: 'Core', start: '20240101' }),
      'A period on date does not combine with a name search; use period_field=updated_on.',
    );
    invalid(
      () => parse({ query: 'Core', end: '20240101', period_field: 'date' }),
      'A period on date does not combine with a name search; use period_field=updated_on.',
    );
    expect(parse({ query: 'Core', start: '20240101', period_field: 'updated_on' }).period?.field).toBe(
      'updated_on',
    );
    // Other modes combine with a date period.
    expect(parse({ query: '#a', start: '20240101' }).period?.field).toBe('date');
    expect(json({}, { start: '20240101' }).period?.field).toBe('date');
  });

  test('period_field must be date or updated_on', () => {
    invalid(() => parse({ period_field: 'created' }), 'period_field must be date or updated_on.');
    invalid(
      () => parse({ period_field: 'DATE', start: '20240101' }),
      'period_field must be date or updated_on.',
    );
  });

  test('kinds without a date default to updated_on and refuse date', () => {
    expect(parse({ start: '20240101' }, dateless).period?.field).toBe('updated_on');
    expect(parse({ query: 'Core', start: '20240101' }, dateless).period?.field).toBe('updated_on');
    invalid(
      () => parse({ start: '20240101', period_field: 'date' }, dateless),
      'These entities have no date: use period_field=updated_on.',
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const PROPERTY = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;

/** Independent of the code under test: a round trip through UTF-8 changes unpaired surrogates. */
function isClean(text: string): boolean {
  return !text.includes('\u0000') && Buffer.from(text, 'utf8').toString('utf8') === text;
}

/** Every invariant a caller (entity-store) relies on. */
function expectWellFormed(q: ListQuery, request: ListRequest, options: ListOptions): void {
  const modes = [q.id !== null, q.tags.length > 0, q.linkUid !== null, q.namePrefix !== null, q.json];
  expect(modes.filter(Boolean).length).toBeLessThanOrEqual(1);
  expect(Number.isInteger(q.pageSize) && q.pageSize >= 1 && q.pageSize <= PAGE_SIZE_MAX).toBe(true);
  if (q.id !== null) expect(options.isId(q.id)).toBe(true);
  for (const tag of q.tags) expect(tag).toMatch(/^[a-z0-9_]+$/);
  for (const text of [q.linkUid, q.namePrefix, q.id]) {
    if (text !== null) expect(isClean(text) && text.length > 0).toBe(true);
  }
  for (const filter of q.filters) {
    expect(filter.property).toMatch(PROPERTY);
    expect(FILTER_OPERATORS).toContain(filter.operator);
    const list = filter.operator === 'IN' || filter.operator === 'NOT_IN';
    expect(Array.isArray(filter.value)).toBe(list);
    for (const v of list ? (filter.value as unknown[]) : [filter.value]) {
      expect(v === null || ['string', 'number', 'boolean'].includes(typeof v)).toBe(true);
      if (typeof v === 'number') expect(Number.isFinite(v)).toBe(true);
      if (typeof v === 'string') expect(isClean(v)).toBe(true);
    }
  }
  for (const key of q.order) expect(key.property).toMatch(PROPERTY);
  for (const property of q.distinctOn) expect(property).toMatch(PROPERTY);
  if (q.projection) {
    expect(q.projection.fields.length).toBeGreaterThan(0);
    expect(q.projection.fields.length).toBeLessThanOrEqual(PROJECTION_MAX);
    for (const field of q.projection.fields) expect(field).toMatch(PROPERTY);
  }
  if (!q.json) expect([q.filters, q.order, q.distinctOn, q.projection]).toEqual([[], [], [], null]);
  if (q.period) {
    expect(['date', 'updated_on']).toContain(q.period.field);
    if (!options.hasDate) expect(q.period.field).toBe('updated_on');
    if (q.period.field === 'date') expect(q.namePrefix).toBeNull();
    if (q.period.start && q.period.end) {
      expect(q.period.start.instant.getTime()).toBeLessThanOrEqual(q.period.end.instant.getTime());
    }
  } else {
    expect([request.start, request.end, request.date_time].every((v) => !v)).toBe(true);
  }
}

function parsesOrRefuses(request: ListRequest, options: ListOptions): void {
  let result: ListQuery;
  try {
    result = parseListQuery(request, options);
  } catch (error) {
    // Only a typed 400: anything else would be a 500 for a client's typo.
    expect(error).toBeInstanceOf(InvalidInput);
    return;
  }
  expectWellFormed(result, request, options);
}

const scalar = fc.oneof(
  fc.string(),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', 'a') }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('USD', '20240101', 'port_x'),
);
const propertyName = fc.oneof(
  fc.constantFrom('name', 'date', 'created', 'tags', 'workspace', 'nlv', 'base_currency', 'a.b.c', 'x_1'),
  fc.string({ maxLength: 8 }),
);
const operator = fc.oneof(
  fc.constantFrom(...FILTER_OPERATORS, 'in', 'NOT IN', 'not_in'),
  fc.string({ maxLength: 4 }),
  fc.anything(),
);
const filter = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(propertyName, operator, fc.oneof(scalar, fc.array(scalar, { maxLength: 4 }))),
  },
  { weight: 1, arbitrary: fc.anything() },
);
const orderKey = fc.tuple(fc.constantFrom('', '-', '+'), propertyName).map(([sign, p]) => sign + p);
/** JSON queries close to valid ones, so the generator reaches every branch, not only the first check. */
const jsonQuery = fc.record(
  {
    filters: fc.oneof(fc.array(filter, { maxLength: 4 }), fc.anything()),
    order: fc.oneof(fc.array(orderKey, { maxLength: 4 }), orderKey, fc.anything()),
    projection: fc.oneof(fc.array(orderKey, { maxLength: 17 }), fc.anything()),
    distinct_on: fc.oneof(fc.array(propertyName, { maxLength: 3 }), fc.anything()),
    page_size: fc.oneof(fc.integer({ min: -5, max: 120 }), fc.anything()),
    unexpected: fc.anything(),
  },
  { requiredKeys: [] },
);
/** Strings rich in what databases refuse: NUL, unpaired surrogates, quotes, wildcards. */
const nasty = fc.string({
  unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'a', '"', '\\', '%', '_', ' ', '{'),
});
const queryText = fc.oneof(
  fc.string(),
  nasty,
  nasty.map((s) => '#' + s),
  nasty.map((s) => '&' + s),
  fc.string({ unit: 'binary' }),
  fc.string().map((s) => '#' + s),
  fc.string().map((s) => '&' + s),
  fc.string().map((s) => '{' + s),
  fc.json(),
  jsonQuery.map((q) => JSON.stringify(q)),
  fc.constant(ID),
);
const periodText = fc.oneof(
  fc.string(),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10).replace(/-/g, '')),
  fc
    .date({ noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 19).replace(/-|:/g, '').replace('T', ' ')),
  fc
    .tuple(fc.date({ noInvalidDate: true }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }))
    .map(
      ([d, h, m]) =>
        `${d.toISOString().slice(0, 10).replace(/-/g, '')} ${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00`,
    ),
);
const listRequest: fc.Arbitrary<ListRequest> = fc.record(
  {
    query: fc.option(queryText),
    page_size: fc.option(
      fc.oneof(fc.string({ maxLength: 4 }), fc.integer({ min: -2, max: 130 }), fc.double()),
    ),
    start: fc.option(periodText),
    end: fc.option(periodText),
    date_time: fc.option(periodText),
    period_field: fc.option(fc.oneof(fc.constantFrom('date', 'updated_on'), fc.string({ maxLength: 10 }))),
  },
  { requiredKeys: [] },
);

describe('properties', () => {
  test('any request either parses to a well-formed query or is a 400 (InvalidInput)', () => {
    fc.assert(
      fc.property(listRequest, fc.boolean(), (request, hasDate) => {
        parsesOrRefuses(request, hasDate ? dated : dateless);
      }),
      { numRuns: 3000 },
    );
  });

  test('any string as query alone parses or is a 400', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.json()), (query) => {
        parsesOrRefuses({ query }, dated);
      }),
      { numRuns: 2000 },
    );
  });

  test('a valid JSON query parses to exactly what it says', () => {
    const validFilter = fc.oneof(
      fc.tuple(
        fc.constantFrom('name', 'nlv', 'a.b'),
        fc.constantFrom('=', '!='),
        fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)),
      ),
      fc.tuple(
        fc.constantFrom('name', 'nlv'),
        fc.constantFrom('<', '<=', '>', '>='),
        fc.oneof(fc.string(), fc.integer()),
      ),
      fc.tuple(
        fc.constantFrom('name', 'tags'),
        fc.constantFrom('IN', 'NOT_IN', 'in', 'not in'),
        fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }),
      ),
    );
    const names = fc.uniqueArray(fc.constantFrom('id', 'name', 'nlv', 'date', 'tags', 'a.b', 'x'), {
      maxLength: 7,
    });
    fc.assert(
      fc.property(
        fc.array(validFilter, { maxLength: 4 }).filter((fs) => fs.every(([, , v]) => isCleanValue(v))),
        fc.array(fc.tuple(fc.boolean(), fc.constantFrom('name', 'nlv', 'created', 'a.b')), { maxLength: 3 }),
        fc.tuple(fc.boolean(), names),
        names,
        fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        (filters, order, [exclude, projection], distinctOn, jsonPageSize, urlPageSize) => {
          const q = parse({
            query: JSON.stringify({
              filters,
              order: order.map(([desc, p]) => (desc ? '-' : '') + p),
              projection: projection.map((p) => (exclude ? '-' : '') + p),
              distinct_on: distinctOn,
              page_size: jsonPageSize,
            }),
            page_size: urlPageSize === undefined ? undefined : String(urlPageSize),
          });
          expect(q.json).toBe(true);
          expect(q.filters).toEqual(
            filters.map(([property, op, value]) => ({
              property,
              operator: op.toUpperCase().replace(' ', '_'),
              value,
            })),
          );
          expect(q.order).toEqual(order.map(([descending, property]) => ({ property, descending })));
          expect(q.projection).toEqual(
            projection.length ? { mode: exclude ? 'exclude' : 'include', fields: projection } : null,
          );
          expect(q.distinctOn).toEqual(distinctOn);
          expect(q.pageSize).toBe(urlPageSize ?? jsonPageSize ?? 10);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('valid period bounds parse to the instant they name; any other text is a 400', () => {
    const day = fc.date({ min: new Date('1900-01-01'), max: new Date('9999-12-31'), noInvalidDate: true });
    fc.assert(
      fc.property(day, fc.boolean(), (date, withTime) => {
        const iso = date.toISOString();
        const text = iso.slice(0, 10).replace(/-/g, '') + (withTime ? ' ' + iso.slice(11, 19) : '');
        const period = parsePeriod({ start: text, end: text })!;
        const second = Math.floor(date.getTime() / 1000) * 1000;
        const dayStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
        expect(period.start!.instant.getTime()).toBe(withTime ? second : dayStart);
        expect(period.end!.instant.getTime()).toBe(withTime ? second + 999 : dayStart + 86_399_999);
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        // An empty bound is an absent one.
        fc.pre(text !== '' && !/^\d{8}( \d\d:\d\d:\d\d)?$/.test(text));
        invalid(() => parsePeriod({ start: text }), /^start must be YYYYMMDD/);
      }),
      { numRuns: 1000 },
    );
  });
});

function isCleanValue(value: unknown): boolean {
  if (typeof value === 'string') return isClean(value);
  if (Array.isArray(value)) return value.every(isCleanValue);
  return true;
}

describe('page tokens', () => {
  test('keyset tokens round-trip their order and key texts', () => {
    const keyText = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));
    fc.assert(
      fc.property(fc.string(), fc.array(keyText, { minLength: 1, maxLength: 5 }), (order, keys) => {
        fc.pre(isClean(order) && keys.every(isClean));
        const token = encodeKeysetToken({ order, keys });
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeKeysetToken(token, order, keys.length)).toEqual(keys);
      }),
      { numRuns: 1000 },
    );
  });

  test('a keyset token of another order, or with another number of keys → 400', () => {
    const token = encodeKeysetToken({ order: '-created,-id', keys: ['1', '"port_x"'] });
    invalid(
      () => decodeKeysetToken(token, 'name,id', 2),
      'Invalid page_token: it belongs to a list in another order; repeat the same query with it.',
    );
    invalid(() => decodeKeysetToken(token, '-created,-id', 3), /^Invalid page_token/);
  });

  test.each([['"\\u0000"'], ['"\\ud800"'], ['1e400'], ['{'], ['['.repeat(200) + ']'.repeat(200)]])(
    'a keyset token holding %s, which the database cannot read → 400',
    (key) => {
      const token = encodeKeysetToken({ order: 'a', keys: [key] });
      invalid(() => decodeKeysetToken(token, 'a', 1), /^Invalid page_token/);
    },
  );

  test('garbage keyset tokens → 400, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.base64String(),
          fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
        ),
        fc.nat({ max: 4 }),
        (token, keys) => {
          try {
            const decoded = decodeKeysetToken(token, '-created,-id', keys);
            // Only an empty token means "first page"; anything else decoded must be well-formed.
            if (decoded === null) expect(token).toBe('');
            else expect(decoded).toHaveLength(keys);
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidInput);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('workspace and audit-log page tokens round-trip; garbage → 400', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), (ms, key) => {
        fc.pre(!Object.is(ms, -0));
        expect(decodePageToken(encodePageToken({ createdAtMs: ms, key }))).toEqual({ createdAtMs: ms, key });
      }),
    );
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (token) => {
        try {
          const cursor = decodePageToken(token);
          expect(Number.isFinite(cursor!.createdAtMs) && typeof cursor!.key === 'string').toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidInput);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
