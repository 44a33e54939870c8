import fc from 'fast-check';
import {
  canonicalJson,
  fillNormals,
  fnv1a64,
  inverseNormalCdf,
  normalAt,
  philox4x32,
  seedFromNumber,
  seedFromRequest,
  uniformAt,
} from '../../calc/random';

const hex = (words: Uint32Array) => Array.from(words, (w) => w.toString(16).padStart(8, '0')).join(' ');

describe('Philox4x32-10', () => {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter[4] key[2] → output[4].
  test.each([
    [[0, 0, 0, 0, 0, 0], '6627e8d5 e169c58d bc57ac4c 9b00dbd8'],
    [
      [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff],
      '408f276d 41c83b0e a20bc7c6 6d5451fd',
    ],
    [
      [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0],
      'd16cfe09 94fdcceb 5001e420 24126ea1',
    ],
  ])('known answer %#', (input, expected) => {
    const out = new Uint32Array(4);
    const [c0, c1, c2, c3, k0, k1] = input as [number, number, number, number, number, number];
    philox4x32(c0, c1, c2, c3, k0, k1, out);
    expect(hex(out)).toBe(expected);
  });
});

describe('normals', () => {
  // Reference quantiles from CPython's pure-Python statistics.NormalDist.inv_cdf (AS241, same steps).
  test.each([
    [0.5, 0],
    [0.975, 1.9599639845400536],
    [0.05, -1.6448536269514726],
    [0.3, -0.5244005127080407],
    [0.925, 1.439531470938456],
    [0.07, -1.4757910281791702],
    [1e-10, -6.361340902404056],
    [0.5 / 2 ** 32, -6.337957754553789],
    [1e-300, -37.0470962993612],
  ])('Φ⁻¹(%p) = %p bit for bit', (p, z) => {
    expect(inverseNormalCdf(p)).toBe(z);
  });

  test('a number depends only on (seed, path, dimension): any order, any batch', () => {
    const seed = seedFromNumber(12345);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 1, max: 40 }),
        (path, count) => {
          const batch = new Float64Array(count);
          fillNormals(seed, path, batch, count);
          for (let dim = count - 1; dim >= 0; dim--) expect(normalAt(seed, path, dim)).toBe(batch[dim]);
        },
      ),
      { numRuns: 50 },
    );
  });

  test('standard normal moments and tails over 400,000 draws (within 4 standard errors)', () => {
    const seed = seedFromNumber(99);
    const n = 400_000;
    const z = new Float64Array(n);
    fillNormals(seed, 0, z, n);
    let m1 = 0;
    let m2 = 0;
    let below = 0;
    for (const x of z) {
      m1 += x;
      m2 += x * x;
      if (x < -1.6448536269514726) below++;
    }
    expect(Math.abs(m1 / n)).toBeLessThan(4 / Math.sqrt(n));
    expect(Math.abs(m2 / n - 1)).toBeLessThan(4 * Math.sqrt(2 / n));
    expect(Math.abs(below / n - 0.05)).toBeLessThan(4 * Math.sqrt((0.05 * 0.95) / n));
  });

  test('paths and seeds give independent-looking streams; uniforms lie in (0, 1)', () => {
    const a = seedFromNumber(1);
    const b = seedFromNumber(2);
    expect(normalAt(a, 0, 0)).not.toBe(normalAt(b, 0, 0));
    expect(normalAt(a, 0, 0)).not.toBe(normalAt(a, 1, 0));
    let corr = 0;
    const n = 20_000;
    for (let p = 0; p < n; p++) corr += normalAt(a, p, 3) * normalAt(a, p, 4);
    expect(Math.abs(corr / n)).toBeLessThan(4 / Math.sqrt(n));
    for (let p = 0; p < 1000; p++) {
      const u = uniformAt(a, p, 0);
      expect(u).toBeGreaterThan(0);
      expect(u).toBeLessThan(1);
    }
  });
});

describe('seeds', () => {
  test('FNV-1a 64 reference values', () => {
    const hex64 = (text: string) => {
      const { hi, lo } = fnv1a64(text);
      return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
    };
    expect(hex64('')).toBe('cbf29ce484222325');
    expect(hex64('a')).toBe('af63dc4c8601ec8c');
    expect(hex64('foobar')).toBe('85944171f73967e8');
  });

  test('the canonical request ignores key order and undefined members; any value change moves the seed', () => {
    const request = { b: [1, { y: 2, x: 'é' }], a: null, c: undefined, d: 0.1 };
    expect(canonicalJson(request)).toBe('{"a":null,"b":[1,{"x":"é","y":2}],"d":0.1}');
    expect(seedFromRequest(request)).toEqual(seedFromRequest({ d: 0.1, a: null, b: [1, { x: 'é', y: 2 }] }));
    expect(seedFromRequest(request)).not.toEqual(seedFromRequest({ ...request, d: 0.10000000000000002 }));
  });

  test('the canonical text and its hash are the ones the first implementation wrote (seeds never move)', () => {
    // The implementation of issue 12, kept here as the reference: the same request must keep its numbers.
    const reference = (value: unknown): string => {
      if (value === null || typeof value !== 'object') {
        if (typeof value === 'number' && !Number.isFinite(value)) return JSON.stringify(String(value));
        return JSON.stringify(value) ?? 'null';
      }
      if (Array.isArray(value)) return `[${value.map((item) => reference(item)).join(',')}]`;
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, item]) => item !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${reference(item)}`).join(',')}}`;
    };
    const referenceHash = (text: string) => {
      let hi = 0xcbf29ce4;
      let lo = 0x84222325;
      for (const byte of new TextEncoder().encode(text)) {
        lo = (lo ^ byte) >>> 0;
        const low = lo * 0x1b3;
        hi = (Math.imul(hi, 0x1b3) + Math.floor(low / 4294967296) + (lo << 8)) >>> 0;
        lo = low >>> 0;
      }
      return { lo, hi };
    };
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.record({ b: fc.double(), a: fc.string(), c: fc.constant(undefined) })),
        (value, rows) => {
          const request = { value, rows };
          expect(canonicalJson(request)).toBe(reference(request));
          expect(seedFromRequest(request)).toEqual(referenceHash(reference(request)));
        },
      ),
      { numRuns: 1000 },
    );
    // Shapes that a key list joined naively would confuse: no keys and one empty key, or keys that
    // hold the separator or a length prefix.
    for (const value of [
      {},
      { '': false },
      { 'a\u0000': 1, b: 2 },
      { a: 1, '\u0000b': 2 },
      { '1:a': 1, '': 2 },
      { '': 1, '1:a': 2 },
    ]) {
      expect(canonicalJson(value)).toBe(reference(value));
    }
  });

  test('explicit numeric seeds use both key words', () => {
    expect(seedFromNumber(2 ** 32 + 5)).toEqual({ lo: 5, hi: 1 });
    expect(() => seedFromNumber(-1)).toThrow(RangeError);
  });
});
