"""The names that the settings check and the stages use: prompt categories, house styles,
judge tiers and training methods. A leaf: it imports nothing of judgeaudit, so the
settings (judgeaudit/config/) need not import the generators that use these names."""

from __future__ import annotations

# objective categories: every audit's items (judgeaudit/generation/corpus.py writes them)
CATEGORIES = ("arithmetic", "capital", "antonym", "colour", "units", "compare", "animal")
# open tasks with no single right answer, where a response's style is all its own
SUBJECTIVE = ("describe", "suggest", "opinion")
# the house styles a corpus writes in (judgeaudit/generation/styles.py), in the order a
# seeded ``rng.choice(STYLES)`` draws from: reordering them changes every mixed corpus
STYLES = ("formal", "terse", "casual", "plain")
# how a judge is related to a generator (the leakage matrix's columns)
TIERS = ("same", "inheritance", "same_family")
# how a student learns from a generator's data
METHODS = ("sft", "dpo", "icl")
