"""What TensorBoard itself reads from a log folder, as JSON on stdout.

    python read_events.py DIR

For each run folder under DIR (relative path, "." for DIR itself): every scalar tag with its
[step, value] pairs as TensorBoard's EventAccumulator loads them (TF1/PyTorch simple values
and TF2 `scalars` plugin tensors), and the hparams plugin's session hparams. The framework
tier compares gpuctl's stored points and config with this.
"""
import json
import math
import os
import sys

from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.util import tensor_util


def number(value):
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def read_run(path):
    # The accumulator TensorBoard's own server uses: simple values arrive migrated to
    # `scalars` plugin tensors, and hparams sessions (which carry no tensor) are kept.
    acc = pea.EventAccumulator(path, size_guidance={pea.TENSORS: 0})
    acc.Reload()
    scalars = {}
    hparams = {}
    for tag in acc.Tags().get("tensors", []):
        metadata = acc.SummaryMetadata(tag)
        plugin = metadata.plugin_data.plugin_name
        if plugin == "scalars":
            scalars[tag] = [[e.step, number(tensor_util.make_ndarray(e.tensor_proto).item())]
                            for e in acc.Tensors(tag)]
        elif plugin == "hparams" and tag == "_hparams_/session_start_info":
            data = plugin_data_pb2.HParamsPluginData.FromString(metadata.plugin_data.content)
            for name, value in data.session_start_info.hparams.items():
                kind = value.WhichOneof("kind")
                hparams[name] = None if kind == "null_value" else getattr(value, kind)
    return scalars, hparams


def main():
    root = sys.argv[1]
    out = {}
    for folder, _dirs, files in sorted(os.walk(root)):
        if not any(name.startswith("events.out.tfevents.") for name in files):
            continue
        scalars, hparams = read_run(folder)
        rel = os.path.relpath(folder, root)
        out[rel] = {"scalars": scalars, "hparams": hparams}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
