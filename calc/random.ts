/**
 * Counter-based random numbers (methodology §5): Philox4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011), checked against the Random123 known-answer vectors.
 *
 * A number is a pure function of (seed, path, dimension): no state, so a path can be regenerated in a
 * second pass, computed on any worker or kernel in any order, and gives the same value everywhere.
 * Integer steps are exact on every machine; the normal transform (inverse CDF) uses only IEEE basic
 * arithmetic, Math.sqrt (correctly rounded) and Math.log, which V8 computes with its own fdlibm port:
 * the same bits on every platform V8 runs on.
 *
 * Counter layout: (c0, c1, c2, c3) = (block, path, stream, 0), key = the 64-bit seed. Block b of the
 * normal stream holds dimensions 4b..4b+3, one normal per 32-bit word.
 */

// Bound once: under jest's vm sandbox every global lookup (Math, Number) in a hot loop costs ~25×.
const { abs, imul, log, sqrt } = Math;

/** The Philox key: a 64-bit seed as two unsigned 32-bit halves. */
export interface Seed {
  readonly lo: number;
  readonly hi: number;
}

/** Normals for factor and residual dimensions of a path. */
export const NORMAL_STREAM = 0;
/** Uniforms (regime draws) of a path. */
export const UNIFORM_STREAM = 1;

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9 | 0;
const W1 = 0xbb67ae85 | 0;
const M0_HI = M0 >>> 16;
const M0_LO = M0 & 0xffff;
const M1_HI = M1 >>> 16;
const M1_LO = M1 & 0xffff;
const TWO_32 = 4294967296;

/**
 * Philox4x32-10 of counter (c0..c3) and key (k0, k1), written to out[0..3]. The high word of each
 * 32×32 multiply is assembled from 16-bit limbs with Math.imul, so everything stays in int32
 * arithmetic (twice as fast in V8 as the same steps in doubles) and is exact.
 */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array,
): void {
  let x0 = c0 | 0;
  let x1 = c1 | 0;
  let x2 = c2 | 0;
  let x3 = c3 | 0;
  let key0 = k0 | 0;
  let key1 = k1 | 0;
  for (let round = 0; round < 10; round++) {
    if (round > 0) {
      key0 = (key0 + W0) | 0;
      key1 = (key1 + W1) | 0;
    }
    let lo = x0 & 0xffff;
    let hi = x0 >>> 16;
    let ll = imul(lo, M0_LO);
    let lh = imul(lo, M0_HI);
    let hl = imul(hi, M0_LO);
    let mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
    const hi0 = (imul(hi, M0_HI) + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
    const lo0 = imul(x0, M0);
    lo = x2 & 0xffff;
    hi = x2 >>> 16;
    ll = imul(lo, M1_LO);
    lh = imul(lo, M1_HI);
    hl = imul(hi, M1_LO);
    mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
    const hi1 = (imul(hi, M1_HI) + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
    const lo1 = imul(x2, M1);
    x0 = hi1 ^ x1 ^ key0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ key1;
    x3 = lo0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

/** A 32-bit word as a uniform in (0, 1): (w + ½)/2³², never 0 or 1. */
export function wordToUniform(word: number): number {
  return (word + 0.5) / TWO_32;
}

/**
 * Φ⁻¹(p), Wichura's AS241 (PPND16, relative error about 1e-16), in the same operation order as
 * CPython's `statistics.NormalDist.inv_cdf` pure-Python version. One uniform gives one normal, which
 * keeps path generation monotone in the underlying word and costs less than Box-Muller's log, sqrt,
 * cos and sin per pair. The coefficients are AS241's 20-digit constants written as the doubles they
 * round to. Uniforms from 32-bit words lie in [2⁻³³, 1 − 2⁻³³], so |z| ≤ 6.34 and the
 * far-tail branch (r > 5) is only reached by direct callers.
 */
export function inverseNormalCdf(p: number): number {
  const q = p - 0.5;
  if (abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    const num =
      (((((((2509.0809287301227 * r + 33430.57558358813) * r + 67265.7709270087) * r + 45921.95393154987) *
        r +
        13731.69376550946) *
        r +
        1971.5909503065513) *
        r +
        133.14166789178438) *
        r +
        3.3871328727963665) *
      q;
    const den =
      ((((((5226.495278852854 * r + 28729.085735721943) * r + 39307.89580009271) * r + 21213.794301586597) *
        r +
        5394.196021424751) *
        r +
        687.1870074920579) *
        r +
        42.31333070160091) *
        r +
      1.0;
    return num / den;
  }
  let r = sqrt(-log(q <= 0 ? p : 1 - p));
  let num: number;
  let den: number;
  if (r <= 5) {
    r = r - 1.6;
    num =
      ((((((0.0007745450142783414 * r + 0.022723844989269184) * r + 0.2417807251774506) * r +
        1.2704582524523684) *
        r +
        3.6478483247632045) *
        r +
        5.769497221460691) *
        r +
        4.630337846156546) *
        r +
      1.4234371107496835;
    den =
      ((((((1.0507500716444169e-9 * r + 0.0005475938084995345) * r + 0.015198666563616457) * r +
        0.14810397642748008) *
        r +
        0.6897673349851) *
        r +
        1.6763848301838038) *
        r +
        2.053191626637759) *
        r +
      1.0;
  } else {
    r = r - 5;
    num =
      ((((((2.0103343992922881e-7 * r + 2.7115555687434876e-5) * r + 0.0012426609473880784) * r +
        0.026532189526576124) *
        r +
        0.29656057182850487) *
        r +
        1.7848265399172913) *
        r +
        5.463784911164114) *
        r +
      6.657904643501103;
    den =
      ((((((2.0442631033899397e-15 * r + 1.421511758316446e-7) * r + 1.8463183175100548e-5) * r +
        0.0007868691311456133) *
        r +
        0.014875361290850615) *
        r +
        0.1369298809227358) *
        r +
        0.599832206555888) *
        r +
      1.0;
  }
  const x = num / den;
  return q < 0 ? -x : x;
}

/** Lane `lane` of a Philox block as a standard normal. */
function wordToNormal(word: number): number {
  return inverseNormalCdf(wordToUniform(word >>> 0));
}

/**
 * Standard normals of dimensions 0..count−1 of `path` into out[offset..offset+count). Stateless:
 * the same call always writes the same numbers.
 */
export function fillNormals(
  seed: Seed,
  path: number,
  out: Float64Array,
  count: number,
  offset = 0,
  words: Uint32Array = new Uint32Array(4),
): void {
  let dim = 0;
  for (let block = 0; dim < count; block++) {
    philox4x32(block, path, NORMAL_STREAM, 0, seed.lo, seed.hi, words);
    for (let lane = 0; lane < 4 && dim < count; lane++, dim++) out[offset + dim] = wordToNormal(words[lane]!);
  }
}

/** The standard normal of one (seed, path, dimension): the same number fillNormals writes there. */
export function normalAt(seed: Seed, path: number, dim: number): number {
  const words = new Uint32Array(4);
  philox4x32(dim >>> 2, path, NORMAL_STREAM, 0, seed.lo, seed.hi, words);
  return wordToNormal(words[dim & 3]!);
}

/** A uniform in (0, 1) of (seed, path, index) on the uniform stream. */
export function uniformAt(
  seed: Seed,
  path: number,
  index: number,
  words: Uint32Array = new Uint32Array(4),
): number {
  philox4x32(index >>> 2, path, UNIFORM_STREAM, 0, seed.lo, seed.hi, words);
  return wordToUniform(words[index & 3]!);
}

// ---------------------------------------------------------------------------------------------------
// Seeds.

/**
 * JSON with object keys sorted at every level and undefined members left out: the same request
 * always gives the same text. Numbers use ECMAScript's shortest round-trip form, which the language
 * specifies exactly.
 */
export function canonicalJson(value: unknown): string {
  return appendCanonical('', value);
}

/**
 * Object keys in sorted order, memoised by the object's own key order: a request's thousands of
 * securities share a handful of shapes, so each shape is sorted once.
 */
const sortedKeysByShape = new Map<string, string[]>();

function sortedKeys(keys: string[]): string[] {
  // Length-prefixed, so no two key lists share a shape (keys may hold any character, or be empty).
  let shape = '';
  for (const key of keys) shape += `${key.length}:${key}`;
  let sorted = sortedKeysByShape.get(shape);
  if (sorted === undefined) {
    sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // Bounded: shapes beyond this are sorted each time (requests from code generating keys).
    if (sortedKeysByShape.size < 1024) sortedKeysByShape.set(shape, sorted);
  }
  return sorted;
}

/** canonicalJson's text appended to `out` (one string built left to right, no intermediate arrays). */
function appendCanonical(out: string, value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return out + JSON.stringify(String(value));
    return out + (JSON.stringify(value) ?? 'null');
  }
  if (Array.isArray(value)) {
    out += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out = appendCanonical(out, value[i]);
    }
    return out + ']';
  }
  const object = value as Record<string, unknown>;
  out += '{';
  let first = true;
  for (const key of sortedKeys(Object.keys(object))) {
    const item = object[key];
    if (item === undefined) continue;
    if (!first) out += ',';
    first = false;
    out = appendCanonical(out + JSON.stringify(key) + ':', item);
  }
  return out + '}';
}

const UTF8 = new TextEncoder();

/** 64-bit FNV-1a of the UTF-8 bytes, in 32-bit halves (h·prime = h·0x1b3 + h<<40, mod 2^64). */
export function fnv1a64(text: string): Seed {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const bytes = UTF8.encode(text);
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]!) >>> 0;
    // lo·0x1b3 < 2^41: exact in a double; its high part carries into hi.
    const low = lo * 0x1b3;
    const carry = (low / TWO_32) | 0;
    hi = (imul(hi, 0x1b3) + carry + (lo << 8)) >>> 0;
    lo = low >>> 0;
  }
  return { lo, hi };
}

/**
 * The seed of a calculation: FNV-1a-64 of the canonical JSON of the request after defaults are
 * applied (plus the path count and internal options). The same request gives the same numbers; any
 * change to it (a quantity, the date, a half-life) draws fresh ones.
 */
export function seedFromRequest(request: unknown): Seed {
  return fnv1a64(canonicalJson(request));
}

/** An explicit seed, 0 ≤ n < 2^53. */
export function seedFromNumber(n: number): Seed {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`A seed must be an integer in [0, 2^53), got ${n}.`);
  return { lo: n >>> 0, hi: Math.floor(n / TWO_32) >>> 0 };
}
