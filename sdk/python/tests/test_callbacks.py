"""The Hugging Face and Lightning callbacks, driven by stand-in objects.

transformers and lightning cannot be installed here, so these tests call the
hooks with objects that carry the same attributes the real trainers pass
(``args.output_dir``, ``state.global_step``, ``trainer.callback_metrics``, ...).
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


def lightning_trainer(step, metrics, home, main=True):
    return SimpleNamespace(
        global_step=step,
        current_epoch=2,
        callback_metrics=metrics,
        log_every_n_steps=1,
        is_global_zero=main,
        sanity_checking=False,
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
                                                "note": "not a number"}))
        callback.on_evaluate(args, hf_state(20), control,
                             metrics={"eval_loss": 0.4, "eval_accuracy": FakeTensor(0.9)})
        callback.on_save(args, hf_state(20), control)
        callback.on_log(args, hf_state(30, main=False), control, logs={"loss": 9.0})
        callback.on_log(args, hf_state(30), control, logs=None)
        run.finish()

        registration = server.runs[run.id]
        self.assertEqual(registration["name"], "hf-run")
        self.assertEqual(registration["config"]["learning_rate"], 5e-5)
        self.assertEqual(server.run_points(run.id), {
            ("loss", 10): 0.5, ("learning_rate", 10): 1e-4,
            ("eval_loss", 20): 0.4, ("eval_accuracy", 20): 0.9,
        })
        self.assertEqual([c for _, c in server.checkpoints], [{
            "path": os.path.join(self.home, "out", "checkpoint-20"), "step": 20, "epoch": 2,
        }])

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

    def test_hooks_log_callback_metrics_and_checkpoints(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        callback = GpuctlLightningCallback(run=run)
        module = SimpleNamespace(hparams={"lr": 0.01, "hidden": 128})
        home = self.home
        with open(os.path.join(home, "last.ckpt"), "wb") as handle:
            handle.write(b"z" * 64)

        callback.on_fit_start(lightning_trainer(0, {}, home), module)
        trainer = lightning_trainer(5, {"train_loss": FakeTensor(0.3), "tag": "x"}, home)
        callback.on_train_batch_end(trainer, module, None, None, 0)
        trainer.callback_metrics = {"train_loss": FakeTensor(0.2)}
        callback.on_train_batch_end(trainer, module, None, None, 1)  # same step: not again
        trainer = lightning_trainer(6, {"val_loss": FakeTensor(0.25)}, home)
        callback.on_validation_end(trainer, module)
        callback.on_save_checkpoint(trainer, module, {})
        callback.on_train_end(trainer, module)  # the checkpoint file exists by now
        sanity = lightning_trainer(7, {"val_loss": FakeTensor(9.0)}, home)
        sanity.sanity_checking = True
        callback.on_validation_end(sanity, module)
        callback.on_train_batch_end(lightning_trainer(8, {"x": 1.0}, home, main=False),
                                    module, None, None, 2)
        run.finish()

        self.assertEqual(server.runs[run.id]["config"], {"lr": 0.01, "hidden": 128})
        self.assertEqual(server.run_points(run.id), {
            ("train_loss", 5): 0.3, ("val_loss", 6): 0.25,
        })
        self.assertEqual([c for _, c in server.checkpoints], [{
            "path": os.path.join(home, "last.ckpt"), "step": 6, "epoch": 2, "size_bytes": 64,
        }])

    def test_log_every_n_steps_is_respected(self):
        server = self.server()
        self.use_server(server)
        run = self.fast_run()
        run.init()
        callback = GpuctlLightningCallback(run=run)
        for step in range(1, 11):
            trainer = lightning_trainer(step, {"loss": float(step)}, self.home)
            trainer.log_every_n_steps = 5
            callback.on_train_batch_end(trainer, None, None, None, step)
        run.finish()
        self.assertEqual(sorted(server.run_points(run.id)), [("loss", 5), ("loss", 10)])

    def test_a_broken_trainer_object_does_not_raise(self):
        callback = GpuctlLightningCallback(run=self.fast_run())
        callback.on_train_batch_end(object(), None, None, None, 0)
        callback.on_save_checkpoint(object(), None, {})
        GpuctlCallback(run=self.fast_run()).on_save(object(), object(), None)
