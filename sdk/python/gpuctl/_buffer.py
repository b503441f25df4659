"""The queue between the training thread and the sender.

Everything a run records waits in one deque, in the order it was recorded: a ``log`` call
is one entry ``(step, wall_time, {key: value})`` appended without a lock (a deque append is
atomic; a step of None is numbered when the entry is taken), and the rare items
(checkpoints, evaluations, config, env, the final status) are entries
``(_CONTROL, kind, payload)`` between them. So a batch never carries a checkpoint
ahead of the points logged before it, and the status always comes last. Nothing is
dropped here: when more than the run's ``queue_size`` points wait, the sender moves them
to the run's journal on disk (see ``_sender``), so memory stays bounded without losing a
point. Points that are truly lost (the disk refused them) are counted with
``add_dropped``, and the count rides along in the next batch as ``dropped``.

The points are turned into JSON here, on the sender's thread, when a batch is taken (one
string per point, no dict per point): ``take_batch`` returns a body whose ``points`` is
an ``EncodedPoints``, which ``_transport.encode`` splices into the body as it is.
"""

import collections
import json
import threading

from ._debug import debug
from ._values import encode_float

#: The most checkpoints, evaluations and other rare items kept waiting.
MAX_CONTROLS = 10000
#: The most checkpoints the server accepts in one batch.
MAX_CHECKPOINTS_PER_BATCH = 1000
#: The first item of a rare item's entry in the queue.
_CONTROL = object()
#: The most metric keys whose JSON spelling is remembered.
MAX_KEY_MEMOS = 100000

class EncodedPoints(object):
    """Points already in JSON: ``text`` is their comma-separated objects (without brackets)."""

    __slots__ = ("text", "count")

    def __init__(self, text, count):
        self.text = text
        self.count = count

    def __len__(self):
        return self.count


class Buffer(object):
    """Points and rare items waiting to be sent; every method is thread-safe.

    The logging side only appends to ``queue`` (atomic, no lock): a call's step may be None,
    "the next one", and the taking side gives it its number in queue order, which is the
    order of the calls (so a step counter needs no lock either). The taking side (one taker
    at a time, ``_take_lock``) counts what it took; how many points wait is estimated from
    the queue's length and the points per entry seen so far. ``wake_len`` is the queue
    length at which ``log`` wakes the sender (a full batch waits; while the sender writes
    to its journal instead, ``queue_size`` points), so ``log`` compares one number.
    """

    def __init__(self, batch_size=1000):
        self._lock = threading.Lock()  # rare items and drop counts
        self._take_lock = threading.Lock()  # one taker at a time
        self.queue = collections.deque()
        self.batch_size = max(1, int(batch_size))
        self.taken = 0  # points ever taken into a batch
        self.entries_taken = 0  # entries (calls and rare items) ever taken whole
        self._per_entry = 1.0  # points per log call, as last seen
        self._next_step = 0
        self.wake_every = self.batch_size
        self.wake_len = self.batch_size
        self._controls = 0  # rare items waiting
        self._dropped = 0  # points dropped and not yet reported
        self._epoch = None
        self._wall_memo = (None, "")  # the last wall time's millisecond, and its text
        # For each key met: [the start of its points' JSON ('{"key":<key>,"value":'), the
        # last value written, that value's JSON]; used under _take_lock only.
        self._memos = {}
        self.dropped_total = 0

    def add_points(self, step, wall_time, metrics):
        """Queue one call's points at ``step`` (None: the next step) (``metrics``: key ->
        float or "NaN"/"Infinity"/"-Infinity", owned by the buffer from now on; empty takes a
        step and nothing else); returns about how many points now wait.

        ``Run.log`` appends the same entries to ``queue`` itself.
        """
        self.queue.append((step, wall_time, metrics))
        return self.pending_points()

    def pending_points(self):
        """About how many points wait (log calls waiting × points per call seen)."""
        return int(len(self.queue) * self._per_entry)

    def wake_after(self, points):
        """Have ``log`` wake the sender once about ``points`` points wait."""
        self.wake_every = max(1, int(points))
        self.wake_len = max(1, int(self.wake_every / self._per_entry))

    def add_control(self, kind, payload):
        """Queue a rare item: "checkpoint", "evaluation", "config", "env" or "status"."""
        with self._lock:
            if self._controls >= MAX_CONTROLS and kind != "status":
                debug("too many %s items waiting; dropped one" % (kind,))
                return False
            self._controls += 1
            self.queue.append((_CONTROL, kind, payload))
            return True

    def set_epoch(self, epoch):
        """Remember the run's latest whole epoch; every later batch carries it."""
        if epoch is not None:
            self._epoch = epoch

    def add_dropped(self, count):
        """Count points lost after they left the queue (a refused or abandoned batch)."""
        if count > 0:
            with self._lock:
                self._dropped += count
                self.dropped_total += count

    def is_empty(self):
        return not self.queue

    def control_first(self):
        """Whether a rare item is next in the queue."""
        try:
            return self.queue[0][0] is _CONTROL
        except IndexError:
            return False

    def take_batch(self, max_points):
        """The next log body (a dict in wire form, ``points`` an ``EncodedPoints``), or None
        when nothing waits."""
        with self._take_lock:
            body = {}
            queue = self.queue
            memos = self._memos
            ms, wall = self._wall_memo
            parts = []
            append = parts.append
            count = 0
            top = -1
            checkpoints = []
            controls = 0
            entries = 0
            while queue:
                at, second, third = queue[0]
                if at is not _CONTROL:  # a log call's points
                    room = max_points - count
                    if room <= 0:
                        break
                    queue.popleft()
                    if at is None:  # the next step
                        at = self._next_step
                    if at >= self._next_step:
                        self._next_step = at + 1
                    if len(third) > room:  # a call with more points than fit: split it
                        items = list(third.items())
                        queue.appendleft((at, second, dict(items[room:])))
                        third = dict(items[:room])
                    else:
                        entries += 1
                    # The wall time to the millisecond, its text made once per millisecond;
                    # a value's text reused while its key keeps the value (a learning rate).
                    if int(second * 1000.0) != ms:
                        ms = int(second * 1000.0)
                        wall = "%.3f" % (ms / 1000.0)
                    tail = ',"step":%d,"wall_time":%s}' % (at, wall)
                    for key, value in third.items():
                        memo = memos.get(key) or self._memo(key)
                        if value == memo[1] and value and type(value) is float:
                            append(memo[0] + memo[2] + tail)
                            continue
                        if type(value) is float and value - value == 0.0:
                            text = repr(value)
                        else:
                            text = _json(value)
                        memo[1] = value
                        memo[2] = text
                        append(memo[0] + text + tail)
                    count += len(third)
                    if at > top:
                        top = at
                    continue
                kind, payload = second, third
                if kind == "checkpoint":
                    if len(checkpoints) >= MAX_CHECKPOINTS_PER_BATCH:
                        break
                    checkpoints.append(payload)
                elif kind == "evaluation":
                    if "evaluation" in body:
                        break  # one evaluation per batch; the next goes in the next one
                    body["evaluation"] = payload
                elif kind in ("config", "env"):  # merged, as the server merges them
                    merged = dict(body.get(kind) or {})
                    merged.update(payload)
                    body[kind] = merged
                else:  # "status"
                    body[kind] = payload
                queue.popleft()
                controls += 1
            self._wall_memo = (ms, wall)
            self.entries_taken += entries + controls
            if controls:
                with self._lock:
                    self._controls -= controls
            if entries:
                self._per_entry = max(1.0, count / entries)
                self.wake_len = max(1, int(self.wake_every / self._per_entry))
            if count:
                body["points"] = EncodedPoints(",".join(parts), count)
                body["step"] = top
                self.taken += count
            if checkpoints:
                body["checkpoints"] = checkpoints
            if not body:
                return None  # a drop count alone waits for the next batch with data
            with self._lock:
                if self._dropped:
                    body["dropped"] = self._dropped
                    self._dropped = 0
            if self._epoch is not None:
                body["epoch"] = self._epoch
            return body

    def _memo(self, key):
        memo = ['{"key":%s,"value":' % (json.dumps(key),), None, ""]
        if len(self._memos) < MAX_KEY_MEMOS:
            self._memos[key] = memo
        return memo


def _json(value):
    """A value other than a finite float: a float that is not finite (as "NaN", "Infinity" or
    "-Infinity"), such a string already, or a number."""
    if type(value) is float:
        value = encode_float(value)
    return json.dumps(value, allow_nan=False)


def points_in(body):
    """How many metric points a log body carries."""
    return len(body.get("points") or ())
