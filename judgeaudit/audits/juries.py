"""Can a jury of judges replace the best one? Majority votes of a source's judges (Verga et
al. 2024, "Replacing Judges with Juries"), scored like any judge and compared on the same pairs.

Per source with at least three chosen (judge, strategy) rows (in the stage: each judge's
headline strategy), two juries:

- ``jury: all N``: every chosen judge;
- ``jury: all but J``: every one but J, the most accurate judge: can the others, voting,
  stand in for it?

A jury's verdict on a pair in one presentation order is the majority of its members'
decisive verdicts ("1" / "2"); a tie or an unparseable verdict abstains, and equal votes give
"tie". Its ``p_1`` is the share of decisive votes for response 1, and ``raw_output`` the count
of votes. A jury judges a pair in an order only where every member did, so its figures
(``report_card``: accuracy, positional agreement, position bias...) are on the pairs all its
members share.

``compare_juries`` sets each jury, on the same pairs, against the most accurate judge (for
the jury without it) and against the jury's own most accurate member (does voting beat
picking that member?), with ``judge_comparison``'s statistics: the paired bootstrap CI, the
exact paired test, Holm over the source's jury comparisons. Voting helps only where the
members' errors are independent enough; judges that fall for the same cue vote for it together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.judge_comparison import COLUMNS, adjusted, compare_pair, item_scores
from judgeaudit.audits.judge_quality import report_card
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources.judgment_table import COLUMNS as TABLE_COLUMNS

MIN_MEMBERS = 3  # fewer than three judges: a majority is one of the two, or a tie
STRATEGY = "majority"
_PAIR = ["source", "subset", "item_id", "order"]


def jury_name(members: list[str], left_out: str | None = None) -> str:
    return f"jury: all but {left_out}" if left_out else f"jury: all {len(members)}"


def jury_verdicts(table: pd.DataFrame, members: pd.DataFrame, name: str) -> pd.DataFrame:
    """The judgment-table rows of the jury ``name`` of ``members`` (rows of source, judge,
    strategy): one per (pair, order) that every member judged."""
    votes = table.merge(members[["source", "judge", "strategy"]].drop_duplicates())
    if votes.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    counts = pd.crosstab([votes[c] for c in _PAIR], votes["verdict"])
    judged = votes.groupby(_PAIR).size()  # the contract: one verdict per member, pair and order
    counts = counts[judged.reindex(counts.index) == len(members)]
    ones, twos = (counts.get(v, pd.Series(0, index=counts.index)) for v in ("1", "2"))
    verdict = np.where(ones > twos, "1", np.where(twos > ones, "2", "tie"))
    decisive = (ones + twos).to_numpy()
    rows = votes.drop_duplicates(_PAIR).set_index(_PAIR).loc[counts.index].reset_index()
    abstain = counts.sum(axis=1) - ones - twos
    return rows.assign(
        judge=name, strategy=STRATEGY, verdict=verdict,
        p_1=np.where(decisive > 0, ones.to_numpy() / np.maximum(decisive, 1), np.nan),
        raw_output=[f"votes 1:{a} 2:{b} abstain:{c}" for a, b, c in zip(ones, twos, abstain)])[TABLE_COLUMNS]


def juries(table: pd.DataFrame, chosen: pd.DataFrame) -> tuple[pd.DataFrame, dict[tuple[str, str], list[str]]]:
    """(the verdicts of every source's two juries, {(source, jury): its members}); ``chosen``:
    rows of source, judge, strategy, accuracy (the most accurate judge is left out of the second)."""
    frames, members = [], {}
    for source, grp in chosen.groupby("source", sort=True):
        if len(grp) < MIN_MEMBERS:
            continue
        grp = grp.sort_values("accuracy", ascending=False, kind="stable")
        best = grp["judge"].iloc[0]
        for jury, left_out in ((grp, None), (grp.iloc[1:], best)):
            name = jury_name(list(jury["judge"]), left_out)
            members[(source, name)] = list(jury["judge"])
            frames.append(jury_verdicts(table[table["source"] == source], jury, name))
    verdicts = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TABLE_COLUMNS)
    return verdicts, members


def jury_card(verdicts: pd.DataFrame, settings: BootstrapSettings) -> pd.DataFrame:
    """The report card of the juries alone (``judge_quality``'s columns)."""
    if verdicts.empty:
        return pd.DataFrame()
    card = report_card(verdicts, settings)
    return card[card["judge"].isin(verdicts["judge"].unique())].reset_index(drop=True)


def compare_juries(table: pd.DataFrame, verdicts: pd.DataFrame, members: dict[tuple[str, str], list[str]],
                   chosen: pd.DataFrame, settings: BootstrapSettings) -> pd.DataFrame:
    """Each jury against the most accurate judge it leaves out and against its own most accurate
    member, on the pairs both judged (``judge_comparison.COLUMNS``, Holm per source)."""
    picked = chosen[["source", "judge", "strategy"]].drop_duplicates()
    scores = pd.concat([item_scores(table.merge(picked)), item_scores(verdicts)], ignore_index=True)
    rows = []
    for source, grp in scores[scores["source"].isin({s for s, _ in members})].groupby("source", sort=True):
        wide = grp.pivot_table(index=["subset", "item_id"], columns=["judge", "strategy"], values="score")
        ranked = chosen[chosen["source"] == source].sort_values("accuracy", ascending=False, kind="stable")
        strategy = dict(zip(ranked["judge"], ranked["strategy"]))
        best = ranked["judge"].iloc[0]
        found = []
        for (s, jury), names in members.items():
            if s != source:
                continue
            rivals = [best] if best not in names else []
            rivals += [next(j for j in ranked["judge"] if j in names)]
            found += [r for j in rivals if (r := compare_pair(wide, (jury, STRATEGY), (j, strategy[j]), source,
                                                               settings))]
        rows += adjusted(found, settings)
    return pd.DataFrame(rows, columns=COLUMNS)
