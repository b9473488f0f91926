"""How the suite is spread over pytest-xdist workers (tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import shared_run_modules


def test_the_tests_that_read_the_tiny_run_are_one_unit_of_work(request):
    """Every collected test that asks for ``tiny_audit`` lies in a module of the one unit of
    work that a single worker runs; elsewhere, a second worker would run the tiny DAG again.
    (With `-m "not slow"` those tests are deselected and nothing is left to check.)"""
    shared = shared_run_modules(request.config.rootpath)
    assert {"tests/test_dvc_repro.py", "tests/test_e2e_flow.py", "tests/test_kill_drill.py"} <= shared
    readers = {item.nodeid.split("::", 1)[0] for item in request.session.items
               if "tiny_audit" in getattr(item, "fixturenames", ())}
    assert readers <= shared, readers - shared
