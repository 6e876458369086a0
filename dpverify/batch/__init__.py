"""Batch runs over directories of problem files: executors (a spawn process pool, or Dask),
a resumable SQLite results store, and `check`'s comparison with `[expect]` tables.

Layer: below the console and the CLI, above `verify`. No printing here: callers pass a
listener and print what they are told.

The package is also callable: `dpverify.batch(paths, ...)` is the API's batch
(`dpverify.api.batch`; see dpverify/_callable.py).
"""

from dpverify._callable import make_callable
from dpverify.batch.runner import BatchItem, BatchReport, BatchResult, run_batch
from dpverify.batch.store import DEFAULT_STORE, Store

__all__ = ["DEFAULT_STORE", "BatchItem", "BatchReport", "BatchResult", "Store", "run_batch"]

make_callable(__name__)
