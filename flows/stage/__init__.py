"""One module per pipeline stage: its Prefect tasks (thin, cached wrappers around the
library) and its flow ``<stage>_flow``. A stage's module imports no other stage's, so its
DVC deps and its task cache key are its own code (flows/deps.py, tasks/cache.py)."""
