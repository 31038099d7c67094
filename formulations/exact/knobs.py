"""The tuning constants of ``exact``'s branch-and-bound (and the two ``bruteforce`` shares), in one place.

Each comment says what raising the constant trades: speed, bound strength (how much is pruned),
memory. None decides what is proven: every value gives certified results, except the round-off
margin ``MARGIN_RTOL``, which must stay well above float round-off. The names keep clear of DepL's
``eps`` (the heuristic's parameter) and of machine epsilon (``np.finfo(float).eps``): the covers'
margins below the estimate are ``COVER_MARGIN`` and ``TANGENT_MARGIN``.
``tests/formulations/exact/test_knobs.py`` checks that no other module of ``formulations/exact`` defines one.

May import: nothing. Imported by: every module of :mod:`deplbench.formulations.exact` with a knob.
"""

from __future__ import annotations

# ---- instance size and limits (exact.py, bruteforce.py, search.py) --------------------------------
#: Most datasets of an instance (every non-empty selection is searched: 2^n - 1 of them). Raising it
#: admits larger instances at exponential time and memory; beyond it the method refuses.
MAX_DATASETS = 12
#: Remembered count-level screens (``exact._BranchAndBound``), cleared beyond it. Raising it repeats
#: fewer screens at more memory.
MAX_SCREENS = 1_000_000
#: A sequence search checks ``max_work`` every this many nodes and the clock every ``CLOCK_CHECK_EVERY``.
#: Raising them saves the checks' time, and a limited run stops this much later (a work limit still
#: at the same node on every machine).
WORK_CHECK_EVERY = 8
CLOCK_CHECK_EVERY = 64
#: Shares of ``time_limit`` for the ``depl-plus`` incumbent and then the block scan
#: (:mod:`.incumbent`). Raising them buys a better start at the expense of the search's time.
INCUMBENT_SHARE = 0.25
BLOCK_SCAN_SHARE = 0.25
#: With a work limit the block scan makes at most ``max_work // SCAN_CALL_WORK`` evaluator decisions
#: (deterministic, as the work). Raising it leaves the search more of the limit, for a weaker start.
SCAN_CALL_WORK = 100
#: The first run's length in the block scan's two-run sequences: every ``SPLIT_STEP`` epochs.
#: Raising it scans faster and may miss the best two-run incumbent.
SPLIT_STEP = 4

# ---- relaxations and their refutation (bounds.py, bruteforce.py) ----------------------------------
#: Width of the screening bracket relative to ``loss.initial`` (``lo > target`` refutes). Raising it
#: makes each bracket cheaper and weaker (fewer refutations, more sequences decided).
COARSE_RTOL = 2e-2
#: Refutations need ``lo > target + MARGIN_RTOL * loss.initial``: a round-off margin for the float
#: coefficients, not a tuning knob. Raising it refutes less; lowering it towards round-off voids proofs.
MARGIN_RTOL = 1e-9
#: Label-store columns for distinct entry laws; a label needing more is neither checked nor stored.
#: Raising it stores more refutations (more dominance pruning) at wider labels (memory, query time).
ENTRY_COLUMNS = 32

# ---- the label store (labels.py) ------------------------------------------------------------------
#: Labels per block of the recent part and at most per leaf of the k-d tree. Only speed: smaller
#: leaves skip more but walk more nodes. ``LABEL_RECENT`` must be a multiple of it.
LABEL_LEAF = 64
#: Recent labels (scanned by blocks) before they join the tree. Raising it rebuilds the tree less
#: often at slower scans of the recent part; with ``LABEL_CAP`` it decides which labels are dropped.
LABEL_RECENT = 4096
#: Labels kept in the tree at most (the oldest dropped at a rebuild). Raising it keeps more
#: refutations (more dominance pruning) at more memory and slower rebuilds.
LABEL_CAP = 1 << 17

# ---- product bounds (product.py) ------------------------------------------------------------------
#: Skews of Lemma 9's placed product bound: the dominant factor at level ``p / rho``. More skews give
#: a bound at least as strong (the maximum over them) at proportionally more time per prefix.
PRODUCT_SKEW = (0.5, 0.85)
#: Below the root of a sequence search the placed product bound is asked for the first
#: ``PRODUCT_TRIAL`` prefixes, then only while it refutes at least one in ``PRODUCT_RATE`` of them.
#: Raising the trial (or lowering the rate) asks it more: more refutations, more time.
PRODUCT_TRIAL = 1000
PRODUCT_RATE = 100

# ---- the sequence search's memo (search.py) and the walks' masks (walks.py) -----------------------
#: Stored refutations of prefixes (a few hundred bytes each), all cleared beyond it. Raising it
#: prunes more by dominance at more memory.
MAX_MEMO = 500_000
#: Refutations kept per run prefix. Raising it prunes more at longer dominance scans.
MEMO_PER_KEY = 8
#: Remaining-count tuples whose mask is remembered (then all forgotten). Only speed against memory.
MAX_MASKS = 200_000

# ---- cover conditions (cover.py, lifted.py, laws.py; docs/exact-proofs.md, Lemma 12) --------------
#: Supports (models used) that get covers; seven models and more get none (the per-size tables
#: below have one entry per size in ``COVER_MIN_SIZE..COVER_MAX_SIZE``).
COVER_MIN_SIZE, COVER_MAX_SIZE = 2, 6
#: By support size: a cover aims at ``R`` this fraction below its estimate. Raising it certifies
#: with fewer cell splits (faster) a weaker condition.
COVER_MARGIN = {2: 0.02, 3: 0.02, 4: 0.03, 5: 0.04, 6: 0.05}
#: The same for the tangents added during a search (:data:`COVER_MARGIN`'s trade-off).
TANGENT_MARGIN = {2: 0.02, 3: 0.03, 4: 0.05, 5: 0.06, 6: 0.07}
#: The lifting pivot ``c`` as a fraction of the mean of the cell centre's sum. Its best value
#: depends on the laws: it shapes how much a cell loses to the lifting (bound strength).
LIFT_PIVOT = 0.9
#: Slope below the pivot of a small coordinate's lifted law, relative to its upper weight.
#: It shapes the lifted laws (bound strength), not the time.
LIFT_FLAT = 0.05
#: Width of a cover's brackets relative to ``loss.initial``. Raising it makes each bracket cheaper
#: and the certified scales lower (weaker conditions).
COVER_WIDTH_RTOL = 3e-3
#: By support size: cells per axis at the start. Raising it brackets more cells up front (time,
#: memory) and needs fewer splits.
COVER_START_CELLS = {2: 8, 3: 4, 4: 2, 5: 2, 6: 2}
#: By support size: the split budget, ``2^(s-1)`` times this many halvings. Raising it gives
#: conditions closer to their aim at more brackets.
COVER_MAX_CELLS = {2: 64, 3: 300, 4: 600, 5: 300, 6: 150}
#: Each coordinate's width halved at most this many times (finest: ``2^-COVER_MAX_LEVEL`` of the
#: start). Raising it allows finer cells: stronger conditions, more brackets.
COVER_MAX_LEVEL = 4
#: Supports of at least ``COVER_LATE_SIZE`` models get covers only after ``COVER_AFTER`` count vectors
#: (deterministic: short searches never pay for them). Raising either spares short searches the
#: covers' cost and delays their pruning in long ones.
COVER_LATE_SIZE = 4
COVER_AFTER = 5000
#: Grid points of a rounded noise law (:class:`.lifted.Rounded`). Raising it rounds less (stronger
#: lifted laws) at more memory and time per table.
ROUNDED_POINTS = 1 << 15
#: Scalar quantile levels a rounded law remembers (then all forgotten). Only speed against memory.
ROUNDED_QUANTILES = 4096
#: Cells of the Riemann sums bounding a least law's moments (:mod:`.laws`). Raising it tightens the
#: moments (stronger Cantelli bounds) at more time per law.
MOMENT_CELLS = 4096

# ---- region keys (region.py; docs/exact-proofs.md, "Region keys") ---------------------------------
#: Allocation multipliers tried per key (any subset is valid). Raising it gives larger keys (stronger)
#: at proportionally more time per key.
MAX_LAMBDAS = 12
#: Multipliers of the root key (evenly spaced breakpoints): a stronger root bound for more time, once.
ROOT_LAMBDAS = 64
#: Multipliers used to rank the conditions at construction: a better choice of ``KEEP_CONDITIONS``
#: for more construction time.
SCREEN_LAMBDAS = 8
#: Necessary conditions kept per support size and dominant model (any subset is valid). Raising it
#: gives stronger keys at more time per key.
KEEP_CONDITIONS = 2
#: Cover conditions per support at most (the first ones included). Raising it allows stronger keys
#: at more cover brackets and more time per key.
MAX_TANGENTS = 12
#: A new tangent only this far (L1) from the support's other tangent directions. Raising it adds
#: fewer, more different tangents (fewer brackets, maybe weaker keys).
TANGENT_GAP = 0.2
#: One more tangent (over all supports) per this many count vectors popped. Raising it adds tangents
#: more slowly (fewer brackets, later pruning).
TANGENT_EVERY = 2000
