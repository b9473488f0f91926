"""The embedded pipeline's sections: the corpus, the models (built or loaded), generation,
the students' training, the judges and the leakage matrix they fill."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from judgeaudit.config.fields import Strict, TrainArgs, check_template
from judgeaudit.models.spec import ModelSpec
from judgeaudit.templates import GENERATIVE_TEMPLATE
from judgeaudit.vocabulary import CATEGORIES, METHODS, STYLES, SUBJECTIVE


class Size(Strict):
    layers: int = Field(ge=1)
    hidden: int = Field(ge=8)
    heads: int = Field(ge=1)
    intermediate: int = Field(ge=8)


class Build(Strict):
    """A model the pipeline builds itself: from scratch, or further trained from another."""

    corpus_style: Literal[STYLES + ("mixed",)]  # type: ignore[valid-type]
    size: str | None = None  # a key of embedded.sizes; None when init_from is set
    init_from: str | None = None  # another model's name: inherit its weights
    seed: int
    epochs: float | None = None  # overrides embedded.pretrain.epochs

    @model_validator(mode="after")
    def _one_origin(self) -> "Build":
        if (self.size is None) == (self.init_from is None):
            raise ValueError("give exactly one of 'size' (from scratch) or 'init_from' (inherit)")
        return self


class ModelEntry(Strict):
    """Either ``build`` (embedded default) or ``spec`` (a real checkpoint)."""

    build: Build | None = None
    spec: ModelSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "ModelEntry":
        if (self.build is None) == (self.spec is None):
            raise ValueError("give exactly one of 'build' or 'spec'")
        return self


class Corpus(Strict):
    categories: list[str] = list(CATEGORIES)  # objective: every audit's items
    subjective: list[str] = []  # open categories added to the leakage prompts only (PLS by task type)
    n_pretrain: int = Field(ge=8)
    n_train_prompts: int = Field(ge=4)
    n_eval_prompts: int = Field(ge=4)
    prompts_file: str | None = None  # optional user prompts (JSONL/CSV/Parquet)

    @model_validator(mode="after")
    def _known(self) -> "Corpus":
        bad = set(self.categories) - set(CATEGORIES)
        if bad:
            raise ValueError(f"unknown categories {sorted(bad)}; known: {list(CATEGORIES)}")
        bad = set(self.subjective) - set(SUBJECTIVE)
        if bad:
            raise ValueError(f"corpus.subjective: unknown categories {sorted(bad)}; known: {list(SUBJECTIVE)}")
        return self

    @property
    def prompt_categories(self) -> tuple[str, ...]:
        """The leakage prompts' categories: objective, then subjective."""
        return (*self.categories, *self.subjective)


class Embedded(Strict):
    vocab_size: int = Field(ge=300)
    max_positions: int = 256
    template: str = "Q: {prompt}\nA:"
    sizes: dict[str, Size]
    pretrain: TrainArgs

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value, {"prompt"}, "template")


class Generate(Strict):
    max_new_tokens: int = Field(ge=1)
    temperature: float = Field(ge=0)


class Train(Strict):
    sft: TrainArgs
    dpo: TrainArgs
    dpo_beta: float = Field(gt=0)
    icl_shots: int = Field(ge=0)


class JudgeTiers(Strict):
    same: str
    inheritance: str | None = None
    same_family: str | None = None


# a registered verdict mode (judgeaudit.judging.modes): likelihood, prompted, generative, or one
# added there; the name is checked against the registry by check-params and the judge stage
JudgeMode = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")]


class Judge(Strict):
    # likelihood: any LM; prompted: log-probs of the verdict tokens after the judge prompt
    # (one forward pass); generative: the judge writes "[[A]]"/"[[B]]"/"[[C]]", parsed strictly
    mode: JudgeMode = "likelihood"
    # likelihood verdicts: mean per-token log-prob ("mean") or the sum ("sum")
    normalise: Literal["mean", "sum"] = "mean"
    tie_margin: float = Field(ge=0, default=1e-6)
    prompt_template: str = (
        "Compare two answers to the question and say which is better.\n"
        "Question: {question}\n[Answer A]\n{answer_a}\n[Answer B]\n{answer_b}\n"
        "Which answer is better, A or B? Verdict:")
    verdict_tokens: list[str] = [" A", " B"]
    modes: dict[str, JudgeMode] = {}  # per-judge overrides
    generative_template: str = GENERATIVE_TEMPLATE
    max_new_tokens: int = Field(ge=1, default=512)  # generative verdicts: room for the reasoning
    retry_temperature: float = Field(ge=0, default=0.7)  # the one retry of an unparseable output

    @field_validator("prompt_template", "generative_template")
    @classmethod
    def _templates(cls, value: str, info) -> str:
        return check_template(value, {"question", "answer_a", "answer_b"}, info.field_name)

    @field_validator("verdict_tokens")
    @classmethod
    def _tokens(cls, value: list[str]) -> list[str]:
        if len(value) != 2 or len(set(value)) != 2:
            raise ValueError(f"verdict_tokens must be two distinct tokens (A, B); got {value}")
        return value


class Leakage(Strict):
    generators: list[str] = Field(min_length=2)
    students: list[str] = Field(min_length=1)
    methods: list[Literal["sft", "dpo", "icl"]] = list(METHODS)
    judges: dict[str, JudgeTiers]
    unrelated_judges: list[str] = []
