"""numpy peer of calc/simulation.ts (issue 12, "benchmark honesty"): the same two-pass tail
decomposition a quant would write in numpy, vectorised over paths, chunked, with the factor
products through BLAS (matrix products), run on the very scenario the TypeScript backends run.

Reads a JSON scenario on stdin (k, regimes [{probability, mean, root}], beta D×k row-major,
residualSd, exposure, pinned, residualMean, paths, tail, seed, runs) and prints one JSON line:
{numpy, blas, times_ms, result: {ev, cvar_neg, cvar_pos} per driver (D×(k+1)), checks}.

Pass 1 draws every path (per-chunk generators, so pass 2 can draw the same numbers again) and keeps
only the portfolio P&L L. The tail sets are the m = ceil(tail·P) worst and best paths. Pass 2 draws
again and sums, per driver and projection, v·g(x)·β·f and v·g(x)·e over all paths and over each tail
set (g(x) = expm1(x)/x), which is §6's exact decomposition: the components of a path sum to its P&L.
Lines (options, FX pairs) are not modelled here; the benchmark runs this peer on linear books only.
"""

import json
import math
import sys
import time

import numpy as np

CHUNK = 8192


def simulate(spec):
    k = spec["k"]
    paths = spec["paths"]
    beta = np.asarray(spec["beta"], dtype=np.float64).reshape(-1, k)
    drivers = beta.shape[0]
    sd = np.asarray(spec["residualSd"], dtype=np.float64)
    exposure = np.asarray(spec["exposure"], dtype=np.float64)
    residual_mean = np.asarray(spec.get("residualMean") or np.zeros(drivers), dtype=np.float64)
    regimes = [
        (
            r["probability"],
            np.asarray(r["mean"], dtype=np.float64),
            np.asarray(r["root"], dtype=np.float64).reshape(k, k),
        )
        for r in spec["regimes"]
    ]
    cumulative = np.cumsum([p for p, _, _ in regimes])
    pinned = spec.get("pinned")
    seed = spec["seed"]
    chunks = range(0, paths, CHUNK)

    def draw(start):
        rng = np.random.default_rng([seed, start])
        n = min(CHUNK, paths - start)
        u = rng.random(n)
        z = rng.standard_normal((n, k))
        eps = rng.standard_normal((n, drivers))
        which = np.minimum(np.searchsorted(cumulative, u, side="right"), len(regimes) - 1)
        f = np.empty((n, k))
        for r, (_, mean, root) in enumerate(regimes):
            rows = which == r
            f[rows] = mean + z[rows] @ root.T
        e = eps * sd + residual_mean
        x = f @ beta.T + e
        if pinned is not None:
            d, c = pinned["driver"], pinned["logReturn"]
            e[:, d] = c - f @ beta[d]
            x[:, d] = c
        return f, e, x

    # Pass 1: the portfolio P&L of every path.
    total = np.empty(paths)
    for start in chunks:
        _, _, x = draw(start)
        total[start : start + x.shape[0]] = np.expm1(x) @ exposure
    m = math.ceil(spec["tail"] * paths)
    worst = np.zeros(paths, dtype=bool)
    best = np.zeros(paths, dtype=bool)
    worst[np.argpartition(total, m - 1)[:m]] = True
    best[np.argpartition(total, paths - m)[paths - m :]] = True

    # Pass 2: the components, summed over all paths and over each tail set.
    sums = {name: (np.zeros((drivers, k)), np.zeros(drivers)) for name in ("ev", "cvar_neg", "cvar_pos")}
    for start in chunks:
        f, e, x = draw(start)
        n = x.shape[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            g = np.where(x == 0.0, 1.0, np.expm1(x) / x)
        w = g * exposure
        for name, rows in (
            ("ev", slice(None)),
            ("cvar_neg", worst[start : start + n]),
            ("cvar_pos", best[start : start + n]),
        ):
            factor, residual = sums[name]
            factor += w[rows].T @ f[rows]
            residual += np.einsum("pd,pd->d", w[rows], e[rows])
    counts = {"ev": paths, "cvar_neg": m, "cvar_pos": m}
    result = {}
    for name, (factor, residual) in sums.items():
        components = np.concatenate([beta * factor, residual[:, None]], axis=1) / counts[name]
        result[name] = components
    checks = {
        "ev_total": float(result["ev"].sum()),
        "ev_expected": float(total.mean()),
        "cvar_neg_total": float(result["cvar_neg"].sum()),
        "cvar_neg_expected": float(total[worst].mean()),
    }
    return result, checks


def main():
    spec = json.load(sys.stdin)
    times = []
    result, checks = None, None
    for _ in range(spec.get("runs", 1)):
        started = time.perf_counter()
        result, checks = simulate(spec)
        times.append((time.perf_counter() - started) * 1000)
    try:
        blas = ", ".join(
            sorted({str(v.get("name", "")) for v in np.show_config(mode="dicts")["Build Dependencies"].values() if isinstance(v, dict)} - {""})
        )
    except Exception:  # noqa: BLE001 (older numpy: no dict mode)
        blas = "unknown"
    print(
        json.dumps(
            {
                "numpy": np.__version__,
                "blas": blas,
                "python": sys.version.split()[0],
                "times_ms": times,
                "result": {name: values.tolist() for name, values in result.items()},
                "checks": checks,
            }
        )
    )


if __name__ == "__main__":
    main()
