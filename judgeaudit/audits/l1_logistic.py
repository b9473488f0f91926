"""L1-penalised logistic regression with continuous targets, many problems solved at once.

Each problem b minimises liblinear's L1R_LR objective with per-row weights (the one
scikit-learn's ``LogisticRegression(solver="liblinear", l1_ratio=1)`` poses with
``sample_weight``; a continuous target q is a row counted as a win weighted q and as a loss
weighted 1 - q):

    F_b(beta) = ||beta||_1 + sum_i v_bi [softplus(x_i beta) - q_i x_i beta],

with v_bi = C_b w_i (zero for rows the problem leaves out). Problems on a few designs (one
model's rows, over cross-validation folds and a grid of C) are solved together by proximal
Newton: coordinate descent finds the L1 subproblem's zero pattern, one linear solve on it
makes the step exact, and a backtracking line search on F accepts it; problems leave the
batch as they converge. Solved to a tolerance liblinear does not reach (its coordinate
order moves its coefficients within its own tolerance), so a cross-validation score
computed here is the objective's, not the solver's. The row passes run in torch (float64),
whose vectorised exp and log run several times faster than numpy's on a CPU.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import expit
from torch.nn.functional import softplus

from judgeaudit.audits.liblinear_cv import continuous_log_loss

_EXACT = 40.0  # softplus(z) = z beyond this, to float64 precision
TOL = 1e-5  # a full Newton step this small (relative) leaves a problem ~1e-10 from its optimum


def _evaluate(x: torch.Tensor, w: torch.Tensor, wqx: torch.Tensor, beta: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(the weighted log-loss sum_i w_i [softplus(z_i) - q_i z_i], the predicted
    probabilities) of G x P problems at beta, from one pass over the rows; wqx = (w q) @ x,
    so the linear part costs no pass."""
    z = beta @ x.transpose(1, 2)  # (G, P, N)
    return (w * softplus(z, threshold=_EXACT)).sum(-1) - (beta * wqx).sum(-1), torch.sigmoid(z)


def _l1_newton_step(g: np.ndarray, h: np.ndarray, beta: np.ndarray, sweeps: int) -> np.ndarray:
    """argmin_u g.(u - beta) + (u - beta)' h (u - beta) / 2 + ||u||_1: coordinate descent
    finds the zero pattern and the signs, one linear solve on them makes it exact. Small
    arrays (B, d): numpy, whose per-call cost is below torch's."""
    u = beta.copy()
    diag = np.maximum(np.diagonal(h, axis1=-2, axis2=-1), 1e-300)
    for _ in range(sweeps):
        for j in range(beta.shape[-1]):
            c = g[:, j] + np.einsum("bk,bk->b", h[:, j, :], u - beta) - diag[:, j] * (u[:, j] - beta[:, j])
            a = beta[:, j] - c / diag[:, j]
            u[:, j] = np.sign(a) * np.maximum(np.abs(a) - 1.0 / diag[:, j], 0.0)
    nonzero, sign = u != 0, np.sign(u)
    system = np.where(nonzero[:, :, None] & nonzero[:, None, :], h, np.eye(beta.shape[-1]) * ~nonzero[:, :, None])
    fixed = np.where(nonzero, 0.0, -beta)  # the zero coordinates' step
    rhs = np.where(nonzero, -(g + sign + (h @ fixed[:, :, None])[..., 0]), fixed)
    with np.errstate(all="ignore"):
        try:
            exact = beta + np.linalg.solve(system, rhs[:, :, None])[..., 0]
        except np.linalg.LinAlgError:  # a singular system somewhere: keep the coordinate descent's
            return u
    keep = np.isfinite(exact).all(-1) & ((np.sign(exact) == sign) | ~nonzero).all(-1)
    return np.where(keep[:, None], exact, u)


def _solve(x: torch.Tensor, w: torch.Tensor, wqx: torch.Tensor, c: float, beta: torch.Tensor, p: torch.Tensor,
           data: torch.Tensor, tol: float, max_iter: int, sweeps: int) -> tuple[torch.Tensor, ...]:
    """Proximal Newton on F = ||beta||_1 + c * data from a start whose probabilities p and
    weighted log-loss ``data`` are known. Returns (beta, p, data) at the optimum. A design
    leaves the batch when each of its problems took a full Newton step below tol (relative
    to its largest coefficient): quadratic convergence leaves it within about tol**2."""
    n_designs, d = x.shape[0], x.shape[-1]
    beta, p, data = beta.clone(), p.clone(), data.clone()
    outer_all = (x[..., :, None] * x[..., None, :]).flatten(2)
    live = torch.arange(n_designs)
    for _ in range(max_iter):
        every = len(live) == n_designs  # no copies while every design is in the batch
        xs, ws, wqxs, ps, bs, outer = ((a if every else a[live]) for a in (x, w, wqx, p, beta, outer_all))
        wp = ws * ps
        g = c * (wp @ xs - wqxs)
        h = c * ((wp - wp * ps) @ outer).reshape(*bs.shape, d)
        u = torch.from_numpy(_l1_newton_step(g.flatten(0, 1).numpy(), h.flatten(0, 1).numpy(),
                                             bs.flatten(0, 1).numpy(), sweeps)).reshape(bs.shape)
        step = u - bs
        scale = 1.0 + bs.abs().amax(-1)
        moving = (step.abs().amax(-1) > tol ** 2 * scale).any(-1)
        live, xs, ws, wqxs, bs, g, u, step, scale = (
            a[moving] for a in (live, xs, ws, wqxs, bs, g, u, step, scale))
        if not len(live):
            break
        loss = bs.abs().sum(-1) + c * data[live]
        # the decrease the quadratic model promises: the Armijo line search's yardstick
        promised = ((g * step).sum(-1) + u.abs().sum(-1) - bs.abs().sum(-1)).clamp_max(0.0)
        t = torch.ones(bs.shape[:2], dtype=torch.float64)
        for _ in range(50):
            trial = bs + t[..., None] * step
            new_data, p_new = _evaluate(xs, ws, wqxs, trial)
            bad = trial.abs().sum(-1) + c * new_data > loss + 1e-4 * t * promised + 1e-12 * loss.abs()
            if not bad.any():
                break
            t = torch.where(bad, t / 2, t)
        beta[live], data[live], p[live] = trial, new_data, p_new
        live = live[~((t == 1) & (step.abs().amax(-1) <= tol * scale)).all(-1)]
        if not len(live):
            break
    return beta, p, data


def _tensors(*arrays: np.ndarray) -> list[torch.Tensor]:
    return [torch.as_tensor(a, dtype=torch.float64) for a in arrays]


def fit_l1_logistic(x: np.ndarray, q: np.ndarray, v: np.ndarray, beta: np.ndarray | None = None,
                    tol: float = TOL, max_iter: int = 200, sweeps: int = 10) -> np.ndarray:
    """Coefficients (G, P, d) minimising F for P problems on each of G designs.

    x: (G, N, d) designs (pad rows with zeros and give them v = 0); q: (G, N) targets in
    [0, 1]; v: (G, P, N) each problem's row weights, C already multiplied in; beta: a warm
    start (G, P, d), zeros if None."""
    x_t, q_t, v_t = _tensors(x, q, v)
    wqx = (v_t * q_t[:, None, :]) @ x_t
    beta_t = torch.zeros(*v.shape[:2], x.shape[-1], dtype=torch.float64) if beta is None else _tensors(beta)[0]
    data, p = _evaluate(x_t, v_t, wqx, beta_t)
    return _solve(x_t, v_t, wqx, 1.0, beta_t, p, data, tol, max_iter, sweeps)[0].numpy()


def cross_validated_losses(x: np.ndarray, q: np.ndarray, w: np.ndarray, folds: np.ndarray,
                           cs: np.ndarray) -> np.ndarray:
    """Per design and C, the summed held-out log-loss over folds (G, len(cs)).

    folds: (G, N) each row's fold index, -1 for padding. The held-out loss of a fold is the
    mean of ``continuous_log_loss`` over its rows."""
    n_folds, n_designs = int(folds.max()) + 1, len(x)
    train = np.stack([(folds >= 0) & (folds != f) for f in range(n_folds)], axis=1)  # (G, F, N)
    # each fold's held-out rows, padded to the largest fold (padding: weight 0)
    held = [[np.flatnonzero(folds[g] == f) for f in range(n_folds)] for g in range(n_designs)]
    size = max(len(rows) for design in held for rows in design)
    index = np.zeros((n_designs, n_folds, size), dtype=int)
    mask = np.zeros((n_designs, n_folds, size))
    for g, design in enumerate(held):
        for f, rows in enumerate(design):
            index[g, f, :len(rows)], mask[g, f, :len(rows)] = rows, 1.0 / len(rows)
    pick = np.arange(n_designs)[:, None, None]
    x_test, q_test, w_test = x[pick, index], q[pick, index], w[pick, index] * mask
    x_t, q_t, w_t = _tensors(x, q, train * w[:, None, :])
    wqx = (w_t * q_t[:, None, :]) @ x_t
    beta = torch.zeros(n_designs, n_folds, x.shape[-1], dtype=torch.float64)
    data, p = _evaluate(x_t, w_t, wqx, beta)
    scores = np.zeros((n_designs, len(cs)))
    for k in np.argsort(cs):  # the grid as a path from the strongest penalty, each C warm-started
        beta, p, data = _solve(x_t, w_t, wqx, float(cs[k]), beta, p, data, TOL, 200, 10)
        held_p = expit(np.einsum("gfnd,gfd->gfn", x_test, beta.numpy()))
        scores[:, k] = continuous_log_loss(held_p, q_test, w_test).sum((-1, -2))
    return scores
