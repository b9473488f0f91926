"""The commands of ``judgeaudit`` that run no Prefect flow, a module per group: each
command's parser beside its handler (``add_<command>`` sets ``handler`` on its parsed
arguments). ``flows/cli.py`` assembles them with the flow commands (``run``, ``deps``)
into the one parser. Heavy imports stay inside the handlers, so that ``judgeaudit
--help`` loads none of them."""

from __future__ import annotations

import argparse
import sys


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command's handler; an error in what the user gave (a params file, a
    table, a value) is one line on stderr and exit status 2, an endpoint that failed for good
    (``EndpointError``: its message names the model, the URL, the reason and what to do) one
    line and exit status 1; neither is a traceback."""
    from judgeaudit.config import ConfigError
    from judgeaudit.schemas.validate import TableValidationError
    from judgeaudit.tables import InputError

    try:
        return args.handler(args)
    except (ConfigError, InputError, TableValidationError, ValueError, FileNotFoundError) as exc:
        print(f"judgeaudit: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # imported only now: the openai backend's module loads SciPy, which most commands never need
        from judgeaudit.models.openai_api import EndpointError

        if not isinstance(exc, EndpointError):
            raise
        print(f"judgeaudit: error: {exc}", file=sys.stderr)
        return 1
