"""The bounded queue: oldest points dropped and counted, rare items kept in order."""

from gpuctl._buffer import Buffer

from ._support import SdkTestCase, strict_json, wait_until


def points(steps, key="loss"):
    return [(key, step, float(step), 1.0) for step in steps]


class BufferTest(SdkTestCase):
    def test_a_full_queue_drops_the_oldest_points_and_counts_them(self):
        buffer = Buffer(capacity=5)
        self.assertEqual(buffer.add_points(points(range(8))), 5)
        batch = buffer.take_batch(100)
        self.assertEqual([p["step"] for p in batch["points"]], [3, 4, 5, 6, 7])
        self.assertEqual(batch["dropped"], 3)
        self.assertEqual(batch["step"], 7)
        buffer.add_points(points([8]))
        self.assertNotIn("dropped", buffer.take_batch(100))
        self.assertEqual(buffer.dropped_total, 3)
        self.assertIsNone(buffer.take_batch(100))

    def test_rare_items_wait_for_the_points_logged_before_them(self):
        buffer = Buffer(capacity=100)
        buffer.add_points(points(range(5)))
        buffer.add_control("checkpoint", {"path": "/c", "step": 4})
        buffer.add_points(points(range(5, 10)))
        buffer.add_control("status", "SUCCEEDED")
        first = buffer.take_batch(3)
        self.assertNotIn("checkpoints", first)
        second = buffer.take_batch(3)
        self.assertEqual(second["checkpoints"], [{"path": "/c", "step": 4}])
        self.assertNotIn("status", second)
        third = buffer.take_batch(3)
        self.assertNotIn("status", third)
        last = buffer.take_batch(3)
        self.assertEqual([p["step"] for p in last["points"]], [9])
        self.assertEqual(last["status"], "SUCCEEDED")
        self.assertTrue(buffer.is_empty())

    def test_one_evaluation_per_batch_and_configs_merge(self):
        buffer = Buffer(capacity=10)
        buffer.add_control("config", {"a": 1})
        buffer.add_control("config", {"b": 2})
        buffer.add_control("evaluation", {"metrics": {"x": 1}})
        buffer.add_control("evaluation", {"metrics": {"x": 2}})
        first = buffer.take_batch(10)
        self.assertEqual(first["config"], {"a": 1, "b": 2})
        self.assertEqual(first["evaluation"], {"metrics": {"x": 1}})
        self.assertEqual(buffer.take_batch(10), {"evaluation": {"metrics": {"x": 2}}})


class DroppingRunTest(SdkTestCase):
    def test_points_logged_while_the_server_is_stuck_overflow_oldest_first(self):
        # Registration hangs, so nothing leaves the queue until the server lets go.
        server = self.server(hang_s=10.0)
        self.use_server(server)
        run = self.fast_run(queue_size=10, http_timeout_s=5.0)
        run.init()
        self.assertTrue(wait_until(lambda: server.requests_to("/api/sdk/runs")))
        for step in range(25):
            run.log({"loss": float(step)})
        self.assertEqual(run.dropped, 15)
        server.hang_s = 0
        server.released.set()
        self.assertTrue(wait_until(lambda: len(server.run_points(run.id)) == 10))
        self.assertEqual(sorted(s for _, s in server.run_points(run.id)), list(range(15, 25)))
        first = strict_json(server.requests_to("/log")[0]["body"])
        self.assertEqual(first["dropped"], 15)
