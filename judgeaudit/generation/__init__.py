"""Synthetic data the embedded default generates: corpora, graded answers, multiple-choice items."""
