"""The queue between the training thread and the sender.

Everything a run records waits in one flat list, in the order it was recorded, three
items an entry: a ``log`` call is ``step, wall_time, {key: value}``, added without a lock
(``queue += (step, wall_time, points)``: a list extended by a tuple is one atomic step, and
no tuple stays behind for each call; a step of None is numbered when the entry is taken),
and the rare items (checkpoints, evaluations, config, env, the final status) are entries
``_CONTROL, kind, payload`` between them. So a batch never carries a checkpoint
ahead of the points logged before them, and the status always comes last. Nothing is
dropped here: when more than the run's ``queue_size`` points wait, the sender moves them
to the run's journal on disk (see ``_sender``), so memory stays bounded without losing a
point. Points that are truly lost (the disk refused them) are counted with
``add_dropped``, and the count rides along in the next batch as ``dropped``.

The taking side moves what waits to a list of its own in one step (a slice and a slice
delete, each atomic), and turns a batch's points into *columns* there, on the sender's
thread: consecutive calls that logged the same keys become one group, whose steps, wall
times and each key's values are packed as 8-byte little-endian numbers and sent as base64
(``columns`` in the wire contract, sdk/python/README.md). The packing runs as C loops over
the whole run of calls (the steps and wall times are strided slices of the flat queue,
each key's values ``map``/``itemgetter`` into ``struct.pack``), so a point costs no Python
bytecode, no float ``repr`` and no JSON of its own; only a call whose keys differ
from the call before it, or that must be split, is taken on its own.
"""

import binascii
import json
import struct
import threading
from operator import itemgetter

from ._debug import debug
from ._values import MAX_STEP, as_epoch, key_problem, valid_key

#: The most checkpoints, evaluations and other rare items kept waiting.
MAX_CONTROLS = 10000
#: The most checkpoints the server accepts in one batch.
MAX_CHECKPOINTS_PER_BATCH = 1000
#: The first item of a rare item's entry in the queue.
_CONTROL = object()
#: The wire's spellings of the non-finite floats, and the floats the queue holds for them.
SPELLED = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
#: Items in the queue per entry (a log call, or a rare item).
_WIDTH = 3


def _pack(code, count, numbers):
    """``count`` ``numbers`` (an iterable) as little-endian 8-byte ``code`` ("d" or "q")
    items."""
    return struct.pack("<%d%s" % (count, code), *numbers)


def _base64(pieces):
    """Packed pieces as the wire carries them, base64 (bytes, ASCII)."""
    return binascii.b2a_base64(b"".join(pieces), newline=False)


class _Group(object):
    """Consecutive calls that logged the same keys: their steps, wall times and values,
    packed a run of calls at a time.

    ``log`` queues a dict as the caller gave it (its values floats, its keys not yet
    checked); the group checks its keys once for all its calls: ``names`` holds each
    key's wire name, or None for a key the server would refuse (skipped, with a debug
    line), and ``epochs`` the keys named ``epoch`` or ``<split>/epoch``.
    """

    __slots__ = ("keys", "key_set", "names", "epochs", "rows", "steps", "walls", "values",
                 "last")

    def __init__(self, keys):
        self.keys = keys  # in the order of the first call's dict
        self.key_set = frozenset(keys)
        self.names = _wire_names(keys)
        self.epochs = [key for key, name in zip(keys, self.names)
                       if name is not None and (name == "epoch" or name.endswith("/epoch"))]
        self.rows = 0
        self.steps = []  # packed pieces
        self.walls = []
        self.values = [[] for _ in keys]
        self.last = None  # the last call's dict

    def points(self):
        """How many points the group holds (its skipped keys' values not counted)."""
        return self.rows * (len(self.names) - self.names.count(None))

    def last_epoch(self):
        """The whole epoch of the group's last call, or None."""
        epoch = None
        for key in self.epochs:
            whole = as_epoch(self.last[key])
            if whole is not None:
                epoch = whole
        return epoch

    def json(self, out):
        """Adds the group's JSON object to ``out``, a list of bytes (each column a piece of
        its own: nothing is copied to join them)."""
        names = self.names
        keys = json.dumps([name for name in names if name is not None], ensure_ascii=False,
                          separators=(",", ":"))
        out += (b'{"keys":%s,"steps":"' % (keys.encode("utf-8"),), _base64(self.steps),
                b'","wall_times":"', _base64(self.walls), b'","values":["')
        for name, pieces in zip(names, self.values):
            if name is not None:
                out += (_base64(pieces), b'","')
        out[-1] = b'"]}'


def _wire_names(keys):
    """Each key's name on the wire (a key that is not text as its text, as the long way
    of ``log`` names it), or None for a key the server would refuse or that a later key
    of the same name replaces."""
    names = []
    seen = {}
    for key in keys:
        try:
            name = key if type(key) is str else "%s" % (key,)
        except Exception as error:  # a key whose __str__ raises: only that key is lost
            debug("log(): a key of type %s cannot be turned into text (%r); it is skipped"
                  % (type(key).__name__, error))
            name = None
        if name is not None and not valid_key(name):
            debug("log(): %r skipped: the key %s" % (name, key_problem(name)))
            name = None
        if name is not None:
            if name in seen:
                names[seen[name]] = None
            seen[name] = len(names)
        names.append(name)
    return names


class Columns(object):
    """A batch's ``columns``, already JSON (``pieces``: bytes that make the list of groups
    when joined), which ``_transport`` puts into the body as it is; ``count``: how many
    points."""

    __slots__ = ("pieces", "count")

    def __init__(self, pieces, count):
        self.pieces = pieces
        self.count = count


def columns_points(columns):
    """How many points the wire's ``columns`` hold (a ``Columns``, or read back from JSON)."""
    if isinstance(columns, Columns):
        return columns.count
    total = 0
    for group in columns or ():
        try:
            rows = len(binascii.a2b_base64(group["steps"])) // 8
            total += rows * len(group["keys"])
        except Exception:
            continue
    return total


class Buffer(object):
    """Points and rare items waiting to be sent; every method is thread-safe.

    The logging side only extends ``queue`` by an entry's three items (atomic, no lock): a
    call's step may be None, "the next one", and the taking side gives it its number in
    queue order, which is the order of the calls (so a step counter needs no lock either).
    The taking side (one taker at a time, ``_take_lock``) moves the whole queue to ``_held``
    at once and works through it; how many points wait is estimated from the entries waiting
    and the points per entry seen so far. ``wake_len`` is the queue length at which ``log``
    wakes the sender, so ``log`` compares one number.
    """

    def __init__(self, batch_size=1000):
        self._lock = threading.Lock()  # rare items and drop counts
        self._take_lock = threading.Lock()  # one taker at a time
        self.queue = []  # flat: _WIDTH items an entry
        self._held = []  # entries moved out of the queue, not yet taken (under _take_lock)
        self._pos = 0  # the item that starts the next of them
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
        self.dropped_total = 0

    def add_points(self, step, wall_time, metrics):
        """Queue one call's points at ``step`` (None: the next step) (``metrics``: key ->
        float, or "NaN"/"Infinity"/"-Infinity", owned by the buffer from now on; empty takes
        a step and nothing else); returns about how many points now wait.

        ``Run.log`` adds the same entries to ``queue`` itself.
        """
        for key, value in list(metrics.items()):
            if type(value) is not float:
                metrics[key] = SPELLED[value] if isinstance(value, str) else float(value)
        self.queue += (step, wall_time, metrics)
        return self.pending_points()

    def waiting_entries(self):
        """How many entries (calls and rare items) wait (an estimate while one is taken)."""
        return (len(self.queue) + max(0, len(self._held) - self._pos)) // _WIDTH

    def pending_points(self):
        """About how many points wait (log calls waiting × points per call seen)."""
        return int(self.waiting_entries() * self._per_entry)

    def wake_after(self, points):
        """Have ``log`` wake the sender once about ``points`` points wait."""
        self.wake_every = max(1, int(points))
        self._set_wake_base()

    def _set_wake_base(self):
        """``wake_len`` for ``wake_every`` points at the points per call seen (in queue items)."""
        self._wake_base = self.wake_len = _WIDTH * max(1, int(self.wake_every / self._per_entry))

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
            self.queue += (_CONTROL, kind, payload)
            return True

    def set_epoch(self, epoch):
        """Remember the run's latest whole epoch; every later batch carries it (the taking
        side calls it, in queue order, for the points and checkpoints that carry one)."""
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
                return held[self._pos] is _CONTROL
            return self.queue[0] is _CONTROL
        except IndexError:
            return False

    def _refill(self):
        """Move everything queued to ``_held`` (under _take_lock, ``_held`` all taken)."""
        queue = self.queue
        count = len(queue)
        held = queue[:count]
        del queue[:count]  # only these: calls added meanwhile stay queued, in order
        self._held = held
        self._pos = 0
        self.wake_len = self._wake_base
        return held

    def take_batch(self, max_points):
        """The next log body (a dict in wire form, its points as ``columns``, a
        ``Columns``), or None when nothing waits."""
        with self._take_lock:
            body = {}
            groups = []
            held = self._held
            pos = self._pos
            size = len(held)
            count = 0
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
                if held[pos] is not _CONTROL:  # log calls, up to the next rare item
                    room = max_points - count
                    if room <= 0:
                        break
                    taken, points, high = self._take_calls(held, pos, room, groups)
                    pos += taken * _WIDTH
                    entries += taken
                    count += points
                    if high > top:
                        top = high
                    continue
                kind, payload = held[pos + 1], held[pos + 2]
                if kind == "checkpoint":
                    if len(checkpoints) >= MAX_CHECKPOINTS_PER_BATCH:
                        break
                    checkpoints.append(payload)
                    if payload.get("epoch") is not None:
                        self._epoch = payload["epoch"]
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
                pos += _WIDTH
                controls += 1
            self._pos = pos
            self.entries_taken += entries + controls
            if controls:
                with self._lock:
                    self._controls -= controls
            if entries:
                self._per_entry = max(1.0, count / entries)
                self._set_wake_base()
            points = sum(group.points() for group in groups)
            if points:
                pieces = []
                for group in groups:
                    if group.points():
                        pieces.append(b"," if pieces else b"[")
                        group.json(pieces)
                pieces.append(b"]")
                body["columns"] = Columns(pieces, points)
                body["step"] = top
                self.taken += points
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

    def _take_calls(self, held, pos, room, groups):
        """Takes log calls from the entry at ``held[pos]`` on (not past the next rare item,
        nor past ``room`` points) into ``groups``; returns (calls taken whole, points,
        highest step or -1). The common run, calls with the same keys, goes in bulk; a call
        is taken on its own when its keys differ from the call before it, or when it must be
        split."""
        first = held[pos + 2]
        width = len(first)
        if width and width <= room:
            # As many calls as fit, cut at the first rare item (only when one waits).
            run = held[pos:pos + room // width * _WIDTH]
            steps = run[0::_WIDTH]
            if self._controls and _CONTROL in steps:
                cut = steps.index(_CONTROL)
                del run[cut * _WIDTH:], steps[cut:]
            dicts = run[2::_WIDTH]
            rows = len(dicts)
            group = groups[-1] if groups else None
            if group is not None and first.keys() != group.key_set:
                group = None
            keys = group.keys if group is not None else tuple(first)
            try:
                # Each key in each dict, and as many keys in all as that: the same keys.
                columns = [_pack("d", rows, map(itemgetter(key), dicts)) for key in keys]
                same = sum(map(len, dicts)) == rows * width
            except (KeyError, TypeError, struct.error):
                same = False
            if same:
                packed, high = self._number(steps)
                if packed is None:  # a step the server would refuse: call by call
                    return self._take_one(held, pos, room, groups)
                if group is None:
                    group = _Group(keys)
                    groups.append(group)
                group.rows += rows
                group.steps.append(packed)
                group.walls.append(_pack("d", rows, run[1::_WIDTH]))
                for pieces, column in zip(group.values, columns):
                    pieces.append(column)
                group.last = dicts[-1]
                if group.epochs:
                    self.set_epoch(group.last_epoch())
                return rows, rows * width, high
        return self._take_one(held, pos, room, groups)

    def _take_one(self, held, pos, room, groups):
        """Takes the call at ``held[pos]``, split when it holds more than ``room`` points
        (the rest stays for the next batch, at the same step); returns as ``_take_calls``."""
        at, wall, points = held[pos:pos + _WIDTH]
        if at is not None and not 0 <= at <= MAX_STEP:
            debug("log(): step %r is not a whole number from 0 to %d; call ignored"
                  % (at, MAX_STEP))
            return 1, 0, -1
        packed, at = self._number([at])
        taken = 1
        if len(points) > room:
            items = list(points.items())
            held[pos], held[pos + 2] = at, dict(items[room:])
            points = dict(items[:room])
            taken = 0
        if points:
            group = groups[-1] if groups else None
            if group is None or points.keys() != group.key_set:
                group = _Group(tuple(points))
                groups.append(group)
            group.rows += 1
            group.steps.append(packed)
            group.walls.append(_pack("d", 1, (wall,)))
            for key, pieces in zip(group.keys, group.values):
                pieces.append(_pack("d", 1, (points[key],)))
            group.last = points
            if group.epochs:
                self.set_epoch(group.last_epoch())
        return taken, len(points), at

    def _number(self, steps):
        """Gives each step of None its number, in order; returns the steps packed (as the
        wire's ``steps``) and the highest step, or (None, None), nothing numbered, when a
        step is not one the server takes (``log``'s short way queues any int)."""
        next_step = self._next_step
        count = len(steps)
        try:
            # The common runs in one C pass each: every step given (an int past the int64
            # range, or below 0, fails the unsigned packing; None fails it too) ...
            packed = _pack("Q", count, steps)
            high = max(steps)
            if high > MAX_STEP:
                return None, None
        except struct.error:
            if steps[0] is None and steps.count(None) == count:  # ... or none given
                high = next_step + count - 1
                packed = _pack("q", count, range(next_step, high + 1))
            else:
                if not all(0 <= at <= MAX_STEP for at in steps if at is not None):
                    return None, None
                for i, at in enumerate(steps):
                    if at is None:
                        steps[i] = at = next_step
                    if at >= next_step:
                        next_step = at + 1
                high = max(steps)
                packed = _pack("q", count, steps)
        if high >= next_step:
            next_step = high + 1
        self._next_step = next_step
        return packed, high


def points_in(body):
    """How many metric points a log body carries (as rows or as columns)."""
    return len(body.get("points") or ()) + columns_points(body.get("columns"))
