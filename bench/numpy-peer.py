"""numpy peer of the calculation benchmark (bench/calc.bench.ts): the same two-pass tail
decomposition as calc/simulation.ts, written the way a quant would in numpy (vectorised, chunked,
BLAS for the matrix products), for the linear books of the M and L cases.

Reads a scenario as JSON on stdin: k, regimes [{probability, mean, root}], beta (D*k), residualSd,
exposure, pinned ({driver, logReturn} or null), paths, tail, runs. Writes JSON on stdout:
{"times_ms": [...], "numpy", "python", "blas", "checks": {ev_expected, ev_total, cvar_neg_expected,
cvar_neg_total}}: the mean and worst-tail mean of the portfolio P&L, and what the components of each
sum to (equal to them: the decomposition is exact), to set beside the reference's figures.

Pass 1 draws every chunk of paths (a generator seeded by (seed, chunk), so any chunk can be drawn
again), keeps L per path and accumulates the ev components G.T @ f and sum(G*e); pass 2 draws the
chunks again and accumulates the components of the worst and best m paths.
"""

import json
import sys
import time

import numpy as np

CHUNK = 2048


def run(s):
    k = s["k"]
    beta = np.asarray(s["beta"], dtype=np.float64).reshape(-1, k)
    drivers = beta.shape[0]
    sd = np.asarray(s["residualSd"], dtype=np.float64)
    v = np.asarray(s["exposure"], dtype=np.float64)
    probs = np.cumsum([r["probability"] for r in s["regimes"]])
    means = [np.asarray(r["mean"]) for r in s["regimes"]]
    roots = [np.asarray(r["root"]).reshape(k, k) for r in s["regimes"]]
    pinned = s["pinned"]
    paths = s["paths"]
    m = int(np.ceil(s["tail"] * paths - 1e-9))

    def draw(chunk):
        rng = np.random.default_rng([12345, chunk])
        n = min(CHUNK, paths - chunk * CHUNK)
        z = rng.standard_normal((n, k))
        u = rng.random(n)
        regime = np.searchsorted(probs, u, side="right").clip(0, len(roots) - 1)
        f = np.empty((n, k))
        for r, (mean, root) in enumerate(zip(means, roots)):
            rows = regime == r
            f[rows] = mean + z[rows] @ root.T
        systematic = f @ beta.T
        e = rng.standard_normal((n, drivers)) * sd
        if pinned is not None:
            d = pinned["driver"]
            e[:, d] = pinned["logReturn"] - systematic[:, d]
        x = systematic + e
        move = np.expm1(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(x == 0, 1.0, move / x)
        return f, e, g, move @ v

    chunks = (paths + CHUNK - 1) // CHUNK
    loss = np.empty(paths)
    ev_f = np.zeros((drivers, k))
    ev_e = np.zeros(drivers)
    for c in range(chunks):
        f, e, g, L = draw(c)
        loss[c * CHUNK : c * CHUNK + len(L)] = L
        ev_f += g.T @ f
        ev_e += (g * e).sum(axis=0)
    order = np.argsort(loss, kind="stable")
    flags = np.zeros(paths, dtype=np.int8)
    flags[order[:m]] |= 1
    flags[order[-m:]] |= 2
    sums = {bit: (np.zeros((drivers, k)), np.zeros(drivers)) for bit in (1, 2)}
    for c in range(chunks):
        rows = flags[c * CHUNK : (c + 1) * CHUNK]
        if not rows.any():
            continue
        f, e, g, _ = draw(c)
        for bit, (sf, se) in sums.items():
            sel = (rows & bit) != 0
            if sel.any():
                sf += g[sel].T @ f[sel]
                se += (g[sel] * e[sel]).sum(axis=0)
    worst_f, worst_e = sums[1]
    return {
        "ev_expected": float(loss.mean()),
        "ev_total": float(((v[:, None] * beta * ev_f).sum() + (v * ev_e).sum()) / paths),
        "cvar_neg_expected": float(loss[order[:m]].mean()),
        "cvar_neg_total": float(((v[:, None] * beta * worst_f).sum() + (v * worst_e).sum()) / m),
    }


def main():
    s = json.load(sys.stdin)
    times = []
    checks = None
    for _ in range(s["runs"]):
        start = time.perf_counter()
        checks = run(s)
        times.append((time.perf_counter() - start) * 1000)
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        blas = deps["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        blas = ""
    json.dump(
        {
            "times_ms": times,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
            "blas": blas,
            "checks": checks,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
