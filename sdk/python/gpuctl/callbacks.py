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
        """Hugging Face ``TrainerCallback``: what the Trainer logs, and checkpoints.

        Each ``on_log`` is logged as the Trainer's own TensorBoard callback writes it: at
        ``state.global_step``, numbers only, keys renamed the same way (``loss`` →
        ``train/loss``, ``eval_loss`` → ``eval/loss``, ``test_loss`` → ``test/loss``), so a
        run fed by this callback and one fed by the Trainer's TensorBoard files share keys.
        Evaluation metrics reach ``on_log`` too, so ``on_evaluate`` logs nothing itself.
        """

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
                metrics = _hf_tensorboard_keys(logs)
                if metrics:
                    self.run.log(metrics, step=state.global_step)

        @_quiet
        def on_save(self, args, state, control, **kwargs):
            if _is_main_hf(state):
                path = "%s/checkpoint-%s" % (args.output_dir, state.global_step)
                self.run.log_checkpoint(
                    path, step=state.global_step, epoch=getattr(state, "epoch", None))

    GpuctlCallback.__module__ = __name__
    return GpuctlCallback


def _hf_tensorboard_keys(logs):
    """``logs`` as transformers' TensorBoardCallback writes them: numbers, split-prefixed keys."""
    out = {}
    for key, value in logs.items():
        if not isinstance(value, (int, float)):
            continue  # TensorBoard gets strings as text and drops the rest
        if key.startswith("eval_"):
            out["eval/" + key[len("eval_"):]] = value
        elif key.startswith("test_"):
            out["test/" + key[len("test_"):]] = value
        else:
            out["train/" + key] = value
    return out


def _is_main_hf(state):
    return bool(getattr(state, "is_world_process_zero", True))


def _make_lightning_callback():
    base = _base([
        ("lightning.pytorch", "Callback"),
        ("pytorch_lightning", "Callback"),
    ])
    logger_base = _base([
        ("lightning.pytorch.loggers", "Logger"),
        ("pytorch_lightning.loggers", "Logger"),
    ])

    class _GpuctlLogger(logger_base):
        """A Lightning logger that hands what Lightning logs to the run.

        Lightning decides what a logger gets and when (``self.log(..., logger=True)``,
        ``log_every_n_steps``, epoch and validation ends) and at which step; this logger
        only forwards, so the run holds what a TensorBoardLogger of the same trainer holds.
        """

        def __init__(self, run, trainer):
            if logger_base is not object:
                super().__init__()
            self._run = run
            self._trainer = trainer

        @property
        def name(self):
            return "gpuctl"

        @property
        def version(self):
            return self._run.id or "0"

        @property
        def save_dir(self):
            return None

        @property
        def experiment(self):
            return self._run

        def log_hyperparams(self, params, *args, **kwargs):
            try:
                if _is_main_lightning(self._trainer):
                    self._run.init(config=_plain_config(params))
            except Exception as error:
                debug("GpuctlLightningCallback: hparams not logged: %r" % (error,))

        def log_metrics(self, metrics, step=None):
            try:
                if metrics and _is_main_lightning(self._trainer):
                    self._run.log(dict(metrics), step=step)
            except Exception as error:
                debug("GpuctlLightningCallback: metrics not logged: %r" % (error,))

        def log_graph(self, *args, **kwargs):
            return None

        def save(self):
            return None

        def finalize(self, status):
            return None

        def after_save_checkpoint(self, checkpoint_callback):
            return None

    class GpuctlLightningCallback(base):
        """Lightning ``Callback``: what Lightning's loggers get, and checkpoints.

        At ``on_fit_start`` (and the start of validate, test and predict) it adds a logger
        of its own to ``trainer.loggers``, after the trainer's own (so their folders, and
        where ModelCheckpoint writes, do not change): the run gets every metric Lightning
        logs, when it logs it, at Lightning's step, and the module's hparams as config.
        It is taken out again at ``teardown``. Lightning calls ``on_save_checkpoint``
        *before* writing the file, so the checkpoint is recorded (with the step of that
        call) at the next hook, when the file exists and its size can be read.
        """

        def __init__(self, run=None):
            self.run = _default_run(run)
            self._logger = None
            self._pending = None  # (step, epoch) of a checkpoint being written

        def _attach(self, trainer):
            if self._logger is None:
                self._logger = _GpuctlLogger(self.run, trainer)
            self._logger._trainer = trainer
            loggers = list(getattr(trainer, "loggers", None) or [])
            if not any(logger is self._logger for logger in loggers):
                trainer.loggers = loggers + [self._logger]

        @_quiet
        def on_fit_start(self, trainer, pl_module):
            if _is_main_lightning(trainer) and self.run._state == "new":
                self.run.init()
            self._attach(trainer)

        @_quiet
        def on_validation_start(self, trainer, pl_module):
            self._attach(trainer)

        @_quiet
        def on_test_start(self, trainer, pl_module):
            self._attach(trainer)

        @_quiet
        def on_predict_start(self, trainer, pl_module):
            self._attach(trainer)

        @_quiet
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args,
                               **kwargs):
            self._record_pending(trainer)

        @_quiet
        def on_validation_end(self, trainer, pl_module):
            self._record_pending(trainer)

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
            loggers = getattr(trainer, "loggers", None)
            if self._logger is not None and loggers:
                trainer.loggers = [logger for logger in loggers if logger is not self._logger]

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


def _plain_config(params):
    """Lightning's hparams (a dict, an AttributeDict or a Namespace) as a plain dict."""
    if isinstance(params, dict):
        return dict(params)
    return dict(vars(params)) if hasattr(params, "__dict__") else params


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
