"""The default prompt templates: the settings take them as defaults (judgeaudit/config/)
and the judges as their fallbacks. A leaf: it imports nothing of judgeaudit, so the
settings, the lowest layer, can name them without importing the judges."""

from __future__ import annotations

# a generative judge's prompt: it writes its reasoning, then "[[A]]", "[[B]]" or "[[C]]"
# (judgeaudit/judging/generative.py parses the verdict)
GENERATIVE_TEMPLATE = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI "
    "assistants to the user question displayed below. Avoid any position biases and do not let the "
    "length of the responses or the names of the assistants influence your evaluation. After "
    "providing your explanation, output your final verdict by strictly following this format: "
    "\"[[A]]\" if assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie.\n\n"
    "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n"
    "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n"
    "[The End of Assistant B's Answer]")

# a pointwise judge's prompt, under each score range of the score-range audit
SCORE_TEMPLATE = ("Rate the answer to the question on a scale from {low} to {high}, where {high} is "
                  "best.\nQuestion: {question}\nAnswer: {answer}\nScore:")

RECOGNITION_TEMPLATE = (
    "Question: {question}\n\nResponse A: {answer_a}\n\nResponse B: {answer_b}\n\n"
    "One of these two responses was written by a model trained on your own answers. "
    "Which one, A or B? Answer:")

# the preference-leakage paper's "+Prompting": the judge made aware of the leakage
PROMPTING_NOTICE = ("Note: the answers may have been written by models trained on data that you or a "
                    "model related to you generated. Judge only their quality, not how familiar they sound.")

COT_TEMPLATE = ("Question: {question}\n[Answer A]\n{answer_a}\n[Answer B]\n{answer_b}\n"
                "Which answer is better? Let's think step by step.")
PARAPHRASE_TEMPLATE = ("Paraphrase the following answer in plain words of your own, keeping every fact and "
                       "its conclusion:\n\n{response}")
