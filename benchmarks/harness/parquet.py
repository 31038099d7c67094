"""Parquet files written and read by DuckDB, so that the suite needs no pyarrow (any Parquet reader opens them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    import pandas as pd


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    """``df`` as one Parquet file, written by DuckDB (no pyarrow needed; any Parquet reader opens it)."""
    con = duckdb.connect()  # in memory: the store itself is not touched
    try:
        con.register("frame", df)
        con.execute("COPY frame TO ? (FORMAT PARQUET)", [str(path)])
    except duckdb.IOException as exc:  # a failed write (a full disk) is the OSError it is
        import errno
        import re

        code = re.search(r'"errno":\s*"(\d+)"', str(exc))
        num = int(code.group(1)) if code else errno.EIO
        raise OSError(num, os.strerror(num), str(path)) from None
    finally:
        con.close()


def read_parquet(path: str | Path) -> pd.DataFrame:
    """A Parquet file as a frame, read by DuckDB (the tests' and scripts' reader without pyarrow)."""
    con = duckdb.connect()
    try:
        return con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
    finally:
        con.close()
