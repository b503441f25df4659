"""Interpreter exit: queued data is flushed within a time limit, and an uncaught
exception finishes the run as FAILED. Each test runs a child python3."""

import os
import subprocess
import sys
import textwrap
import time

from ._support import SDK_ROOT, SdkTestCase, TOKEN, read_spool, refused_url

EXIT_LIMIT_S = 1.0


class ExitTest(SdkTestCase):
    def child(self, script, server_url):
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": SDK_ROOT,
            "GPUCTL_SERVER_URL": server_url,
            "GPUCTL_TOKEN": TOKEN,
            "GPUCTL_EXIT_TIMEOUT": str(EXIT_LIMIT_S),
        })
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            env=env, cwd=self.home, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=30,
        )
        return done, time.monotonic() - started

    def test_exit_is_bounded_while_the_server_hangs(self):
        # The server holds every request for longer than the child may take (30 s).
        server = self.server(hang_s=3600.0)
        done, _ = self.child("""
            from gpuctl import run
            run.init(project="p")
            for step in range(1000):
                run.log({"loss": 1.0 / (step + 1)})
            print(run.id)
        """, server.url)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, b"")
        self.assertEqual(server.batches, [])  # the child ended before any answer
        run_id = done.stdout.decode().strip()
        # The points that could not be delivered in time are kept for `gpuctl sync`.
        lines = read_spool(self.spool_file(run_id))
        self.assertEqual(lines[0]["type"], "run")
        self.assertEqual(sum(len(line.get("points", [])) for line in lines), 1000)
        self.assertEqual(lines[-1]["status"], "SUCCEEDED")

    def test_normal_exit_delivers_and_finishes_succeeded(self):
        server = self.server()
        done, _ = self.child("""
            from gpuctl import run
            run.init(project="p")
            for step in range(100):
                run.log({"loss": 1.0})
            print(run.id)
        """, server.url)
        self.assertEqual(done.returncode, 0, done.stderr)
        run_id = done.stdout.decode().strip()
        self.assertEqual(len(server.run_points(run_id)), 100)
        self.assertEqual(server.statuses, {run_id: "SUCCEEDED"})

    def test_uncaught_exception_finishes_failed_and_keeps_the_traceback(self):
        done, _ = self.child("""
            from gpuctl import run
            run.init(project="p")
            run.log({"loss": float("nan")})
            print(run.id, flush=True)
            raise RuntimeError("loss exploded")
        """, refused_url())
        self.assertEqual(done.returncode, 1)
        self.assertIn(b"RuntimeError: loss exploded", done.stderr)  # the previous hook ran
        run_id = done.stdout.decode().strip()
        lines = read_spool(self.spool_file(run_id))
        self.assertEqual(lines[-1]["status"], "FAILED")

    def test_forked_child_does_not_send(self):
        if not hasattr(os, "fork"):
            self.skipTest("no fork on this platform")
        server = self.server()
        done, _ = self.child("""
            import os
            from gpuctl import run
            run.init(project="p")
            run.log({"parent": 1.0})
            pid = os.fork()
            if pid == 0:
                run.log({"child": 1.0})
                os._exit(0)
            os.waitpid(pid, 0)
            print(run.id)
        """, server.url)
        self.assertEqual(done.returncode, 0, done.stderr)
        run_id = done.stdout.decode().strip()
        self.assertEqual(server.run_points(run_id), {("parent", 0): 1.0})
