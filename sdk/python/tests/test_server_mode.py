"""Outside a job: registration, batches and finish against a server, as the wire contract says."""

import math
import os
import time

from ._support import TOKEN, SdkTestCase, returns, strict_json, wait_until, wire_body


class Scalar(object):
    """Stands in for a numpy scalar or a 0-d tensor: it has .item()."""

    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


class Floaty(object):
    def __float__(self):
        return 2.5


class ServerModeTest(SdkTestCase):
    def test_registers_sends_batches_and_finishes(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        self.assertIsNone(run.id)
        run.init(project="vision", experiment="baseline", name="first",
                 config={"lr": 0.1, "layers": [1, 2]}, max_steps=100)
        self.assertRegex(run.id, r"^r-[0-9a-f]{12}$")

        for loss in (3.0, 2.0, 1.0):
            run.log({"loss": loss})
        run.log({"loss": 0.5, "acc": 0.8}, step=10)
        run.log({"loss": 0.25})  # the counter continues after an explicit step
        checkpoint = os.path.join(self.home, "ckpt.pt")
        with open(checkpoint, "wb") as handle:
            handle.write(b"x" * 123)
        folder = os.path.join(self.home, "checkpoint-11")
        os.makedirs(os.path.join(folder, "sub"))
        for name, size in (("a.bin", 10), (os.path.join("sub", "b.bin"), 20)):
            with open(os.path.join(folder, name), "wb") as handle:
                handle.write(b"y" * size)
        run.log_checkpoint(checkpoint, step=10, epoch=1, metrics={"loss": 0.5})
        run.log_checkpoint(folder, step=11)
        run.log_evaluation({"acc": 0.91, "loss": 0.3})
        # Everything is delivered at once: finish() does not sit out its time limit.
        self.assertTrue(returns(lambda: run.finish(timeout=3600.0)))

        registrations = server.requests_to("/api/sdk/runs")
        registration = strict_json(registrations[0]["body"])
        self.assertEqual(registrations[0]["path"], "/api/sdk/runs")
        self.assertEqual(registrations[0]["headers"]["Authorization"], "Bearer %s" % TOKEN)
        self.assertEqual(registration["id"], run.id)
        self.assertEqual(registration["project"], "vision")
        self.assertEqual(registration["experiment"], "baseline")
        self.assertEqual(registration["name"], "first")
        self.assertEqual(registration["config"], {"lr": 0.1, "layers": [1, 2]})
        self.assertEqual(registration["max_steps"], 100)
        for key in ("python", "platform", "hostname"):
            self.assertIn(key, registration["env"])

        log_requests = server.requests_to("/api/sdk/runs/%s/log" % run.id)
        self.assertTrue(log_requests)
        for request in log_requests:
            self.assertEqual(request["headers"]["Authorization"], "Bearer %s" % TOKEN)
        self.assertEqual(server.run_points(run.id), {
            ("loss", 0): 3.0, ("loss", 1): 2.0, ("loss", 2): 1.0,
            ("loss", 10): 0.5, ("acc", 10): 0.8, ("loss", 11): 0.25,
        })
        bodies = [body for _, body in server.batches]
        for body in bodies:
            for point in body.get("points", []):
                self.assertIsInstance(point["wall_time"], float)
                self.assertLess(abs(point["wall_time"] - time.time()), 60)
        checkpoints = [c for _, c in server.checkpoints]
        self.assertEqual(checkpoints[0], {"path": os.path.abspath(checkpoint), "step": 10,
                                          "epoch": 1, "size_bytes": 123,
                                          "metrics": {"loss": 0.5}})
        self.assertEqual(checkpoints[1], {"path": folder, "step": 11, "size_bytes": 30})
        self.assertEqual(server.evaluations, [(run.id, {"metrics": {"acc": 0.91, "loss": 0.3}})])
        self.assertEqual(bodies[-1]["status"], "SUCCEEDED")
        self.assertTrue(all("status" not in body for body in bodies[:-1]))
        self.assertIsNone(run.spool_path)

    def test_nan_and_infinity_travel_in_the_columns_never_as_bare_json(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"nan": float("nan"), "inf": float("inf"), "ninf": -math.inf,
                 "scalar_nan": Scalar(float("nan")), "ok": 1.5})
        run.finish()
        for request in server.requests_to("/log"):
            body = strict_json(request["body"])  # a bare NaN or Infinity would not parse
            self.assertNotIn("points", body)  # the points are in the columns
        self.assertEqual(server.run_points(run.id), {
            ("nan", 0): "NaN", ("inf", 0): "Infinity", ("ninf", 0): "-Infinity",
            ("scalar_nan", 0): "NaN", ("ok", 0): 1.5,
        })

    def test_numeric_like_values_are_kept_and_the_rest_skipped(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"bool": True, "int": 7, "item": Scalar(0.25), "float_dunder": Floaty(),
                 "nested": {"loss": 1.0}, "text": "hello", "list": [1, 2], "none": None,
                 "matrix": Scalar2D()})
        run.finish()
        self.assertEqual(server.run_points(run.id), {
            ("bool", 0): 1.0, ("int", 0): 7.0, ("item", 0): 0.25, ("float_dunder", 0): 2.5,
            ("nested/loss", 0): 1.0,
        })

    def test_a_resent_batch_is_stored_once(self):
        # The server applies the first log batch but answers too late: the SDK times
        # out and sends the same batch again, which must not duplicate anything.
        server = self.server(apply_then_hang=1, hang_s=2.0)
        self.use_server(server)
        run = self.fast_run(http_timeout_s=0.3)
        run.init()
        for step in range(5):
            run.log({"loss": float(step)}, step=step)
        run.finish()
        log_requests = server.requests_to("/log")
        first_points = wire_body(log_requests[0]["body"])["points"]
        second_points = wire_body(log_requests[1]["body"])["points"]
        self.assertEqual(first_points, second_points)
        self.assertEqual(len(server.run_points(run.id)), 5)
        self.assertEqual(server.statuses[run.id], "SUCCEEDED")

    def test_registration_is_retried_with_the_same_id(self):
        server = self.server(fail=[503], fail_paths="/api/sdk/runs")
        self.use_server(server)
        run = self.fast_run()
        run.init(project="p")
        run.log({"loss": 1.0})
        run.finish()
        registrations = [strict_json(r["body"]) for r in server.requests_to("/api/sdk/runs")
                         if r["path"] == "/api/sdk/runs"]
        self.assertEqual(len(registrations), 2)
        self.assertEqual(registrations[0], registrations[1])
        self.assertEqual(list(server.runs), [run.id])
        self.assertEqual(server.run_points(run.id), {("loss", 0): 1.0})

    def test_server_and_token_come_from_sdk_yaml(self):
        server = self.server()
        with open(os.path.join(self.home, "sdk.yaml"), "w") as handle:
            handle.write("# written by gpuctl login\nserver_url: %s/  # trailing slash\n"
                         "token: \"%s\"\nother:\n  nested: 1\n" % (server.url, TOKEN))
        run = self.fast_run()
        run.init(project="from-file")
        run.log({"x": 1})
        run.finish()
        self.assertEqual(server.runs[run.id]["project"], "from-file")
        self.assertEqual(server.run_points(run.id), {("x", 0): 1.0})

    def test_several_runs_coexist(self):
        server = self.server()
        self.use_server(server)
        first, second = self.fast_run(), self.fast_run()
        first.init(name="a")
        second.init(name="b")
        first.log({"loss": 1.0})
        second.log({"loss": 2.0})
        first.finish()
        second.finish(status="FAILED")
        self.assertNotEqual(first.id, second.id)
        self.assertEqual(server.run_points(first.id), {("loss", 0): 1.0})
        self.assertEqual(server.run_points(second.id), {("loss", 0): 2.0})
        self.assertEqual(server.statuses, {first.id: "SUCCEEDED", second.id: "FAILED"})

    def test_a_batch_is_sent_when_full_without_waiting_for_the_interval(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run(flush_interval_s=30.0, batch_size=50)
        run.init()
        for step in range(50):
            run.log({"loss": 1.0})
        self.assertTrue(wait_until(lambda: len(server.run_points(run.id)) == 50, 3.0))


class Scalar2D(object):
    def item(self):
        raise ValueError("only one element tensors can be converted to Python scalars")
