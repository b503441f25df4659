"""Inside a gpuctl job: no registration, batches to the agent's ingest URL, init optional."""

import argparse
import dataclasses
import os

from ._support import SdkTestCase, wire_body


@dataclasses.dataclass
class Hyper:
    lr: float = 0.001
    layers: tuple = (64, 64)


class JobModeTest(SdkTestCase):
    def enter_job(self, server):
        os.environ.update({
            "GPUCTL_RUN_ID": "r-job000000001",
            "GPUCTL_INGEST_URL": server.url + "/ingest",
            "GPUCTL_JOB_ID": "j-42",
            "GPUCTL_ATTEMPT": "1",
            "GPUCTL_PROJECT": "proj",
            "GPUCTL_EXPERIMENT": "exp",
        })

    def test_log_without_init_attaches_to_the_job_run(self):
        server = self.server()
        self.enter_job(server)
        run = self.fast_run()
        self.assertEqual(run.id, "r-job000000001")
        run.log({"loss": 2.0})
        run.log({"loss": 1.0})
        run.init(config=argparse.Namespace(lr=0.1, model="mlp"))  # after auto-init: adds config
        run.finish()

        self.assertEqual(server.requests_to("/api/"), [])
        ingest = server.requests_to("/ingest/log")
        self.assertTrue(ingest)
        for request in ingest:
            self.assertNotIn("Authorization", request["headers"])
        self.assertEqual(server.run_points("job"), {("loss", 0): 2.0, ("loss", 1): 1.0})
        bodies = [body for _, body in server.batches]
        envs = [body["env"] for body in bodies if "env" in body]
        self.assertTrue(envs)
        self.assertIn("python", envs[0])
        configs = [body["config"] for body in bodies if "config" in body]
        self.assertEqual(configs, [{"lr": 0.1, "model": "mlp"}])
        self.assertEqual(bodies[-1]["status"], "SUCCEEDED")
        self.assertEqual(run.id, "r-job000000001")

    def test_init_sends_config_and_env_in_a_batch(self):
        server = self.server()
        self.enter_job(server)
        run = self.fast_run()
        run.init(project="ignored-in-a-job", config=Hyper())
        run.log_checkpoint(os.path.join(self.home, "missing.pt"), step=3)
        run.finish(status="CANCELLED")
        raw_bodies = [wire_body(r["body"]) for r in server.requests_to("/ingest/log")]
        first = raw_bodies[0]
        self.assertEqual(first["config"], {"lr": 0.001, "layers": [64, 64]})
        self.assertIn("hostname", first["env"])
        self.assertNotIn("project", first)
        self.assertEqual([c for _, c in server.checkpoints],
                         [{"path": os.path.join(self.home, "missing.pt"), "step": 3}])
        self.assertEqual(server.statuses["job"], "CANCELLED")

    def test_evaluation_job_reports_metrics(self):
        server = self.server()
        self.enter_job(server)
        run = self.fast_run()
        run.log_evaluation({"accuracy": 0.93, "bleu": 31.5, "notes": "skipped"}, suite="glue")
        run.finish()
        self.assertEqual(server.evaluations,
                         [("job", {"metrics": {"accuracy": 0.93, "bleu": 31.5}, "suite": "glue"})])

    def test_a_job_without_an_ingest_url_spools_under_the_job_run_id(self):
        os.environ.update({"GPUCTL_RUN_ID": "r-job000000002", "GPUCTL_PROJECT": "proj"})
        run = self.fast_run()
        run.log({"loss": 1.0})
        run.finish()
        self.assertTrue(os.path.exists(self.spool_file("r-job000000002")))
