"""Callbacks that feed a gpuctl run from Hugging Face ``Trainer`` and PyTorch Lightning.

    from gpuctl.callbacks import GpuctlCallback            # transformers.Trainer
    trainer = Trainer(..., callbacks=[GpuctlCallback()])

    from gpuctl.callbacks import GpuctlLightningCallback   # lightning.pytorch.Trainer
    trainer = Trainer(..., callbacks=[GpuctlLightningCallback()])

Each class subclasses the real base class (``transformers.TrainerCallback``,
``lightning.pytorch.Callback`` or ``pytorch_lightning.Callback``) when that
library can be imported, else ``object``. The class is built on first access,
so importing ``GpuctlLightningCallback`` never imports transformers and the
other way round. Hooks log only on the main process (rank 0) and never raise.
"""

import functools
import importlib
import sys

from ._debug import debug

__all__ = ["GpuctlCallback", "GpuctlLightningCallback"]


def _quiet(hook):
    """A hook that never raises into the trainer (the Run methods themselves never do)."""

    @functools.wraps(hook)
    def guarded(self, *args, **kwargs):
        try:
            hook(self, *args, **kwargs)
        except Exception as error:
            debug("%s.%s failed and was ignored: %r" % (type(self).__name__, hook.__name__, error))
        return None  # Hugging Face treats a returned value as a new TrainerControl

    return guarded


def _default_run(run):
    if run is not None:
        return run
    from . import run as default
    return default


def _base(candidates):
    """The first importable class among ``(module, attribute)`` pairs, else ``object``.

    A module the script already imported wins, so a pytorch_lightning user gets a
    pytorch_lightning Callback even when the newer lightning package is installed.
    """
    for module_name, attribute in candidates:
        module = sys.modules.get(module_name)
        if module is not None and hasattr(module, attribute):
            return getattr(module, attribute)
    for module_name, attribute in candidates:
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except Exception:
            continue
    return object


def _make_hugging_face_callback():
    base = _base([("transformers", "TrainerCallback")])

    class GpuctlCallback(base):
        """Hugging Face ``TrainerCallback``: logs, evaluation metrics and checkpoints."""

        def __init__(self, run=None):
            self.run = _default_run(run)

        @_quiet
        def on_train_begin(self, args, state, control, **kwargs):
            # Starts the run with the TrainingArguments as config, unless the script
            # already called init(); inside a job this attaches to the job's run.
            if _is_main_hf(state) and self.run._state == "new":
                self.run.init(name=getattr(args, "run_name", None), config=args)

        @_quiet
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and _is_main_hf(state):
                self.run.log(logs, step=state.global_step)

        @_quiet
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            if metrics and _is_main_hf(state):
                self.run.log(metrics, step=state.global_step)

        @_quiet
        def on_save(self, args, state, control, **kwargs):
            if _is_main_hf(state):
                path = "%s/checkpoint-%s" % (args.output_dir, state.global_step)
                self.run.log_checkpoint(
                    path, step=state.global_step, epoch=getattr(state, "epoch", None))

    GpuctlCallback.__module__ = __name__
    return GpuctlCallback


def _is_main_hf(state):
    return bool(getattr(state, "is_world_process_zero", True))


def _make_lightning_callback():
    base = _base([
        ("lightning.pytorch", "Callback"),
        ("pytorch_lightning", "Callback"),
    ])

    class GpuctlLightningCallback(base):
        """Lightning ``Callback``: ``trainer.callback_metrics`` and checkpoints.

        Training metrics are logged every ``trainer.log_every_n_steps`` steps (as
        Lightning's own loggers do) and once per step at most. Lightning calls
        ``on_save_checkpoint`` *before* writing the file, so the checkpoint is
        recorded (with the step of that call) at the next hook, when the file
        exists and its size can be read.
        """

        def __init__(self, run=None):
            self.run = _default_run(run)
            self._last_step = None
            self._pending = None  # (step, epoch) of a checkpoint being written

        @_quiet
        def on_fit_start(self, trainer, pl_module):
            if _is_main_lightning(trainer) and self.run._state == "new":
                hparams = getattr(pl_module, "hparams", None)
                self.run.init(config=dict(hparams) if hparams else None)

        @_quiet
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args,
                               **kwargs):
            self._record_pending(trainer)
            step = trainer.global_step
            every = getattr(trainer, "log_every_n_steps", 1)
            every = every if isinstance(every, int) and every > 0 else 1
            if step == self._last_step or step % every:
                return
            self._last_step = step
            self._log_metrics(trainer)

        @_quiet
        def on_validation_end(self, trainer, pl_module):
            self._record_pending(trainer)
            if not getattr(trainer, "sanity_checking", False):
                self._log_metrics(trainer)

        @_quiet
        def on_save_checkpoint(self, trainer, pl_module, checkpoint):
            self._record_pending(trainer)
            if _is_main_lightning(trainer):
                self._pending = (trainer.global_step, getattr(trainer, "current_epoch", None))

        @_quiet
        def on_train_epoch_end(self, trainer, pl_module):
            self._record_pending(trainer)

        @_quiet
        def on_train_end(self, trainer, pl_module):
            self._record_pending(trainer)

        @_quiet
        def on_fit_end(self, trainer, pl_module):
            self._record_pending(trainer)

        @_quiet
        def on_exception(self, trainer, pl_module, exception):
            self._record_pending(trainer)

        @_quiet
        def teardown(self, trainer, pl_module, stage=None):
            self._record_pending(trainer)

        def _log_metrics(self, trainer):
            if not _is_main_lightning(trainer):
                return
            metrics = getattr(trainer, "callback_metrics", None)
            if metrics:
                self.run.log(dict(metrics), step=trainer.global_step)

        def _record_pending(self, trainer):
            if self._pending is None:
                return
            step, epoch = self._pending
            self._pending = None
            path = _lightning_checkpoint_path(trainer)
            if path:
                self.run.log_checkpoint(path, step=step, epoch=epoch)
            else:
                debug("a Lightning checkpoint at step %s has no known path; not recorded" % step)

    GpuctlLightningCallback.__module__ = __name__
    return GpuctlLightningCallback


def _is_main_lightning(trainer):
    return bool(getattr(trainer, "is_global_zero", True))


def _lightning_checkpoint_path(trainer):
    """The file the last save wrote: ModelCheckpoint's record of it, else its last/best path."""
    callback = getattr(trainer, "checkpoint_callback", None)
    if callback is None:
        return None
    for attribute in ("_last_checkpoint_saved", "last_model_path", "best_model_path"):
        path = getattr(callback, attribute, None)
        if isinstance(path, str) and path:
            return path
    return None


_FACTORIES = {
    "GpuctlCallback": _make_hugging_face_callback,
    "GpuctlLightningCallback": _make_lightning_callback,
}


def __getattr__(name):
    factory = _FACTORIES.get(name)
    if factory is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    cls = factory()
    globals()[name] = cls
    return cls


def __dir__():
    return sorted(list(globals()) + list(_FACTORIES))
