"""The Hugging Face and Lightning callbacks, driven by stand-in objects.

The SDK's suite runs without transformers and lightning, so these tests call the
hooks with objects that carry the same attributes the real trainers pass
(``args.output_dir``, ``state.global_step``, ``trainer.loggers``, ...); the framework
tier (tests/frameworks_metrics_test.ts) runs the callbacks in the real trainers.
"""

import dataclasses
import importlib.util
import os
from types import SimpleNamespace

from gpuctl.callbacks import GpuctlCallback, GpuctlLightningCallback

from ._support import SdkTestCase


class FakeTensor(object):
    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


@dataclasses.dataclass
class TrainingArguments:
    output_dir: str
    run_name: str = "hf-run"
    learning_rate: float = 5e-5


def hf_state(step, main=True):
    return SimpleNamespace(global_step=step, epoch=step / 10.0, is_world_process_zero=main)


def lightning_trainer(step, home, main=True):
    return SimpleNamespace(
        global_step=step,
        current_epoch=2,
        loggers=[],
        is_global_zero=main,
        checkpoint_callback=SimpleNamespace(
            last_model_path=os.path.join(home, "last.ckpt"), best_model_path=""),
    )


class HuggingFaceCallbackTest(SdkTestCase):
    def test_base_class_is_object_without_transformers(self):
        if importlib.util.find_spec("transformers") is not None:
            self.skipTest("transformers is installed")
        self.assertIs(GpuctlCallback.__mro__[1], object)

    def test_hooks_log_metrics_evaluations_and_checkpoints(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        callback = GpuctlCallback(run=run)
        args = TrainingArguments(output_dir=os.path.join(self.home, "out"))
        control = object()

        self.assertIsNone(callback.on_train_begin(args, hf_state(0), control))
        self.assertIsNone(callback.on_log(args, hf_state(10), control,
                                          logs={"loss": 0.5, "learning_rate": 1e-4,
                                                "epoch": 0.5, "note": "not a number"}))
        # The Trainer hands evaluation metrics to on_log as well (and on_evaluate logs nothing).
        callback.on_log(args, hf_state(20), control,
                        logs={"eval_loss": 0.4, "eval_accuracy": 0.9, "test_f1": 0.7})
        callback.on_save(args, hf_state(20), control)
        callback.on_log(args, hf_state(30, main=False), control, logs={"loss": 9.0})
        callback.on_log(args, hf_state(30), control, logs=None)
        run.finish()

        registration = server.runs[run.id]
        self.assertEqual(registration["name"], "hf-run")
        self.assertEqual(registration["config"]["learning_rate"], 5e-5)
        # The keys and steps the Trainer's own TensorBoard callback writes.
        self.assertEqual(server.run_points(run.id), {
            ("train/loss", 10): 0.5, ("train/learning_rate", 10): 1e-4,
            ("train/epoch", 10): 0.5,
            ("eval/loss", 20): 0.4, ("eval/accuracy", 20): 0.9, ("test/f1", 20): 0.7,
        })
        self.assertEqual([c for _, c in server.checkpoints], [{
            "path": os.path.join(self.home, "out", "checkpoint-20"), "step": 20, "epoch": 2,
        }])

    def test_train_epoch_is_the_runs_epoch(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        callback = GpuctlCallback(run=run)
        callback.on_log(TrainingArguments(output_dir="/o"), hf_state(12), None,
                        logs={"loss": 0.5, "epoch": 1.5})
        run.finish()
        self.assertEqual([body.get("epoch") for r, body in server.batches if r == run.id][-1], 1)

    def test_an_existing_run_is_not_restarted(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init(project="mine")
        callback = GpuctlCallback(run=run)
        callback.on_train_begin(TrainingArguments(output_dir="/o"), hf_state(0), None)
        run.finish()
        self.assertEqual(list(server.runs), [run.id])
        self.assertNotIn("config", server.runs[run.id])


class LightningCallbackTest(SdkTestCase):
    def test_base_class_is_object_without_lightning(self):
        if importlib.util.find_spec("lightning") or importlib.util.find_spec("pytorch_lightning"):
            self.skipTest("lightning is installed")
        self.assertIs(GpuctlLightningCallback.__mro__[1], object)

    def test_the_run_gets_what_lightning_hands_its_loggers(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        callback = GpuctlLightningCallback(run=run)
        home = self.home
        with open(os.path.join(home, "last.ckpt"), "wb") as handle:
            handle.write(b"z" * 64)
        trainer = lightning_trainer(0, home)
        own = SimpleNamespace(name="tensorboard")
        trainer.loggers = [own]

        callback.on_fit_start(trainer, None)
        # After the trainer's own logger, so its folders (and ModelCheckpoint's) do not move.
        self.assertIs(trainer.loggers[0], own)
        logger = trainer.loggers[1]
        callback.on_validation_start(trainer, None)  # attached once
        self.assertEqual(len(trainer.loggers), 2)
        # What Lightning's logger connector does: hparams once, then metrics at its step.
        logger.log_hyperparams({"lr": 0.01, "hidden": 128})
        logger.log_metrics({"train_loss": 0.3, "epoch": 0.0}, step=4)
        logger.log_metrics({"val_loss": 0.25, "epoch": 0.0}, step=15)
        trainer.global_step = 16
        callback.on_save_checkpoint(trainer, None, {})
        callback.on_train_end(trainer, None)  # the checkpoint file exists by now
        callback.teardown(trainer, None, "fit")
        self.assertEqual(trainer.loggers, [own])
        other = lightning_trainer(20, home, main=False)
        callback.on_fit_start(other, None)
        other.loggers[0].log_metrics({"train_loss": 9.0}, step=20)
        run.finish()

        configs = [body["config"] for r, body in server.batches if r == run.id and "config" in body]
        self.assertEqual(configs, [{"lr": 0.01, "hidden": 128}])
        self.assertEqual(server.run_points(run.id), {
            ("train_loss", 4): 0.3, ("epoch", 4): 0.0, ("val_loss", 15): 0.25,
            ("epoch", 15): 0.0,
        })
        self.assertEqual([c for _, c in server.checkpoints], [{
            "path": os.path.join(home, "last.ckpt"), "step": 16, "epoch": 2, "size_bytes": 64,
        }])

    def test_a_trainer_without_loggers_gets_one(self):
        run = self.fast_run()
        trainer = lightning_trainer(0, self.home)
        trainer.loggers = None  # Trainer(logger=False) reads back as []
        GpuctlLightningCallback(run=run).on_fit_start(trainer, None)
        self.assertEqual(len(trainer.loggers), 1)

    def test_a_broken_trainer_object_does_not_raise(self):
        callback = GpuctlLightningCallback(run=self.fast_run())
        callback.on_fit_start(object(), None)
        callback.on_train_batch_end(object(), None, None, None, 0)
        callback.on_save_checkpoint(object(), None, {})
        GpuctlCallback(run=self.fast_run()).on_save(object(), object(), None)
