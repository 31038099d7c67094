"""Real training curves for calibration: a small network on scikit-learn's digits.

A multilayer perceptron (64 -> hidden -> 10) is trained with minibatch Adam on a
fixed 70/30 split of the 1,797 digits images that ship inside scikit-learn, with
magnitude pruning of its weight matrices by :mod:`torch.nn.utils.prune`
(``l1_unstructured``, layer by layer) on the CPU:

* one *model version* per pruning factor F (default 0.5, 0.75, 0.9): the network is
  pruned to F at initialisation and trained with the mask fixed;
* *switch runs* start with F_a and, at a seeded epoch in the middle of the run,
  prune the trained weights further to F_b by magnitude (pairs towards more pruning,
  as in MODEL.md section 6) and go on training: the jump of the loss at that epoch
  is a switch penalty.

Every run records the test cross-entropy before training (epoch 0) and after each
epoch, as rows ``run, model, epoch, loss, density`` (density = 1 - F). Needs the
optional extra ``pip install -e .[calibrate]`` (``torch==2.13.0`` CPU, scikit-learn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from deplbench.errors import InputError

INSTALL_HINT = ("train-curves needs PyTorch and scikit-learn: pip install -e '.[calibrate]' "
                "(pins the CPU build torch==2.13.0; never install an unpinned torch)")
DEFAULT_FACTORS = (0.5, 0.75, 0.9)


def model_name(factor: float) -> str:
    """Name of the model version pruned to ``factor``, e.g. ``prune75``."""
    return f"prune{round(factor * 100):d}"


def _imports():
    try:
        import sklearn.datasets  # noqa: F401
        import torch
        import torch.nn.utils.prune  # noqa: F401
    except ImportError:
        raise InputError(INSTALL_HINT, "train-curves") from None
    return torch


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of every run (the defaults keep a run well under a second)."""

    epochs: int = 30
    hidden: int = 64
    lr: float = 0.002  # Adam
    batch: int = 64
    split_seed: int = 0  # the train/test split is the same for every run


def load_digits_split(split_seed: int = 0):
    """Standardised digits features and labels, split 70/30 (train, test) with a fixed seed."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, test_size=0.3, random_state=split_seed,
                                          stratify=y)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd = np.where(sd > 0.1, sd, 1.0)  # near-constant pixels would blow up on the test set
    return (Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte


def _prune_to(torch, net, total: float, current: float) -> None:
    """Prune every linear layer's weights by magnitude from ``current`` to ``total`` sparsity.

    Layer by layer (``l1_unstructured``), not globally: a global threshold at 0.9
    empties the output layer of a freshly initialised network. ``torch.nn.utils.prune``
    applies a new amount to the weights that are still unpruned, so the amount is the
    fraction of the remaining ones to remove.
    """
    from torch.nn.utils import prune

    amount = (total - current) / (1.0 - current)
    for m in net:
        if isinstance(m, torch.nn.Linear):
            prune.l1_unstructured(m, "weight", amount=float(amount))


def train_run(data, factors: Sequence[float], switch_epoch: int | None, seed: int,
              cfg: TrainConfig) -> list[tuple[str, int, float]]:
    """One run: rows ``(model, epoch, test loss)`` for epochs 0..cfg.epochs.

    ``factors`` has one pruning factor, or two with ``switch_epoch`` (the first epoch
    trained with the second factor).
    """
    torch = _imports()
    torch.manual_seed(seed)
    Xtr, ytr, Xte, yte = data
    net = torch.nn.Sequential(torch.nn.Linear(Xtr.shape[1], cfg.hidden), torch.nn.ReLU(),
                              torch.nn.Linear(cfg.hidden, 10))
    _prune_to(torch, net, factors[0], 0.0)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    lossf = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)

    def test_loss() -> float:
        with torch.no_grad():
            return float(lossf(net(Xte), yte))

    current = factors[0]
    rows = [(model_name(current), 0, test_loss())]
    for k in range(1, cfg.epochs + 1):
        if switch_epoch is not None and k == switch_epoch:
            _prune_to(torch, net, factors[1], current)
            current = factors[1]
        perm = torch.randperm(len(ytr), generator=gen)
        for i in range(0, len(perm), cfg.batch):
            idx = perm[i:i + cfg.batch]
            opt.zero_grad()
            lossf(net(Xtr[idx]), ytr[idx]).backward()
            opt.step()
        rows.append((model_name(current), k, test_loss()))
    return rows


def train_curves(seeds: int = 40, cfg: TrainConfig | None = None,
                 factors: Sequence[float] = DEFAULT_FACTORS, switch_seeds: int | None = None,
                 seed: int = 0, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """All runs: ``seeds`` per pruning factor and ``switch_seeds`` per pair (F_a < F_b).

    Returns the curves table (``run, model, epoch, loss, density``).
    """
    torch = _imports()
    torch.set_num_threads(1)  # tiny matrices: threads only add contention
    cfg = cfg or TrainConfig()
    if cfg.epochs < 4:
        raise InputError("need at least 4 epochs per run", "--epochs")
    if not factors or any(not 0.0 <= f < 1.0 for f in factors):
        raise InputError("pruning factors must lie in [0, 1)", "--factors")
    Xtr, ytr, Xte, yte = load_digits_split(cfg.split_seed)
    data = (torch.tensor(Xtr, dtype=torch.float32), torch.tensor(ytr),
            torch.tensor(Xte, dtype=torch.float32), torch.tensor(yte))
    fs = sorted(set(factors))
    jobs: list[tuple[str, tuple[float, ...], int | None, int]] = []
    rng = np.random.default_rng([seed, 0xC0DE])
    for f in fs:
        jobs += [(f"{model_name(f)}-s{s}", (f,), None, s) for s in range(seeds)]
    pairs = [(a, b) for i, a in enumerate(fs) for b in fs[i + 1:]]
    lo, hi = max(2, cfg.epochs // 4), max(3, (3 * cfg.epochs) // 4)
    for a, b in pairs:
        for s in range(seeds if switch_seeds is None else switch_seeds):
            k = int(rng.integers(lo, hi + 1))
            jobs.append((f"{model_name(a)}-{model_name(b)}-s{s}", (a, b), k, s))
    rows = []
    for i, (rid, fac, k, s) in enumerate(jobs):
        for model, epoch, loss in train_run(data, fac, k, 1000 * seed + s, cfg):
            rows.append((rid, model, epoch, loss, round(1.0 - float(model[5:]) / 100, 6)))
        if progress is not None:
            progress(f"run {i + 1}/{len(jobs)} {rid}")
    return pd.DataFrame(rows, columns=["run", "model", "epoch", "loss", "density"])
