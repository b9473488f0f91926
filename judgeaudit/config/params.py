"""The whole settings, ``Params``: every section, the cross-checks between them (a model
named anywhere must be defined under ``models``) and what follows from them (the judge
roster, a model's spec)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from judgeaudit.config.audits import (PU, Attacks, Audit, Boat, LeakageStudies, Mitigation, Prefix,
                                      Recognition, ScoreRange)
from judgeaudit.config.fields import Strict
from judgeaudit.config.live import LiveJudge
from judgeaudit.config.recorded import LeaderboardSection, RealJudges
from judgeaudit.config.synthetic import Corpus, Embedded, Generate, Judge, Leakage, ModelEntry, Train
from judgeaudit.dispatch import SETTINGS as DISPATCH_SETTINGS
from judgeaudit.models.spec import ModelSpec
from judgeaudit.precision import SETTINGS as PRECISION_SETTINGS


class Scale(Strict):
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


class Params(Strict):
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
    live_judge: LiveJudge | None = None

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

    def all_built(self, names: Iterable[str]) -> bool:
        """Whether every model named is one the pipeline builds (the embedded default's kind),
        not a real checkpoint: what a paper row says its figure comes from."""
        return all(self.models[n].build is not None for n in names)

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
