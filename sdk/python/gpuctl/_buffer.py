"""The queue between the training thread and the sender.

Everything a run records waits in one list, in the order it was recorded: a ``log`` call
is one entry ``(step, wall_time, {key: value})`` appended without a lock (a list append is
atomic; a step of None is numbered when the entry is taken), and the rare items
(checkpoints, evaluations, config, env, the final status) are entries
``(_CONTROL, kind, payload)`` between them. So a batch never carries a checkpoint
ahead of the points logged before it, and the status always comes last. Nothing is
dropped here: when more than the run's ``queue_size`` points wait, the sender moves them
to the run's journal on disk (see ``_sender``), so memory stays bounded without losing a
point. Points that are truly lost (the disk refused them) are counted with
``add_dropped``, and the count rides along in the next batch as ``dropped``.

The taking side moves what waits to a list of its own in one step (a slice and a slice
delete, each atomic), and turns a batch's points into JSON there, on the sender's thread,
with one string format for the whole batch (no dict and no string per point):
``take_batch`` returns a body whose ``points`` is an ``EncodedPoints``, which
``_transport`` splices into the body as it is.
"""

import json
import threading

from ._debug import debug

#: The most checkpoints, evaluations and other rare items kept waiting.
MAX_CONTROLS = 10000
#: The most checkpoints the server accepts in one batch.
MAX_CHECKPOINTS_PER_BATCH = 1000
#: The first item of a rare item's entry in the queue.
_CONTROL = object()
#: The most metric keys whose JSON spelling is remembered.
MAX_KEY_MEMOS = 100000
#: Points formatted together, at most about: each piece of JSON stays well under the size
#: past which the C allocator maps fresh memory (and the system zero-fills it), so its
#: memory is used again and again.
CHUNK_POINTS = 1000
#: One point in JSON, given the start of its object (b'{"key":<key>,"value":'), its value,
#: its step and its wall time's text (bytes formatting: faster than text, and no encoding
#: after it; ``%a`` is a float's repr).
_POINT = b'%s%a,"step":%d,"wall_time":%s},'


class NonFinite(float):
    """NaN, +Inf or -Inf as the wire spells them: a float whose repr is the JSON string."""

    __slots__ = ()

    def __repr__(self):
        if self != self:
            return '"NaN"'
        return '"Infinity"' if self > 0 else '"-Infinity"'

    __str__ = __repr__


NAN = NonFinite("nan")
INFINITY = NonFinite("inf")
NEGATIVE_INFINITY = NonFinite("-inf")
#: The wire's spellings of the non-finite floats, and the floats the queue holds for them.
SPELLED = {"NaN": NAN, "Infinity": INFINITY, "-Infinity": NEGATIVE_INFINITY}


def wire_float(number):
    """A float as the queue holds it: itself when finite, else NAN/INFINITY/NEGATIVE_INFINITY."""
    if number - number == 0.0:
        return number
    if number != number:
        return NAN
    return INFINITY if number > 0 else NEGATIVE_INFINITY


class EncodedPoints(object):
    """Points already in JSON: ``chunks`` are pieces of UTF-8 bytes, each some points'
    comma-separated objects (without brackets); joined with commas they are the list."""

    __slots__ = ("chunks", "count")

    def __init__(self, chunks, count):
        self.chunks = chunks
        self.count = count

    @property
    def data(self):
        """All the points' objects, comma-separated."""
        return b",".join(self.chunks)

    def __len__(self):
        return self.count


class Buffer(object):
    """Points and rare items waiting to be sent; every method is thread-safe.

    The logging side only appends to ``queue`` (atomic, no lock): a call's step may be None,
    "the next one", and the taking side gives it its number in queue order, which is the
    order of the calls (so a step counter needs no lock either). The taking side (one taker
    at a time, ``_take_lock``) moves the whole queue to ``_held`` at once and works through
    it; how many points wait is estimated from the entries waiting and the points per entry
    seen so far. ``wake_len`` is the queue length at which ``log`` wakes the sender, so
    ``log`` compares one number.
    """

    def __init__(self, batch_size=1000):
        self._lock = threading.Lock()  # rare items and drop counts
        self._take_lock = threading.Lock()  # one taker at a time
        self.queue = []
        self._held = []  # entries moved out of the queue, not yet taken (under _take_lock)
        self._pos = 0  # the next of them
        self.batch_size = max(1, int(batch_size))
        self.taken = 0  # points ever taken into a batch
        self.entries_taken = 0  # entries (calls and rare items) ever taken whole
        self._per_entry = 1.0  # points per log call, as last seen
        self._next_step = 0
        self.wake_every = self.batch_size
        self.wake_len = self.batch_size
        self._wake_base = self.batch_size  # wake_len while nothing was asked of the sender
        self._controls = 0  # rare items waiting
        self._dropped = 0  # points dropped and not yet reported
        self._epoch = None
        self._wall_memo = (None, b"")  # the last wall time's millisecond, and its text
        # The start of each key's points' JSON (b'{"key":<key>,"value":'); under _take_lock.
        self._memos = _KeyMemos()
        self._template = (b"", 0)  # _POINT repeated, and how many times
        self.dropped_total = 0

    def add_points(self, step, wall_time, metrics):
        """Queue one call's points at ``step`` (None: the next step) (``metrics``: key ->
        float, or "NaN"/"Infinity"/"-Infinity", owned by the buffer from now on; empty takes
        a step and nothing else); returns about how many points now wait.

        ``Run.log`` appends the same entries to ``queue`` itself, its non-finite values
        already ``wire_float``'s.
        """
        for key, value in list(metrics.items()):
            if type(value) is not float:
                metrics[key] = SPELLED[value] if isinstance(value, str) else float(value)
            elif value - value != 0.0:
                metrics[key] = wire_float(value)
        self.queue.append((step, wall_time, metrics))
        return self.pending_points()

    def waiting_entries(self):
        """How many entries (calls and rare items) wait (an estimate while one is taken)."""
        return len(self.queue) + max(0, len(self._held) - self._pos)

    def pending_points(self):
        """About how many points wait (log calls waiting × points per call seen)."""
        return int(self.waiting_entries() * self._per_entry)

    def wake_after(self, points):
        """Have ``log`` wake the sender once about ``points`` points wait."""
        self.wake_every = max(1, int(points))
        self._wake_base = self.wake_len = max(1, int(self.wake_every / self._per_entry))

    def woken(self):
        """``log`` woke the sender: the next wake-up only once as much again is queued
        (until the sender takes what waits), not at every call meanwhile."""
        self.wake_len = len(self.queue) + self._wake_base

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
        return not self.queue and self._pos >= len(self._held)

    def control_first(self):
        """Whether a rare item is next in the queue."""
        try:
            held = self._held
            if self._pos < len(held):
                return held[self._pos][0] is _CONTROL
            return self.queue[0][0] is _CONTROL
        except IndexError:
            return False

    def _refill(self):
        """Move everything queued to ``_held`` (under _take_lock, ``_held`` all taken)."""
        queue = self.queue
        count = len(queue)
        held = queue[:count]
        del queue[:count]  # only these: calls appended meanwhile stay queued, in order
        self._held = held
        self._pos = 0
        self.wake_len = self._wake_base
        return held

    def take_batch(self, max_points):
        """The next log body (a dict in wire form, ``points`` an ``EncodedPoints``), or None
        when nothing waits."""
        with self._take_lock:
            body = {}
            memos = self._memos
            ms, wall = self._wall_memo
            next_step = self._next_step
            held = self._held
            pos = self._pos
            size = len(held)
            args = []
            extend = args.extend
            chunks = []
            count = 0
            chunk_end = CHUNK_POINTS
            top = -1
            checkpoints = []
            controls = 0
            entries = 0
            while True:
                if pos >= size:
                    self._pos = pos
                    held = self._refill()
                    pos = 0
                    size = len(held)
                    if not size:
                        break
                at, second, third = held[pos]
                if at is not _CONTROL:  # a log call's points
                    room = max_points - count
                    if room <= 0:
                        break
                    if at is None:  # the next step
                        at = next_step
                    if at >= next_step:
                        next_step = at + 1
                    if len(third) > room:  # a call with more points than fit: split it
                        items = list(third.items())
                        held[pos] = (at, second, dict(items[room:]))
                        third = dict(items[:room])
                    else:
                        pos += 1
                        entries += 1
                    # The wall time to the millisecond, its text made once per millisecond.
                    if int(second * 1000.0) != ms:
                        ms = int(second * 1000.0)
                        wall = b"%.3f" % (ms / 1000.0)
                    for key, value in third.items():
                        extend((memos[key], value, at, wall))
                    count += len(third)
                    if at > top:
                        top = at
                    if count >= chunk_end:
                        chunks.append(self._format(len(args) >> 2) % tuple(args))
                        del args[:]
                        chunk_end = count + CHUNK_POINTS
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
                pos += 1
                controls += 1
            self._pos = pos
            self._next_step = next_step
            self._wall_memo = (ms, wall)
            self.entries_taken += entries + controls
            if controls:
                with self._lock:
                    self._controls -= controls
            if entries:
                self._per_entry = max(1.0, count / entries)
                self._wake_base = self.wake_len = max(1, int(self.wake_every / self._per_entry))
            if args:
                chunks.append(self._format(len(args) >> 2) % tuple(args))
            if count:
                body["points"] = EncodedPoints(chunks, count)
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

    def _format(self, count):
        """The format of ``count`` points (without the last comma)."""
        template, times = self._template
        if times != count:
            template = (_POINT * count)[:-1]
            self._template = (template, count)
        return template



class _KeyMemos(dict):
    """key -> the start of its points' JSON, b'{"key":<key>,"value":', made when first asked."""

    def __missing__(self, key):
        memo = ('{"key":%s,"value":' % (json.dumps(key),)).encode("ascii")
        if len(self) < MAX_KEY_MEMOS:
            self[key] = memo
        return memo


def points_in(body):
    """How many metric points a log body carries."""
    return len(body.get("points") or ())
