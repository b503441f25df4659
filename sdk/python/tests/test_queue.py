"""The queue: nothing dropped, rare items kept in order."""

import json
import threading

from gpuctl._buffer import Buffer
from gpuctl._transport import encode

from ._support import SdkTestCase, wait_until, wire_body


def points(buffer, steps, key="loss"):
    """Queues one call per step; returns how many points wait."""
    for step in steps:
        waiting = buffer.add_points(step, 1.0, {key: float(step)})
    return waiting


def take(buffer, max_points):
    """The next batch as the endpoint reads it, or None."""
    batch = buffer.take_batch(max_points)
    return None if batch is None else wire_body(encode(batch).decode("utf-8"))


class BufferTest(SdkTestCase):
    def test_only_points_truly_lost_are_reported_as_dropped(self):
        buffer = Buffer()
        self.assertEqual(points(buffer, range(8)), 8)
        buffer.add_dropped(3)
        batch = take(buffer, 100)
        self.assertEqual([p["step"] for p in batch["points"]], list(range(8)))
        self.assertEqual(batch["dropped"], 3)
        self.assertEqual(batch["step"], 7)
        points(buffer, [8])
        self.assertNotIn("dropped", take(buffer, 100))
        self.assertEqual(buffer.dropped_total, 3)
        self.assertIsNone(take(buffer, 100))

    def test_rare_items_wait_for_the_points_logged_before_them(self):
        buffer = Buffer()
        points(buffer, range(5))
        buffer.add_control("checkpoint", {"path": "/c", "step": 4})
        points(buffer, range(5, 10))
        buffer.add_control("status", "SUCCEEDED")
        first = take(buffer, 3)
        self.assertNotIn("checkpoints", first)
        second = take(buffer, 3)
        self.assertEqual(second["checkpoints"], [{"path": "/c", "step": 4}])
        self.assertNotIn("status", second)
        third = take(buffer, 3)
        self.assertNotIn("status", third)
        last = take(buffer, 3)
        self.assertEqual([p["step"] for p in last["points"]], [9])
        self.assertEqual(last["status"], "SUCCEEDED")
        self.assertTrue(buffer.is_empty())

    def test_one_evaluation_per_batch_and_configs_merge(self):
        buffer = Buffer()
        buffer.add_control("config", {"a": 1})
        buffer.add_control("config", {"b": 2})
        buffer.add_control("evaluation", {"metrics": {"x": 1}})
        buffer.add_control("evaluation", {"metrics": {"x": 2}})
        first = take(buffer, 10)
        self.assertEqual(first["config"], {"a": 1, "b": 2})
        self.assertEqual(first["evaluation"], {"metrics": {"x": 1}})
        self.assertEqual(take(buffer, 10), {"evaluation": {"metrics": {"x": 2}}})


class FullQueueTest(SdkTestCase):
    def test_points_logged_while_the_server_is_stuck_wait_on_disk_and_all_arrive(self):
        # Registration hangs, so nothing leaves for the server until it lets go.
        server = self.server(hang_s=10.0)
        self.use_server(server)
        run = self.fast_run(queue_size=10, http_timeout_s=5.0)
        run.init()
        self.assertTrue(wait_until(lambda: server.requests_to("/api/sdk/runs")))
        for step in range(25):
            run.log({"loss": float(step)})
        # Past queue_size the points go to the run's file on disk, not away.
        self.assertTrue(wait_until(lambda: run.spool_path is not None))
        server.hang_s = 0
        server.released.set()
        self.assertTrue(wait_until(lambda: len(server.run_points(run.id)) == 25))
        self.assertEqual(sorted(s for _, s in server.run_points(run.id)), list(range(25)))
        self.assertEqual(run.dropped, 0)
        self.assertEqual(server.points_sent(run.id), 25)  # each exactly once
        run.finish()
        self.assertIsNone(run.spool_path)  # delivered, so the file is gone


class LogPathsTest(SdkTestCase):
    def test_the_short_way_and_the_long_way_queue_the_same_points(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        # First calls go the long way (keys not yet seen); the same calls later the short way.
        for step in range(3):
            run.log({"loss": float(step), "lr": 0.1})
        run.log({"loss": float("nan"), "lr": 0.1})  # not finite: the long way, sent as "NaN"
        run.log({"loss": 1, "lr": 0.1})  # an int: the long way, a float on the wire
        run.log({"loss": 2.0, "epoch": 1.0})  # an epoch: the long way, the batch carries it
        run.log({"loss": 3.0}, step=True)  # a bool is not a step: the call is ignored
        run.log({"loss": 3.0}, step=2 ** 53)  # past the largest step: ignored
        run.log({"loss": 3.0}, step=100)
        run.log({"loss": 4.0})  # the counter follows the largest step
        run.log({"lo\x00ss": 5.0, "loss": 5.0})  # a bad key is skipped, the rest kept
        run.finish()
        points = server.run_points(run.id)
        loss = sorted((s, v) for (k, s), v in points.items() if k == "loss")
        self.assertEqual(loss, [
            (0, 0.0), (1, 1.0), (2, 2.0), (3, "NaN"), (4, 1.0), (5, 2.0), (100, 3.0),
            (101, 4.0), (102, 5.0),
        ])
        self.assertEqual(sorted(s for (k, s) in points if k == "lr"), [0, 1, 2, 3, 4])
        self.assertEqual({k for k, _ in points}, {"loss", "lr", "epoch"})
        self.assertEqual(server.points_sent(run.id), len(points))  # each exactly once


class ThreadsTest(SdkTestCase):
    def test_threads_logging_at_once_each_have_every_point_delivered_once_and_in_order(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run(batch_size=70)  # many batches, each cut inside a thread's calls
        run.init()
        calls = 3000
        # The first call of each key shape goes the long way; the rest the short one.
        explicit = lambda key: [run.log({key: float(step), "lr": 0.1}, step=step)
                                for step in range(calls)]
        counted = lambda key: [run.log({key: float(i)}) for i in range(calls)]
        checkpoints = lambda: [run.log_checkpoint("/ckpt-%d" % i, step=i) for i in range(50)]
        threads = [threading.Thread(target=explicit, args=("a",)),
                   threading.Thread(target=explicit, args=("b",)),
                   threading.Thread(target=counted, args=("c",)),
                   threading.Thread(target=checkpoints)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        run.finish(timeout=20)
        order = {}  # key -> (step, value) in the order the server applied them
        for run_id, body in server.batches:
            for point in body.get("points", []):
                order.setdefault(point["key"], []).append((point["step"], point["value"]))
        self.assertEqual(order["a"], [(step, float(step)) for step in range(calls)])
        self.assertEqual(order["b"], [(step, float(step)) for step in range(calls)])
        self.assertEqual([value for _, value in order["c"]], [float(i) for i in range(calls)])
        steps = [step for step, _ in order["c"]]
        self.assertEqual(steps, sorted(set(steps)))  # the counter's steps, each once, rising
        self.assertEqual(len(order["lr"]), 2 * calls)
        self.assertEqual(server.points_sent(run.id), 5 * calls)  # each exactly once
        self.assertEqual([c["path"] for _, c in server.checkpoints],
                         ["/ckpt-%d" % i for i in range(50)])
        self.assertEqual(run.dropped, 0)
