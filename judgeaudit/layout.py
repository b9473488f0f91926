"""Where each stage writes under the data root (DVC tracks these paths)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path = Path("data")

    @property
    def prompts(self) -> Path:
        return self.root / "prompts" / "prompts.parquet"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def tokenizer(self) -> Path:
        return self.models / "_tokenizer"

    @property
    def synthetic(self) -> Path:
        return self.root / "synthetic" / "answers.parquet"

    @property
    def students(self) -> Path:
        return self.root / "students"

    @property
    def student_index(self) -> Path:
        return self.students / "index.parquet"

    @property
    def responses(self) -> Path:
        return self.root / "responses" / "responses.parquet"

    @property
    def judgments(self) -> Path:
        return self.root / "judgments" / "judgments.parquet"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics"

    @property
    def win_rates(self) -> Path:
        return self.metrics / "win_rates.parquet"

    @property
    def pls(self) -> Path:
        return self.metrics / "pls.parquet"

    @property
    def report(self) -> Path:
        return self.root / "report"

    @property
    def boat(self) -> Path:
        return self.root / "boat"

    @property
    def pu(self) -> Path:
        return self.root / "pu"

    @property
    def prefix(self) -> Path:
        return self.root / "prefix"

    @property
    def score_range(self) -> Path:
        return self.root / "score_range"

    @property
    def robustness(self) -> Path:
        return self.root / "robustness"

    @property
    def leakage_studies(self) -> Path:
        return self.root / "leakage_studies"

    @property
    def real_judges(self) -> Path:
        return self.root / "real_judges"

    @property
    def leaderboard(self) -> Path:
        return self.root / "leaderboard"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    # paths stored in tables are relative to the root, so the same run in two folders
    # writes the same tables; a path outside the root (a hub id, a checkpoint) stays as is
    ROOT_MARK = "<root>/"

    def to_stored(self, path: str | Path) -> str:
        """``<root>/students/x`` for a path under the root, else ``path`` unchanged."""
        try:
            return self.ROOT_MARK + Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def from_stored(self, stored: str) -> str:
        """The path ``to_stored`` wrote, under this root."""
        return str(self.root / stored.removeprefix(self.ROOT_MARK)) if stored.startswith(self.ROOT_MARK) else stored
