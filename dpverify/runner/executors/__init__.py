"""Executors for batches: the shared loop (`base`), the local spawn pool (`local`), Dask
(`dask`); `local.make_executor` chooses one."""
