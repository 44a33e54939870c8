/**
 * The `wasm` backend's Monte Carlo kernel (AssemblyScript, compiled with SIMD by calc/wasm/build.mjs).
 * Methodology §5 lets a fast backend use its own generator and f32 lanes as long as it agrees with
 * the reference within Monte Carlo error; this kernel does that.
 *
 * Lanes are paths: every v128 below holds 4 paths (f32x4 or i32x4). Per group of 4 paths:
 * - Generator: a counter hash, two rounds of murmur3's fmix32, keyed by the 64-bit seed and
 *   addressed by (path, dimension), so any path is drawn on its own and the numbers depend only on
 *   (seed, path, dimension). Dimensions 0..k−1 are the factors, k + d the residual of driver d, and
 *   REGIME_DIM the regime's uniform.
 * - Normal: the word's top bit is the sign and the next 23 bits m a uniform q = (m + ½)·2⁻²⁴ in
 *   (0, ½); z = Φ⁻¹(q) from a 1536-line table (the reference's AS241 at each bin's ends, linear in
 *   between: `normal`), |error| ≤ 1.3e-5, |z| ≤ 5.4. No log, division or branch per number: the
 *   rational approximation with a log in the tails that this replaced cost 40 % more per path.
 * - f = mean_r + A_r·z with r the lane's regime; x_d = β_d·f + μ_d + sd_d·z_{k+d}; a pinned driver has
 *   x = c and e = c − β·f (§7).
 * - Lines (§6, §9–§11): x_l = x_a + x_fx, e_l = e_a + e_fx. Linear: G = expm1(x)/x (a series below
 *   |x| = 0.5), unit P&L = G·x. Option: unit = e^{x_fx}·BS(S·e^{x_a}, K, T_h, σ) − P0 with Φ by
 *   Abramowitz–Stegun 26.2.17, G = unit/x_l (x_l = 0: all on the residual). Residual term G·e_l.
 * - L = Σ_l exposure_l·unit_l in f64 lanes.
 * - Pass 2 draws each set's paths on their own (`pass2`), adding them to that set only.
 * - Component sums, blocked: a block holds BLOCK groups' G, residual terms and f. For each line and
 *   projection the BLOCK products G·f_j of a lane are added in f32 (BLOCK = 8 terms, in a fixed
 *   tree order), then added into f64x2 sums over paths (lanes 0+2 and 1+3; the host adds the two
 *   halves). Blocks start at fixed group counts from the start of each call, so a call's sums
 *   depend only on its paths.
 *
 * Memory is owned by the host (calc/kernels/wasm-kernel.ts): it lays out every array above
 * `heapBase()`, writes the scenario and passes the addresses to `configure`.
 */

const BLOCK: i32 = 8;
const REGIME_DIM: u32 = 0xffffffff;
/** The quantile table's first bin: (exponent 126 << 6), the f32 bits of ½ shifted right by 17. */
const TABLE_BASE: i32 = 126 << 6;

// Scenario (set by configure).
let K: i32 = 0;
let D: i32 = 0;
let NL: i32 = 0;
let R: i32 = 0;
let SEED_A: u32 = 0;
let SEED_B: u32 = 0;
let PIN_D: i32 = -1;
let PIN_C: f32 = 0;
let pRegCum: usize = 0; // f32 × R, cumulative regime probabilities
let pRegMean: usize = 0; // f32 × R×k
let pRegRoot: usize = 0; // f32 × R×k×k
let pBeta: usize = 0; // f32 × D×k
let pSd: usize = 0; // f32 × D
let pMu: usize = 0; // f32 × D
let pPrimary: usize = 0; // i32 × NL
let pFx: usize = 0; // i32 × NL
let pExposure: usize = 0; // f64 × NL
let pOption: usize = 0; // f32 × NL×8: right, ln(S/K), S, K, σ√T_h, P0 (right 0: linear)
let pTable: usize = 0; // f32 × 1536×2: the quantile table (normal())
// Scratch.
let pZ: usize = 0; // v128 × k
let pF: usize = 0; // v128 × k
let pX: usize = 0; // v128 × D
let pE: usize = 0; // v128 × D
let pG: usize = 0; // v128 × NL×BLOCK, [line][slot]
let pRes: usize = 0; // v128 × NL×BLOCK
let pFb: usize = 0; // v128 × k×BLOCK, [projection][slot]
let pMask: usize = 0; // v128 × 3×BLOCK, [set][slot]
let pGm: usize = 0; // v128 × BLOCK: one line's G under a set's masks
let pZd: usize = 0; // v128 × D: the residual normals of a group
let pSums: usize = 0; // f64x2 × 3 × NL×(k+1)

export function heapBase(): usize {
  return __heap_base;
}

export function configure(
  k: i32,
  drivers: i32,
  lines: i32,
  regimes: i32,
  seedA: u32,
  seedB: u32,
  pinDriver: i32,
  pinValue: f32,
  regCum: usize,
  regMean: usize,
  regRoot: usize,
  beta: usize,
  sd: usize,
  mu: usize,
  primary: usize,
  fx: usize,
  exposure: usize,
  option: usize,
  table: usize,
  scratch: usize,
): void {
  K = k;
  D = drivers;
  NL = lines;
  R = regimes;
  SEED_A = seedA;
  SEED_B = seedB;
  PIN_D = pinDriver;
  PIN_C = pinValue;
  pRegCum = regCum;
  pRegMean = regMean;
  pRegRoot = regRoot;
  pBeta = beta;
  pSd = sd;
  pMu = mu;
  pPrimary = primary;
  pFx = fx;
  pExposure = exposure;
  pOption = option;
  pTable = table;
  let at = scratch;
  pZ = at;
  at += (<usize>k) << 4;
  pF = at;
  at += (<usize>k) << 4;
  pX = at;
  at += (<usize>drivers) << 4;
  pE = at;
  at += (<usize>drivers) << 4;
  pG = at;
  at += (<usize>(lines * BLOCK)) << 4;
  pRes = at;
  at += (<usize>(lines * BLOCK)) << 4;
  pFb = at;
  at += (<usize>(k * BLOCK)) << 4;
  pMask = at;
  at += (<usize>(3 * BLOCK)) << 4;
  pGm = at;
  at += (<usize>BLOCK) << 4;
  pZd = at;
  at += (<usize>drivers) << 4;
  pSums = at;
}

/** Bytes of scratch `configure` lays out from its `scratch` address (the host sizes memory with it). */
export function scratchBytes(k: i32, drivers: i32, lines: i32): usize {
  const width = <usize>(k + 1);
  return (
    ((<usize>(2 * k + 2 * drivers + drivers + 2 * lines * BLOCK + k * BLOCK + 4 * BLOCK)) << 4) +
    ((3 * <usize>lines * width) << 4)
  );
}

/** Address of the f64x2 sums of set s (0 ev/neg, 1 pos, 2 band), NL×(k+1) pairs each. */
export function sumsAddress(set: i32): usize {
  return pSums + ((<usize>(set * NL * (K + 1))) << 4);
}

/** Zeroes the sums of all three sets. */
export function reset(): void {
  memory.fill(pSums, 0, (<usize>(3 * NL * (K + 1))) << 4);
}

// ---- Generator -------------------------------------------------------------------------------

function fmix(h: v128): v128 {
  h = v128.xor(h, i32x4.shr_u(h, 16));
  h = i32x4.mul(h, i32x4.splat(0x85ebca6b));
  h = v128.xor(h, i32x4.shr_u(h, 13));
  h = i32x4.mul(h, i32x4.splat(0xc2b2ae35));
  return v128.xor(h, i32x4.shr_u(h, 16));
}

/** The 32-bit word of (seed, path, dim) for 4 paths: two keyed fmix32 rounds. */
function word(a: v128, b: v128, dim: u32): v128 {
  const h = fmix(i32x4.add(a, i32x4.splat(<i32>(dim * 0x9e3779b9 + SEED_B))));
  return fmix(v128.xor(h, b));
}

function splat(x: f32): v128 {
  return f32x4.splat(x);
}

function fma(a: v128, b: v128, c: v128): v128 {
  return f32x4.add(f32x4.mul(a, b), c);
}

/** e^x of f32 lanes (Cephes expf, relative error ~1e-7), x clamped to [−87, 88]. */
function vexp(x: v128): v128 {
  x = f32x4.min(f32x4.max(x, splat(-87)), splat(88));
  const n = f32x4.nearest(f32x4.mul(x, splat(1.44269504088896341)));
  let r = fma(n, splat(-0.693359375), x);
  r = fma(n, splat(2.1219444e-4), r);
  let p = splat(1.98756915e-4);
  p = fma(p, r, splat(1.3981999507e-3));
  p = fma(p, r, splat(8.3334519073e-3));
  p = fma(p, r, splat(4.1665795894e-2));
  p = fma(p, r, splat(1.6666665459e-1));
  p = fma(p, r, splat(5.0000001201e-1));
  const y = f32x4.add(fma(f32x4.mul(p, r), r, r), splat(1));
  const scale = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(n), i32x4.splat(127)), 23);
  return f32x4.mul(y, scale);
}

/**
 * Standard normals of 4 words: the top bit is the sign, the next 23 bits m give q = (m + ½)·2⁻²⁴ in
 * (0, ½), and z = Φ⁻¹(q) is read from a table by linear interpolation. The table (pTable, written by
 * the host from the reference's AS241 quantile) has one line per bin of m + ½ as an f32: its
 * exponent and top 6 mantissa bits (1536 bins, 2⁻¹·…2²³); each line holds (value, slope) over the
 * low 17 mantissa bits, through the bin's first and last m, so bins holding one or two m are exact.
 * |error| ≤ 1.3e-5 over every m (tested). Four scalar loads per vector (WebAssembly has no gather).
 */
function normal(w: v128): v128 {
  const bits = f32x4.add(f32x4.convert_i32x4_s(i32x4.shr_u(i32x4.shl(w, 1), 9)), splat(0.5));
  const line = i32x4.shl(i32x4.sub(i32x4.shr_u(bits, 17), i32x4.splat(TABLE_BASE)), 3);
  const frac = f32x4.convert_i32x4_s(v128.and(bits, i32x4.splat(0x1ffff)));
  let lo = v128.load64_zero(pTable + <usize>i32x4.extract_lane(line, 0));
  lo = v128.load64_lane(pTable + <usize>i32x4.extract_lane(line, 1), lo, 1);
  let hi = v128.load64_zero(pTable + <usize>i32x4.extract_lane(line, 2));
  hi = v128.load64_lane(pTable + <usize>i32x4.extract_lane(line, 3), hi, 1);
  const z = fma(i32x4.shuffle(lo, hi, 1, 3, 5, 7), frac, i32x4.shuffle(lo, hi, 0, 2, 4, 6));
  // The sign bit of the word flips the (negative) lower-half value.
  return v128.xor(z, v128.and(w, i32x4.splat(0x80000000)));
}

/**
 * The residual normals of every driver for a group, into pZd: the same words and normals as
 * `normal(word(a, b, k + d))`, but the hashes of 4 drivers run in lockstep, since each hash is a
 * chain of dependent multiplies (latency-bound one at a time).
 */
function residualNormals(a: v128, b: v128): void {
  const k = K;
  const c1 = i32x4.splat(0x85ebca6b);
  const c2 = i32x4.splat(0xc2b2ae35);
  let d = 0;
  for (; d + 4 <= D; d += 4) {
    const dim = <u32>(k + d);
    let h0 = i32x4.add(a, i32x4.splat(<i32>(dim * 0x9e3779b9 + SEED_B)));
    let h1 = i32x4.add(a, i32x4.splat(<i32>((dim + 1) * 0x9e3779b9 + SEED_B)));
    let h2 = i32x4.add(a, i32x4.splat(<i32>((dim + 2) * 0x9e3779b9 + SEED_B)));
    let h3 = i32x4.add(a, i32x4.splat(<i32>((dim + 3) * 0x9e3779b9 + SEED_B)));
    for (let round = 0; round < 2; round++) {
      if (round == 1) {
        h0 = v128.xor(h0, b);
        h1 = v128.xor(h1, b);
        h2 = v128.xor(h2, b);
        h3 = v128.xor(h3, b);
      }
      h0 = v128.xor(h0, i32x4.shr_u(h0, 16));
      h1 = v128.xor(h1, i32x4.shr_u(h1, 16));
      h2 = v128.xor(h2, i32x4.shr_u(h2, 16));
      h3 = v128.xor(h3, i32x4.shr_u(h3, 16));
      h0 = i32x4.mul(h0, c1);
      h1 = i32x4.mul(h1, c1);
      h2 = i32x4.mul(h2, c1);
      h3 = i32x4.mul(h3, c1);
      h0 = v128.xor(h0, i32x4.shr_u(h0, 13));
      h1 = v128.xor(h1, i32x4.shr_u(h1, 13));
      h2 = v128.xor(h2, i32x4.shr_u(h2, 13));
      h3 = v128.xor(h3, i32x4.shr_u(h3, 13));
      h0 = i32x4.mul(h0, c2);
      h1 = i32x4.mul(h1, c2);
      h2 = i32x4.mul(h2, c2);
      h3 = i32x4.mul(h3, c2);
      h0 = v128.xor(h0, i32x4.shr_u(h0, 16));
      h1 = v128.xor(h1, i32x4.shr_u(h1, 16));
      h2 = v128.xor(h2, i32x4.shr_u(h2, 16));
      h3 = v128.xor(h3, i32x4.shr_u(h3, 16));
    }
    const at = pZd + ((<usize>d) << 4);
    v128.store(at, normal(h0));
    v128.store(at, normal(h1), 16);
    v128.store(at, normal(h2), 32);
    v128.store(at, normal(h3), 48);
  }
  for (; d < D; d++) v128.store(pZd + ((<usize>d) << 4), normal(word(a, b, <u32>(k + d))));
}

/** Φ(x) of f32 lanes, Abramowitz–Stegun 26.2.17 (absolute error < 7.5e-8). */
function vcdf(x: v128): v128 {
  const a = f32x4.abs(x);
  const t = f32x4.div(splat(1), fma(a, splat(0.2316419), splat(1)));
  let p = splat(1.330274429);
  p = fma(p, t, splat(-1.821255978));
  p = fma(p, t, splat(1.781477937));
  p = fma(p, t, splat(-0.356563782));
  p = fma(p, t, splat(0.31938153));
  p = f32x4.mul(p, t);
  const pdf = f32x4.mul(vexp(f32x4.mul(f32x4.mul(a, a), splat(-0.5))), splat(0.3989422804014327));
  const upper = f32x4.mul(pdf, p); // 1 − Φ(|x|)
  return v128.bitselect(f32x4.sub(splat(1), upper), upper, f32x4.ge(x, splat(0)));
}

/** G(x) = expm1(x)/x (1 at 0): a series below |x| = 0.5, else (e^x − 1)/x. */
function vg(x: v128): v128 {
  // Estrin's scheme (short dependency chains): Σ x^i/(i+1)!, i ≤ 7.
  const x2 = f32x4.mul(x, x);
  const x4 = f32x4.mul(x2, x2);
  const p01 = fma(x, splat(0.5), splat(1));
  const p23 = fma(x, splat(1.0 / 24), splat(1.0 / 6));
  const p45 = fma(x, splat(1.0 / 720), splat(1.0 / 120));
  const p67 = fma(x, splat(1.0 / 40320), splat(1.0 / 5040));
  const s = fma(x4, fma(x2, p67, p45), fma(x2, p23, p01));
  const big = f32x4.ge(f32x4.abs(x), splat(0.5));
  if (!v128.any_true(big)) return s;
  const direct = f32x4.div(f32x4.sub(vexp(x), splat(1)), x);
  return v128.bitselect(direct, s, big);
}

// ---- One group of 4 paths -------------------------------------------------------------------

/** Draws f, x, e for the 4 paths in `paths` and prices every line; returns nothing, fills pG/pRes
 * and writes L (f64) of the 4 lanes to `lossOut` (8 f64 slots: lanes 0..3). */
function drawGroup(paths: v128, lossOut: usize, slot: i32): void {
  const k = K;
  const a = fmix(v128.xor(paths, i32x4.splat(<i32>SEED_A)));
  const b = fmix(v128.xor(a, i32x4.splat(0x6a09e667)));
  for (let j = 0; j < k; j++) v128.store(pZ + ((<usize>j) << 4), normal(word(a, b, <u32>j)));
  // Regime per lane: the first whose cumulative probability exceeds a uniform in [0, 1).
  const u = f32x4.mul(
    f32x4.convert_i32x4_s(i32x4.shr_u(word(a, b, REGIME_DIM), 8)),
    splat(5.9604644775390625e-8),
  );
  let taken = i32x4.splat(0);
  for (let j = 0; j < k; j++) v128.store(pF + ((<usize>j) << 4), splat(0));
  for (let r = 0; r < R; r++) {
    let mask = v128.not(taken);
    if (r < R - 1) mask = v128.and(mask, f32x4.lt(u, v128.load32_splat(pRegCum + ((<usize>r) << 2))));
    taken = v128.or(taken, mask);
    if (!v128.any_true(mask)) continue;
    const mean = pRegMean + ((<usize>(r * k)) << 2);
    const root = pRegRoot + ((<usize>(r * k * k)) << 2);
    for (let i = 0; i < k; i++) {
      let fi = v128.load32_splat(mean + ((<usize>i) << 2));
      const row = root + ((<usize>(i * k)) << 2);
      for (let j = 0; j <= i; j++) {
        fi = fma(v128.load32_splat(row + ((<usize>j) << 2)), v128.load(pZ + ((<usize>j) << 4)), fi);
      }
      for (let j = i + 1; j < k; j++) {
        fi = fma(v128.load32_splat(row + ((<usize>j) << 2)), v128.load(pZ + ((<usize>j) << 4)), fi);
      }
      const at = pF + ((<usize>i) << 4);
      v128.store(at, v128.bitselect(fi, v128.load(at), mask));
    }
  }
  for (let j = 0; j < k; j++) {
    v128.store(pFb + ((<usize>(j * BLOCK + slot)) << 4), v128.load(pF + ((<usize>j) << 4)));
  }
  // Drivers.
  residualNormals(a, b);
  // β·f of 4 drivers in lockstep (4 independent add chains); each driver's sum keeps its j order.
  let d = 0;
  for (; d + 4 <= D; d += 4) {
    const row = pBeta + ((<usize>(d * k)) << 2);
    const stride = (<usize>k) << 2;
    let s0 = splat(0);
    let s1 = splat(0);
    let s2 = splat(0);
    let s3 = splat(0);
    for (let j = 0; j < k; j++) {
      const fj = v128.load(pF + ((<usize>j) << 4));
      const at = row + ((<usize>j) << 2);
      s0 = fma(v128.load32_splat(at), fj, s0);
      s1 = fma(v128.load32_splat(at + stride), fj, s1);
      s2 = fma(v128.load32_splat(at + 2 * stride), fj, s2);
      s3 = fma(v128.load32_splat(at + 3 * stride), fj, s3);
    }
    const at = pX + ((<usize>d) << 4);
    v128.store(at, s0);
    v128.store(at, s1, 16);
    v128.store(at, s2, 32);
    v128.store(at, s3, 48);
  }
  for (; d < D; d++) {
    const row = pBeta + ((<usize>(d * k)) << 2);
    let sys = splat(0);
    for (let j = 0; j < k; j++) {
      sys = fma(v128.load32_splat(row + ((<usize>j) << 2)), v128.load(pF + ((<usize>j) << 4)), sys);
    }
    v128.store(pX + ((<usize>d) << 4), sys);
  }
  // x = β·f + e, e = μ + sd·z; a pinned driver moves by exactly c (pX held β·f until here).
  for (let d = 0; d < D; d++) {
    const sys = v128.load(pX + ((<usize>d) << 4));
    let e = fma(
      v128.load32_splat(pSd + ((<usize>d) << 2)),
      v128.load(pZd + ((<usize>d) << 4)),
      v128.load32_splat(pMu + ((<usize>d) << 2)),
    );
    let x = f32x4.add(sys, e);
    if (d == PIN_D) {
      x = splat(PIN_C);
      e = f32x4.sub(x, sys);
    }
    v128.store(pX + ((<usize>d) << 4), x);
    v128.store(pE + ((<usize>d) << 4), e);
  }
  // Lines.
  let lossLo = f64x2.splat(0);
  let lossHi = f64x2.splat(0);
  for (let l = 0; l < NL; l++) {
    const pa = load<i32>(pPrimary + ((<usize>l) << 2));
    const pb = load<i32>(pFx + ((<usize>l) << 2));
    let xa = splat(0);
    let el = splat(0);
    if (pa >= 0) {
      xa = v128.load(pX + ((<usize>pa) << 4));
      el = v128.load(pE + ((<usize>pa) << 4));
    }
    let xl = xa;
    let xfx = splat(0);
    if (pb >= 0) {
      xfx = v128.load(pX + ((<usize>pb) << 4));
      xl = f32x4.add(xl, xfx);
      el = f32x4.add(el, v128.load(pE + ((<usize>pb) << 4)));
    }
    const o = pOption + ((<usize>l) << 5);
    const right = load<f32>(o);
    let g: v128;
    let res: v128;
    let unit: v128;
    if (right == 0) {
      g = vg(xl);
      unit = f32x4.mul(g, xl);
      res = f32x4.mul(g, el);
    } else {
      const logSK = load<f32>(o, 4);
      const spot = load<f32>(o, 8);
      const strike = load<f32>(o, 12);
      const volT = load<f32>(o, 16);
      const p0 = load<f32>(o, 20);
      const sh = f32x4.mul(splat(spot), vexp(xa));
      let later: v128;
      if (volT > 0) {
        const d1 = f32x4.div(f32x4.add(f32x4.add(splat(logSK), xa), splat(0.5 * volT * volT)), splat(volT));
        const d2 = f32x4.sub(d1, splat(volT));
        if (right == 1) {
          later = f32x4.sub(f32x4.mul(sh, vcdf(d1)), f32x4.mul(splat(strike), vcdf(d2)));
        } else {
          later = f32x4.sub(
            f32x4.mul(splat(strike), vcdf(f32x4.neg(d2))),
            f32x4.mul(sh, vcdf(f32x4.neg(d1))),
          );
        }
      } else {
        later =
          right == 1
            ? f32x4.max(f32x4.sub(sh, splat(strike)), splat(0))
            : f32x4.max(f32x4.sub(splat(strike), sh), splat(0));
      }
      if (pb >= 0) later = f32x4.mul(later, vexp(xfx));
      unit = f32x4.sub(later, splat(p0));
      const zero = f32x4.eq(xl, splat(0));
      g = v128.andnot(f32x4.div(unit, xl), zero);
      res = v128.bitselect(unit, f32x4.mul(g, el), zero);
    }
    v128.store(pG + ((<usize>(l * BLOCK + slot)) << 4), g);
    v128.store(pRes + ((<usize>(l * BLOCK + slot)) << 4), res);
    const v = f64x2.splat(load<f64>(pExposure + ((<usize>l) << 3)));
    lossLo = f64x2.add(lossLo, f64x2.mul(v, f64x2.promote_low_f32x4(unit)));
    lossHi = f64x2.add(lossHi, f64x2.mul(v, f64x2.promote_low_f32x4(i32x4.shuffle(unit, unit, 2, 3, 0, 1))));
  }
  v128.store(lossOut, lossLo);
  v128.store(lossOut, lossHi, 16);
}

/** Σ over the block's 8 slots of a[slot]·b[slot] (f32 lanes, fixed tree order). */
function dot8(a: usize, b: usize): v128 {
  const s01 = fma(v128.load(a), v128.load(b), f32x4.mul(v128.load(a, 16), v128.load(b, 16)));
  const s23 = fma(v128.load(a, 32), v128.load(b, 32), f32x4.mul(v128.load(a, 48), v128.load(b, 48)));
  const s45 = fma(v128.load(a, 64), v128.load(b, 64), f32x4.mul(v128.load(a, 80), v128.load(b, 80)));
  const s67 = fma(v128.load(a, 96), v128.load(b, 96), f32x4.mul(v128.load(a, 112), v128.load(b, 112)));
  return f32x4.add(f32x4.add(s01, s23), f32x4.add(s45, s67));
}

/** sum (f64x2) += the 4 f32 lanes of v, as (lane 0 + lane 2, lane 1 + lane 3). */
function addInto(sum: usize, v: v128): void {
  const lo = f64x2.promote_low_f32x4(v);
  const hi = f64x2.promote_low_f32x4(i32x4.shuffle(v, v, 2, 3, 0, 1));
  v128.store(sum, f64x2.add(v128.load(sum), f64x2.add(lo, hi)));
}

/**
 * sums[set] += Σ over the block's slots of mask·(G·f_j, residual term), every line. The set's masks
 * (one per slot) are applied to a copy of each line's G (pGm), so G itself serves every set.
 */
function accumulateBlock(set: i32): void {
  const k = K;
  const width = k + 1;
  const masks = pMask + ((<usize>(set * BLOCK)) << 4);
  let sum = pSums + ((<usize>(set * NL * width)) << 4);
  for (let l = 0; l < NL; l++) {
    const gl = pG + ((<usize>(l * BLOCK)) << 4);
    const rl = pRes + ((<usize>(l * BLOCK)) << 4);
    let rsum = splat(0);
    for (let b = 0; b < BLOCK; b++) {
      const at = (<usize>b) << 4;
      const m = v128.load(masks + at);
      v128.store(pGm + at, v128.and(v128.load(gl + at), m));
      rsum = f32x4.add(rsum, v128.and(v128.load(rl + at), m));
    }
    for (let j = 0; j < k; j++) {
      addInto(sum, dot8(pGm, pFb + ((<usize>(j * BLOCK)) << 4)));
      sum += 16;
    }
    addInto(sum, rsum);
    sum += 16;
  }
}

/** accumulateBlock for a block whose every lane is in the set (pass 1's full blocks): no masks. */
function accumulateFullBlock(set: i32): void {
  const k = K;
  const width = k + 1;
  let sum = pSums + ((<usize>(set * NL * width)) << 4);
  for (let l = 0; l < NL; l++) {
    const gl = pG + ((<usize>(l * BLOCK)) << 4);
    const rl = pRes + ((<usize>(l * BLOCK)) << 4);
    let rsum = v128.load(rl);
    for (let b = 1; b < BLOCK; b++) rsum = f32x4.add(rsum, v128.load(rl + ((<usize>b) << 4)));
    for (let j = 0; j < k; j++) {
      addInto(sum, dot8(gl, pFb + ((<usize>(j * BLOCK)) << 4)));
      sum += 16;
    }
    addInto(sum, rsum);
    sum += 16;
  }
}

/**
 * Pass 1 over paths first..first+count−1: writes each path's L (f64) at `loss` and adds the ev
 * components to set 0. Lanes past the end are drawn and left out by their mask.
 */
export function pass1(first: u32, count: i32, loss: usize, scratchLoss: usize): void {
  let slot = 0;
  for (let i = 0; i < count; i += 4) {
    const ids = i32x4.add(i32x4.splat(<i32>(first + <u32>i)), i32x4(0, 1, 2, 3));
    drawGroup(ids, scratchLoss, slot);
    const n = min(4, count - i);
    v128.store(pMask + ((<usize>slot) << 4), i32x4.lt_s(i32x4(0, 1, 2, 3), i32x4.splat(n)));
    for (let lane = 0; lane < n; lane++) {
      store<f64>(loss + ((<usize>(i + lane)) << 3), load<f64>(scratchLoss + ((<usize>lane) << 3)));
    }
    if (++slot == BLOCK) {
      if (count - i >= 4) accumulateFullBlock(0);
      else accumulateBlock(0);
      slot = 0;
    }
  }
  if (slot > 0) {
    for (; slot < BLOCK; slot++) v128.store(pMask + ((<usize>slot) << 4), i32x4.splat(0));
    accumulateBlock(0);
  }
}

/**
 * Pass 2 over `count` path ids (u32 at `ids`) of one set (0 neg, 1 pos, 2 band): adds each path's
 * components to that set's sums.
 */
export function pass2(ids: usize, count: i32, set: i32, scratchLoss: usize): void {
  let slot = 0;
  for (let i = 0; i < count; i += 4) {
    const n = min(4, count - i);
    // Lanes past the end repeat the last id, outside the set.
    for (let lane = 0; lane < 4; lane++) {
      store<u32>(scratchLoss + ((<usize>lane) << 2), load<u32>(ids + ((<usize>(i + min(lane, n - 1))) << 2)));
    }
    drawGroup(v128.load(scratchLoss), scratchLoss, slot);
    const at = pMask + ((<usize>(set * BLOCK + slot)) << 4);
    v128.store(at, i32x4.lt_s(i32x4(0, 1, 2, 3), i32x4.splat(n)));
    if (++slot == BLOCK) {
      if (count - i >= 4) accumulateFullBlock(set);
      else accumulateBlock(set);
      slot = 0;
    }
  }
  if (slot > 0) {
    for (let b = slot; b < BLOCK; b++) v128.store(pMask + ((<usize>(set * BLOCK + b)) << 4), i32x4.splat(0));
    accumulateBlock(set);
  }
}
