"""Partial-OT time for the PU audit at n = 1k, 5k, 20k (source = target = n points,
cosine cost, mass 0.7): POT's exact solver vs the entropic vector-form solver, one run.

    python bench/partial_ot.py [--sizes 1000 5000 20000] [--exact-max 5000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgeaudit.audits.partial_ot import cosine_cost, entropic_partial_marginals, transported_mass


def planted(n: int, dim: int = 384, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.normal(size=dim)
    src = u + 2.0 * rng.normal(size=(n, dim))
    tgt = np.where((rng.random(n) < 0.7)[:, None], 1.0, -1.0) * (u + 2.0 * rng.normal(size=(n, dim)))
    return src.astype(np.float32), tgt.astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--exact-max", type=int, default=5000, help="largest n for the exact solver")
    ap.add_argument("--max-iter", type=int, default=100)
    args = ap.parse_args()
    print(f"{'n':>6} {'exact s':>9} {'entropic s':>11} {'iters':>6} {'top-70% overlap':>16}")
    for n in args.sizes:
        src, tgt = planted(n)
        exact_s, overlap = float("nan"), float("nan")
        if n <= args.exact_max:
            t0 = time.perf_counter()
            exact = transported_mass(src, tgt, 0.7, method="exact")
            exact_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        a = np.full(n, 1.0 / n)
        _, cols, iters = entropic_partial_marginals(a, a, cosine_cost(src, tgt, np.float32), 0.7,
                                                    max_iter=args.max_iter)
        entropic_s = time.perf_counter() - t0
        if n <= args.exact_max:
            k = int(0.7 * n)
            top_e, top_x = set(np.argsort(-cols)[:k]), set(np.argsort(-exact)[:k])
            overlap = len(top_e & top_x) / k
        print(f"{n:>6} {exact_s:>9.2f} {entropic_s:>11.2f} {iters:>6} {overlap:>16.3f}")


if __name__ == "__main__":
    main()
