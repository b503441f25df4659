"""The queue between the training thread and the sender.

Metric points go into a deque; nothing is dropped here. When more than the
run's ``queue_size`` points wait, the sender moves them to the run's journal on
disk (see ``_sender``), so memory stays bounded without losing a point. Points
that are truly lost (the disk refused them) are counted with ``add_dropped``,
and the count rides along in the next batch as ``dropped``. Everything else (checkpoints, evaluations, config, env, the final
status) is rare and is never dropped for points. Each such item remembers how
many points were logged before it, so a batch never carries a checkpoint ahead
of the points logged before the checkpoint, and the status always comes last.
"""

import collections
import threading

from ._debug import debug

#: The most checkpoints, evaluations and other rare items kept waiting.
MAX_CONTROLS = 10000
#: The most checkpoints the server accepts in one batch.
MAX_CHECKPOINTS_PER_BATCH = 1000


class Buffer(object):
    """Points and rare items waiting to be sent; every method is thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._points = collections.deque()
        self._controls = collections.deque()
        self._appended = 0  # points ever appended
        self._taken = 0  # points ever taken into a batch or dropped
        self._dropped = 0  # points dropped and not yet reported
        self._epoch = None
        self.dropped_total = 0

    def add_points(self, points):
        """Queue ``(key, step, value, wall_time)`` tuples; returns how many points now wait."""
        with self._lock:
            queue = self._points
            queue.extend(points)
            self._appended += len(points)
            return len(queue)

    def add_control(self, kind, payload):
        """Queue a rare item: "checkpoint", "evaluation", "config", "env" or "status"."""
        with self._lock:
            if len(self._controls) >= MAX_CONTROLS and kind != "status":
                debug("too many %s items waiting; dropped one" % (kind,))
                return False
            self._controls.append((self._appended, kind, payload))
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

    def pending_points(self):
        return len(self._points)

    def is_empty(self):
        with self._lock:
            return not self._points and not self._controls

    def take_batch(self, max_points):
        """The next log body (a dict in wire form), or None when nothing waits."""
        with self._lock:
            body = {}
            count = min(max_points, len(self._points))
            if count:
                popleft = self._points.popleft
                taken = [popleft() for _ in range(count)]
                self._taken += count
                body["points"] = [
                    {"key": key, "step": step, "value": value, "wall_time": wall_time}
                    for key, step, value, wall_time in taken
                ]
                body["step"] = max(point[1] for point in taken)
            checkpoints = []
            controls = self._controls
            while controls and controls[0][0] <= self._taken:
                _, kind, payload = controls[0]
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
                controls.popleft()
            if checkpoints:
                body["checkpoints"] = checkpoints
            if not body:
                return None  # a drop count alone waits for the next batch with data
            if self._dropped:
                body["dropped"] = self._dropped
                self._dropped = 0
            if self._epoch is not None:
                body["epoch"] = self._epoch
            return body


def points_in(body):
    """How many metric points a log body carries."""
    return len(body.get("points") or ())
