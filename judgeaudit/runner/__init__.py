"""Runs the stages of judgeaudit/stages: their registry, the params view each is handed,
their worker pools, their reads and writes, and dvc.yaml written from their declarations.
Imports no Prefect: flows/ wraps ``execute`` in a flow."""
