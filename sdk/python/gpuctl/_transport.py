"""HTTP posting and the local spool: the two places a batch can go.

``post_json`` never raises; it sorts every result into one of four outcomes,
which decide what the sender does next:

* ``OK``: 2xx, the batch is delivered.
* ``RETRY``: 408, 429 or 5xx: the server is there but cannot take it now.
* ``INVALID``: any other 4xx: the server will never take this body; drop it.
* ``UNREACHABLE``: connection refused, DNS failure, timeout, broken response.
"""

import json
import os
import threading
import urllib.error
import urllib.request

from ._version import __version__
from ._debug import debug

OK = "ok"
RETRY = "retry"
INVALID = "invalid"
UNREACHABLE = "unreachable"

#: The most of a response body read (the SDK only needs the run object's id).
MAX_RESPONSE_BYTES = 1 << 20


class Outcome(object):
    """What one POST came to: ``kind`` (OK/RETRY/INVALID/UNREACHABLE), HTTP status, detail."""

    def __init__(self, kind, status=None, detail="", body=None):
        self.kind = kind
        self.status = status
        self.detail = detail
        self.body = body

    def __repr__(self):
        return "Outcome(%s, status=%r, %s)" % (self.kind, self.status, self.detail)


def encode(body):
    """A wire body as compact JSON bytes; refuses bare NaN (the SDK spells it "NaN")."""
    return json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")


class Poster(object):
    """Posts JSON to one base URL. ``local=True`` ignores proxy settings (the agent is local)."""

    def __init__(self, token=None, timeout_s=5.0, local=False):
        self.token = token
        self.timeout_s = timeout_s
        handlers = [urllib.request.ProxyHandler({})] if local else []
        self._opener = urllib.request.build_opener(*handlers)

    def post(self, url, data):
        """POST ``data`` (bytes of JSON) to ``url`` and classify the result; never raises."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "gpuctl-python/%s" % (__version__,),
        }
        if self.token:
            headers["Authorization"] = "Bearer %s" % (self.token,)
        try:
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            with self._opener.open(request, timeout=self.timeout_s) as response:
                raw = response.read(MAX_RESPONSE_BYTES)
                return Outcome(OK, response.status, "", _parse(raw))
        except urllib.error.HTTPError as error:
            status = error.code
            detail = _error_detail(error)
            if status in (408, 429) or status >= 500:
                return Outcome(RETRY, status, detail)
            if 400 <= status < 500:
                return Outcome(INVALID, status, detail)
            return Outcome(RETRY, status, detail)  # a 1xx/3xx we did not follow
        except Exception as error:  # URLError, timeout, reset, bad URL, broken response
            return Outcome(UNREACHABLE, None, repr(error))


def _parse(raw):
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except Exception:
        return None


def _error_detail(error):
    try:
        text = error.read(2000).decode("utf-8", "replace")
    except Exception:
        text = ""
    finally:
        try:
            error.close()
        except Exception:
            pass
    return "HTTP %s %s" % (error.code, text.strip())


class Spool(object):
    """``$GPUCTL_HOME/spool/<run_id>.jsonl``: a run line, then one line per log batch.

    Appends are serialised by a lock and flushed line by line, so the file is
    always a sequence of complete lines except, after a crash, possibly the last.
    """

    def __init__(self, directory, run_id):
        self.directory = directory
        self.path = os.path.join(directory, "%s.jsonl" % (run_id,))
        self._lock = threading.Lock()
        self._started = False

    def start(self, run_body):
        """Write the ``{"type": "run", ...}`` line once (unless the file already has content)."""
        with self._lock:
            if self._started:
                return True
            try:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
                has_content = os.path.exists(self.path) and os.path.getsize(self.path) > 0
            except OSError as error:
                debug("cannot create the spool folder %s: %r" % (self.directory, error))
                return False
            if not has_content:
                line = dict(type="run")
                line.update(run_body)
                if not self._append(line):
                    return False
            self._started = True
            debug("spooling run to %s" % (self.path,))
            return True

    def append(self, log_body):
        """Append one ``{"type": "log", ...}`` line; False (and a debug line) on failure."""
        line = dict(type="log")
        line.update(log_body)
        with self._lock:
            return self._append(line)

    def _append(self, line):
        try:
            data = encode(line) + b"\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            return True
        except Exception as error:
            debug("cannot write to the spool %s: %r" % (self.path, error))
            return False
