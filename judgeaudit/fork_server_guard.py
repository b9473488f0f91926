"""The fork server's first preload (``judgeaudit.workers.fork_server``): from here on the
server ends with the run that started it. It would otherwise notice a killed run only once
it had imported its other preloads, which outlived the run by 13 s or more."""

from __future__ import annotations

import os

from judgeaudit.workers import FORK_SERVER_RUN, die_with_parent

_run = os.environ.pop(FORK_SERVER_RUN, None)  # popped: the workers it forks must not read it
if _run is not None and die_with_parent() and os.getppid() != int(_run):
    os._exit(1)  # the run had gone before the kernel was asked
