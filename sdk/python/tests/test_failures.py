"""A server that is down, slow, failing or refusing: the training script never notices."""

import contextlib
import io
import os

from gpuctl import Run

from ._support import SdkTestCase, read_spool, refused_url, returns, wait_until, wire_body


@contextlib.contextmanager
def captured_output():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


class ServerDownTest(SdkTestCase):
    def test_unreachable_server_sends_everything_to_the_spool(self):
        self.use_server(refused_url())
        run = self.fast_run()
        with captured_output() as (out, err):
            run.init(project="p", experiment="e", config={"lr": float("inf")}, max_steps=7)
            for step in range(5):
                run.log({"loss": 1.0 / (step + 1), "bad": float("nan")})
            run.log_checkpoint(os.path.join(self.home, "ckpt"), step=4, epoch=0)
            # Everything is in the spool at once: finish() does not sit out its time limit.
            ended = returns(lambda: run.finish(timeout=3600.0))
        self.assertEqual((out.getvalue(), err.getvalue()), ("", ""))
        self.assertTrue(ended, "finish() waited although nothing could be sent")
        self.assertEqual(run.spool_path, self.spool_file(run.id))

        lines = read_spool(run.spool_path)  # strict: a bare NaN would fail to parse
        head = lines[0]
        self.assertEqual(head["type"], "run")
        self.assertEqual(head["id"], run.id)
        self.assertEqual(head["project"], "p")
        self.assertEqual(head["experiment"], "e")
        self.assertEqual(head["config"], {"lr": "Infinity"})
        self.assertEqual(head["max_steps"], 7)
        self.assertIn("python", head["env"])
        self.assertTrue(all(line["type"] == "log" for line in lines[1:]))
        points = [p for line in lines[1:] for p in line.get("points", [])]
        self.assertEqual([(p["key"], p["step"]) for p in points if p["key"] == "loss"],
                         [("loss", step) for step in range(5)])
        self.assertEqual({p["value"] for p in points if p["key"] == "bad"}, {"NaN"})
        self.assertEqual([c for line in lines for c in line.get("checkpoints", [])],
                         [{"path": os.path.join(self.home, "ckpt"), "step": 4, "epoch": 0}])
        self.assertEqual(lines[-1]["status"], "SUCCEEDED")

    def test_a_logged_checkpoint_deleted_later_is_reported_gone(self):
        # Trainers delete the checkpoints they stop keeping (Lightning's save_top_k).
        self.use_server(refused_url())
        run = self.fast_run()
        first, second = os.path.join(self.home, "a.ckpt"), os.path.join(self.home, "b.ckpt")
        for path in (first, second):
            with open(path, "w") as f:
                f.write("weights")
        run.init(project="p")
        run.log_checkpoint(first, step=1)
        mtime = os.stat(first).st_mtime
        os.remove(first)
        run.log_checkpoint(second, step=2)
        run.finish()
        checkpoints = [c for line in read_spool(run.spool_path) for c in line.get("checkpoints", [])]
        self.assertEqual(checkpoints, [
            {"path": first, "step": 1, "size_bytes": 7},
            {"path": first, "state": "gone", "mtime": mtime},
            {"path": second, "step": 2, "size_bytes": 7},
        ])

    def test_no_server_configured_means_offline_spool(self):
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0})
        run.finish()
        lines = read_spool(self.spool_file(run.id))
        self.assertEqual(lines[0], dict(lines[0], type="run", id=run.id, project="default"))
        self.assertEqual(lines[-1]["status"], "SUCCEEDED")

    def test_server_lost_mid_run_switches_to_the_spool(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0})
        self.assertTrue(wait_until(lambda: server.run_points(run.id)))
        server.stop()  # nothing listens any more
        run.log({"loss": 0.5})
        run.finish()
        lines = read_spool(self.spool_file(run.id))
        self.assertEqual(lines[0]["type"], "run")  # so `gpuctl sync` can register (idempotently)
        points = [(p["key"], p["step"]) for line in lines[1:] for p in line.get("points", [])]
        self.assertEqual(points, [("loss", 1)])
        self.assertEqual(lines[-1]["status"], "SUCCEEDED")


class SlowServerTest(SdkTestCase):
    def test_logging_and_finish_never_wait_for_a_server_that_hangs(self):
        server = self.server(hang_s=3600.0)  # holds every request until the test ends
        self.use_server(server)
        # Nor does the SDK give up on a request by itself: only finish()'s limit ends the wait.
        run = self.fast_run(http_timeout_s=3600.0)

        def script():
            run.init(project="slow")
            for step in range(10000):
                run.log({"loss": 1.0, "acc": 0.5})
            run.finish(timeout=1.0)

        with captured_output() as (out, err):
            ended = returns(script)
        self.assertTrue(ended, "log() or finish(timeout=1.0) waited for the server")
        self.assertEqual(server.batches, [])  # the server has answered nothing yet
        self.assertEqual((out.getvalue(), err.getvalue()), ("", ""))
        # What could not be delivered in time is in the spool, not lost.
        lines = read_spool(self.spool_file(run.id))
        points = sum(len(line.get("points", [])) for line in lines[1:])
        self.assertEqual(points, 20000)
        self.assertEqual(lines[-1]["status"], "SUCCEEDED")


class FailingServerTest(SdkTestCase):
    def test_500s_are_retried_until_accepted(self):
        server = self.server(fail=[500, 502, 503], fail_paths="/log")
        self.use_server(server)
        run = self.fast_run()
        run.init()
        for step in range(10):
            run.log({"loss": float(step)})
        self.assertTrue(wait_until(lambda: len(server.run_points(run.id)) == 10))
        run.finish()
        self.assertGreaterEqual(len(server.requests_to("/log")), 4)
        self.assertEqual(server.statuses[run.id], "SUCCEEDED")
        self.assertFalse(os.path.exists(self.spool_file(run.id)))

    def test_a_refused_batch_is_dropped_not_retried(self):
        server = self.server(always_status=422)
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0, "acc": 2.0})
        self.assertTrue(wait_until(lambda: run.dropped == 2))
        # Batches go one at a time, in order: a retry of the refused one would come next.
        run.log({"loss": 3.0})
        self.assertTrue(wait_until(lambda: len(server.requests_to("/log")) >= 2))
        second = wire_body(server.requests_to("/log")[1]["body"])
        self.assertEqual([(p["key"], p["value"]) for p in second["points"]], [("loss", 3.0)])
        self.assertEqual(second["dropped"], 2)  # the points lost so far ride along
        self.assertTrue(wait_until(lambda: run.dropped == 3))
        run.finish()
        # The final batch reports the point lost since.
        final = wire_body(server.requests_to("/log")[-1]["body"])
        self.assertEqual(final["dropped"], 1)
        self.assertEqual(final["status"], "SUCCEEDED")

    def test_a_rejected_token_keeps_the_data_in_the_spool(self):
        server = self.server()
        self.use_server(server, token="wrong")
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0})
        run.finish()
        lines = read_spool(self.spool_file(run.id))
        self.assertEqual([p["key"] for line in lines[1:] for p in line.get("points", [])],
                         ["loss"])


class NeverRaisesTest(SdkTestCase):
    def misuse(self, run):
        run.log("not a dict")
        run.log({"loss": 1.0}, step=-1)
        run.log({"loss": 1.0}, step="seven")
        run.log({"x" * 500: 1.0, "": 2.0})
        run.log_checkpoint(None)
        run.log_checkpoint(object())
        run.log_evaluation(5)
        run.init(config=object())
        run.finish(status="exploded")
        run.finish()

    def test_misuse_never_raises_and_prints_nothing(self):
        self.use_server(refused_url())
        run = self.fast_run()
        with captured_output() as (out, err):
            run.log({"before": 1.0})  # before init, outside a job: ignored
            run.init()
            self.misuse(run)
        self.assertEqual((out.getvalue(), err.getvalue()), ("", ""))

    def test_debug_mode_says_what_was_swallowed(self):
        os.environ["GPUCTL_DEBUG"] = "1"
        self.use_server(refused_url())
        run = self.fast_run()
        with captured_output() as (_, err):
            run.init()
            self.misuse(run)
        lines = err.getvalue().splitlines()
        self.assertTrue(lines)
        self.assertTrue(all(line.startswith("gpuctl: ") for line in lines), lines)
        self.assertTrue(any("log_checkpoint() failed" in line for line in lines), lines)

    def test_log_before_init_outside_a_job_does_nothing(self):
        run = Run()
        run.log({"loss": 1.0})
        run.log_checkpoint("/tmp/x")
        run.finish()
        self.assertIsNone(run.id)
        self.assertFalse(os.path.exists(os.path.join(self.home, "spool")))

    def test_disabled_mode_does_nothing(self):
        os.environ["GPUCTL_MODE"] = "disabled"
        run = self.fast_run()
        run.init()
        run.log({"loss": 1.0})
        run.finish()
        self.assertIsNone(run.id)
        self.assertFalse(os.path.exists(os.path.join(self.home, "spool")))
