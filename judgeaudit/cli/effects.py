"""``judgeaudit effects``: the effects a run's audits find (confidence intervals that
exclude zero), and the ones another run (a smaller configuration, another seed) loses."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_effects(sub: argparse._SubParsersAction) -> None:
    """``effects ROOT``: a run's effects, held against another run's with ``--against``."""
    eff = sub.add_parser("effects", help="the effects a run's audits find (confidence intervals excluding "
                                         "zero); with --against, the ones another run loses")
    eff.add_argument("root", help="a run's data root (its <stage>/summary.json files)")
    eff.add_argument("--against", help="another run's data root (e.g. a smaller params file's): exit 1 "
                                       "if it loses an effect of ROOT or flips its sign")
    eff.add_argument("--reseeded", help="ROOT's configuration run under another seed: only the effects both "
                                        "find (same sign) are held against --against; the rest are listed "
                                        "as seed-fragile")
    eff.add_argument("--against-reseeded", help="--against's configuration run under ROOT's other seed: an "
                                                "effect it keeps under one seed and loses under the other "
                                                "counts as lost (a cut can make an effect seed-fragile)")
    eff.set_defaults(handler=_effects)


def _effects(args: argparse.Namespace) -> int:
    from collections import Counter

    from judgeaudit.report.effects import find_effects, lost, reproducible

    if args.against_reseeded and not args.against:
        raise ValueError("--against-reseeded needs --against (the same configuration under ROOT's seed)")
    found = find_effects(Path(args.root))
    if not found:
        raise FileNotFoundError(f"{args.root}: no <stage>/summary.json with confidence intervals")
    counts = Counter((e.where.split(":")[0], bool(e.sign)) for e in found.values())
    for stage in sorted({s for s, _ in counts}):
        print(f"{stage}: {counts[stage, True]} effects of {counts[stage, True] + counts[stage, False]} intervals")

    def shown(e) -> str:
        return f"[{e.ci_low:.3g}, {e.ci_high:.3g}]" + (f" (n={e.n})" if e.n is not None else "")

    def listed(label: str, pairs) -> None:
        for ref, other in pairs:
            print(f"{label}: {ref.where}: {shown(ref)} -> {'missing' if other is None else shown(other)}")

    if args.reseeded:
        reseeded = find_effects(Path(args.reseeded))
        if not reseeded:
            raise FileNotFoundError(f"{args.reseeded}: no <stage>/summary.json with confidence intervals")
        fragile = lost(found, reseeded)
        listed("seed-fragile", fragile)
        robust = reproducible(found, reseeded)
        by_stage = Counter(e.where.split(":")[0] for e in robust.values())
        print(f"{args.reseeded}: {len(robust)} of {len(robust) + len(fragile)} effects reproduce under the other "
              f"seed ({', '.join(f'{s} {n}' for s, n in sorted(by_stage.items()))})")
        found = robust
    if not args.against:
        return 0
    missing = lost(found, find_effects(Path(args.against)))
    listed("lost", missing)
    if args.against_reseeded:
        other = find_effects(Path(args.against_reseeded))
        if not other:
            raise FileNotFoundError(f"{args.against_reseeded}: no <stage>/summary.json with confidence intervals")
        gone = {ref.where for ref, _ in missing}
        fragile = [(ref, o) for ref, o in lost(found, other) if ref.where not in gone]
        listed("lost under the other seed", fragile)
        missing += fragile
    print(f"{args.against}: {'keeps every effect' if not missing else f'loses {len(missing)} effects'} "
          f"of {args.root} ({sum(bool(e.sign) for e in found.values())}"
          f"{' that reproduce under the other seed' if args.reseeded else ''}"
          f"{', under both seeds' if args.against_reseeded else ''})")
    return 1 if missing else 0
