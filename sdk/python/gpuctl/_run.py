"""``Run``: the public face of the SDK.

Every public method is wrapped by ``never_raises`` and only touches memory on
the calling thread (a list extended, a lock for the rare items; ``log`` queues a copy
of its dict without a lock, and the sender's thread numbers its step, checks its keys
and packs its values into columns); HTTP, disk and git happen on the run's sender
thread. ``finish`` is the one call that waits, and only up to its time limit.
"""

import os
import secrets
import threading
import time
from time import time as _now
from collections.abc import Mapping

from . import _exit, _settings
from ._buffer import SPELLED, Buffer
from ._debug import debug, debug_enabled, never_raises
from ._sender import Options, Sender
from ._values import (
    SKIP,
    as_epoch,
    as_step,
    clean_name,
    config_dict,
    flatten_metrics,
    key_problem,
    metric_value,
    numeric_metrics,
    valid_key,
)

#: Statuses ``finish`` accepts.
FINAL_STATUSES = ("SUCCEEDED", "FAILED", "CANCELLED")
#: Files counted when sizing a checkpoint folder, at most (a guard against huge trees).
MAX_SIZED_FILES = 100000
#: The longest checkpoint path the server accepts.
MAX_PATH_LENGTH = 65536
#: Points waiting in memory, in multiples of ``queue_size``, past which ``log`` itself
#: moves them to disk: only when the training loop outruns the sender's disk writes.
MAX_QUEUE_MULTIPLE = 8

_NEW, _ACTIVE, _FINISHED, _OFF = "new", "active", "finished", "off"

def new_run_id():
    """``r-`` and 12 random lowercase hex characters."""
    return "r-" + secrets.token_hex(6)


class Run(object):
    """One training run: ``init``, then ``log``/``log_checkpoint``/``log_evaluation``, ``finish``.

    All arguments are optional tuning knobs (see the README); the module-level
    ``gpuctl.run`` is a ``Run()`` with the defaults.
    """

    def __init__(self, queue_size=100000, batch_size=1000, flush_interval_s=1.0,
                 http_timeout_s=5.0, exit_timeout_s=None, backoff_initial_s=0.5,
                 backoff_max_s=30.0, max_retries=10):
        try:
            self._options = Options(
                queue_size=queue_size,
                batch_size=batch_size,
                flush_interval_s=flush_interval_s,
                http_timeout_s=http_timeout_s,
                exit_timeout_s=exit_timeout_s,
                backoff_initial_s=backoff_initial_s,
                backoff_max_s=backoff_max_s,
                max_retries=max_retries,
            )
        except Exception as error:  # not numbers: the constructor must not raise either
            debug("Run(): bad tuning arguments, defaults used: %r" % (error,))
            self._options = Options()
        self._lock = threading.RLock()  # init/finish
        self._state = _NEW
        self._id = None
        self._settings = None
        self._buffer = None
        self._queue = None  # the buffer's queue
        self._sender = None
        self._logged_checkpoints = {}  # path -> mtime when logged, to report it gone
        self._warned_before_init = False
        _exit.track(self)

    # -- facts -----------------------------------------------------------------------

    @property
    def id(self):
        """The run's id once known: from ``init``, or inside a job from ``GPUCTL_RUN_ID``."""
        if self._id is not None:
            return self._id
        if self._state == _NEW and _settings.in_job():
            return os.environ.get("GPUCTL_RUN_ID", "").strip() or None
        return None

    @property
    def spool_path(self):
        """The file holding what this run could not deliver yet, or None when there is none."""
        sender = self._sender
        if sender is not None and os.path.exists(sender.journal.path):
            return sender.journal.path
        return None

    @property
    def dropped(self):
        """How many metric points were lost so far (the disk refused them, or a batch was
        refused whole)."""
        buffer = self._buffer
        return buffer.dropped_total if buffer is not None else 0

    # -- the API ---------------------------------------------------------------------

    @never_raises(returns_self=True)
    def init(self, project=None, experiment=None, name=None, config=None, max_steps=None):
        """Start the run (outside a job: register it; inside: attach to the job's run).

        Calling ``init`` on a run that is already active only adds ``config``.
        After ``finish``, ``init`` starts a new run.
        """
        with self._lock:
            if self._state == _OFF:
                return self
            if self._state == _ACTIVE:
                if config is not None:
                    self._buffer.add_control("config", config_dict(config))
                if project or experiment or name or max_steps:
                    debug("init() on an active run: only config is updated")
                return self
            settings = _settings.resolve()
            if settings.mode == "disabled":
                self._state = _OFF
                return self
            self._start(settings, project, experiment, name, config, max_steps)
        return self

    def log(self, data, step=None):
        """Record numeric metrics at ``step`` (default: an internal counter, +1 per call)."""
        try:
            # The common call takes a short way: a dict of floats, at the next step or an
            # int one. It is queued as it is, a copy of the dict (the caller may reuse its
            # dict), added without a lock (three items on the flat queue, see _buffer); the
            # sender's thread numbers a step of None in the order of the calls, checks the
            # steps and keys (once for a run of calls with the same keys) and notes an
            # epoch. Anything else goes the long way, which checks, converts and explains.
            if (self._state is _ACTIVE and type(data) is dict
                    and (step is None or type(step) is int)):
                for value in data.values():
                    if type(value) is not float:
                        break
                else:
                    queue = self._queue
                    queue += (step, _now(), data.copy())
                    if len(queue) >= self._buffer.wake_len:
                        self._queued()
                    return
            self._log(data, step)
        except Exception as error:
            try:
                debug("log() failed and was ignored: %r" % (error,))
            except Exception:
                pass

    def _queued(self):
        """After a full batch was queued: wake the sender; far too many points go to disk."""
        self._buffer.woken()
        self._sender.wake()
        if self._buffer.pending_points() >= self._options.queue_size * MAX_QUEUE_MULTIPLE:
            self._sender.spill_now()

    def _log(self, data, step):
        """``log`` the long way: any mapping, any numeric value, any step; says what it skips."""
        if self._state != _ACTIVE and not self._auto_init():
            return
        if not isinstance(data, Mapping):
            debug("log() takes a dict of metrics, not %s" % (type(data).__name__,))
            return
        at = None  # the next step
        if step is not None:
            at = as_step(step)
            if at is None:
                debug("log(): step %r is not a whole number >= 0; call ignored" % (step,))
                return
        now = time.time()
        points = {}
        for key, value in flatten_metrics(data):
            encoded = metric_value(value)
            if encoded is SKIP or not valid_key(key):
                if debug_enabled():
                    why = ("value %s is not numeric" % (type(value).__name__,)
                           if encoded is SKIP else "the key " + key_problem(key))
                    debug("log(): %r skipped: %s" % (key, why))
                continue
            # An `epoch` key, or a split's (`train/epoch`, as the Hugging Face callback logs
            # it), is noted by the sender's thread, in the order of the calls.
            points[key] = SPELLED[encoded] if type(encoded) is str else encoded
        # Queued even when every point was skipped: the call takes its step all the same.
        queue = self._queue
        queue += (at, now, points)
        if len(queue) >= self._buffer.wake_len:
            self._queued()

    @never_raises()
    def log_checkpoint(self, path, step=None, epoch=None, metrics=None):
        """Record a checkpoint file or folder (call it after the checkpoint is written)."""
        if self._state != _ACTIVE and not self._auto_init():
            return
        raw = os.fspath(path)
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        absolute = os.path.abspath(raw)
        if len(absolute) > MAX_PATH_LENGTH:
            debug("log_checkpoint(): a path of %d characters is over the %d the server takes; "
                  "not recorded" % (len(absolute), MAX_PATH_LENGTH))
            return
        checkpoint = {"path": absolute}
        if step is not None:
            at = as_step(step)
            if at is None:
                debug("log_checkpoint(): step %r is not a whole number >= 0; left out" % (step,))
            else:
                checkpoint["step"] = at
        if epoch is not None:
            whole = as_epoch(epoch)
            if whole is not None:
                checkpoint["epoch"] = whole  # the run's epoch too, once the sender takes it
        size = path_size(absolute)
        if size is not None:
            checkpoint["size_bytes"] = size
        if metrics:
            checkpoint["metrics"] = self._numeric("log_checkpoint", metrics)
        self._report_gone()
        self._buffer.add_control("checkpoint", checkpoint)
        try:
            # Only a file seen here can be seen gone (a path on another host cannot).
            self._logged_checkpoints[absolute] = os.stat(absolute).st_mtime
        except OSError:
            pass

    @never_raises()
    def log_evaluation(self, metrics, suite=None):
        """Record the result of an evaluation (in an evaluation job: of its checkpoint)."""
        if self._state != _ACTIVE and not self._auto_init():
            return
        evaluation = {"metrics": self._numeric("log_evaluation", metrics)}
        suite = clean_name(suite)
        if suite is not None:
            evaluation["suite"] = suite
        self._buffer.add_control("evaluation", evaluation)
        self._sender.wake()

    @never_raises()
    def finish(self, status="SUCCEEDED", timeout=None):
        """Mark the run finished and deliver what is queued, waiting at most ``timeout`` s.

        ``timeout`` defaults to the exit time limit (``GPUCTL_EXIT_TIMEOUT``, 5 s).
        What cannot be delivered in time goes to the spool outside a job.
        """
        with self._lock:
            if self._state != _ACTIVE:
                return
            self._state = _FINISHED
            sender, buffer = self._sender, self._buffer
        final = str(status).upper() if status is not None else "SUCCEEDED"
        if final not in FINAL_STATUSES:
            debug("finish(): status %r is not one of %s; using SUCCEEDED"
                  % (status, ", ".join(FINAL_STATUSES)))
            final = "SUCCEEDED"
        self._report_gone()
        buffer.add_control("status", final)
        limit_s = self._exit_timeout_s() if timeout is None else float(timeout)
        sender.close(limit_s)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.finish("FAILED" if kind is not None else "SUCCEEDED")
        return False

    def __repr__(self):
        return "<gpuctl.Run id=%s state=%s>" % (self.id, self._state)

    # -- internals -------------------------------------------------------------------

    def _report_gone(self):
        """Tells the server which checkpoints this run logged are no longer on disk.

        Trainers delete the checkpoints they stop keeping (Lightning's ``save_top_k``); a
        deleted file must not stay a candidate for ``recommend``. Checked at each
        ``log_checkpoint`` and at ``finish``.
        """
        for path, mtime in list(self._logged_checkpoints.items()):
            if os.path.lexists(path):
                continue
            del self._logged_checkpoints[path]
            self._buffer.add_control("checkpoint", {"path": path, "state": "gone", "mtime": mtime})

    def _start(self, settings, project, experiment, name, config, max_steps):
        if settings.run_id is not None:
            run_id = settings.run_id  # inside a job: the agent's run
        else:
            run_id = new_run_id()
        registration = {
            "id": run_id,
            "project": clean_name(project) or settings.project or "default",
        }
        optional = {
            "experiment": clean_name(experiment) or settings.experiment,
            "name": clean_name(name),
            "config": config_dict(config) if config is not None else None,
            "max_steps": as_step(max_steps) if max_steps is not None else None,
        }
        if optional["max_steps"] == 0:
            optional["max_steps"] = None
        for key, value in optional.items():
            if value is not None:
                registration[key] = value
        buffer = Buffer(self._options.batch_size)
        if settings.mode == "job" and "config" in registration:
            buffer.add_control("config", registration["config"])
        sender = Sender(run_id, settings, registration, buffer, self._options)
        self._id = run_id
        self._settings = settings
        self._buffer = buffer
        self._queue = buffer.queue
        self._sender = sender
        self._logged_checkpoints = {}
        self._state = _ACTIVE
        _exit.install()
        sender.start()

    def _auto_init(self):
        """Inside a job the first call starts the run; outside one, calls before init are ignored."""
        if self._state == _NEW:
            if _settings.in_job():
                self.init()
                return self._state == _ACTIVE
            if not self._warned_before_init:
                self._warned_before_init = True
                debug("called before run.init() outside a gpuctl job: ignored")
        return False

    def _numeric(self, where, metrics):
        if not isinstance(metrics, Mapping):
            debug("%s(): metrics must be a dict, not %s" % (where, type(metrics).__name__))
            return {}
        skipped = []
        out = numeric_metrics(metrics, skipped)
        if skipped:
            debug("%s(): non-numeric metrics skipped: %s" % (where, ", ".join(map(str, skipped))))
        return out

    def _is_active(self):
        return self._state == _ACTIVE

    def _exit_timeout_s(self):
        if self._options.exit_timeout_s is not None:
            return self._options.exit_timeout_s
        if self._settings is not None:
            return self._settings.exit_timeout_s
        return _settings.DEFAULT_EXIT_TIMEOUT_S

    def _disable_after_fork(self):
        self._state = _OFF
        self._lock = threading.RLock()


def path_size(path):
    """Bytes in a file, or in all files under a folder (symlinks not followed); None if absent."""
    try:
        if not os.path.isdir(path):
            return os.stat(path).st_size
    except OSError:
        return None
    total = 0
    counted = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            counted += 1
            if counted >= MAX_SIZED_FILES:
                return total
    return total
