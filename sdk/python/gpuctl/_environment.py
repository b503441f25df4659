"""The environment snapshot recorded with a run.

Taken on a helper of the SDK's sender thread, never on the training thread. Two things
are deliberately *not* done, because they would change the training process:

* torch is never imported by the SDK: it is read from ``sys.modules`` when the
  script has imported it (almost every torch script has, before ``init``).
* GPU names are read only once CUDA is already initialised
  (``torch.cuda.is_initialized()``): asking earlier would create a CUDA context
  on device 0 from every process (in DDP, one per rank on GPU 0) and break
  fork-based data loaders. ``gpu_facts_ready`` lets the sender add them later.
"""

import os
import platform
import socket
import subprocess
import sys

#: Seconds each git command may take; a slow or hung git is simply left out.
GIT_TIMEOUT_S = 2.0


def snapshot(cwd=None):
    """A dict of python, platform, hostname, argv, and (when known) torch, CUDA, GPUs and git."""
    env = {
        "python": platform.python_version(),
        "platform": _safely(platform.platform),
        "hostname": _safely(socket.gethostname),
        "executable": sys.executable,
        "argv": list(sys.argv),
        "cwd": _safely(os.getcwd),
    }
    env.update(torch_facts())
    env.update(git_facts(cwd))
    return {key: value for key, value in env.items() if value is not None}


def torch_facts():
    """torch version, CUDA version and visible GPU names, as far as known without side effects."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    facts = {}
    try:
        facts["torch"] = str(torch.__version__)
    except Exception:
        pass
    try:
        cuda = getattr(torch.version, "cuda", None)
        if cuda:
            facts["cuda"] = str(cuda)
    except Exception:
        pass
    try:
        if torch.cuda.is_initialized():
            count = torch.cuda.device_count()
            facts["gpus"] = [str(torch.cuda.get_device_name(i)) for i in range(count)]
    except Exception:
        pass
    return facts


def gpu_facts_ready(env):
    """True when ``env`` lacks GPU names that ``torch_facts`` could now supply."""
    if "gpus" in env:
        return False
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def torch_facts_changed(env):
    """The torch facts that differ from ``env`` (empty when nothing new is known).

    Cheap when there is nothing to do, so the sender may call it once per batch.
    """
    if "torch" not in sys.modules:
        return {}
    if "torch" in env and not gpu_facts_ready(env):
        return {}
    fresh = torch_facts()
    return {key: value for key, value in fresh.items() if env.get(key) != value}


def git_facts(cwd=None):
    """``git_commit`` and ``git_dirty`` for the working directory, or {} when there is no git.

    Untracked files do not make a tree dirty: training writes outputs, logs and
    checkpoints into untracked folders all the time.
    """
    commit = _git(["rev-parse", "HEAD"], cwd)
    if not commit:
        return {}
    facts = {"git_commit": commit}
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    if status is not None:
        facts["git_dirty"] = bool(status.strip())
    return facts


def _git(args, cwd):
    try:
        done = subprocess.run(
            ["git"] + args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
        )
    except Exception:  # no git, a timeout, a vanished cwd
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip()


def _safely(function):
    try:
        return function()
    except Exception:
        return None
