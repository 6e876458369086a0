"""Running many problems: finding and reading files, the file loops behind `verify`,
`audit` and `certify`, batches on executors (a spawn process pool, or Dask), the SQLite
results store with its claims, and `check`'s comparison with `[expect]` tables.

No printing here: callers pass callbacks or a listener and print what they are told.

Each name below is imported when first used (as in dpverify/__init__.py), so that
`dpverify verify` of one file (runner/files.py) loads no batch machinery: no SQLite, no
process pool, no claims.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpverify.defaults import DEFAULT_STORE
from dpverify.lazy import lazy_names

if TYPE_CHECKING:
    from dpverify.runner.batch import BatchItem, BatchReport, BatchResult, run_batch
    from dpverify.runner.store import Store

__all__ = ["DEFAULT_STORE", "BatchItem", "BatchReport", "BatchResult", "Store", "run_batch"]

HOMES = {"BatchItem": "batch", "BatchReport": "batch", "BatchResult": "batch",
         "run_batch": "batch", "Store": "store"}


__getattr__ = lazy_names(__name__, HOMES)
