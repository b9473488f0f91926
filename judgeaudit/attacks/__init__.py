"""Presentation attacks on judged answers: rule-based transforms and model rewriters."""
