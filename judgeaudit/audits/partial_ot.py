"""Partial optimal transport between two point clouds with a cosine cost.

Small problems use POT's exact solver (``ot.partial.partial_wasserstein``). Large
ones use the entropic partial solver of Benamou et al. (2015), the same iteration as
``ot.partial.entropic_partial_wasserstein(method="sinkhorn")``, but with its
diagonal scalings and Dykstra corrections kept as vectors: POT forms
``diag(v) @ K`` as dense matrices (O(n^3) per step), which is hopeless at 20k x 20k.
Here each step costs two matrix-vector products with a float32 kernel.
"""

from __future__ import annotations

import numpy as np


def cosine_cost(x: np.ndarray, y: np.ndarray, dtype=np.float64) -> np.ndarray:
    """1 - cos(x_i, y_j) for every pair."""
    xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    yn = y / np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
    cost = (xn.astype(dtype) @ yn.astype(dtype).T)
    np.subtract(1.0, cost, out=cost)
    return cost


def exact_partial(a: np.ndarray, b: np.ndarray, cost: np.ndarray, m: float) -> np.ndarray:
    """POT's exact partial Wasserstein plan (network simplex with a dummy point)."""
    import ot

    return ot.partial.partial_wasserstein(a, b, cost, m=m)


def entropic_partial_marginals(a: np.ndarray, b: np.ndarray, cost: np.ndarray, m: float, *,
                               reg: float = 0.05, max_iter: int = 200, tol: float = 1e-7
                               ) -> tuple[np.ndarray, np.ndarray, int]:
    """(row sums, column sums, iterations) of the entropic partial plan.

    ``cost`` is overwritten with the kernel to spare a second n x n buffer."""
    if not 0 < m <= min(a.sum(), b.sum()) + 1e-12:
        raise ValueError(f"mass m={m} must lie in (0, min(|a|, |b|)]")
    kernel = cost
    np.multiply(kernel, -1.0 / reg, out=kernel)
    np.exp(kernel, out=kernel)
    dtype = kernel.dtype
    tiny = np.finfo(dtype).tiny
    a, b = a.astype(dtype), b.astype(dtype)
    row, col = np.ones(len(a), dtype), np.ones(len(b), dtype)  # plan = t diag(row) K diag(col)
    q1, q2 = np.ones(len(a), dtype), np.ones(len(b), dtype)  # Dykstra corrections (vectors)
    q3 = 1.0
    t = float(m / kernel.sum(dtype=np.float64))
    prev_cols = np.zeros(len(b), dtype)
    for it in range(1, max_iter + 1):
        row *= q1  # projection on {plan 1 <= a}
        sums = t * row * (kernel @ col)
        d1 = np.minimum(a / np.maximum(sums, tiny), 1.0)
        row *= d1
        q1 = 1.0 / d1
        col *= q2  # projection on {plan^T 1 <= b}
        kt_row = kernel.T @ row
        sums = t * col * kt_row
        d2 = np.minimum(b / np.maximum(sums, tiny), 1.0)
        col *= d2
        q2 = 1.0 / d2
        t *= q3  # projection on {1^T plan 1 = m}
        total = t * float(col @ kt_row)
        t *= m / total
        q3 = total / m
        cols = t * col * kt_row
        if np.abs(cols - prev_cols).sum() < tol:
            break
        prev_cols = cols
    rows = t * row * (kernel @ col)
    return rows, t * col * (kernel.T @ row), it


def transported_mass(source: np.ndarray, target: np.ndarray, m: float, *, method: str = "auto",
                     exact_max: int = 3000, reg: float = 0.05, max_iter: int = 200) -> np.ndarray:
    """Mass each target point receives when a fraction ``m`` of the (uniform) source
    mass is moved onto the (uniform) target cloud at least cosine cost."""
    a = np.full(len(source), 1.0 / len(source))
    b = np.full(len(target), 1.0 / len(target))
    m = float(min(max(m, 1e-6), 1.0 - 1e-9))  # 1.0 can exceed the float sum of a or b
    if method == "exact" or (method == "auto" and max(len(source), len(target)) <= exact_max):
        return exact_partial(a, b, cosine_cost(source, target), m).sum(axis=0)
    if method not in ("auto", "entropic"):
        raise ValueError(f"unknown partial OT method {method!r}")
    _, cols, _ = entropic_partial_marginals(a, b, cosine_cost(source, target, np.float32), m,
                                            reg=reg, max_iter=max_iter)
    return cols.astype(np.float64)
