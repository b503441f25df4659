"""Process-level hooks, installed once at the first ``init``.

* ``atexit``: finish every active run, all within one time limit, so a dead or
  hung server never holds up interpreter exit.
* ``sys.excepthook`` (chained): remember that the process is dying of an
  uncaught exception, so the runs finish as FAILED instead of SUCCEEDED.
* ``os.register_at_fork``: a forked child (a DataLoader worker) has no sender
  thread; its copies of the runs are switched off.
"""

import atexit
import os
import sys
import threading
import time
import weakref

from ._debug import debug

_lock = threading.Lock()
_installed = False
_runs = []  # weak references to every Run, oldest first
_uncaught = []  # non-empty once an uncaught exception reached sys.excepthook


def track(run):
    """Remember ``run`` (weakly) so the exit hook can finish it."""
    with _lock:
        _runs[:] = [ref for ref in _runs if ref() is not None]
        _runs.append(weakref.ref(run))


def install():
    """Install the atexit, excepthook and fork hooks (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(_at_exit)
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        _uncaught.append(kind)
        previous(kind, value, traceback)

    sys.excepthook = excepthook
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)


def exit_status():
    """The status runs get at exit: FAILED after an uncaught exception, else SUCCEEDED."""
    return "FAILED" if _uncaught else "SUCCEEDED"


def _live_runs():
    return [run for run in (ref() for ref in list(_runs)) if run is not None]


def _at_exit():
    try:
        status = exit_status()
        runs = [run for run in _live_runs() if run._is_active()]
        if not runs:
            return
        limit_s = max(run._exit_timeout_s() for run in runs)
        deadline = time.monotonic() + limit_s
        for run in runs:
            remaining = max(0.0, deadline - time.monotonic())
            run.finish(status=status, timeout=min(remaining, run._exit_timeout_s()))
    except Exception as error:
        debug("exit hook failed: %r" % (error,))


def _after_fork():
    # Only flip flags and make fresh locks: the old ones may have been held by
    # threads that do not exist in the child.
    global _lock
    _lock = threading.Lock()
    for run in _live_runs():
        run._disable_after_fork()
