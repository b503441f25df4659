"""Metric values, configs and sdk.yaml, as plain functions."""

import argparse
import dataclasses
import enum
import json
import math
import os
import pathlib
import unittest

from gpuctl._settings import read_sdk_yaml, resolve
from gpuctl._values import SKIP, as_epoch, as_step, config_dict, metric_value

from ._support import SdkTestCase


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Optimizer:
    name: str = "adam"
    betas: tuple = (0.9, 0.999)


@dataclasses.dataclass
class TrainConfig:
    lr: float = 0.1
    optimizer: Optimizer = dataclasses.field(default_factory=Optimizer)
    color: Color = Color.RED
    out: pathlib.Path = pathlib.Path("/tmp/out")
    warmup: float = float("nan")


class Opaque(object):
    def __repr__(self):
        return "<Opaque>"


class MetricValueTest(unittest.TestCase):
    def test_numbers_and_scalar_like_objects(self):
        class Item(object):
            def item(self):
                return 3

        self.assertEqual(metric_value(1), 1.0)
        self.assertEqual(metric_value(False), 0.0)
        self.assertEqual(metric_value(Item()), 3.0)
        self.assertEqual(metric_value(float("nan")), "NaN")
        self.assertEqual(metric_value(-math.inf), "-Infinity")
        self.assertEqual(metric_value(10 ** 400), SKIP)
        for value in ("1.0", None, [1], {"a": 1}, 1j, b"1"):
            self.assertIs(metric_value(value), SKIP, value)

    def test_steps_and_epochs(self):
        self.assertEqual(as_step(5), 5)
        self.assertEqual(as_step(5.0), 5)
        self.assertIsNone(as_step(5.5))
        self.assertIsNone(as_step(-1))
        self.assertIsNone(as_step(True))
        self.assertIsNone(as_step("5"))
        self.assertEqual(as_epoch(1.75), 1)
        self.assertIsNone(as_epoch(-1))


class ConfigTest(unittest.TestCase):
    def test_dict_namespace_and_dataclass_become_json(self):
        self.assertEqual(config_dict({"a": 1, 2: [1, (2, 3)]}), {"a": 1, "2": [1, [2, 3]]})
        self.assertEqual(config_dict(argparse.Namespace(lr=0.1, tags=["x"])),
                         {"lr": 0.1, "tags": ["x"]})
        self.assertEqual(config_dict(TrainConfig()), {
            "lr": 0.1,
            "optimizer": {"name": "adam", "betas": [0.9, 0.999]},
            "color": "red",
            "out": "/tmp/out",
            "warmup": "NaN",
        })

    def test_unknown_objects_become_repr_and_cycles_stop(self):
        loop = {"name": "loop"}
        loop["self"] = loop
        safe = config_dict({"obj": Opaque(), "loop": loop, "cls": Opaque})
        self.assertEqual(safe["obj"], "<Opaque>")
        self.assertEqual(safe["loop"]["name"], "loop")
        self.assertIsInstance(safe["loop"]["self"], str)
        self.assertIn("Opaque", safe["cls"])
        json.dumps(safe, allow_nan=False)
        self.assertEqual(config_dict([1, 2]), {"value": [1, 2]})

    def test_deep_nesting_is_cut(self):
        deep = current = {}
        for _ in range(100):
            current["d"] = {}
            current = current["d"]
        json.dumps(config_dict(deep), allow_nan=False)


class SettingsTest(SdkTestCase):
    def test_sdk_yaml_simple_lines(self):
        path = os.path.join(self.home, "sdk.yaml")
        with open(path, "w") as handle:
            handle.write("server_url: http://gpu-box:8080 # the lab server\n"
                         "token: 'abc#def'\n#token: commented\n  nested: x\n")
        self.assertEqual(read_sdk_yaml(path),
                         {"server_url": "http://gpu-box:8080", "token": "abc#def"})
        self.assertEqual(read_sdk_yaml(os.path.join(self.home, "missing.yaml")), {})

    def test_environment_beats_the_file_and_job_beats_both(self):
        with open(os.path.join(self.home, "sdk.yaml"), "w") as handle:
            handle.write("server_url: http://file\ntoken: file-token\n")
        self.assertEqual(resolve().server_url, "http://file")
        os.environ["GPUCTL_SERVER_URL"] = "http://env/"
        settings = resolve()
        self.assertEqual((settings.mode, settings.server_url, settings.token),
                         ("server", "http://env", "file-token"))
        os.environ.update({"GPUCTL_RUN_ID": "r-1", "GPUCTL_INGEST_URL": "http://127.0.0.1:9/i/"})
        settings = resolve()
        self.assertEqual((settings.mode, settings.ingest_url, settings.run_id),
                         ("job", "http://127.0.0.1:9/i", "r-1"))
