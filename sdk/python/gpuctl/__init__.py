"""gpuctl's optional training-side SDK (standard library only, Python >= 3.8).

    from gpuctl import run

    run.init(project="mnist", config=args)      # optional inside a gpuctl job
    for step in range(steps):
        run.log({"loss": loss, "lr": lr})
    run.log_checkpoint("out/ckpt-1000.pt", step=1000)
    run.finish()                                 # optional: done at exit anyway

Nothing here raises into the training process or blocks it; see README.md.
"""

from ._run import Run
from ._version import __version__

#: The default run, for scripts that train one run at a time.
run = Run()

__all__ = ["Run", "run", "__version__"]
