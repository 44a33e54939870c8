"""numpy peer of the calculation benchmark (bench/calc.bench.ts): the same two-pass tail
decomposition as the `wasm` kernel (calc/wasm/assembly/kernel.ts), written the way a quant would in
numpy (vectorised over blocks of paths, BLAS for the matrix products), for the linear books of the M
and L cases. It does the work our kernel does, in the precision our kernel uses:

- float32 draws, factors, log-returns, G and the per-block component sums; L per path and the sums
  over blocks in float64 (methodology §5).
- A counter-based generator addressed by (path, dimension): the kernel's hash (two keyed rounds of
  murmur3's fmix32) and its table quantile (AS241 at each bin's ends, linear in between). So pass 2
  regenerates only the paths of the two tail sets (worst and best m), as the kernel does, and not
  the chunks that hold them.
- Pass 1 draws every path, keeps L and accumulates the ev components; the tail sets come from a
  selection on L (argpartition, O(P)); pass 2 draws each set's paths and accumulates that set.
- Threads: THREADS worker threads over fixed chunks of paths (numpy's ufuncs release the GIL), each
  chunk's sums added in chunk order, so the result does not depend on the thread count; BLAS is held
  to one thread per call (set before numpy is imported) so the two workers do not oversubscribe.

Reads a scenario as JSON on stdin: k, regimes [{probability, mean, root}], beta (D*k), residualSd,
exposure, residualMean (or null), pinned ({driver, logReturn} or null), paths, tail, seed, runs.
Writes JSON on stdout: {"times_ms": [...], "numpy", "python", "blas", "threads", "redraws",
"checks": {ev_expected, ev_total, cvar_neg_expected, cvar_neg_total}}: the mean and worst-tail mean
of the portfolio P&L and what the components of each sum to (equal up to float32 rounding: the
decomposition is exact), to set beside our figures.
"""

import os

THREADS = 2
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from statistics import NormalDist  # noqa: E402

import numpy as np  # noqa: E402

CHUNK = 4096  # paths per task (pass 1) or tail ids per task (pass 2)
BLOCK = 512  # paths per vectorised draw inside a task
M32 = np.uint32(0xFFFFFFFF)
C1 = np.uint32(0x85EBCA6B)
C2 = np.uint32(0xC2B2AE35)
GOLDEN = 0x9E3779B9
REGIME_DIM = 0xFFFFFFFF
BINS = 24 * 64


def seed_keys(seed):
    """splitmix64's finaliser of the 64-bit seed: two 32-bit keys (as calc/kernels/wasm-kernel.ts)."""
    mask = (1 << 64) - 1
    z = (seed + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return z >> 32, z & 0xFFFFFFFF


def quantile_table():
    """The kernel's Φ⁻¹ table: per bin of q' = m + ½ (f32 exponent and top 6 mantissa bits), the line
    through the exact quantiles of the bin's first and last q', over the low 17 mantissa bits."""
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


def fmix(h):
    h ^= h >> np.uint32(16)
    h *= C1
    h ^= h >> np.uint32(13)
    h *= C2
    h ^= h >> np.uint32(16)
    return h


class Model:
    def __init__(self, s):
        k = s["k"]
        self.k = k
        self.beta_t = np.ascontiguousarray(np.asarray(s["beta"], dtype=np.float32).reshape(-1, k).T)
        self.drivers = self.beta_t.shape[1]
        self.sd = np.asarray(s["residualSd"], dtype=np.float32)
        self.mu = np.asarray(s["residualMean"] or [0.0] * self.drivers, dtype=np.float32)
        self.v = np.asarray(s["exposure"], dtype=np.float64)
        self.cum = np.cumsum([r["probability"] for r in s["regimes"]]).astype(np.float32)
        self.means = [np.asarray(r["mean"], dtype=np.float32) for r in s["regimes"]]
        self.roots_t = [np.asarray(r["root"], dtype=np.float32).reshape(k, k).T.copy() for r in s["regimes"]]
        self.pinned = s["pinned"]
        sa, sb = seed_keys(s["seed"])
        self.sa, self.sb = np.uint32(sa), np.uint32(sb)
        dims = np.arange(k + self.drivers, dtype=np.uint64)
        self.offsets = ((dims * GOLDEN + sb) & 0xFFFFFFFF).astype(np.uint32)
        self.regime_offset = np.uint32((REGIME_DIM * GOLDEN + sb) & 0xFFFFFFFF)
        self.table_value, self.table_slope = quantile_table()

    def normals(self, w):
        """The kernel's `normal`: sign from the top bit, q' = m + ½ from the next 23 bits, table line."""
        m = ((w << np.uint32(1)) >> np.uint32(9)).astype(np.float32) + np.float32(0.5)
        bits = m.view(np.uint32)
        line = (bits >> np.uint32(17)) - np.uint32(126 << 6)
        frac = (bits & np.uint32(0x1FFFF)).astype(np.float32)
        z = self.table_value[line] + self.table_slope[line] * frac
        return np.where(w >> np.uint32(31), -z, z)

    def draw(self, ids):
        """f (n×k), e (n×D), G (n×D) and L (n, f64) of the paths `ids`, float32 throughout."""
        with np.errstate(over="ignore"):
            a = fmix(ids.astype(np.uint32) ^ self.sa)
            b = fmix(a ^ np.uint32(0x6A09E667))
            words = fmix(fmix(a[:, None] + self.offsets[None, :]) ^ b[:, None])
            u = (fmix(fmix(a + self.regime_offset) ^ b) >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)
        z = self.normals(words)
        k = self.k
        regime = np.searchsorted(self.cum[:-1], u, side="right")
        f = np.empty((len(ids), k), dtype=np.float32)
        for r, (mean, root_t) in enumerate(zip(self.means, self.roots_t)):
            rows = regime == r
            f[rows] = mean + z[rows, :k] @ root_t
        systematic = f @ self.beta_t
        e = z[:, k:] * self.sd + self.mu
        if self.pinned is not None:
            d = self.pinned["driver"]
            e[:, d] = np.float32(self.pinned["logReturn"]) - systematic[:, d]
        x = systematic + e
        g = g_of(x)
        loss = (g * x) @ self.v  # f32 unit P&L, summed over drivers in f64
        return f, e, g, loss

    def sums(self, ids):
        """Σ over the paths `ids` of G·f_j (D×k) and G·e (D), per BLOCK in f32, then in f64."""
        total_f = np.zeros((self.drivers, self.k))
        total_e = np.zeros(self.drivers)
        losses = []
        for at in range(0, len(ids), BLOCK):
            f, e, g, loss = self.draw(ids[at : at + BLOCK])
            total_f += g.T @ f
            total_e += (g * e).sum(axis=0, dtype=np.float32)
            losses.append(loss)
        return total_f, total_e, np.concatenate(losses) if losses else np.empty(0)


def g_of(x):
    """G(x) = expm1(x)/x: the kernel's series below |x| = 0.5, else the quotient."""
    x2 = x * x
    s = (1 + x * np.float32(0.5)) + x2 * (np.float32(1 / 6) + x * np.float32(1 / 24))
    s += x2 * x2 * ((np.float32(1 / 120) + x * np.float32(1 / 720)) + x2 * (np.float32(1 / 5040) + x * np.float32(1 / 40320)))
    big = np.abs(x) >= 0.5
    if big.any():
        s[big] = np.expm1(x[big]) / x[big]
    return s


def run(s, pool):
    model = Model(s)
    paths = s["paths"]
    m = int(np.ceil(s["tail"] * paths - 1e-9))
    starts = list(range(0, paths, CHUNK))
    parts = list(pool.map(lambda c: model.sums(np.arange(c, min(c + CHUNK, paths))), starts))
    loss = np.concatenate([p[2] for p in parts])
    ev_f = sum(p[0] for p in parts)
    ev_e = sum(p[1] for p in parts)
    part = np.argpartition(loss, (m - 1, paths - m))
    tails = {"neg": np.sort(part[:m]), "pos": np.sort(part[paths - m :])}
    tail_sums = {}
    for name, ids in tails.items():
        chunks = list(pool.map(lambda c: model.sums(ids[c : c + CHUNK]), range(0, m, CHUNK)))
        tail_sums[name] = (sum(c[0] for c in chunks), sum(c[1] for c in chunks))
    v, beta = model.v, model.beta_t.T
    worst_f, worst_e = tail_sums["neg"]
    return {
        "ev_expected": float(loss.mean()),
        "ev_total": float(((v[:, None] * beta * ev_f).sum() + (v * ev_e).sum()) / paths),
        "cvar_neg_expected": float(loss[tails["neg"]].mean()),
        "cvar_neg_total": float(((v[:, None] * beta * worst_f).sum() + (v * worst_e).sum()) / m),
    }, 2 * m


def main():
    s = json.load(sys.stdin)
    times = []
    cpu = []
    checks = None
    redrawn = 0
    with ThreadPoolExecutor(THREADS) as pool:
        for _ in range(s["runs"]):
            start = time.perf_counter()
            cpu_start = time.process_time()
            checks, redrawn = run(s, pool)
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - cpu_start) * 1000)
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        blas = deps["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        blas = ""
    json.dump(
        {
            "times_ms": times,
            "cpu_ms": cpu,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
            "blas": blas,
            "threads": f"{THREADS} threads (generator and all work), BLAS 1 thread per call",
            "redraws": f"pass 2 redraws only the {redrawn} tail paths (worst and best m)",
            "checks": checks,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
