"""Prefect tasks shared by the flows: cached I/O and validation."""
