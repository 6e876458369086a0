"""Executors for batches: the shared loop and the local spawn pool (`local`), Dask (`dask`).
"""
