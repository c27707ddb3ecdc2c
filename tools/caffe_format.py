#!/usr/bin/python3
"""Writing Caffe model files from Python without Caffe: Tessera's own schema
(accel/import/caffe/caffe.proto) compiled with protoc into a cache folder, then deploy.prototxt
(text format, no blobs) and model.caffemodel (binary NetParameter: layer name, type, blobs).

    pb = load_caffe_pb2(cache_dir)
    net = pb.NetParameter(); ...
    write_model(pb, net, blobs_by_layer, out_dir)
"""

import importlib
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(ROOT, "accel", "import", "caffe")


def load_caffe_pb2(cache_dir):
    """caffe_pb2 compiled from Tessera's caffe.proto into cache_dir (recompiled when older)."""
    os.makedirs(cache_dir, exist_ok=True)
    proto = os.path.join(PROTO_DIR, "caffe.proto")
    out = os.path.join(cache_dir, "caffe_pb2.py")
    if not os.path.isfile(out) or os.path.getmtime(out) < os.path.getmtime(proto):
        subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out=" + cache_dir, proto], check=True)
    if cache_dir not in sys.path:
        sys.path.insert(0, cache_dir)
    return importlib.import_module("caffe_pb2")


def blob(pb, array):
    """A BlobProto with a BlobShape and float data."""
    a = np.ascontiguousarray(array, dtype=np.float32)
    b = pb.BlobProto()
    b.shape.dim.extend(int(d) for d in a.shape)
    b.data.extend(a.ravel().tolist())
    return b


def write_model(pb, net, blobs, out_dir, prototxt="deploy.prototxt", caffemodel="model.caffemodel"):
    """net: NetParameter without blobs; blobs: {layer name: [arrays]}. Writes both files."""
    from google.protobuf import text_format

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, prototxt), "w") as f:
        f.write(text_format.MessageToString(net))
    weights = pb.NetParameter()
    weights.name = net.name
    names = set()
    for layer in list(net.layer) + list(net.layers):
        names.add(layer.name)
        if layer.name not in blobs:
            continue
        if isinstance(layer, pb.V1LayerParameter):
            w = weights.layers.add()
            w.type = layer.type
        else:
            w = weights.layer.add()
            w.type = layer.type
        w.name = layer.name
        for a in blobs[layer.name]:
            w.blobs.append(blob(pb, a))
    unknown = set(blobs) - names
    if unknown:
        raise ValueError(f"blobs for layers not in the net: {sorted(unknown)}")
    with open(os.path.join(out_dir, caffemodel), "wb") as f:
        f.write(weights.SerializeToString())


def opencv_prototxt(text):
    """OpenCV's Caffe schema spells floor pooling `ceil_mode: false` where BVLC's says
    `round_mode: FLOOR`; the same network in OpenCV's dialect."""
    return text.replace("round_mode: FLOOR", "ceil_mode: false")
