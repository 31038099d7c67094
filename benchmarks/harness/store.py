"""The result store: one embedded DuckDB file per output folder, one flat row per run.

Only the harness's parent process writes, one autocommitted ``INSERT OR REPLACE``
per finished run keyed by ``run_key``, so a killed harness loses at most the runs
in flight, never duplicates a row, and DuckDB's write-ahead log keeps the file
consistent. Reports open the store read-only and read nothing else: the instances
the runs used are stored too.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from deplbench.benchmarks.harness.timing import TIMING_COLUMNS

DB_NAME = "results.duckdb"

#: The columns of table ``runs``: name -> DuckDB type. The authoritative contract.
RUN_COLUMNS: dict[str, str] = {
    "run_key": "VARCHAR PRIMARY KEY",  # hash of (instance spec, solver, params, repetition)
    "config": "VARCHAR",  # config name, e.g. 'paper'
    "experiment": "VARCHAR",  # experiment (table) inside the config
    # instance
    "family": "VARCHAR",
    "instance": "VARCHAR",
    "instance_params": "VARCHAR",  # JSON of the family parameters
    "instance_seed": "INTEGER",
    "noise_mode": "VARCHAR",
    "target": "DOUBLE",
    "n_models": "INTEGER",
    "n_clusters": "INTEGER",
    "n_datasets": "INTEGER",
    "n_options": "INTEGER",  # (cluster, level) pairs
    "max_epochs": "INTEGER",
    "known_optimum": "DOUBLE",  # from instance metadata, when the family knows it
    # method (its parameters are the JSON ``params``, expanded to ``p_<name>`` columns on read)
    "solver": "VARCHAR",
    "solver_kind": "VARCHAR",  # exact | saa | heuristic
    "label": "VARCHAR",  # solver[k=v,...] over the declared variant parameters off their default
    "params": "VARCHAR",  # JSON of all parameters after defaults
    "repetition": "INTEGER",
    # outcome of the run (harness) and of the solver
    "harness_status": "VARCHAR",  # ok | timeout | memory | interrupted | error
    "status": "VARCHAR",  # solver status: a deplbench.results.Status value (interrupted included)
    "message": "VARCHAR",
    "error": "VARCHAR",  # error text / traceback tail
    "runtime_s": "DOUBLE",  # the method's call, as timed by deplbench.registry.solve
    "build_s": "DOUBLE",
    "solve_s": "DOUBLE",
    "wall_s": "DOUBLE",  # the whole run process, including evaluation
    "peak_mem_mb": "DOUBLE",  # peak resident memory of the run's process tree (summed), MB (deplbench.watch)
    **TIMING_COLUMNS,  # CPU time, load, runs beside, cores (harness/timing.py)
    "objective": "DOUBLE",  # the solver's own figures
    "bound": "DOUBLE",
    "gap": "DOUBLE",
    "nodes": "BIGINT",
    # the evaluator's figures (the tables use these)
    "feasible": "BOOLEAN",
    "violations": "VARCHAR",  # comma-separated
    "cost": "DOUBLE",
    "compute_cost": "DOUBLE",
    "transfer_cost": "DOUBLE",
    "time": "DOUBLE",
    "epochs": "INTEGER",
    "loss_mean": "DOUBLE",
    "q_lo": "DOUBLE",
    "q_hi": "DOUBLE",
    "bracket_width": "DOUBLE",
    "mc_quantile": "DOUBLE",
    "mc_ci_lo": "DOUBLE",
    "mc_ci_hi": "DOUBLE",
    "mc_samples": "INTEGER",  # Monte-Carlo sample of the re-evaluation and its seed
    "mc_seed": "BIGINT",
    "oos_samples": "INTEGER",  # out-of-sample check (SAA plans): samples,
    "oos_violations": "INTEGER",  # how many exceed the target,
    "oos_rate": "DOUBLE",  # their fraction,
    "oos_cp_upper": "DOUBLE",  # and its one-sided 95% Clopper-Pearson upper bound
    "oos_seed": "BIGINT",  # seed of the out-of-sample draws (independent of the SAA scenarios)
    "plan_json": "VARCHAR",  # the depl-plan/1 file
    "extra_json": "VARCHAR",  # SolveResult.extra (numbers expanded to ``x_<name>`` columns on read)
    # provenance
    "package_version": "VARCHAR",
    "git_commit": "VARCHAR",
    "host": "VARCHAR",
    "cpu": "VARCHAR",
    "python": "VARCHAR",
    "solver_versions": "VARCHAR",  # JSON {package: version}
    "wall_limit_s": "DOUBLE",  # hard limit of the run process (time_limit + grace)
    "memory_limit_mb": "DOUBLE",  # NULL: no limit
    "worker": "VARCHAR",  # host:pid of the process that ran the run
    "started_at": "TIMESTAMP",
    "finished_at": "TIMESTAMP",
}

INSTANCE_COLUMNS = {"name": "VARCHAR PRIMARY KEY", "family": "VARCHAR", "params": "VARCHAR",
                    "json": "VARCHAR"}
#: What table ``meta`` says of a store of this version.
SCHEMA = "depl-store/2"
#: Columns of version 1 stores (before parameters became generic); their values are in ``params``.
LEGACY_PARAM_COLUMNS = ("eta", "eps", "scenarios", "formulation", "time_limit", "mip_gap", "threads", "seed")
PARAM_PREFIX, OUTPUT_PREFIX = "p_", "x_"
#: The one line for a store DuckDB cannot read (truncated, bit-flipped, not a database).
DAMAGED = ("the results cannot be read (not a result store of deplbench, or a damaged one: truncated or "
           "corrupt); start a new --out folder, or restore the file from a copy")


class Store:
    """A result store in folder ``root`` (created if needed).

    Parameters
    ----------
    root : path
        The output folder; the database is ``root / results.duckdb``.
    read_only : bool
        Open for reading (reports); the file must exist.
    """

    def __init__(self, root: str | Path, read_only: bool = False):
        from deplbench.errors import InputError

        self.root = Path(root)
        self.path = self.root / DB_NAME
        if read_only and not self.path.exists():
            raise InputError(f"no result store {DB_NAME} in this folder", str(self.root))
        if self.root.exists() and not self.root.is_dir():
            raise InputError("exists and is not a folder", str(self.root))
        if self.path.exists() or self.path.is_symlink():
            if not self.path.is_file():  # a folder, a FIFO (opening it would block), a device
                raise InputError("not a result store (not a regular file)", str(self.path))
            check_store(self.path)  # before any write: a foreign file stays byte-identical
        if read_only:
            self.con = _connect(self.path, read_only=True)
            return
        self.root.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists()
        try:
            self.con = _connect(self.path, read_only=False)
            with disk_errors(self.path):
                _create_or_migrate(self.con)
        except InputError:
            if new:  # a store that could not even be created is not left half-written
                with contextlib.suppress(Exception):
                    self.con.close()
                for f in (self.path, self.path.with_name(self.path.name + ".wal")):
                    f.unlink(missing_ok=True)
            raise

    def close(self) -> None:
        with disk_errors(self.path):  # closing checkpoints the write-ahead log
            self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- writing ------------------------------------------------------------------------
    def put_run(self, row: Mapping[str, Any]) -> None:
        """Insert (or replace, same ``run_key``) one run row, committed at once."""
        unknown = set(row) - set(RUN_COLUMNS)
        if unknown:
            raise KeyError(f"unknown run columns: {sorted(unknown)}")
        keys = list(row)
        cols = ", ".join(f'"{k}"' for k in keys)
        marks = ", ".join("?" for _ in keys)
        # delete + insert in one transaction: a replaced row keeps nothing of the old one
        with disk_errors(self.path):
            self.con.execute("BEGIN TRANSACTION")
            try:
                self.con.execute("DELETE FROM runs WHERE run_key = ?", [row["run_key"]])
                self.con.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", [_plain(row[k]) for k in keys])
                self.con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):  # a failed COMMIT has ended the transaction
                    self.con.execute("ROLLBACK")
                raise

    def put_instance(self, instance, family: str, params: Mapping[str, Any] | None = None) -> None:
        """Store the instance file a run used (idempotent)."""
        with disk_errors(self.path):
            self._put_instance(instance, family, params)

    def _put_instance(self, instance, family: str, params: Mapping[str, Any] | None) -> None:
        self.con.execute("INSERT OR REPLACE INTO instances VALUES (?, ?, ?, ?)",
                         [instance.name, family, json.dumps(dict(params or {}), sort_keys=True, default=str),
                          json.dumps(instance.to_json_dict())])

    # ---- reading ------------------------------------------------------------------------
    def done(self) -> dict[str, str]:
        """``run_key -> harness_status`` of every stored run."""
        return dict(self.con.execute("SELECT run_key, harness_status FROM runs").fetchall())

    def runs(self, where: str | None = None) -> pd.DataFrame:
        """All run rows (optionally filtered by an SQL condition), ``p_``/``x_`` columns expanded."""
        sql = "SELECT * FROM runs" + (f" WHERE {where}" if where else "")
        return expand_rows(self.con.execute(sql).df())

    def instance(self, name: str):
        """The stored :class:`~deplbench.instances.Instance` named ``name``."""
        from deplbench.instances.io import instance_from_dict

        row = self.con.execute("SELECT json FROM instances WHERE name = ?", [name]).fetchone()
        if row is None:
            raise KeyError(name)
        return instance_from_dict(json.loads(row[0]), f"store:{name}")

    def instances(self) -> pd.DataFrame:
        return self.con.execute("SELECT name, family, params FROM instances").df()

    def export(self, fmt: str, out: str | Path | None = None) -> list[Path]:
        """Write the runs (expanded) and the instances as Parquet or CSV files; returns their paths."""
        if fmt not in ("parquet", "csv"):
            from deplbench.errors import InputError

            raise InputError(f"format must be parquet or csv, not '{fmt}'", "--format")
        from deplbench.benchmarks.harness.parquet import write_parquet
        from deplbench.files import atomic_path

        out_dir = Path(out) if out else self.root
        paths = []
        for table, df in (("runs", self.runs()), ("instances", self.con.execute("SELECT * FROM instances").df())):
            p = out_dir / f"{table}.{fmt}"
            with atomic_path(p) as tmp:  # a full disk: one line naming the file, nothing partial
                if fmt == "parquet":
                    write_parquet(df, tmp)  # DuckDB's writer: no pyarrow
                else:
                    df.to_csv(tmp, index=False)
            paths.append(p)
        return paths


def check_store(path: Path) -> None:
    """Refuse (one line) a file that is not a readable result store of this suite; never writes to it.

    Every block of every table is read once (a hash of each column), so a truncated or bit-flipped
    file is refused here, before a command reads part of it or writes to it.
    """
    from deplbench.errors import InputError

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise InputError("the result store is in use by another process (a running `deplbench run`?)",
                             str(path)) from None
        raise InputError(DAMAGED, str(path)) from None
    except duckdb.Error:
        raise InputError(DAMAGED, str(path)) from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        schema = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            schema = row[0] if row else None
        cols = set()
        if "runs" in tables:
            cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = 'runs'").fetchall()}
        for t in sorted(tables):
            con.execute(f'SELECT count(*), bit_xor(hash(COLUMNS(*))) FROM "{t}"').fetchall()
    except duckdb.Error:
        raise InputError(DAMAGED, str(path)) from None
    finally:
        con.close()
    if not tables:
        return  # an empty database (e.g. created and left empty): nothing to protect
    if schema is not None and schema != SCHEMA:
        raise InputError(f"result store of another version ({schema}; this version reads {SCHEMA} and "
                         "migrates depl-store/1): export it with the version that wrote it", str(path))
    if schema is None and not {"run_key", "params", "solver", "harness_status"} <= cols:
        raise InputError("not a result store of deplbench (a database of another program); "
                         "choose another --out folder", str(path))


def _create_or_migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables, or bring a version-1 store (fixed parameter columns) to this version."""
    cols = ", ".join(f'"{k}" {v}' for k, v in RUN_COLUMNS.items())
    con.execute(f"CREATE TABLE IF NOT EXISTS runs ({cols})")
    have = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'runs'").fetchall()}
    for k, v in RUN_COLUMNS.items():
        if k not in have:  # added in a later version: NULL in old rows (labels are derived on read)
            con.execute(f'ALTER TABLE runs ADD COLUMN "{k}" {v}')
    for k in LEGACY_PARAM_COLUMNS:
        if k in have:  # the values are in ``params``; the columns are derived on read now
            con.execute(f'ALTER TABLE runs DROP COLUMN "{k}"')
    icols = ", ".join(f'"{k}" {v}' for k, v in INSTANCE_COLUMNS.items())
    con.execute(f"CREATE TABLE IF NOT EXISTS instances ({icols})")
    con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", [SCHEMA])


def expand_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Runs with one ``p_<name>`` column per parameter and one ``x_<name>`` per numeric output.

    Version-1 columns (``eta``, ``eps``, ...) are dropped: ``params`` holds the same values.
    A row without a stored ``label`` (version 1) gets it from the method's declaration.
    """
    from deplbench.benchmarks.harness.labels import label_of

    out = df.drop(columns=[c for c in LEGACY_PARAM_COLUMNS if c in df.columns])
    params = [_json(v) for v in out.get("params", pd.Series(index=out.index, dtype=object))]
    extras = [_json(v) for v in out.get("extra_json", pd.Series(index=out.index, dtype=object))]
    new = {}
    for prefix, dicts, numeric_only in ((PARAM_PREFIX, params, False), (OUTPUT_PREFIX, extras, True)):
        keys = sorted({k for d in dicts for k, v in d.items() if _scalar(v, numeric_only)})
        for k in keys:
            new[prefix + k] = [d.get(k) if _scalar(d.get(k), numeric_only) else None for d in dicts]
    if new:
        out = pd.concat([out.reset_index(drop=True), pd.DataFrame(new)], axis=1)
        out = out.loc[:, ~out.columns.duplicated(keep="last")]
    if "solver" in out.columns:
        have = out["label"] if "label" in out.columns else pd.Series([None] * len(out))
        out["label"] = [lb if isinstance(lb, str) and lb else label_of(s, p)
                        for lb, s, p in zip(have, out["solver"], params, strict=True)]
    return out


def _json(v: Any) -> dict[str, Any]:
    if not isinstance(v, str) or not v:
        return {}
    try:
        out = json.loads(v)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _scalar(v: Any, numeric_only: bool) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    return isinstance(v, str) and not numeric_only


#: the disk's complaints in DuckDB's messages (it raises its own exceptions, without an errno)
_DISK_WORDS = ("No space left on device", "Read-only file system", "Permission denied", "Disk quota exceeded",
               "Input/output error")


@contextlib.contextmanager
def disk_errors(path: Path):
    """A full, read-only or failing disk under the store is one :class:`InputError` naming it.

    Every committed row stays committed (one transaction per run), so the next ``deplbench run``
    resumes once there is space again.
    """
    try:
        yield
    except (duckdb.Error, OSError) as exc:
        text = str(exc) if isinstance(exc, duckdb.Error) else (exc.strerror or "")
        why = next((w for w in _DISK_WORDS if w.lower() in text.lower()), None)
        if why is None:
            raise
        from deplbench.errors import InputError

        raise InputError(f"cannot write the result store ({why})", str(path)) from None


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the database; a store held by another process (a running harness) is a one-line error."""
    try:
        with disk_errors(path):
            return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        from deplbench.errors import InputError

        raise InputError("the result store is in use by another process (a running `deplbench run`?)",
                         str(path)) from None


def _plain(v: Any) -> Any:
    if isinstance(v, enum.Enum):  # Status, Outcome: stored as their values
        return v.value
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True, default=str)
    if hasattr(v, "item") and callable(v.item):  # numpy scalar
        return v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def rows_missing(keys: Iterable[str], done: Mapping[str, str], retry_failed: bool) -> list[str]:
    """Which ``keys`` still need to run: absent or interrupted ones, plus failed ones with ``retry_failed``.

    An ``interrupted`` row (a grid stopped by Ctrl-C or SIGTERM) holds the run's incumbent, not
    its result: the next run replaces it.
    """
    return [k for k in keys if k not in done or done[k] == "interrupted" or (retry_failed and done[k] != "ok")]
