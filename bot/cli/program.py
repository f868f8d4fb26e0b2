"""How a `gpuwhy` command ends when gpuwhy runs as the program (``bot.cli.main.run``).

An interpreter that exits frees every object one by one first: half a second for the 150,000
pods a large dump holds, after the answer is already out. A command that holds a snapshot
ends with ``finish(args, code)`` once its output is written and its store writes are done;
run as the program, the process then ends at once. Called from Python (``bot.cli.main``, the
tests), ``finish`` only returns the code.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading


def finish(args: argparse.Namespace, code: int) -> int:
    """``code``; as the program, the process ends here: stdout and stderr flushed, the atexit
    handlers run (logging's flush among them), then the exit without the teardown.

    The normal exit is kept when another non-daemon thread still runs (the interpreter would
    wait for it), under a profiler or tracer (``python -m cProfile`` writes its figures after
    the program returns) or when stdout cannot be flushed (a closed pipe: Python reports it as
    usual).
    """
    if (not getattr(args, "as_program", False) or _other_threads_running()
            or sys.getprofile() is not None or sys.gettrace() is not None):
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()  # an atexit handler may have written
        sys.stderr.flush()
    except (OSError, ValueError):
        code = 120  # what the interpreter's own exit gives when its last flush fails
    os._exit(code)


def _other_threads_running() -> bool:
    current = threading.current_thread()
    return any(t is not current and t.is_alive() and not t.daemon
               for t in threading.enumerate())
