"""HTTP posting and the local journal: the two places a batch can go.

Inside a job the agent is reached over its Unix socket, given as
``http+unix://<socket path, percent-encoded>/runs/<id>`` (the spelling of
requests-unixsocket and Docker's clients): stdlib ``http.client`` on an
``AF_UNIX`` socket.

``post_json`` never raises; it sorts every result into one of four outcomes,
which decide what the sender does next:

* ``OK``: 2xx, the batch is delivered.
* ``RETRY``: 408, 429 or 5xx: the server is there but cannot take it now.
* ``INVALID``: any other 4xx: the server will never take this body; drop it.
* ``UNREACHABLE``: connection refused, DNS failure, timeout, broken response.
"""

import binascii
# The first connection looks its host up through this codec: imported here, with the SDK,
# rather than on the sender's thread, where each file an import reads would hand the
# interpreter lock back and forth with the training thread.
import encodings.idna  # noqa: F401
import http.client
import json
import os
import socket
import struct
import threading
import urllib.error
import urllib.parse
import urllib.request

from ._buffer import Columns
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

    def __init__(self, kind, status=None, detail="", body=None, nobody_listens=False):
        self.kind = kind
        #: UNREACHABLE because the connection was refused (not a timeout): nothing listens.
        self.nobody_listens = nobody_listens
        self.status = status
        self.detail = detail
        self.body = body

    def __repr__(self):
        return "Outcome(%s, status=%r, %s)" % (self.kind, self.status, self.detail)


def encode(body):
    """A wire body as compact JSON bytes; refuses bare NaN (the SDK spells it "NaN").

    ``columns`` may be a ``Columns`` (from ``Buffer.take_batch``): already JSON, it is put
    in as it is.
    """
    return b"".join(encode_pieces(body, b"{"))


def encode_pieces(body, start):
    """``encode(body)`` as a list of bytes that make it when joined, its opening ``{``
    written as ``start`` (so a journal line adds its own fields without a copy)."""
    columns = body.get("columns")
    if not isinstance(columns, Columns):
        text = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
        return [start, text[1:]]
    rest = {key: value for key, value in body.items() if key != "columns"}
    pieces = [start + b'"columns":']
    pieces += columns.pieces
    if not rest:
        pieces.append(b"}")
    else:
        tail = json.dumps(rest, allow_nan=False, separators=(",", ":")).encode("utf-8")
        pieces += (b",", tail[1:])
    return pieces


def as_rows(data):
    """A log body (bytes of JSON) with its ``columns`` as rows in ``points``, the form every
    endpoint takes (an endpoint older than ``columns`` refuses that field)."""
    body = json.loads(data)
    if "columns" not in body:
        return data
    body["points"] = body.get("points", []) + rows_of(body.pop("columns"))
    return encode(body)


def points_only(data):
    """The points of a log body (bytes of JSON) alone, as rows, with its ``step`` and
    ``epoch``; None when it has none."""
    body = json.loads(data)
    points = body.get("points", []) + rows_of(body.get("columns", []))
    if not points:
        return None
    rows = {key: body[key] for key in ("step", "epoch") if key in body}
    rows["points"] = points
    return encode(rows)


def rows_of(columns):
    """The points that the wire's ``columns`` stand for, as rows (NaN spelled "NaN")."""
    points = []
    for group in columns:
        keys = group["keys"]
        steps = _unpack("q", group["steps"])
        walls = _unpack("d", group["wall_times"])
        values = [_unpack("d", column) for column in group["values"]]
        for i, step in enumerate(steps):
            for key, column in zip(keys, values):
                value = column[i]
                if value - value != 0.0:
                    value = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
                points.append({"key": key, "step": step, "value": value,
                               "wall_time": walls[i]})
    return points


def _unpack(code, text):
    raw = binascii.a2b_base64(text)
    return struct.unpack("<%d%s" % (len(raw) // 8, code), raw)


class Poster(object):
    """Posts JSON to one base URL. ``local=True`` ignores proxy settings (the agent is local)."""

    def __init__(self, token=None, timeout_s=5.0, local=False):
        self.token = token
        self.timeout_s = timeout_s
        handlers = [urllib.request.ProxyHandler({})] if local else []
        self._opener = urllib.request.build_opener(*handlers)

    def post(self, url, data):
        """POST ``data`` (bytes of JSON) to ``url`` and classify the result; never raises."""
        if url.startswith(UNIX_SCHEME):
            return self._post_unix(url, data)
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
            return Outcome(UNREACHABLE, None, repr(error), nobody_listens=_refused(error))


    def _post_unix(self, url, data):
        try:
            parts = urllib.parse.urlsplit(url)
            socket_path = urllib.parse.unquote(parts.netloc)
            connection = _UnixConnection(socket_path, self.timeout_s)
            try:
                connection.request("POST", parts.path, body=data, headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                    "User-Agent": "gpuctl-python/%s" % (__version__,),
                })
                response = connection.getresponse()
                raw = response.read(MAX_RESPONSE_BYTES)
                status = response.status
            finally:
                connection.close()
        except Exception as error:  # no socket (agent restarting), refused, timeout, reset
            return Outcome(UNREACHABLE, None, repr(error), nobody_listens=_refused(error))
        if 200 <= status < 300:
            return Outcome(OK, status, "", _parse(raw))
        detail = "HTTP %s %s" % (status, raw[:2000].decode("utf-8", "replace").strip())
        if status in (408, 429) or status >= 500:
            return Outcome(RETRY, status, detail)
        return Outcome(INVALID, status, detail)


#: The scheme of an ingest URL on a Unix socket.
UNIX_SCHEME = "http+unix://"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        http.client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self._socket_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except Exception:
            sock.close()
            raise
        self.sock = sock


def _refused(error):
    reason = getattr(error, "reason", error)
    return isinstance(reason, (ConnectionRefusedError, FileNotFoundError))


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


#: The start of every log line; the body posted is the line without it.
_LOG_PREFIX = b'{"type":"log",'
#: Whether ``os.writev`` is there (not on Windows).
_WRITEV = hasattr(os, "writev")
#: The most pieces written in one ``writev`` (systems allow at least 1024).
MAX_WRITE_PIECES = 512


class Journal(object):
    """What a run could not send yet, on disk, in order: ``<directory>/<run_id>.jsonl``.

    The file is in the spool format that ``gpuctl sync`` uploads (a ``{"type": "run"}``
    line, then one ``{"type": "log"}`` line per batch); ``<run_id>.sent`` beside it
    holds the byte offset up to which the lines were delivered, so the sender (or
    ``gpuctl sync``) resumes there and nothing is sent twice. Appends are serialised
    by a lock and written line by line, so the file is a sequence of complete lines
    except, after a crash, possibly the last.
    """

    def __init__(self, directory, run_id, run_body):
        self.directory = directory
        self.run_id = run_id
        self.path = os.path.join(directory, "%s.jsonl" % (run_id,))
        self.sent_path = os.path.join(directory, "%s.sent" % (run_id,))
        self.run_body = run_body
        self._lock = threading.Lock()
        self._size = None  # bytes in the file; None until it is opened
        self._sent = 0
        self._reader = None
        self._fd = None  # open for appending while lines are written, closed when all are sent

    def append(self, bodies):
        """Append log bodies; False (and a debug line) when the disk refuses them."""
        if not bodies:
            return True
        with self._lock:
            try:
                self._open()
                pieces = []
                for body in bodies:
                    if body:
                        pieces += encode_pieces(body, _LOG_PREFIX)
                        pieces.append(b"\n")
                self._write(pieces)
                return True
            except Exception as error:
                debug("cannot write to %s: %r" % (self.path, error))
                return False

    def pending(self):
        """True while lines wait to be delivered."""
        with self._lock:
            return self._size is not None and self._sent < self._size

    def exists(self):
        return self._size is not None

    def next_body(self):
        """``(body bytes, end offset)`` of the first undelivered line, or None."""
        with self._lock:
            if self._size is None or self._sent >= self._size:
                return None
            try:
                if self._reader is None:
                    self._reader = open(self.path, "rb")
                self._reader.seek(self._sent)
                line = self._reader.readline()
            except Exception as error:
                debug("cannot read %s: %r" % (self.path, error))
                return None
            if not line.endswith(b"\n"):
                return None  # torn by a crash: what follows is unreadable
            end = self._sent + len(line)
            if not line.startswith(_LOG_PREFIX):
                self._mark(end)  # the run line of a file this run found on disk
                return self.next_body() if self._sent < self._size else None
            return b"{" + line[len(_LOG_PREFIX):-1], end

    def mark_sent(self, end):
        """Record that the lines before byte ``end`` were delivered."""
        with self._lock:
            self._mark(end)

    def finish_if_sent(self):
        """Delete the journal once everything in it was delivered; True when it is gone."""
        with self._lock:
            if self._size is None:
                return True
            if self._sent < self._size:
                return False
            self._close()
            for path in (self.path, self.sent_path):
                try:
                    os.remove(path)
                except OSError:
                    pass
            self._size = None
            self._sent = 0
            return True

    def undelivered(self):
        """The undelivered log bodies, decoded (for handing them over at exit)."""
        with self._lock:
            if self._size is None:
                return []
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(self._sent)
                    lines = handle.read().split(b"\n")
            except Exception as error:
                debug("cannot read %s: %r" % (self.path, error))
                return []
        bodies = []
        for line in lines:
            if line.startswith(_LOG_PREFIX):
                try:
                    bodies.append(json.loads(b"{" + line[len(_LOG_PREFIX):]))
                except Exception:
                    continue  # a torn last line
        return bodies

    def mark_all_sent(self):
        with self._lock:
            if self._size is not None:
                self._mark(self._size)

    # -- under the lock ----------------------------------------------------------------

    def _open(self):
        if self._size is not None:
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        try:
            size = os.path.getsize(self.path)
        except OSError:
            size = 0
        self._size = size
        self._sent = min(_read_offset(self.sent_path), size)
        if size == 0:
            line = dict(type="run")
            line.update(self.run_body)
            self._write([encode(line) + b"\n"])
            self._sent = self._size  # the offset file is written at the first delivery

    def _write(self, pieces):
        """Append ``pieces`` (bytes), in one system call where the system allows."""
        if len(pieces) > 1 and (not _WRITEV or len(pieces) > MAX_WRITE_PIECES):
            pieces = [b"".join(pieces)]
        pieces = [piece for piece in pieces if piece]
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while pieces:
                written = (os.writev(self._fd, pieces) if _WRITEV
                           else os.write(self._fd, pieces[0]))
                self._size += written
                while pieces and written >= len(pieces[0]):
                    written -= len(pieces[0])
                    del pieces[0]
                if written:  # a short write: the rest of this piece next
                    pieces[0] = memoryview(pieces[0])[written:]
        except Exception:
            self._close_fd()  # opened afresh next time
            raise

    def _mark(self, end):
        self._sent = end
        try:
            with open(self.sent_path, "w") as handle:
                handle.write("%d\n" % (end,))
        except Exception as error:  # the lines are resent then: the server dedupes them
            debug("cannot write %s: %r" % (self.sent_path, error))

    def _close_fd(self):
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def _close(self):
        self._close_fd()
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:
                pass
            self._reader = None


def _read_offset(path):
    try:
        with open(path, "r") as handle:
            return max(0, int(handle.read().strip() or 0))
    except Exception:
        return 0
