"""Test helpers: a local server that speaks the SDK wire contract, and a base TestCase.

``FakeServer`` implements ``POST /api/sdk/runs``, ``POST /api/sdk/runs/{id}/log``
and the agent's ingest ``POST /ingest/log``, validating bodies as strictly as
the real server's zod schemas (``protocol/rest.ts``): unknown fields, bare NaN,
negative steps or wrong types are a 400, which the SDK would drop, so a test
that checks for delivered data also checks that the bodies were valid. Points sent
as ``columns`` are decoded (``expand_columns``, as strict as ``protocol/sdk_columns.ts``)
into the rows of ``points`` that tests read.
"""

import base64
import binascii
import json
import math
import struct
import os
import re
import shutil
import socket
import socketserver
import tempfile
import threading
import time
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

from gpuctl import Run

TOKEN = "t0k-secret"
SDK_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_REGISTRATION_FIELDS = {"id", "project", "experiment", "name", "config", "env", "max_steps"}
_LOG_FIELDS = {"points", "checkpoints", "logs", "evaluation", "status", "step", "epoch",
               "dropped", "config", "env"}
_POINT_FIELDS = {"key", "step", "value", "wall_time"}
_CHECKPOINT_FIELDS = {"path", "step", "epoch", "size_bytes", "metrics"}
_STATUSES = {"SUCCEEDED", "FAILED", "CANCELLED"}


class Invalid(Exception):
    pass


def strict_json(raw):
    """Parse JSON the way a JavaScript server would: a bare NaN or Infinity is an error."""

    def refuse(constant):
        raise Invalid("bare %s is not JSON" % constant)

    return json.loads(raw, parse_constant=refuse)


def _is_int(value, minimum=0):
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_registration(body):
    if not isinstance(body, dict) or set(body) - _REGISTRATION_FIELDS:
        raise Invalid("unknown registration fields: %s" % (set(body) - _REGISTRATION_FIELDS))
    if not isinstance(body.get("id"), str) or not _ID.match(body["id"]):
        raise Invalid("bad id %r" % (body.get("id"),))
    for key in ("project", "experiment", "name"):
        if key in body and (not isinstance(body[key], str) or not body[key].strip()):
            raise Invalid("bad %s" % key)
    for key in ("config", "env"):
        if key in body and not isinstance(body[key], dict):
            raise Invalid("%s must be an object" % key)
    if "max_steps" in body and not _is_int(body["max_steps"], 1):
        raise Invalid("bad max_steps")


_GROUP_FIELDS = {"keys", "steps", "wall_times", "values"}


def _column(text, code, rows=None):
    if not isinstance(text, str):
        raise Invalid("a column is not a string: %r" % (text,))
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise Invalid("a column is not base64: %r" % (error,))
    if not raw or len(raw) % 8 or (rows is not None and len(raw) != rows * 8):
        raise Invalid("a column of %d bytes (%r rows expected)" % (len(raw), rows))
    return struct.unpack("<%d%s" % (len(raw) // 8, code), raw)


def expand_columns(body):
    """``body`` with its ``columns`` decoded into rows appended to ``points`` (non-finite
    values spelled as the row form spells them); Invalid for any malformed group."""
    if not isinstance(body, dict) or "columns" not in body:
        return body
    columns = body["columns"]
    if not isinstance(columns, list):
        raise Invalid("columns is not a list")
    points = list(body.get("points", []))
    for group in columns:
        if not isinstance(group, dict) or set(group) != _GROUP_FIELDS:
            raise Invalid("bad column group %r" % (group,))
        keys = group["keys"]
        if (not isinstance(keys, list) or not keys or len(set(keys)) != len(keys)
                or not all(isinstance(key, str) for key in keys)):
            raise Invalid("bad keys %r" % (keys,))
        steps = _column(group["steps"], "q")
        walls = _column(group["wall_times"], "d", len(steps))
        if not isinstance(group["values"], list) or len(group["values"]) != len(keys):
            raise Invalid("not one value column per key")
        values = [_column(column, "d", len(steps)) for column in group["values"]]
        for i, step in enumerate(steps):
            for key, column in zip(keys, values):
                value = column[i]
                if value != value:
                    value = "NaN"
                elif math.isinf(value):
                    value = "Infinity" if value > 0 else "-Infinity"
                points.append({"key": key, "step": step, "value": value,
                               "wall_time": walls[i]})
    expanded = {key: value for key, value in body.items() if key != "columns"}
    expanded["points"] = points
    return expanded


def wire_body(raw):
    """A log body as the endpoint reads it: strict JSON, ``columns`` decoded into ``points``."""
    return expand_columns(strict_json(raw))


def check_log_body(body):
    if not isinstance(body, dict) or set(body) - _LOG_FIELDS:
        raise Invalid("unknown log fields: %s" % (set(body) - _LOG_FIELDS,))
    for point in body.get("points", []):
        if set(point) - _POINT_FIELDS or not {"key", "step", "value"} <= set(point):
            raise Invalid("bad point fields %r" % (point,))
        if not isinstance(point["key"], str) or not 0 < len(point["key"]) <= 200:
            raise Invalid("bad key %r" % (point["key"],))
        if not _is_int(point["step"]):
            raise Invalid("bad step %r" % (point["step"],))
        value = point["value"]
        if not _is_number(value) and value not in ("NaN", "Infinity", "-Infinity"):
            raise Invalid("bad value %r" % (value,))
        wall_time = point.get("wall_time", 0)
        if not _is_number(wall_time) or wall_time < 0:
            raise Invalid("bad wall_time")
    for checkpoint in body.get("checkpoints", []):
        if set(checkpoint) - _CHECKPOINT_FIELDS or not isinstance(checkpoint.get("path"), str):
            raise Invalid("bad checkpoint %r" % (checkpoint,))
        for key in ("step", "epoch", "size_bytes"):
            if key in checkpoint and not _is_int(checkpoint[key]):
                raise Invalid("bad checkpoint %s" % key)
        if "metrics" in checkpoint and not isinstance(checkpoint["metrics"], dict):
            raise Invalid("bad checkpoint metrics")
    if "evaluation" in body:
        evaluation = body["evaluation"]
        if not isinstance(evaluation, dict) or set(evaluation) - {"metrics", "suite"} or \
                not isinstance(evaluation.get("metrics"), dict):
            raise Invalid("bad evaluation")
    if "status" in body and body["status"] not in _STATUSES:
        raise Invalid("bad status")
    for key in ("step", "epoch", "dropped"):
        if key in body and not _is_int(body[key]):
            raise Invalid("bad %s" % key)
    for key in ("config", "env"):
        if key in body and not isinstance(body[key], dict):
            raise Invalid("%s must be an object" % key)


class FakeServer(object):
    """A gpuctl server (and agent ingest endpoint) in a thread, on 127.0.0.1 and a free port.

    Knobs, all changeable while it runs:
    * ``hang_s``: hold every request this long (or until ``stop``) before answering.
    * ``fail`` : a list of statuses to answer the next requests with, one each,
      without applying them (e.g. ``[500, 500]``); ``fail_paths`` limits it to paths
      containing that text.
    * ``apply_then_hang``: how many log requests to apply and *then* hold for
      ``hang_s`` (the response arrives after the client gave up).
    * ``always_status``: answer every log request with this status.
    * ``without_columns``: answer as an endpoint older than ``columns`` does: that field
      refused by name, the rest of the body applied.
    """

    def __init__(self, token=TOKEN, unix_path=None):
        self.token = token
        self.lock = threading.Lock()
        self.released = threading.Event()
        self.hang_s = 0.0
        self.fail = []
        self.fail_paths = ""
        self.apply_then_hang = 0
        self.always_status = None
        self.without_columns = False  # an endpoint older than columns: refuses that field
        self.requests = []  # dicts: path, headers, body (raw text)
        self.runs = {}  # id -> registration body
        self.batches = []  # (run id, body), as applied
        self.points = {}  # (run id, key, step) -> value
        self.checkpoints = []  # (run id, checkpoint)
        self.evaluations = []
        self.statuses = {}
        self.unix_path = unix_path
        if unix_path is None:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        else:  # the agent's ingest endpoint: HTTP on a Unix socket
            self._httpd = _UnixHTTPServer(unix_path, _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self):
        if self.unix_path is not None:
            return "http+unix://%s" % (urllib.parse.quote(self.unix_path, safe=""),)
        return "http://127.0.0.1:%d" % (self._httpd.server_address[1],)

    def points_sent(self, run_id):
        """Every point applied, repeats included (a point sent twice counts twice)."""
        with self.lock:
            return sum(len(body.get("points", [])) for r, body in self.batches if r == run_id)

    def stop(self):
        self.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def requests_to(self, text):
        with self.lock:
            return [r for r in self.requests if text in r["path"]]

    def run_points(self, run_id):
        with self.lock:
            return {(k, s): v for (r, k, s), v in self.points.items() if r == run_id}

    # -- the contract ------------------------------------------------------------------

    def handle(self, path, headers, raw):
        """Returns (status, response body)."""
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": raw})
            failing = self.fail and self.fail_paths in path
            status = self.fail.pop(0) if failing else None
        if status is None and self.hang_s and not self.apply_then_hang:
            self.released.wait(self.hang_s)
        if status is not None:
            return status, {"error": {"code": "injected", "message": "injected failure"}}
        try:
            body = strict_json(raw)
        except Exception as error:
            return 400, {"error": {"code": "bad_json", "message": str(error)}}
        if path.startswith("/ingest/"):
            if path != "/ingest/log":
                return 404, {"error": {"code": "not_found", "message": path}}
            return self._log("job", body)
        if headers.get("Authorization") != "Bearer %s" % self.token:
            return 401, {"error": {"code": "unauthorized", "message": "bad token"}}
        if path == "/api/sdk/runs":
            try:
                check_registration(body)
            except Invalid as error:
                return 400, {"error": {"code": "invalid", "message": str(error)}}
            with self.lock:
                created = body["id"] not in self.runs
                if created:
                    self.runs[body["id"]] = body
                run = dict(self.runs[body["id"]], status="RUNNING", source="sdk")
            return (201 if created else 200), run
        match = re.match(r"^/api/sdk/runs/([^/]+)/log$", path)
        if match:
            with self.lock:
                known = match.group(1) in self.runs
            if not known:
                return 404, {"error": {"code": "not_found", "message": "no such run"}}
            return self._log(match.group(1), body)
        return 404, {"error": {"code": "not_found", "message": path}}

    def _log(self, run_id, body):
        if self.always_status is not None:
            return self.always_status, {"error": {"code": "injected", "message": "always"}}
        refused = None
        if self.without_columns and "columns" in body:  # as an older server answers
            body = {key: value for key, value in body.items() if key != "columns"}
            refused = {"count": 1, "items": [
                {"path": "columns", "message": "is not a field of a log batch"}]}
        try:
            body = expand_columns(body)
            check_log_body(body)
        except Invalid as error:
            return 400, {"error": {"code": "invalid", "message": str(error)}}
        with self.lock:
            self.batches.append((run_id, body))
            for point in body.get("points", []):
                self.points[(run_id, point["key"], point["step"])] = point["value"]
            for checkpoint in body.get("checkpoints", []):
                self.checkpoints.append((run_id, checkpoint))
            if "evaluation" in body:
                self.evaluations.append((run_id, body["evaluation"]))
            if "status" in body:
                self.statuses[run_id] = body["status"]
            hang = self.apply_then_hang > 0
            if hang:
                self.apply_then_hang -= 1
        if hang:
            self.released.wait(self.hang_s)
        accepted = {"points": len(body.get("points", [])),
                    "checkpoints": len(body.get("checkpoints", [])), "logs": 0}
        return 200, ({"accepted": accepted, "refused": refused} if refused
                     else {"accepted": accepted})


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def server_close(self):
        socketserver.UnixStreamServer.server_close(self)
        try:
            os.remove(self.server_address)
        except OSError:
            pass


def _handler_for(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8")
            status, body = server.handle(self.path, dict(self.headers.items()), raw)
            data = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up waiting

        def log_message(self, *args):
            pass

    return Handler


def refused_url():
    """A URL on which nothing listens (connections are refused at once)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return "http://127.0.0.1:%d" % port


def wait_until(predicate, timeout_s=30.0, interval_s=0.01):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def returns(fn, bound_s=30.0):
    """Whether ``fn()`` returns within ``bound_s`` (it runs in a daemon thread). Tests pair it
    with a time limit or a server hold far longer than the bound, so no race decides it."""
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    thread.join(bound_s)
    return not thread.is_alive()


def read_spool(path):
    """The spool's lines, their ``columns`` decoded into ``points``."""
    with open(path, "r", encoding="utf-8") as handle:
        return [expand_columns(strict_json(line)) for line in handle.read().splitlines()]


class SdkTestCase(unittest.TestCase):
    """A clean environment per test: no GPUCTL_* from outside, GPUCTL_HOME in a temp dir."""

    def setUp(self):
        self.home = tempfile.mkdtemp(prefix="gpuctl-sdk-test-")
        self.addCleanup(shutil.rmtree, self.home, True)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_")}
        clean["GPUCTL_HOME"] = self.home
        patcher = mock.patch.dict(os.environ, clean, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        self._runs = []
        self.addCleanup(self._finish_runs)

    def server(self, unix_path=None, **knobs):
        server = FakeServer(unix_path=unix_path)
        for key, value in knobs.items():
            setattr(server, key, value)
        self.addCleanup(server.stop)
        return server

    def use_server(self, server, token=TOKEN):
        os.environ["GPUCTL_SERVER_URL"] = server.url if hasattr(server, "url") else server
        os.environ["GPUCTL_TOKEN"] = token

    def fast_run(self, **options):
        """A Run with short intervals and timeouts, finished at the end of the test."""
        settings = dict(flush_interval_s=0.05, http_timeout_s=0.5, backoff_initial_s=0.02,
                        backoff_max_s=0.1, exit_timeout_s=3.0)
        settings.update(options)
        run = Run(**settings)
        self._runs.append(run)
        return run

    def _finish_runs(self):
        for run in self._runs:
            run.finish(timeout=0.5)

    def spool_file(self, run_id):
        return os.path.join(self.home, "spool", "%s.jsonl" % run_id)
