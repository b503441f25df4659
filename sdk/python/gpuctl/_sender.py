"""The background thread that takes batches from the buffer and delivers them.

One daemon thread per run. It first takes the environment snapshot and, outside
a job, registers the run; then it sends a batch every ``flush_interval_s``, or
as soon as ``batch_size`` points wait, whichever comes first. One batch is in
flight at a time: a failed batch is kept and retried with exponential backoff
while new points keep queueing (bounded by the buffer).

Where batches go is the *mode*:

* "job": ``POST {GPUCTL_INGEST_URL}/log``. A batch that still fails after
  ``max_retries`` tries is dropped and counted (the agent spools; the SDK does not).
* "server": ``POST {server}/api/sdk/runs/{id}/log`` after registering. When the
  server cannot be reached (registration fails to connect, three batches in a
  row fail to connect, or a batch exhausts its retries) the run switches to
  "spool" for good.
* "offline"/"spool": appended to ``$GPUCTL_HOME/spool/<id>.jsonl``.
"""

import threading
import time

from . import _environment
from ._buffer import points_in
from ._debug import debug
from ._transport import INVALID, OK, UNREACHABLE, Poster, Spool, encode

#: Registration tries on 408/429/5xx before the run goes to the spool.
MAX_REGISTER_ATTEMPTS = 5
#: Batches in a row that fail to connect before a server-mode run goes to the spool.
MAX_UNREACHABLE_IN_A_ROW = 3
#: Longest backoff between retries once the run is finishing (the exit clock is running).
CLOSING_BACKOFF_S = 0.25


# Inside a job the batches go to the agent on the same host: sending them often costs
# little and keeps the console live (a point shows within a fraction of a second).
JOB_FLUSH_INTERVAL_S = 0.2


class Options(object):
    """Tuning knobs of a run, with the defaults documented in the README."""

    def __init__(self, queue_size=100000, batch_size=1000, flush_interval_s=1.0,
                 http_timeout_s=5.0, exit_timeout_s=None, backoff_initial_s=0.5,
                 backoff_max_s=30.0, max_retries=10):
        self.queue_size = int(queue_size)
        self.batch_size = max(1, int(batch_size))
        self.flush_interval_s = float(flush_interval_s)
        self.http_timeout_s = float(http_timeout_s)
        self.exit_timeout_s = None if exit_timeout_s is None else float(exit_timeout_s)
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retries = max(1, int(max_retries))


class Sender(object):
    """Delivers one run's batches from a daemon thread; ``close`` drains it within a deadline."""

    def __init__(self, run_id, settings, registration, buffer, options):
        self.run_id = run_id
        self.mode = settings.mode
        self.settings = settings
        self.registration = registration
        self.buffer = buffer
        self.options = options
        self.spool = Spool(settings.spool_dir, run_id)
        self.env = None
        if self.mode == "job":
            self._poster = Poster(None, options.http_timeout_s, local=True)
            self._log_url = settings.ingest_url + "/log"
        else:
            self._poster = Poster(settings.token, options.http_timeout_s)
            base = settings.server_url or ""
            self._register_url = base + "/api/sdk/runs"
            self._log_url = "%s/api/sdk/runs/%s/log" % (base, run_id)
        self.flush_interval_s = options.flush_interval_s
        if self.mode == "job":
            self.flush_interval_s = min(options.flush_interval_s, JOB_FLUSH_INTERVAL_S)
        self._lock = threading.Lock()  # guards mode switches and the in-flight batch
        self._inflight = None
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._done = threading.Event()
        self._unreachable_in_a_row = 0
        self._thread = threading.Thread(
            target=self._main, name="gpuctl-sender-%s" % (run_id,), daemon=True)

    # -- called from the training thread ---------------------------------------------

    def start(self):
        self._thread.start()

    def wake(self):
        """Ask for a batch now (a full batch of points is waiting)."""
        if not self._wake.is_set():
            self._wake.set()

    def close(self, timeout_s):
        """Deliver everything queued (the final status included) within ``timeout_s``.

        Returns True when all was delivered. On timeout a run that is not in a
        job writes what is left to the spool, so ``gpuctl sync`` can send it later;
        in a job what is left is abandoned (the thread keeps trying until exit).
        """
        self._closing.set()
        self._wake.set()
        if self._thread.is_alive():
            self._done.wait(max(0.0, timeout_s))
        with self._lock:  # the thread takes a batch and marks it in flight under this lock
            if self._inflight is None and self.buffer.is_empty():
                return True
        if self.mode == "job":
            debug("run %s: gave up delivering to %s at finish" % (self.run_id, self._log_url))
            return False
        self._spool_the_rest()
        return False

    # -- the thread ------------------------------------------------------------------

    def _main(self):
        try:
            self._prepare()
            self._loop()
        except Exception as error:  # a bug here must not print a thread traceback
            debug("run %s: sender stopped: %r" % (self.run_id, error))
        finally:
            self._done.set()

    def _prepare(self):
        self.env = _environment.snapshot()
        if self.mode == "job":
            self.buffer.add_control("env", self.env)
            return
        if self.env:
            # A new dict, not an update: close() may be encoding the old one right now.
            self.registration = dict(self.registration, env=self.env)
        if self.mode == "offline":
            self._switch_to_spool()
            return
        self._register()

    def _register(self):
        data = encode(self.registration)
        for attempt in range(MAX_REGISTER_ATTEMPTS):
            if self.mode != "server":
                return  # close() already moved the run to the spool
            outcome = self._poster.post(self._register_url, data)
            if outcome.kind == OK:
                debug("run %s: registered with %s" % (self.run_id, self.settings.server_url))
                return
            debug("run %s: registration failed: %r" % (self.run_id, outcome))
            if outcome.kind in (UNREACHABLE, INVALID):
                break
            self._pause(attempt)
        self._switch_to_spool()

    def _loop(self):
        options = self.options
        next_due = time.monotonic() + self.flush_interval_s
        attempt = 0
        while True:
            batch = self._inflight
            if batch is None:
                if not self._closing.is_set() and self.buffer.pending_points() < options.batch_size:
                    wait_s = next_due - time.monotonic()
                    if wait_s > 0:
                        self._wake.wait(wait_s)
                self._wake.clear()
                next_due = time.monotonic() + self.flush_interval_s
                if not self._closing.is_set():
                    self._refresh_env()
                with self._lock:
                    batch = self.buffer.take_batch(options.batch_size)
                    self._inflight = batch
                if batch is None:
                    if self._closing.is_set() and self.buffer.is_empty():
                        return
                    continue
                attempt = 0
            if self._deliver(batch, attempt):
                with self._lock:
                    if self._inflight is batch:
                        self._inflight = None
            else:
                self._pause(attempt)
                attempt += 1

    def _deliver(self, batch, attempt):
        """Send (or spool) one batch; True when done with it, False to retry it."""
        if self.mode not in ("job", "server"):
            return self._spool_batch(batch)
        try:
            data = encode(batch)
        except Exception as error:
            debug("run %s: batch not encodable, dropped: %r" % (self.run_id, error))
            self.buffer.add_dropped(points_in(batch))
            return True
        outcome = self._poster.post(self._log_url, data)
        if outcome.kind == OK:
            self._unreachable_in_a_row = 0
            return True
        if outcome.kind == INVALID:
            debug("run %s: batch refused, dropped: %r" % (self.run_id, outcome))
            self.buffer.add_dropped(points_in(batch))
            return True
        debug("run %s: batch not delivered (try %d): %r" % (self.run_id, attempt + 1, outcome))
        if outcome.kind == UNREACHABLE:
            self._unreachable_in_a_row += 1
        else:
            self._unreachable_in_a_row = 0
        exhausted = attempt + 1 >= self.options.max_retries
        if self.mode == "server":
            if exhausted or self._unreachable_in_a_row >= MAX_UNREACHABLE_IN_A_ROW:
                self._switch_to_spool()
                return self._spool_batch(batch)
            return False
        if exhausted:
            debug("run %s: batch abandoned after %d tries" % (self.run_id, attempt + 1))
            self.buffer.add_dropped(points_in(batch))
            return True
        return False

    def _pause(self, attempt):
        delay = min(self.options.backoff_max_s, self.options.backoff_initial_s * (2 ** attempt))
        if self._closing.is_set():
            time.sleep(min(delay, CLOSING_BACKOFF_S))
        else:
            self._closing.wait(delay)  # close() cuts a long backoff short

    def _refresh_env(self):
        """Send GPU names (and the torch version) once the script has made them knowable."""
        if self.env is None:
            return
        fresh = _environment.torch_facts_changed(self.env)
        if fresh:
            self.env = dict(self.env, **fresh)
            self.buffer.add_control("env", self.env)

    # -- the spool -------------------------------------------------------------------

    def _switch_to_spool(self):
        with self._lock:
            if self.mode == "spool":
                return
            self.mode = "spool"
        self.spool.start(self.registration)

    def _spool_batch(self, batch):
        with self._lock:
            if self._inflight is not batch:
                return True  # close() already spooled it
        self.spool.append(batch)
        return True

    def _spool_the_rest(self):
        """From close(): move the in-flight batch and everything queued to the spool."""
        self._switch_to_spool()
        with self._lock:
            batches = [self._inflight] if self._inflight is not None else []
            self._inflight = None
            while True:
                batch = self.buffer.take_batch(self.options.batch_size)
                if batch is None:
                    break
                batches.append(batch)
            for batch in batches:
                self.spool.append(batch)
        debug("run %s: %d batch(es) left for `gpuctl sync` in %s"
              % (self.run_id, len(batches), self.spool.path))
