"""numba peer of the calculation benchmark (bench/calc.bench.ts): the same two-pass tail
decomposition as the `wasm` kernel (calc/wasm/assembly/kernel.ts), compiled by numba with
`parallel=True`, float32, for the linear books of the M and L cases. The bar a demanding quant sets:

- A counter-based generator addressed by (path, dimension): the kernel's hash (two keyed rounds of
  murmur3's fmix32) and its table quantile, so pass 2 regenerates only the 2·m tail paths.
- float32 draws, factors, log-returns and G; L per path in float64; the component sums per block of
  BLOCK paths as one float32 matrix product G.T @ f (BLAS sgemm), added into float64.
- THREADS numba threads over fixed chunks of paths (prange); each chunk's sums land in its own slot
  and are added in chunk order afterwards, so the result does not depend on the thread count. BLAS
  is held to one thread per call so that the numba threads do not oversubscribe the cores.
- Compilation is done once before the timed runs (the timings are warm, as ours are).

Same stdin/stdout JSON as bench/numpy-peer.py, plus "numba".
"""

import os

THREADS = 2
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
os.environ.setdefault("NUMBA_NUM_THREADS", str(THREADS))

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from statistics import NormalDist  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

CHUNK = 4096
BLOCK = 256
BINS = 24 * 64
GOLDEN = 0x9E3779B9


def seed_keys(seed):
    mask = (1 << 64) - 1
    z = (seed + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return z >> 32, z & 0xFFFFFFFF


def quantile_table():
    """The kernel's Φ⁻¹ table (see bench/numpy-peer.py): (value, slope) per bin."""
    inv = NormalDist().inv_cdf
    value = np.zeros(BINS, dtype=np.float32)
    slope = np.zeros(BINS, dtype=np.float32)

    def fraction(q):
        return int(np.array([q], dtype=np.float32).view(np.uint32)[0]) & 0x1FFFF

    for b in range(BINS):
        exponent = 126 + (b >> 6) - 127
        low = 2.0**exponent * (1 + (b & 63) / 64)
        high = 2.0**exponent * (1 + ((b & 63) + 1) / 64)
        first = max(0, math.ceil(low - 0.5)) + 0.5
        last = min(2**23 - 1, math.ceil(high - 0.5) - 1) + 0.5
        if first > last:
            continue
        z0, z1 = inv(first * 2.0**-24), inv(last * 2.0**-24)
        f0, f1 = fraction(first), fraction(last)
        s = 0.0 if f1 == f0 else (z1 - z0) / (f1 - f0)
        value[b] = z0 - s * f0
        slope[b] = s
    return value, slope


@njit(inline="always")
def fmix(h):
    h = h ^ (h >> np.uint32(16))
    h = np.uint32(h * np.uint32(0x85EBCA6B))
    h = h ^ (h >> np.uint32(13))
    h = np.uint32(h * np.uint32(0xC2B2AE35))
    return np.uint32(h ^ (h >> np.uint32(16)))


@njit(cache=False)
def draw_block(ids, sa, offsets, regime_offset, tv, ts, cum, means, roots, beta, sd, mu, pin_d, pin_c, v,
               ab, words, zf, f, x, g, e, ones, loss):
    """f (k×n), G and the residual terms G·e (D×n, driver-major so every inner loop runs along the
    block's paths and vectorises) and L of the paths `ids`."""
    n = ids.shape[0]
    k = f.shape[0]
    dims = offsets.shape[0]
    drivers = sd.shape[0]
    a = ab[0]
    b = ab[1]
    for i in range(n):
        a[i] = fmix(np.uint32(ids[i]) ^ sa)
        b[i] = fmix(a[i] ^ np.uint32(0x6A09E667))
    for d in range(dims):
        off = offsets[d]
        w = words[d]
        for i in range(n):
            w[i] = fmix(fmix(np.uint32(a[i] + off)) ^ b[i])
    # Normals: the kernel's table quantile of each word (q' = m + ½ as f32, its bits index the table).
    for d in range(dims):
        w = words[d]
        z = zf[d]
        for i in range(n):
            z[i] = np.float32((w[i] >> np.uint32(8)) & np.uint32(0x7FFFFF)) + np.float32(0.5)
        bits = z.view(np.uint32)
        for i in range(n):
            t = bits[i]
            line = (t >> np.uint32(17)) - np.uint32(126 << 6)
            q = tv[line] + ts[line] * np.float32(t & np.uint32(0x1FFFF))
            z[i] = -q if w[i] >> np.uint32(31) else q
    # Factors: the lane's regime, f = mean_r + root_r·z.
    for i in range(n):
        u = np.float32(fmix(fmix(np.uint32(a[i] + regime_offset)) ^ b[i]) >> np.uint32(8)) * np.float32(2.0**-24)
        r = 0
        while r < cum.shape[0] - 1 and u >= cum[r]:
            r += 1
        for p in range(k):
            acc = means[r, p]
            for j in range(k):
                acc += roots[r, p, j] * zf[j, i]
            f[p, i] = acc
    # β·f for the whole block: one sgemm (D×k by k×n).
    np.dot(beta, f, x)
    for i in range(n):
        loss[i] = 0.0
    for d in range(drivers):
        xs = x[d]
        zs = zf[k + d]
        gs = g[d]
        es = e[d]
        s_d = sd[d]
        m_d = mu[d]
        v_d = v[d]
        big = False
        for i in range(n):
            sys_ = xs[i]
            ed = s_d * zs[i] + m_d
            xd = sys_ + ed
            if d == pin_d:
                xd = pin_c
                ed = pin_c - sys_
            x2 = xd * xd
            gd = (np.float32(1) + xd * np.float32(0.5)) + x2 * (np.float32(1 / 6) + xd * np.float32(1 / 24))
            gd += x2 * x2 * ((np.float32(1 / 120) + xd * np.float32(1 / 720))
                             + x2 * (np.float32(1 / 5040) + xd * np.float32(1 / 40320)))
            big |= abs(xd) >= np.float32(0.5)
            xs[i] = xd
            gs[i] = gd
            es[i] = ed
        if big:  # G = expm1(x)/x beyond the series' range (rare)
            for i in range(n):
                if abs(xs[i]) >= np.float32(0.5):
                    gs[i] = np.float32(math.expm1(xs[i]) / xs[i])
        for i in range(n):
            es[i] = gs[i] * es[i]
            loss[i] += v_d * np.float64(gs[i] * xs[i])


@njit(parallel=True)
def sweep(ids, chunk, sa, offsets, regime_offset, tv, ts, cum, means, roots, beta, sd, mu, pin_d, pin_c, v,
          block, out_f, out_e, loss):
    """Draws the paths `ids` in chunks (one per prange step) and writes each chunk's Σ G·f (D×k) and
    Σ G·e (D) into its slot of out_f/out_e (f64) and each path's L into `loss`."""
    total = ids.shape[0]
    chunks = (total + chunk - 1) // chunk
    k = beta.shape[1]
    drivers = beta.shape[0]
    dims = offsets.shape[0]
    for c in prange(chunks):
        ab = np.empty((2, block), dtype=np.uint32)
        words = np.empty((dims, block), dtype=np.uint32)
        zf = np.empty((dims, block), dtype=np.float32)
        f = np.zeros((k, block), dtype=np.float32)
        x = np.empty((drivers, block), dtype=np.float32)
        g = np.zeros((drivers, block), dtype=np.float32)
        e = np.zeros((drivers, block), dtype=np.float32)
        ones = np.ones(block, dtype=np.float32)
        lb = np.empty(block, dtype=np.float64)
        gf = np.empty((drivers, k), dtype=np.float32)
        ge = np.empty(drivers, dtype=np.float32)
        start = c * chunk
        end = min(start + chunk, total)
        for at in range(start, end, block):
            n = min(block, end - at)
            if n < block:  # a short last block: zero the unused columns so the products ignore them
                f[:, n:] = 0
                g[:, n:] = 0
                e[:, n:] = 0
            draw_block(ids[at : at + n], sa, offsets, regime_offset, tv, ts, cum, means, roots, beta, sd, mu,
                       pin_d, pin_c, v, ab, words, zf, f, x, g, e, ones, lb)
            loss[at : at + n] = lb[:n]
            # Σ over the block's paths of G·f_j and G·e: one sgemm and one sgemv, in f32.
            np.dot(g, f.T, gf)
            np.dot(e, ones, ge)
            for d in range(drivers):
                for j in range(k):
                    out_f[c, d, j] += gf[d, j]
                out_e[c, d] += ge[d]


class Model:
    def __init__(self, s):
        k = s["k"]
        self.k = k
        beta = np.asarray(s["beta"], dtype=np.float32).reshape(-1, k)
        self.beta = np.ascontiguousarray(beta)
        self.drivers = beta.shape[0]
        self.sd = np.asarray(s["residualSd"], dtype=np.float32)
        self.mu = np.asarray(s["residualMean"] or [0.0] * self.drivers, dtype=np.float32)
        self.v = np.asarray(s["exposure"], dtype=np.float64)
        self.cum = np.cumsum([r["probability"] for r in s["regimes"]]).astype(np.float32)
        self.means = np.asarray([r["mean"] for r in s["regimes"]], dtype=np.float32).reshape(-1, k)
        self.roots = np.asarray([r["root"] for r in s["regimes"]], dtype=np.float32).reshape(-1, k, k)
        pinned = s["pinned"]
        self.pin_d = -1 if pinned is None else pinned["driver"]
        self.pin_c = np.float32(0 if pinned is None else pinned["logReturn"])
        sa, sb = seed_keys(s["seed"])
        self.sa, self.sb = np.uint32(sa), np.uint32(sb)
        dims = np.arange(k + self.drivers, dtype=np.uint64)
        self.offsets = ((dims * GOLDEN + sb) & 0xFFFFFFFF).astype(np.uint32)
        self.regime_offset = np.uint32((0xFFFFFFFF * GOLDEN + sb) & 0xFFFFFFFF)
        self.tv, self.ts = quantile_table()

    def sums(self, ids):
        chunks = (len(ids) + CHUNK - 1) // CHUNK
        out_f = np.zeros((chunks, self.drivers, self.k))
        out_e = np.zeros((chunks, self.drivers))
        loss = np.empty(len(ids))
        sweep(ids, CHUNK, self.sa, self.offsets, self.regime_offset, self.tv, self.ts, self.cum,
              self.means, self.roots, self.beta, self.sd, self.mu, self.pin_d, self.pin_c, self.v, BLOCK,
              out_f, out_e, loss)
        # Chunk order: the same sums whatever the thread count.
        total_f = np.zeros((self.drivers, self.k))
        total_e = np.zeros(self.drivers)
        for c in range(chunks):
            total_f += out_f[c]
            total_e += out_e[c]
        return total_f, total_e, loss


def run(model, paths, tail):
    m = int(np.ceil(tail * paths - 1e-9))
    ev_f, ev_e, loss = model.sums(np.arange(paths, dtype=np.int64))
    part = np.argpartition(loss, (m - 1, paths - m))
    neg = np.sort(part[:m])
    pos = np.sort(part[paths - m :])
    worst_f, worst_e, _ = model.sums(neg)
    model.sums(pos)
    v, beta = model.v, model.beta
    return {
        "ev_expected": float(loss.mean()),
        "ev_total": float(((v[:, None] * beta * ev_f).sum() + (v * ev_e).sum()) / paths),
        "cvar_neg_expected": float(loss[neg].mean()),
        "cvar_neg_total": float(((v[:, None] * beta * worst_f).sum() + (v * worst_e).sum()) / m),
    }, 2 * m


def main():
    s = json.load(sys.stdin)
    numba.set_num_threads(THREADS)
    model = Model(s)
    run(model, min(s["paths"], 2 * CHUNK), s["tail"])  # compile (not timed)
    times = []
    cpu = []
    checks = None
    redrawn = 0
    for _ in range(s["runs"]):
        start = time.perf_counter()
        cpu_start = time.process_time()
        checks, redrawn = run(model, s["paths"], s["tail"])
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - cpu_start) * 1000)
    json.dump(
        {
            "times_ms": times,
            "cpu_ms": cpu,
            "numpy": np.__version__,
            "numba": numba.__version__,
            "python": sys.version.split()[0],
            "blas": "",
            "threads": f"{numba.get_num_threads()} numba threads (generator and all work), BLAS 1 thread per call",
            "redraws": f"pass 2 redraws only the {redrawn} tail paths (worst and best m)",
            "checks": checks,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
