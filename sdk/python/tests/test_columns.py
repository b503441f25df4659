"""The points on the wire as columns: a run of calls with the same keys is one group of
little-endian arrays, the points read back in the order of the calls, the keys checked
once per group on the sender's thread, and epochs noted in the order they were logged."""

import base64
import os
import struct

from gpuctl._buffer import Buffer
from gpuctl._transport import encode

from ._support import SdkTestCase, read_spool, strict_json, wire_body


def take(buffer, max_points=1000):
    return encode(buffer.take_batch(max_points)).decode("utf-8")


class ColumnsTest(SdkTestCase):
    def test_a_run_of_calls_with_the_same_keys_is_one_group_of_little_endian_arrays(self):
        buffer = Buffer()
        for step in range(3):
            buffer.add_points(step, 1700000000.5 + step, {"loss": step / 4.0, "lr": 0.1})
        buffer.add_points(None, 1700000009.0, {"loss": float("nan"), "lr": float("-inf")})
        body = strict_json(take(buffer))
        self.assertNotIn("points", body)
        [group] = body["columns"]
        self.assertEqual(group["keys"], ["loss", "lr"])
        self.assertEqual(struct.unpack("<4q", base64.b64decode(group["steps"])), (0, 1, 2, 3))
        self.assertEqual(struct.unpack("<4d", base64.b64decode(group["wall_times"])),
                         (1700000000.5, 1700000001.5, 1700000002.5, 1700000009.0))
        loss = struct.unpack("<4d", base64.b64decode(group["values"][0]))
        self.assertEqual(loss[:3], (0.0, 0.25, 0.5))
        self.assertNotEqual(loss[3], loss[3])  # NaN, as it is
        self.assertEqual(struct.unpack("<4d", base64.b64decode(group["values"][1])),
                         (0.1, 0.1, 0.1, float("-inf")))
        self.assertEqual(body["step"], 3)

    def test_calls_with_other_keys_start_a_group_and_the_points_keep_the_call_order(self):
        buffer = Buffer()
        calls = [(0, {"a": 1.0}), (0, {"a": 2.0}), (1, {"b": 3.0, "a": 4.0}),
                 (1, {"a": 5.0, "b": 6.0}), (2, {"a": 7.0}), (None, {})]
        for step, points in calls:
            buffer.add_points(step, 1.0, points)
        buffer.add_control("checkpoint", {"path": "/c", "step": 2})
        buffer.add_points(None, 1.0, {"a": 8.0})
        text = take(buffer)
        self.assertEqual([group["keys"] for group in strict_json(text)["columns"]],
                         [["a"], ["b", "a"], ["a"]])
        # The same key at the same step twice: the later call comes later, as logged (a
        # call's keys in the order of its group's first call).
        self.assertEqual([(p["key"], p["step"], p["value"]) for p in wire_body(text)["points"]], [
            ("a", 0, 1.0), ("a", 0, 2.0), ("b", 1, 3.0), ("a", 1, 4.0), ("b", 1, 6.0),
            ("a", 1, 5.0), ("a", 2, 7.0), ("a", 4, 8.0),  # the empty call took step 3
        ])
        self.assertEqual(strict_json(text)["step"], 4)
        self.assertEqual(strict_json(text)["checkpoints"], [{"path": "/c", "step": 2}])

    def test_keys_are_checked_once_per_group_on_the_sender_thread(self):
        buffer = Buffer()
        for step in range(3):
            # A key the server would refuse is left out alone; a key that is not text is
            # named by its text, as the long way of `log` names it.
            buffer.queue += (step, 1.0, {"ok": 1.0, "bad\x00": 2.0, 7: 3.0})
        body = wire_body(take(buffer))
        self.assertEqual(sorted({p["key"] for p in body["points"]}), ["7", "ok"])
        self.assertEqual(len(body["points"]), 6)

    def test_a_step_the_server_would_refuse_costs_only_its_call(self):
        buffer = Buffer()
        for step in (0, 1, -5, 2, 2 ** 53, None):  # `log`'s short way queues any int
            buffer.queue += (step, 1.0, {"loss": 1.0})
        body = wire_body(take(buffer))
        self.assertEqual([p["step"] for p in body["points"]], [0, 1, 2, 3])
        self.assertEqual(body["step"], 3)

    def test_a_batch_carries_the_epoch_last_logged_before_its_end(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0, "train/epoch": 0.5}, step=0)
        run.log_checkpoint(os.path.join(self.home, "c.pt"), step=1, epoch=2)
        run.log({"loss": 1.0, "train/epoch": 2.75}, step=2)
        run.finish()
        self.assertEqual(wire_body(server.requests_to("/log")[-1]["body"])["epoch"], 2)
        epochs = {p["step"]: p["value"] for r in server.requests_to("/log")
                  for p in wire_body(r["body"])["points"] if p["key"] == "train/epoch"}
        self.assertEqual(epochs, {0: 0.5, 2: 2.75})  # stored as a metric too

    def test_the_spool_holds_columns_that_read_back_as_every_point(self):
        os.environ["GPUCTL_MODE"] = "offline"
        run = self.fast_run()
        run.init()
        for step in range(12345):
            run.log({"loss": float(step), "acc": -float(step)})
        run.finish(timeout=10)
        with open(run.spool_path, encoding="utf-8") as handle:
            lines = [strict_json(line) for line in handle]
        self.assertTrue(all("points" not in line for line in lines))
        points = [p for line in read_spool(run.spool_path) for p in line.get("points", [])]
        self.assertEqual([(p["key"], p["step"], p["value"]) for p in points],
                         [(key, step, float(step) * sign) for step in range(12345)
                          for key, sign in (("loss", 1), ("acc", -1))])
        self.assertEqual(run.dropped, 0)



class OlderEndpointTest(SdkTestCase):
    def check_rows_after_columns_refused(self, spooled_first):
        server = self.server(without_columns=True)
        if spooled_first:  # the first batches wait in the spool, then go from there
            server.fail = [503] * 3
            server.fail_paths = "/log"
        self.use_server(server)
        run = self.fast_run()
        run.init()
        for step in range(3000):
            run.log({"loss": float(step), "lr": float("nan") if step == 7 else 0.1})
        run.log_checkpoint(os.path.join(self.home, "c.pt"), step=2999)
        run.finish()
        points = server.run_points(run.id)
        self.assertEqual(len(points), 6000)
        self.assertEqual(points[("lr", 7)], "NaN")
        self.assertEqual(points[("loss", 2999)], 2999.0)
        self.assertEqual(len(server.checkpoints), 1)  # the rest of a body is not sent twice
        self.assertEqual(server.statuses[run.id], "SUCCEEDED")
        self.assertEqual(run.dropped, 0)
        # Once turned down, columns are not sent again.
        bodies = [strict_json(r["body"]) for r in server.requests_to("/log")]
        first_rows = next(i for i, body in enumerate(bodies) if "points" in body)
        self.assertTrue(all("columns" not in body for body in bodies[first_rows:]))

    def test_an_endpoint_older_than_columns_gets_every_point_as_rows(self):
        self.check_rows_after_columns_refused(spooled_first=False)

    def test_spooled_columns_go_to_an_older_endpoint_as_rows(self):
        self.check_rows_after_columns_refused(spooled_first=True)
