"""The points' JSON, made on the sender's thread: the same points as the plain encoder would
send, a caller's dict copied at the call, big calls split across batches, and what a
`kill -9` of the training process leaves in the spool."""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading

from gpuctl._buffer import Buffer
from gpuctl._transport import encode

from ._support import (SDK_ROOT, SdkTestCase, read_spool, refused_url, wait_until,
                       wire_body)


def take_all(buffer, max_points=1000):
    bodies = []
    while True:
        batch = buffer.take_batch(max_points)
        if batch is None:
            return bodies
        bodies.append(wire_body(encode(batch).decode("utf-8")))


class EncodedPointsTest(SdkTestCase):
    def test_tricky_keys_and_values_read_back_as_logged(self):
        buffer = Buffer()
        keys = ['quo"te', "back\\slash", "pct%d", "ünï/cödé", "{}", "\u00e9\U0001f600"]
        values = [0.1, 0.1, -0.0, 0.0, 5e-324, 1e300, -2.5e-05, 123456789.123456789,
                  "NaN", "Infinity", "-Infinity", 0.1]
        for step, value in enumerate(values):
            # A key the server would refuse (a control character) is left out, alone.
            buffer.add_points(step, 1700000000.0 + step,
                              dict({key: value for key in keys}, **{"tab\tnot": 1.0}))
        [body] = take_all(buffer)
        got = {(p["key"], p["step"]): p["value"] for p in body["points"]}
        self.assertEqual(len(body["points"]), len(keys) * len(values))
        for step, value in enumerate(values):
            for key in keys:
                sent = got[(key, step)]
                self.assertEqual(sent, value)
                if isinstance(value, float):  # the sign of a zero is kept too
                    self.assertEqual(math.copysign(1.0, sent), math.copysign(1.0, value))
        self.assertEqual(body["step"], len(values) - 1)

    def test_the_wall_time_is_kept_as_logged(self):
        buffer = Buffer()
        buffer.add_points(0, 1764664291.1234567, {"loss": 1.0})
        buffer.add_points(1, 1764664291.1239, {"loss": 1.0})
        buffer.add_points(2, 1764664291.9999, {"loss": 1.0})
        [body] = take_all(buffer)
        self.assertEqual([p["wall_time"] for p in body["points"]],
                         [1764664291.1234567, 1764664291.1239, 1764664291.9999])

    def test_a_call_with_more_points_than_a_batch_is_split_not_dropped(self):
        buffer = Buffer()
        buffer.add_points(7, 1.0, {"m%04d" % i: float(i) for i in range(2500)})
        buffer.add_control("status", "SUCCEEDED")
        bodies = take_all(buffer, max_points=1000)
        self.assertEqual([len(b.get("points", [])) for b in bodies], [1000, 1000, 500])
        keys = [p["key"] for b in bodies for p in b["points"]]
        self.assertEqual(keys, ["m%04d" % i for i in range(2500)])
        self.assertTrue(all(p["step"] == 7 for b in bodies for p in b["points"]))
        self.assertEqual(bodies[-1]["status"], "SUCCEEDED")
        self.assertTrue(buffer.is_empty())

    def test_a_dict_changed_after_the_call_does_not_change_what_was_logged(self):
        run = self.fast_run()
        os.environ["GPUCTL_MODE"] = "offline"
        run.init()
        metrics = {"loss": 1.0}
        run.log(metrics)  # the long way: the key is new
        for step in range(1, 5):
            metrics["loss"] = float(step + 1)  # the same dict, reused by the caller
            run.log(metrics)
        metrics["loss"] = 99.0
        run.finish(timeout=5)
        points = [p for line in read_spool(run.spool_path) for p in line.get("points", [])]
        self.assertEqual([(p["step"], p["value"]) for p in points],
                         [(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0), (4, 5.0)])


class StepTest(SdkTestCase):
    def test_threads_logging_at_the_next_step_each_get_their_own_steps(self):
        run = self.fast_run()
        os.environ["GPUCTL_MODE"] = "offline"
        run.init()
        run.log({"a": 0.0, "b": 0.0})  # the long way once: the keys become known

        def log(key):
            for _ in range(5000):
                run.log({key: 1.0})

        threads = [threading.Thread(target=log, args=(key,)) for key in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        run.log({"a": 2.0}, step=20000)
        run.log({"a": 3.0})  # the counter follows the largest step
        run.finish(timeout=5)
        points = [p for line in read_spool(run.spool_path) for p in line.get("points", [])]
        steps = sorted(p["step"] for p in points if p["value"] == 1.0)
        self.assertEqual(steps, list(range(1, 10001)))  # none shared, none skipped
        self.assertEqual([p["step"] for p in points if p["value"] in (2.0, 3.0)], [20000, 20001])


class KillTest(SdkTestCase):
    """`kill -9` skips every exit hook: what was logged up to about a flush interval before
    is on disk; everything on disk is whole lines, in order, each point once."""

    def child(self, script):
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": SDK_ROOT,
            "GPUCTL_SERVER_URL": refused_url(),  # the server is down: the spool keeps it all
            "GPUCTL_TOKEN": "gpc_aaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        })
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=self.home,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.addCleanup(child.stdin.close)
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.stderr.close)
        return child

    def spooled(self, run_id):
        path = self.spool_file(run_id)
        if not os.path.exists(path):
            return []
        with open(path, "r", encoding="utf-8") as handle:
            text = handle.read()
        lines = text.split("\n")
        whole = lines[:-1]  # a partial last line (a kill mid-write) is not read
        bodies = [wire_body(line) for line in whole]
        return [(p["key"], p["step"]) for b in bodies for p in b.get("points", [])]

    def test_points_logged_a_flush_interval_before_a_kill_are_in_the_spool(self):
        child = self.child("""
            import sys
            from gpuctl import Run
            run = Run(flush_interval_s=0.2).init(project="p")
            print(run.id, flush=True)
            for step in range(5000):
                run.log({"loss": 1.0 / (step + 1), "lr": 0.1})
            print("logged", flush=True)
            sys.stdin.read()  # the training goes on, logging nothing more
        """)
        run_id = child.stdout.readline().decode().strip()
        self.assertEqual(child.stdout.readline().strip(), b"logged")
        # The sender writes the spool within its flush interval, with no further call.
        self.assertTrue(wait_until(lambda: len(self.spooled(run_id)) == 10000, 30.0))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        expected = [(key, step) for step in range(5000) for key in ("loss", "lr")]
        self.assertEqual(sorted(self.spooled(run_id)), sorted(expected))
        lines = read_spool(self.spool_file(run_id))  # every line whole
        self.assertEqual(lines[0]["type"], "run")
        self.assertNotIn("status", lines[-1])  # killed: no exit hook ran

    def test_a_kill_in_the_middle_of_a_loop_leaves_whole_lines_each_point_once_in_order(self):
        child = self.child("""
            from gpuctl import Run
            run = Run(flush_interval_s=0.05).init(project="p")
            print(run.id, flush=True)
            for step in range(10 ** 7):
                run.log({"loss": float(step)}, step=step)
        """)
        run_id = child.stdout.readline().decode().strip()
        path = self.spool_file(run_id)
        self.assertTrue(wait_until(
            lambda: os.path.exists(path) and os.path.getsize(path) > 100000, 60.0))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        steps = [step for _, step in self.spooled(run_id)]
        self.assertGreaterEqual(len(steps), 1000)
        self.assertEqual(steps, list(range(len(steps))))  # a prefix: no gap, none twice
