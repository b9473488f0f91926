"""What a stage declares, once: the params it reads, the data it reads and writes, the tables
it validates on the way in, and where it runs. dvc.yaml, the data layout's checks, the
Prefect flow and the params each stage is handed all follow from these declarations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# the params every model-loading stage reads: the seed, the corpus the tokenizer was built on,
# the embedded models' recipes and the model specs
MODELS = ("seed", "corpus", "embedded", "models", "model_defaults")
# read by every stage's entry before the stage runs (judgeaudit/dispatch.py, precision.py)
RUNTIME = ("cpu_dispatch", "precision")

# the tables stages hand each other, by name: their file under the data root, and the stage
# that writes it (tests/test_stages.py holds these to the stages' outs)
TABLES: dict[str, str] = {
    "prompts": "prompts/prompts.parquet",
    "synthetic": "synthetic/answers.parquet",
    "student_index": "students/index.parquet",
    "responses": "responses/responses.parquet",
    "judgments": "judgments/judgments.parquet",
    "win_rates": "metrics/win_rates.parquet",
    "pls": "metrics/pls.parquet",
}
WRITERS: dict[str, str] = {"prompts": "bootstrap", "synthetic": "generate", "student_index": "train",
                           "responses": "respond", "judgments": "judge", "win_rates": "audit", "pls": "audit"}


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline.

    ``params``: the keys of params.yaml it reads (a section, or ``section.field``); the
    stage is handed a view of the params holding only these, and dvc.yaml lists them.
    ``deps`` / ``outs``: the folders under the data root it reads and writes (DVC's deps
    and outs). ``reads``: the tables (``TABLES``) validated and handed to it. ``section``:
    the params section without which it only writes an empty summary. ``pool``: its units
    run over ``scale.processes`` worker processes of one torch thread each; ``gpu``: sent to
    the GPU work pool by the GPU deployment."""

    name: str
    params: tuple[str, ...]
    deps: tuple[str, ...] = ()
    outs: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    section: str | None = None
    pool: bool = False
    gpu: bool = False
    metrics: tuple[str, ...] = ()            # files of its outs that `dvc metrics` reads
    plots: tuple[tuple[str, dict], ...] = ()  # (file of its outs, DVC plot properties)
    committed: tuple[str, ...] = ()          # metrics files it writes that git keeps (``cache: false``)
    # outs DVC keeps when it reruns the stage (``persist: true``): a record the next run reads,
    # as live_judge's endpoint calls, so a rerun after ``dvc pull`` sends nothing recorded
    persist: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [t for t in self.reads if t not in TABLES]
        if unknown:
            raise ValueError(f"stage {self.name}: unknown tables {unknown}; known: {', '.join(TABLES)}")
        if stray := [o for o in self.persist if o not in self.outs]:
            raise ValueError(f"stage {self.name}: persist {stray} are not among its outs {list(self.outs)}")


def table_path(table: str, root: Path) -> Path:
    """The file of table ``table`` under the data root ``root``."""
    return Path(root) / TABLES[table]


def writer_of(table: str) -> str:
    """The stage that writes ``table``."""
    return WRITERS[table]
