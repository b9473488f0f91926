"""Why dvc.lock's hashes hold for one kind of CPU only, in one run: the `bootstrap` stage (the
tokenizer and the small models every later stage reads) run once per setting of the math
libraries' CPU dispatch, each into a temporary data root, and the DVC hash of its
``data/models`` beside dvc.lock's. The stage trains models; a different SIMD path in a matrix
product moves the weights' last bits, and so every hash downstream.

    python bench/cpu_dispatch.py                       # default, avx2, compatible (about 2 min each)
    python bench/cpu_dispatch.py --settings compatible --files models.json   # and each file's md5
    python bench/cpu_dispatch.py --against bench/reference/cpu_dispatch-xeon-6-167.json
                                          # which files differ from another machine's, per setting

Settings (judgeaudit/dispatch.py, params.yaml's ``cpu_dispatch``): ``default`` leaves the
libraries to pick for this CPU; ``avx2`` caps torch's kernels, oneDNN, OpenBLAS and NumPy at
AVX2 and pins MKL's AVX2 branch (``MKL_CBWR=AVX2``); ``compatible`` caps the same and pins MKL's
SSE2 branch meant to give the same results on Intel and AMD processors
(``MKL_CBWR=COMPATIBLE``). Run it on two kinds of CPU and compare the printed hashes, or hold
one to the other's ``--files`` with ``--against``: a setting that prints the same hash on both
is one under which a single dvc.lock could hold for both. bench/reference holds a Xeon's
(family 6, model 167) and an AMD EPYC's (family 26, model 2): under ``compatible`` all 68 files
are equal, under the other two the 13 models' weights differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_run import ROOT, lock_outs
from dvc_data.hashfile.tree import Tree

from judgeaudit.dispatch import SETTINGS, VARIABLES
from judgeaudit.report.machine import cpu_model

PROBE = ("import json, torch, numpy; from threadpoolctl import threadpool_info; "
          "print(json.dumps({'torch': torch.backends.cpu.get_cpu_capability(), "
          "'openblas': [i.get('architecture') for i in threadpool_info() "
          "if i['internal_api'] == 'openblas'], "
          "'numpy_avx512': 'X86_V4' in numpy._core._multiarray_umath.__cpu_features__ "
          "and numpy._core._multiarray_umath.__cpu_features__['X86_V4']}))")


def file_md5s(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def dir_md5(files: dict[str, str]) -> str:
    """DVC's hash of a directory output (the ``md5: ....dir`` in dvc.lock), by DVC's own tree."""
    tree = Tree.from_list([{"md5": md5, "relpath": rel} for rel, md5 in files.items()])
    tree.digest()
    return tree.hash_info.value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=list(SETTINGS))
    ap.add_argument("--files", help="write each setting's per-file md5s of data/models to this JSON file")
    ap.add_argument("--against", help="another machine's --files: which files differ, setting by setting")
    args = ap.parse_args()
    locked = lock_outs(ROOT / "dvc.lock").get("bootstrap", {}).get("data/models")
    print(f"{cpu_model()}; dvc.lock's data/models: {locked}")
    per_file, rows = {}, []
    with tempfile.TemporaryDirectory(prefix="judgeaudit-dispatch-") as tmp:
        for name in args.settings:
            env = {k: v for k, v in os.environ.items() if k not in VARIABLES}  # then the setting's own
            env |= {**SETTINGS[name], "PYTHONPATH": str(ROOT), "PREFECT_HOME": f"{tmp}/prefect-{name}"}
            probe = json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, check=True,
                                              capture_output=True, text=True).stdout)
            root = Path(tmp) / name
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "flows.run", "bootstrap", "--root", str(root)],
                           cwd=ROOT, env=env, check=True)
            seconds = time.monotonic() - started
            per_file[name] = file_md5s(root / "models")
            rows.append((name, seconds, probe, dir_md5(per_file[name])))
            shutil.rmtree(root)
    print("\n| setting | seconds | torch | OpenBLAS | NumPy AVX-512 | data/models | = dvc.lock |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for name, seconds, probe, md5 in rows:
        print(f"| {name} | {seconds:.0f} | {probe['torch']} | {','.join(probe['openblas'])} | "
              f"{probe['numpy_avx512']} | {md5} | {md5 == locked} |")
    if args.against:
        other = json.loads(Path(args.against).read_text())
        print(f"\nagainst {other['cpu']} ({args.against}):")
        for name, files in per_file.items():
            theirs = other["settings"].get(name)
            if theirs is None:
                print(f"  {name}: not in that file")
                continue
            differ = sorted(f for f in files.keys() | theirs.keys() if files.get(f) != theirs.get(f))
            print(f"  {name}: {len(files) - len(differ)} of {len(files)} files equal"
                  + (f"; differ: {', '.join(differ)}" if differ else ""))
    if args.files:
        Path(args.files).write_text(json.dumps({"cpu": cpu_model(), "settings": per_file}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
