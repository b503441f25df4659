"""Debug output and the guard that keeps every public call from raising.

The SDK runs inside someone else's training process, so it never raises into it
and never prints unless asked to: with ``GPUCTL_DEBUG=1`` it writes what it
swallowed to stderr, one line each, prefixed ``gpuctl:``.
"""

import functools
import os
import sys


def debug_enabled():
    """True when ``GPUCTL_DEBUG`` is 1/true/yes/on (read on every call, so tests can flip it)."""
    return os.environ.get("GPUCTL_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def debug(message):
    """Print ``gpuctl: <message>`` to stderr when debugging is on; never raises."""
    if not debug_enabled():
        return
    try:
        sys.stderr.write("gpuctl: %s\n" % (message,))
        sys.stderr.flush()
    except Exception:  # a closed or broken stderr must not matter either
        pass


def never_raises(returns_self=False):
    """Decorate a public method so that any ``Exception`` it raises is swallowed.

    ``KeyboardInterrupt`` and ``SystemExit`` still pass: they are the user's, not ours.
    The swallowed exception is reported with ``debug``; the method then returns
    ``None``, or ``self`` for methods that return the run (``init``).
    """

    def decorate(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception as error:
                try:
                    debug("%s() failed and was ignored: %r" % (method.__name__, error))
                except Exception:
                    pass
                return self if returns_self else None

        return guarded

    return decorate
