"""Turning user values into what the wire accepts.

Metric values become floats, or the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` (JSON has no NaN). Configs become JSON-safe dicts. Nothing here
raises for odd input: metric values that are not numbers come back as ``SKIP``,
config values that are not JSON become their ``repr``.
"""

import argparse
import dataclasses
import datetime
import enum
import json
import math
import os
import re
from collections.abc import Mapping

from ._debug import debug

#: Longest metric key, config key or name the server accepts.
MAX_KEY_LENGTH = 200
#: How deep a config may nest before the rest becomes a repr (the server allows 32).
MAX_CONFIG_DEPTH = 24
#: Longest repr kept for an object that is not JSON.
MAX_REPR_LENGTH = 1000
#: Largest step the server accepts (JavaScript's Number.MAX_SAFE_INTEGER).
MAX_STEP = 2 ** 53 - 1

SKIP = object()
"""Returned by ``metric_value`` for a value that is not a number."""


def encode_float(number):
    """A float as the wire spells it: itself when finite, else "NaN"/"Infinity"/"-Infinity"."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number


def metric_value(value):
    """A metric value as a float (or NaN/Infinity string), or ``SKIP`` if it is not numeric.

    Accepts bool, int, float and numpy/torch-like scalars: anything with ``.item()``
    is unwrapped first, then anything with ``__float__`` is converted.
    """
    kind = type(value)
    if kind is float:  # the common case, first: a call per metric per step
        return value if value - value == 0.0 else encode_float(value)
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (str, bytes, bytearray)) or value is None:
        return SKIP
    if isinstance(value, (int, float)):
        try:
            return encode_float(float(value))
        except OverflowError:  # an int too large for a float
            return SKIP
    item = getattr(value, "item", None)
    if callable(item):
        try:
            value = item()
        except Exception:  # a tensor or array with more than one element
            return SKIP
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, (str, bytes, bytearray)) or value is None:
            return SKIP
    if getattr(type(value), "__float__", None) is None:
        return SKIP
    try:
        return encode_float(float(value))
    except Exception:  # complex, or an int too large for a float
        return SKIP


_PLAIN = (float, int, bool)


def flatten_metrics(metrics, prefix=""):
    """The ``(key, value)`` pairs of a possibly nested mapping; nested keys join with "/"."""
    if (not prefix and type(metrics) is dict
            and all(type(k) is str and type(v) in _PLAIN for k, v in metrics.items())):
        # Plain numbers under string keys, the common case: the items as they are.
        return metrics.items()
    return _flatten(metrics, prefix)


def _flatten(metrics, prefix):
    for key, value in metrics.items():
        try:
            name = "%s%s" % (prefix, key)
        except Exception as error:  # a key whose __str__ raises: only that key is lost
            debug("log(): a key of type %s cannot be turned into text (%r); it is skipped"
                  % (type(key).__name__, error))
            continue
        if isinstance(value, Mapping):
            for pair in _flatten(value, name + "/"):
                yield pair
        else:
            yield name, value


def numeric_metrics(metrics, skipped=None):
    """A flat dict of the numeric entries of ``metrics``; the other keys go to ``skipped``."""
    out = {}
    for key, value in flatten_metrics(metrics):
        encoded = metric_value(value)
        if encoded is SKIP or not valid_key(key):
            if skipped is not None:
                skipped.append(key)
            continue
        out[key] = encoded
    return out


#: Keys already found valid (checking a key costs more than logging its value).
_GOOD_KEYS = set()
#: The most keys remembered as valid.
MAX_GOOD_KEYS = 100000
_BAD_KEY = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def valid_key(key):
    """True for a metric key the server accepts: 1-200 characters, none of them a control
    character or a lone surrogate (the store would keep "a\\x00" as "a" and "a\\ud800" as
    "a\\ufffd", merging two series)."""
    if key in _GOOD_KEYS:
        return True
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_LENGTH or _BAD_KEY.search(key):
        return False
    if len(_GOOD_KEYS) < MAX_GOOD_KEYS:
        _GOOD_KEYS.add(key)
    return True


def key_problem(key):
    """Why ``key`` is refused, for the debug line."""
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_LENGTH:
        return "is not 1-%d characters" % (MAX_KEY_LENGTH,)
    return "holds a control character or a lone surrogate"


def as_step(value):
    """An integer step in [0, MAX_STEP], or None when ``value`` is not one."""
    if isinstance(value, bool):
        return None
    try:
        if hasattr(value, "item") and not isinstance(value, (int, float)):
            value = value.item()
        if isinstance(value, float):
            if not value.is_integer():
                return None
            value = int(value)
        step = value.__index__()
    except Exception:
        return None
    if 0 <= step <= MAX_STEP:
        return step
    return None


def as_epoch(value):
    """A whole epoch number (fractional epochs, as Hugging Face reports them, round down)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if hasattr(value, "item") and not isinstance(value, (int, float)):
            value = value.item()
        number = float(value)
    except Exception:
        return None
    if math.isnan(number) or number < 0 or number > MAX_STEP:
        return None
    return int(number)


def clean_name(value):
    """A project, experiment or run name the server accepts, or None."""
    if value is None:
        return None
    text = str(value).strip()[:MAX_KEY_LENGTH].strip()
    return text or None


#: The largest config sent, encoded (the server takes request bodies up to 10 MB).
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: Values larger than this, encoded, are the first cut from an oversized config.
MAX_CONFIG_VALUE_BYTES = 64 * 1024


def config_dict(config):
    """``config`` (dict, argparse.Namespace, dataclass, or anything) as a JSON-safe dict,
    cut to MAX_CONFIG_BYTES (a huge config must never keep the run from the server)."""
    safe = json_safe(config)
    if not isinstance(safe, dict):
        safe = {"value": safe}
    return cut_config(safe)


def cut_config(config, limit=MAX_CONFIG_BYTES):
    """``config`` itself when it encodes within ``limit`` bytes; else a copy whose large
    values are replaced by a note of their size, and whose last keys are left out if that
    is still not enough (a debug line says what was cut)."""
    size = _encoded_size(config)
    if size <= limit:
        return config
    out = {}
    cut = []
    for key, value in config.items():
        value_size = _encoded_size(value)
        if value_size > MAX_CONFIG_VALUE_BYTES:
            out[key] = "<cut by gpuctl: %d bytes>" % (value_size,)
            cut.append(key)
        else:
            out[key] = value
    left_out = 0
    while out and _encoded_size(out) > limit:
        out.popitem()
        left_out += 1
    if left_out:
        out["gpuctl_config_cut"] = "%d more key(s) left out: the config was %d bytes" % (
            left_out, size)
    debug("config of %d bytes is over %d: cut %d value(s) (%s) and left out %d key(s)"
          % (size, limit, len(cut), ", ".join(cut[:10]), left_out))
    return out


def _encoded_size(value):
    try:
        return len(json.dumps(value, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    except Exception:
        return 0


def json_safe(value, _depth=0, _seen=None):
    """A JSON-safe copy of ``value``: mappings, Namespaces and dataclasses become dicts,
    sequences become lists, non-finite floats become strings, and anything else its repr."""
    if value is None or isinstance(value, (bool, str)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, float):
        return encode_float(float(value))
    if _depth >= MAX_CONFIG_DEPTH:
        return _repr(value)
    if isinstance(value, enum.Enum):
        return json_safe(value.value, _depth + 1, _seen)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path.decode("utf-8", "replace") if isinstance(path, bytes) else path

    seen = _seen if _seen is not None else set()
    if id(value) in seen:  # a cycle
        return _repr(value)
    seen.add(id(value))
    try:
        if isinstance(value, argparse.Namespace):
            return _safe_mapping(vars(value), _depth, seen)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {}
            for field in dataclasses.fields(value):
                try:
                    fields[field.name] = getattr(value, field.name)
                except Exception as error:  # a field that is not set, or a raising property
                    fields[field.name] = "<unreadable: %r>" % (error,)
            return _safe_mapping(fields, _depth, seen)
        if isinstance(value, Mapping):
            return _safe_mapping(value, _depth, seen)
        if isinstance(value, (list, tuple, set, frozenset)):
            return [json_safe(v, _depth + 1, seen) for v in value]
        tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, torch tensors
        if callable(tolist) and not isinstance(value, type):
            try:
                listed = tolist()
            except Exception:
                return _repr(value)
            return json_safe(listed, _depth + 1, seen)
        return _repr(value)
    finally:
        seen.discard(id(value))


def _safe_mapping(mapping, depth, seen):
    out = {}
    for key, item in list(mapping.items()):
        name = key if isinstance(key, str) else _key_text(key)
        out[name[:MAX_KEY_LENGTH]] = json_safe(item, depth + 1, seen)
    return out


def _key_text(key):
    if isinstance(key, enum.Enum):
        key = key.value
    try:
        return str(key)
    except Exception:
        return _repr(key)


def _repr(value):
    try:
        text = repr(value)
    except Exception:
        text = "<%s object>" % (type(value).__name__,)
    if len(text) > MAX_REPR_LENGTH:
        text = text[:MAX_REPR_LENGTH] + "..."
    return text
