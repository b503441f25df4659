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
import math
import os
from collections.abc import Mapping

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
        name = "%s%s" % (prefix, key)
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


def valid_key(key):
    """True for a metric key the server accepts: a non-empty string of at most 200 characters."""
    return isinstance(key, str) and 0 < len(key) <= MAX_KEY_LENGTH


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


def config_dict(config):
    """``config`` (dict, argparse.Namespace, dataclass, or anything) as a JSON-safe dict."""
    safe = json_safe(config)
    if isinstance(safe, dict):
        return safe
    return {"value": safe}


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
