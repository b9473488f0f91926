"""Many small L2-penalised logistic regressions with fractional outcomes, solved at once.

The objective is scikit-learn's ``LogisticRegression(C=c, fit_intercept=False)`` with a
fractional outcome written as two weighted rows (label 1 with weight ``pos``, label 0
with weight ``neg``):

    0.5 * ||b||^2 + c * sum_i [pos_i * softplus(-x_i b) + neg_i * softplus(x_i b)]

A bootstrap resample is a row of weights (how often each row was drawn), so a GLM and
its 200 resamples are one batch. Newton's method with a backtracking line search, in
float64 torch, runs every problem of the batch together. The objective is strictly
convex, so each problem has one optimum, and Newton reaches it to machine precision
(scikit-learn's lbfgs stops at its tolerance, about 1e-4 on the averaged gradient).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def _objective(x: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor, b: torch.Tensor, c: float) -> torch.Tensor:
    z = torch.einsum("bnp,bp->bn", x, b)
    return 0.5 * (b * b).sum(-1) + c * (pos * F.softplus(-z) + neg * F.softplus(z)).sum(-1)


def fit_l2_logistic(x: np.ndarray, pos: np.ndarray, neg: np.ndarray, c: float, *, tol: float = 1e-10,
                    max_iter: int = 100) -> np.ndarray:
    """Coefficients (B, p) of B problems: designs ``x`` (B, n, p), or one (n, p) design
    shared by all; row weights ``pos`` and ``neg`` (B, n). Stops when every problem's
    gradient is below ``tol`` times its weighted row count (the scale of its loss)."""
    pos_t = torch.as_tensor(np.asarray(pos, dtype=np.float64))
    neg_t = torch.as_tensor(np.asarray(neg, dtype=np.float64))
    x_t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if x_t.dim() == 2:
        x_t = x_t.expand(pos_t.shape[0], *x_t.shape)
    n_batch, _, p = x_t.shape
    b = torch.zeros(n_batch, p, dtype=torch.float64)
    scale = torch.clamp(c * (pos_t + neg_t).sum(-1), min=1.0)
    eye = torch.eye(p, dtype=torch.float64)
    f = _objective(x_t, pos_t, neg_t, b, c)
    # the problems not finished yet and their data: each iteration works on these alone, so a
    # problem whose gradient stays just above tol at round-off does not keep every finished
    # one in each iteration's (and each line-search trial's) batch
    todo, x_a, pos_a, neg_a = torch.arange(n_batch), x_t, pos_t, neg_t
    for _ in range(max_iter):
        b_a, f_a = b[todo], f[todo]
        z = torch.einsum("bnp,bp->bn", x_a, b_a)
        s = torch.sigmoid(z)
        grad = c * torch.einsum("bnp,bn->bp", x_a, (pos_a + neg_a) * s - pos_a) + b_a
        active = grad.abs().amax(-1) > tol * scale[todo]
        if not active.any():
            break
        if not active.all():  # finished problems never restart: the batch only shrinks
            todo, x_a, pos_a, neg_a, b_a, f_a, s, grad = (
                v[active] for v in (todo, x_a, pos_a, neg_a, b_a, f_a, s, grad))
        h = c * (pos_a + neg_a) * s * (1 - s)
        hess = torch.einsum("bni,bn,bnj->bij", x_a, h, x_a) + eye
        step = torch.linalg.solve(hess, grad[..., None])[..., 0]
        slope = (grad * step).sum(-1)
        t = torch.ones(len(todo), dtype=torch.float64)
        for _ in range(60):  # backtracking (Armijo) per problem; a full step is almost always taken
            trial = b_a - t[:, None] * step
            f_trial = _objective(x_a, pos_a, neg_a, trial, c)
            ok = f_trial <= f_a - 1e-4 * t * slope
            if ok.all():
                break
            t = torch.where(ok, t, t / 2)
        b[todo], f[todo] = trial, f_trial
    return b.numpy()
