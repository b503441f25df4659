"""Where a run sends its data, resolved once from the environment at ``init``.

Inside a gpuctl job the agent sets ``GPUCTL_RUN_ID``, ``GPUCTL_INGEST_URL`` and
``GPUCTL_RUN_DIR`` (plus job id, attempt, project and experiment). Outside one, the server comes
from ``GPUCTL_SERVER_URL``/``GPUCTL_TOKEN``, else from ``$GPUCTL_HOME/sdk.yaml``.
"""

import os

#: Seconds the interpreter may spend at exit delivering what is still queued.
DEFAULT_EXIT_TIMEOUT_S = 5.0

#: Modes: "job" (post to the agent), "server" (register with the server),
#: "offline" (write the spool only), "disabled" (do nothing).
MODES = ("job", "server", "offline", "disabled")


class Settings(object):
    """Everything a run needs to know about its surroundings, fully resolved."""

    def __init__(self, mode, home, server_url=None, token=None, ingest_url=None,
                 run_id=None, job_id=None, attempt=None, project=None, experiment=None,
                 exit_timeout_s=DEFAULT_EXIT_TIMEOUT_S, run_dir=None):
        self.mode = mode
        self.home = home
        self.server_url = server_url
        self.token = token
        self.ingest_url = ingest_url
        self.run_id = run_id
        self.job_id = job_id
        self.attempt = attempt
        self.project = project
        self.experiment = experiment
        self.exit_timeout_s = exit_timeout_s
        self.run_dir = run_dir

    @property
    def spool_dir(self):
        return os.path.join(self.home, "spool")

    @property
    def journal_dir(self):
        """Where undelivered batches wait: the run's own folder in a job, else the spool."""
        if self.run_dir and os.access(self.run_dir, os.W_OK | os.X_OK):
            return os.path.join(self.run_dir, ".gpuctl")
        return self.spool_dir


def gpuctl_home(environ=None):
    """``$GPUCTL_HOME``, else ``~/.gpuctl``."""
    environ = os.environ if environ is None else environ
    home = environ.get("GPUCTL_HOME", "").strip()
    return os.path.expanduser(home or os.path.join("~", ".gpuctl"))


def in_job(environ=None):
    """True inside a gpuctl job (the agent set ``GPUCTL_RUN_ID``)."""
    environ = os.environ if environ is None else environ
    return bool(environ.get("GPUCTL_RUN_ID", "").strip())


def resolve(environ=None):
    """Read the environment (and ``sdk.yaml`` if needed) into a ``Settings``."""
    environ = os.environ if environ is None else environ
    home = gpuctl_home(environ)
    exit_timeout_s = _seconds(environ.get("GPUCTL_EXIT_TIMEOUT"), DEFAULT_EXIT_TIMEOUT_S)
    wanted = environ.get("GPUCTL_MODE", "").strip().lower()
    if wanted == "disabled":
        return Settings("disabled", home, exit_timeout_s=exit_timeout_s)

    if in_job(environ):
        ingest_url = environ.get("GPUCTL_INGEST_URL", "").strip().rstrip("/") or None
        # Without an ingest URL the data still has somewhere to go: the spool, which
        # `gpuctl sync` uploads under the job's run id.
        mode = "offline" if wanted == "offline" or ingest_url is None else "job"
        return Settings(
            mode,
            home,
            ingest_url=ingest_url,
            run_id=environ["GPUCTL_RUN_ID"].strip(),
            job_id=environ.get("GPUCTL_JOB_ID") or None,
            attempt=environ.get("GPUCTL_ATTEMPT") or None,
            project=environ.get("GPUCTL_PROJECT") or None,
            experiment=environ.get("GPUCTL_EXPERIMENT") or None,
            exit_timeout_s=exit_timeout_s,
            run_dir=environ.get("GPUCTL_RUN_DIR", "").strip() or None,
        )

    server_url = environ.get("GPUCTL_SERVER_URL", "").strip() or None
    token = environ.get("GPUCTL_TOKEN", "").strip() or None
    if server_url is None or token is None:
        from_file = read_sdk_yaml(os.path.join(home, "sdk.yaml"))
        server_url = server_url or from_file.get("server_url") or None
        token = token or from_file.get("token") or None
    if server_url is not None:
        server_url = server_url.rstrip("/")
    mode = "offline" if wanted == "offline" or server_url is None else "server"
    return Settings(mode, home, server_url=server_url, token=token,
                    project=environ.get("GPUCTL_PROJECT") or None,
                    experiment=environ.get("GPUCTL_EXPERIMENT") or None,
                    exit_timeout_s=exit_timeout_s)


def read_sdk_yaml(path):
    """The ``key: value`` lines of a small YAML file, as a dict of strings.

    Only flat scalar lines are understood (``server_url: http://...``,
    ``token: "abc"``); comments, blank lines and anything nested are ignored,
    so no YAML library is needed. A missing or unreadable file gives ``{}``.
    """
    try:
        with open(path, "r", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    values = {}
    for line in lines:
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, raw = line.partition(":")
        key = key.strip()
        raw = raw.strip()
        if raw[:1] in ("'", '"'):
            quote = raw[0]
            end = raw.find(quote, 1)
            value = raw[1:end] if end > 0 else raw[1:]
        else:
            value = raw.split(" #", 1)[0].strip()
        if key and value:
            values[key] = value
    return values


def _seconds(raw, default):
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return default
    return value if value >= 0 else default
