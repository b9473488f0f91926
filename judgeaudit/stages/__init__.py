"""The pipeline's stages, one module each: ``STAGE`` (its declaration,
judgeaudit/stagekit/declare.py) and ``run(params, layout, tables, pool)``. A module added here
is a stage: judgeaudit/runner/registry.py finds it, orders it by what it reads, and dvc.yaml,
the CLI and the Prefect flows follow."""
