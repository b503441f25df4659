"""The background thread that takes batches from the buffer and delivers them.

One daemon thread per run. It first takes the environment snapshot (on a helper
thread, while it takes what is logged meanwhile into batches for the journal) and,
outside a job, registers the run; then it sends a batch every ``flush_interval_s``,
or as soon as ``batch_size`` points wait, whichever comes first.

Nothing is thrown away because it could not be sent. While the endpoint answers,
batches go straight from memory; when it does not (the server is down, the agent
is being restarted under the job), or when more than ``queue_size`` points wait
in memory (a tight logging loop), the batches are appended to the run's
*journal* on disk (``_transport.Journal``) and from then on everything goes
through it, in order, until it is delivered and deleted again. Delivery retries
with exponential backoff for as long as the process lives. Only what the disk
itself refuses is lost; it is counted and reported as ``dropped``.

Where batches go is the *mode*:

* "job": ``POST {GPUCTL_INGEST_URL}/log`` (the agent, usually over its Unix
  socket); the journal lives in ``$GPUCTL_RUN_DIR``, and what is still in it when
  the process has ended is taken by the agent (``agent/sdk_journal.ts``).
* "server": ``POST {server}/api/sdk/runs/{id}/log`` after registering; the
  journal is the spool file ``$GPUCTL_HOME/spool/<id>.jsonl``, left for
  ``gpuctl sync`` if the process exits before it is delivered.
* "offline"/"spool": the journal only (no server configured, or the token was
  refused): ``gpuctl sync`` uploads it.
"""

import json
import threading
import time

from . import _environment
from ._buffer import points_in
from ._debug import debug
from ._transport import INVALID, OK, Journal, Poster, as_rows, encode, points_only

#: Points per journal line when memory is spilled to disk (larger lines send faster).
SPILL_BATCH_POINTS = 5000
#: Points waiting, at most about, before the thread writes them to the journal while batches
#: go there. Each wake-up takes the interpreter lock from the training thread, and then again
#: after each write, so not too often; yet often enough that the calls' memory is used again
#: instead of fresh memory (which the system must map and zero, a cost the training thread
#: pays too).
JOURNAL_WAKE_POINTS = 4000
#: How often the thread looks for points to take while the environment snapshot runs.
EARLY_POLL_S = 0.02
#: Longest backoff between retries once the run is finishing (the exit clock is running).
CLOSING_BACKOFF_S = 0.25
#: Statuses that say the token will never be accepted: keep the data for `gpuctl sync`.
REFUSED_TOKEN = (401, 403)

# Inside a job the batches go to the agent on the same host: sending them often costs
# little and keeps the console live (a point shows within a fraction of a second).
JOB_FLUSH_INTERVAL_S = 0.2


class Options(object):
    """Tuning knobs of a run, with the defaults documented in the README."""

    def __init__(self, queue_size=100000, batch_size=1000, flush_interval_s=1.0,
                 http_timeout_s=5.0, exit_timeout_s=None, backoff_initial_s=0.5,
                 backoff_max_s=30.0, max_retries=10):
        self.queue_size = max(1, int(queue_size))
        self.batch_size = max(1, int(batch_size))
        self.flush_interval_s = float(flush_interval_s)
        self.http_timeout_s = float(http_timeout_s)
        self.exit_timeout_s = None if exit_timeout_s is None else float(exit_timeout_s)
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        # Kept for compatibility: batches are no longer given up after a number of tries.
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
        self.env = None
        self._registered = self.mode == "job"
        self._columns = True  # False once the endpoint turned columns down (an older one)
        if self.mode == "job":
            self._poster = Poster(None, options.http_timeout_s, local=True)
            self._log_url = settings.ingest_url + "/log"
        else:
            self._poster = Poster(settings.token, options.http_timeout_s)
            base = settings.server_url or ""
            self._register_url = base + "/api/sdk/runs"
            self._log_url = "%s/api/sdk/runs/%s/log" % (base, run_id)
        run_line = registration if self.mode != "job" else _job_run_line(run_id, settings)
        self.journal = Journal(settings.journal_dir, run_id, run_line)
        self.flush_interval_s = options.flush_interval_s
        if self.mode == "job":
            self.flush_interval_s = min(options.flush_interval_s, JOB_FLUSH_INTERVAL_S)
        self._lock = threading.Lock()  # guards the in-flight batch and moves to the journal
        self._inflight = None
        self._early = []  # batches taken while the environment snapshot runs, for the journal
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._done = threading.Event()
        self._failures = 0  # deliveries failed in a row
        self._unreachable = False  # the last failure found nothing listening
        self._retry_at = 0.0
        self._thread = threading.Thread(
            target=self._main, name="gpuctl-sender-%s" % (run_id,), daemon=True)

    @property
    def spool(self):
        """The journal (the spool file outside a job)."""
        return self.journal

    # -- called from the training thread ---------------------------------------------

    def start(self):
        self._thread.start()

    def wake(self):
        """Ask for a batch now (a full batch of points is waiting)."""
        if not self._wake.is_set():
            self._wake.set()

    def spill_now(self):
        """Move everything in memory to the journal (the training thread far ahead of the disk)."""
        self._spill()

    def close(self, timeout_s):
        """Deliver everything queued (the final status included) within ``timeout_s``.

        Returns True when all was delivered. On timeout what is left is on disk: the
        spool file outside a job (``gpuctl sync`` sends it); inside one the journal in
        the run's folder, which the agent takes once the process has ended. The thread
        keeps trying until the process exits.
        """
        self._closing.set()
        self._wake.set()
        if self._thread.is_alive():
            self._done.wait(max(0.0, timeout_s))
        with self._lock:
            if (self._inflight is None and not self._early and self.buffer.is_empty()
                    and not self.journal.pending()):
                return True
        self._spill()  # inside a job the agent takes the journal when the process has ended
        debug("run %s: not all delivered at finish; kept in %s" % (self.run_id, self.journal.path))
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
        self.env = self._snapshot_meanwhile()
        if self.mode == "job":
            self.buffer.add_control("env", self.env)
            return
        if self.env:
            # A new dict, not an update: close() may be encoding the old one right now.
            self.registration = dict(self.registration, env=self.env)
            self.journal.run_body = self.registration
        if self.mode == "offline":
            self._switch_to_spool()

    def _snapshot_meanwhile(self):
        """The environment snapshot, taken on a helper thread (git may take a while), while
        this one turns what is logged meanwhile into batches for the journal: the calls'
        memory is used again instead of growing (fresh memory costs the training thread)."""
        box = []
        helper = threading.Thread(target=lambda: box.append(_environment.snapshot()),
                                  name="gpuctl-env-%s" % (self.run_id,), daemon=True)
        helper.start()
        woken = False
        while helper.is_alive() and not self._closing.is_set():
            woken = self._wake.wait(EARLY_POLL_S) or woken
            self._wake.clear()
            if self.buffer.pending_points() >= JOURNAL_WAKE_POINTS:
                with self._lock:
                    batch = self.buffer.take_batch(SPILL_BATCH_POINTS)
                    if batch is not None:
                        self._early.append(batch)
        helper.join()
        if woken:
            self._wake.set()  # a wake-up meant for the loop: it still sees it
        return box[0] if box else {}

    def _loop(self):
        options = self.options
        if self._early:
            self._spill()  # the batches taken during the snapshot: first in the journal
        next_due = time.monotonic() + self.flush_interval_s
        while True:
            closing = self._closing.is_set()
            journaling = self.journal.pending()
            # While batches go to the journal, the thread writes it every flush interval
            # (or retry), and as soon as JOURNAL_WAKE_POINTS points wait.
            full = (min(options.queue_size, JOURNAL_WAKE_POINTS)
                    if journaling or self.mode == "spool" or not self._registered
                    else options.batch_size)
            if self.buffer.wake_every != full:
                self.buffer.wake_after(full)
            if not closing and self.buffer.pending_points() < full:
                now = time.monotonic()
                until = next_due if not journaling else min(next_due, max(self._retry_at, now))
                if until > now:
                    self._wake.wait(until - now)
                self._wake.clear()
            if time.monotonic() >= next_due:
                next_due = time.monotonic() + self.flush_interval_s
                if not closing:
                    self._refresh_env()
            if (journaling or self.mode == "spool"
                    or self.buffer.pending_points() >= options.queue_size):
                # Disk first: the journal keeps the order, and memory stays bounded.
                self._spill()
            if self.mode == "spool":
                if closing:
                    return
                continue
            if closing and self._unreachable and self.mode == "server":
                # Nothing listens and all is on disk: `gpuctl sync` sends it; exit now.
                self._spill()
                return
            if self.journal.pending():
                if time.monotonic() >= self._retry_at:
                    self._deliver_journal()
                elif closing:
                    time.sleep(min(CLOSING_BACKOFF_S, max(0.0, self._retry_at - time.monotonic())))
                continue
            self.journal.finish_if_sent()
            if not self._ensure_registered():
                continue
            with self._lock:
                batch = self.buffer.take_batch(options.batch_size)
                self._inflight = batch
            if batch is None:
                if closing and self.buffer.is_empty():
                    return
                continue
            self._deliver_direct(batch)

    def _ensure_registered(self):
        """Register a server-mode run once; False (with a retry time set) while it cannot be."""
        if self._registered:
            return True
        if time.monotonic() < self._retry_at:
            self._spill()
            if self._closing.is_set():
                time.sleep(max(0.0, min(CLOSING_BACKOFF_S, self._retry_at - time.monotonic())))
            return False
        outcome = self._poster.post(self._register_url, encode(self.registration))
        if outcome.kind == OK:
            debug("run %s: registered with %s" % (self.run_id, self.settings.server_url))
            self._registered = True
            self._failures = 0
            return True
        debug("run %s: registration failed: %r" % (self.run_id, outcome))
        self._unreachable = outcome.nobody_listens
        if outcome.status in REFUSED_TOKEN:
            self._switch_to_spool()
        elif outcome.kind == INVALID and "config" in self.registration:
            # Never keep the run from the server over its config: register without it.
            debug("run %s: registering again without the config the server refused" % self.run_id)
            self.registration = {k: v for k, v in self.registration.items() if k != "config"}
        else:
            self._backoff()
        self._spill()
        return False

    def _deliver_direct(self, batch):
        try:
            data = encode(batch)
        except Exception as error:
            debug("run %s: batch not encodable, dropped: %r" % (self.run_id, error))
            self._forget(batch)
            self.buffer.add_dropped(points_in(batch))
            return
        outcome = self._post_log(data)
        if outcome.kind == OK:
            self._failures = 0
            self._unreachable = False
            self._note_refused(outcome)
            self._forget(batch)
            return
        if not self._keep_going(outcome):
            self._forget(batch)
            self.buffer.add_dropped(points_in(batch))
            return
        with self._lock:  # into the journal, ahead of everything logged after it
            if self._inflight is batch:
                self._inflight = None
                if not self.journal.append([batch]):
                    self.buffer.add_dropped(points_in(batch))

    def _deliver_journal(self):
        """Send journal lines in order until one fails, the journal is empty, or new points pile up."""
        while True:
            if self._registered is False and not self._ensure_registered():
                return
            item = self.journal.next_body()
            if item is None:
                self.journal.finish_if_sent()
                return
            data, end = item
            outcome = self._post_log(data)
            if outcome.kind == OK:
                self._failures = 0
                self._unreachable = False
                self._note_refused(outcome)
                self.journal.mark_sent(end)
            elif self._keep_going(outcome):
                return
            else:
                self.journal.mark_sent(end)  # the line can never be taken; the rest can
                self.buffer.add_dropped(_points_in_line(data))
            if self.buffer.pending_points() >= self.options.queue_size:
                self._spill()

    def _keep_going(self, outcome):
        """After a failed post: True to retry later (backoff set), False when the body is refused."""
        debug("run %s: not delivered: %r" % (self.run_id, outcome))
        self._unreachable = outcome.nobody_listens
        if outcome.status in REFUSED_TOKEN and self.mode == "server":
            self._switch_to_spool()
            return True
        if outcome.status == 404:
            # Server mode: the run is unknown (a server started afresh): register again.
            # Job mode: an agent restarting under the job does not know the run yet.
            self._registered = self.mode == "job"
            self._backoff()
            return True
        if outcome.kind == INVALID:
            debug("run %s: batch refused whole, dropped: %r" % (self.run_id, outcome))
            return False
        self._backoff()
        return True

    def _post_log(self, data):
        """Posts a log body; to an endpoint older than ``columns`` (it names the field as
        one it does not know, and takes the rest), the points go again as rows, alone, and
        from then on every body goes as rows."""
        if not self._columns:
            data = as_rows(data)
        outcome = self._poster.post(self._log_url, data)
        if self._columns and outcome.kind == OK and _columns_refused(outcome):
            debug("run %s: the endpoint does not take columns; sending rows" % (self.run_id,))
            self._columns = False
            points = points_only(data)
            if points is not None:
                outcome = self._poster.post(self._log_url, points)
        return outcome

    def _note_refused(self, outcome):
        body = outcome.body if isinstance(outcome.body, dict) else {}
        refused = body.get("refused")
        if refused:
            debug("run %s: the endpoint refused %s item(s) of a batch: %r"
                  % (self.run_id, refused.get("count"), refused.get("items", [])[:5]))

    def _backoff(self):
        delay = min(self.options.backoff_max_s,
                    self.options.backoff_initial_s * (2 ** min(self._failures, 30)))
        self._failures += 1
        if self._closing.is_set():
            delay = min(delay, CLOSING_BACKOFF_S)
        self._retry_at = time.monotonic() + delay

    def _forget(self, batch):
        with self._lock:
            if self._inflight is batch:
                self._inflight = None

    def _refresh_env(self):
        """Send GPU names (and the torch version) once the script has made them knowable."""
        if self.env is None:
            return
        fresh = _environment.torch_facts_changed(self.env)
        if fresh:
            self.env = dict(self.env, **fresh)
            self.buffer.add_control("env", self.env)

    # -- the journal -----------------------------------------------------------------

    def _switch_to_spool(self):
        """Deliver nothing more: everything stays in the journal for `gpuctl sync`."""
        with self._lock:
            self.mode = "spool"
        self._spill()

    def _spill(self):
        """Move the in-flight batch and everything in memory to the journal, in order.

        Each batch is written as it is taken, so a long spill is on disk as it goes.
        """
        with self._lock:
            early, self._early = self._early, []
            if early and not self.journal.append(early):
                self.buffer.add_dropped(sum(points_in(body) for body in early))
            batch, self._inflight = self._inflight, None
            # What is queued now, and the rare items right behind it: a training loop that
            # logs while this runs adds more than it could ever catch up with.
            buffer = self.buffer
            end = buffer.entries_taken + buffer.waiting_entries()
            if batch is None:
                batch = buffer.take_batch(SPILL_BATCH_POINTS)
            while batch is not None:
                if not self.journal.append([batch]):
                    buffer.add_dropped(points_in(batch))  # the disk is full: truly lost
                if buffer.entries_taken >= end and not buffer.control_first():
                    break
                batch = buffer.take_batch(SPILL_BATCH_POINTS)


def _columns_refused(outcome):
    """Whether the endpoint refused the ``columns`` field itself (an older one)."""
    body = outcome.body if isinstance(outcome.body, dict) else {}
    refused = body.get("refused")
    items = refused.get("items") if isinstance(refused, dict) else None
    return any(isinstance(item, dict) and item.get("path") == "columns"
               for item in items or ())


def _points_in_line(data):
    """How many points a journal line's body (bytes of JSON) carries."""
    try:
        return points_in(json.loads(data))
    except Exception:
        return 0


def _job_run_line(run_id, settings):
    line = {"id": run_id}
    if settings.project:
        line["project"] = settings.project
    if settings.experiment:
        line["experiment"] = settings.experiment
    return line
