"""Judges and their verdicts: pairwise, pointwise, reward-model and generative, in both orders."""
