"""Runs the stages of judgeaudit/stages: their registry, the params view each is handed,
``execute``, and dvc.yaml written from their declarations. Imports no Prefect: flows/ wraps
``execute`` in a flow. What a stage is built from lies below the stages, in
judgeaudit/stagekit."""
