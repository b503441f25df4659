"""Nothing logged is thrown away: a tight loop, an endpoint that goes away and comes back,
an exit while it is away, and bad items next to good ones."""

import json
import os
import tempfile

from ._support import SdkTestCase, read_spool, wait_until

TIGHT_LOOP_CALLS = 200000


class JobTestCase(SdkTestCase):
    def socket_path(self):
        folder = tempfile.mkdtemp(prefix="gpuctl-sock-")
        self.addCleanup(os.rmdir, folder)
        return os.path.join(folder, "ingest.sock")

    def run_dir(self):
        path = os.path.join(self.home, "runs", "r-job", "files")
        os.makedirs(path)
        return path


class TightLoopTest(JobTestCase):
    def check_tight_loop(self, server, run, run_key):
        for step in range(TIGHT_LOOP_CALLS):
            run.log({"loss": 0.5})
        run.finish(timeout=60)
        self.assertEqual(len(server.run_points(run_key)), TIGHT_LOOP_CALLS)
        self.assertEqual(server.points_sent(run_key), TIGHT_LOOP_CALLS)  # none twice
        self.assertEqual(run.dropped, 0)

    def test_a_tight_loop_outside_a_job_stores_every_point(self):
        server = self.server()
        self.use_server(server)
        # A batch answered after the client gave up is sent again (and stored once): the
        # time limit is far above what a busy machine may take to answer.
        run = self.fast_run(flush_interval_s=1.0, http_timeout_s=30.0)
        run.init()
        self.check_tight_loop(server, run, run.id)

    def test_a_tight_loop_inside_a_job_stores_every_point(self):
        server = self.server(unix_path=self.socket_path())
        enter_job(server, self.run_dir())
        run = self.fast_run(flush_interval_s=1.0, http_timeout_s=30.0)
        self.check_tight_loop(server, run, "job")


def enter_job(server, run_dir, run_id="r-job000000001"):
    os.environ.update({
        "GPUCTL_RUN_ID": run_id,
        "GPUCTL_INGEST_URL": server.url + "/ingest",
        "GPUCTL_RUN_DIR": run_dir,
        "GPUCTL_JOB_ID": "j-1",
        "GPUCTL_ATTEMPT": "1",
        "GPUCTL_PROJECT": "proj",
    })


class AgentRestartTest(JobTestCase):
    def test_what_a_job_logs_while_its_agent_restarts_arrives_once_when_it_is_back(self):
        socket_path = self.socket_path()
        agent = self.server(unix_path=socket_path)
        run_dir = self.run_dir()
        enter_job(agent, run_dir)
        run = self.fast_run()
        for step in range(100):
            run.log({"loss": float(step)}, step=step)
        self.assertTrue(wait_until(lambda: len(agent.run_points("job")) == 100))
        agent.stop()  # the agent is stopped; the job goes on
        for step in range(100, 300):
            run.log({"loss": float(step)}, step=step)
        run.log_checkpoint(os.path.join(run_dir, "ckpt-299.pt"), step=299)
        run.log_evaluation({"accuracy": 0.9})
        # Kept in the run's own folder while nobody listens.
        journal = os.path.join(run_dir, ".gpuctl", "r-job000000001.jsonl")
        self.assertTrue(wait_until(lambda: os.path.exists(journal)))
        back = self.server(unix_path=socket_path)  # the next agent, on the same socket
        run.finish(timeout=10)
        points = dict(agent.run_points("job"))
        points.update(back.run_points("job"))
        self.assertEqual(sorted(s for _, s in points), list(range(300)))
        self.assertEqual(agent.points_sent("job") + back.points_sent("job"), 300)
        self.assertEqual([c["step"] for _, c in back.checkpoints], [299])
        self.assertEqual([e["metrics"] for _, e in back.evaluations], [{"accuracy": 0.9}])
        self.assertFalse(os.path.exists(journal))  # delivered, so removed
        self.assertEqual(run.dropped, 0)

    def test_a_second_absence_of_the_agent_is_kept_on_disk_and_arrives_like_the_first(self):
        socket_path = self.socket_path()
        agent = self.server(unix_path=socket_path)
        run_dir = self.run_dir()
        enter_job(agent, run_dir)
        run = self.fast_run()
        journal = os.path.join(run_dir, ".gpuctl", "r-job000000001.jsonl")
        agents = [agent]
        for first in (0, 100):
            agents[-1].stop()
            for step in range(first, first + 100):
                run.log({"loss": float(step)}, step=step)
            self.assertTrue(wait_until(lambda: os.path.exists(journal)))
            agents.append(self.server(unix_path=socket_path))  # back, on the same socket
            # Delivered, then removed; the next absence writes a new journal, not the old one.
            self.assertTrue(wait_until(lambda: not os.path.exists(journal)))
        run.finish(timeout=10)
        points = {}
        for each in agents:
            points.update(each.run_points("job"))
        self.assertEqual(sorted(s for _, s in points), list(range(200)))
        self.assertEqual(sum(each.points_sent("job") for each in agents), 200)  # each once
        self.assertEqual(run.dropped, 0)

    def test_a_job_that_exits_while_its_agent_is_away_leaves_the_rest_in_its_folder(self):
        agent = self.server(unix_path=self.socket_path())
        run_dir = self.run_dir()
        enter_job(agent, run_dir)
        agent.stop()
        run = self.fast_run()
        for step in range(50):
            run.log({"loss": float(step)}, step=step)
        run.finish(timeout=0.5)
        # The agent takes it from there once the process has ended (agent/sdk_journal.ts).
        lines = read_spool(os.path.join(run_dir, ".gpuctl", "r-job000000001.jsonl"))
        self.assertEqual(lines[0], {"type": "run", "id": "r-job000000001", "project": "proj"})
        steps = [p["step"] for line in lines[1:] for p in line.get("points", [])]
        self.assertEqual(steps, list(range(50)))


class BadItemsTest(SdkTestCase):
    def test_bad_keys_are_skipped_one_by_one_and_the_rest_of_the_call_kept(self):
        class Unprintable(object):
            def __str__(self):
                raise RuntimeError("no")

        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        run.log({"nul\x00": 1.0, "sur\ud800": 2.0, "ok": 3.0, "tab\tkey": 4.0}, step=0)
        run.log({Unprintable(): 1.0, "fine": 2.0}, step=1)
        run.finish()
        self.assertEqual(server.run_points(run.id), {("ok", 0): 3.0, ("fine", 1): 2.0})

    def test_a_checkpoint_path_too_long_for_the_server_costs_only_itself(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        for step in range(444):
            run.log({"loss": 1.0}, step=step)
        run.log_checkpoint("/" + "x" * 70000, step=443)
        run.log_checkpoint(os.path.join(self.home, "ok.pt"), step=443)
        run.finish()
        self.assertEqual(len(server.run_points(run.id)), 444)
        self.assertEqual([c["path"] for _, c in server.checkpoints],
                         [os.path.join(self.home, "ok.pt")])

    def test_a_config_over_10_mb_is_cut_and_the_run_still_registers(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init(config={"lr": 0.1, "vocab": ["w%d" % i for i in range(1500000)]})
        run.log({"loss": 1.0})
        run.finish()
        registered = server.runs[run.id]
        self.assertEqual(registered["config"]["lr"], 0.1)
        self.assertTrue(registered["config"]["vocab"].startswith("<cut by gpuctl"))
        self.assertLess(len(json.dumps(registered)), 10 * 1024 * 1024)
        self.assertEqual(len(server.run_points(run.id)), 1)

    def test_points_the_disk_refuses_are_counted_and_reported_once_sent(self):
        # Nothing listens and the journal cannot be written: those points are truly lost.
        server = self.server(unix_path=os.path.join(tempfile.mkdtemp(), "ingest.sock"))
        blocker = os.path.join(self.home, "not-a-folder")
        with open(blocker, "w") as handle:
            handle.write("x")
        enter_job(server, blocker)
        os.environ["GPUCTL_HOME"] = blocker
        server.stop()
        run = self.fast_run()
        for step in range(10):
            run.log({"loss": 1.0}, step=step)
        self.assertTrue(wait_until(lambda: run.dropped == 10))
        back = self.server(unix_path=server.unix_path)
        run.log({"loss": 1.0}, step=10)
        run.finish(timeout=5)
        self.assertEqual(sum(body.get("dropped", 0) for _, body in back.batches), 10)
        self.assertEqual(back.run_points("job"), {("loss", 10): 1.0})
