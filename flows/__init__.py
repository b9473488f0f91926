"""Prefect flows: one per declared stage (flows/registry.py), and the CLI."""
