"""Running many problems: finding and reading files, the file loops behind `verify`,
`audit` and `certify`, batches on executors (a spawn process pool, or Dask), the SQLite
results store with its claims, and `check`'s comparison with `[expect]` tables.

No printing here: callers pass callbacks or a listener and print what they are told.
"""

from dpverify.defaults import DEFAULT_STORE
from dpverify.runner.batch import BatchItem, BatchReport, BatchResult, run_batch
from dpverify.runner.store import Store

__all__ = ["DEFAULT_STORE", "BatchItem", "BatchReport", "BatchResult", "Store", "run_batch"]
