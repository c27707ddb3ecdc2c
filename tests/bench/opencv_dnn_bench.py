#!/usr/bin/python3
"""images/s of OpenCV's DNN module (an independent runtime) on the same ONNX files as
tessera_bench, at batch 1 and 8, float32 on the CPU with OpenCV's default thread count.

Usage: /usr/bin/python3 tests/bench/opencv_dnn_bench.py --zoo DIR [--families DIR] --bundled DIR
                         [--seconds S] [--models squeezenet1_1,resnet18,...] [--per-layer]
--families: tools/make_families.py's folder; its families (the opset-17 file) can be named as models.
"""
import argparse
import json
import os
import time

import cv2
import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import onnx.shape_inference


def opencv_readable(path):
    """OpenCV 4.6's ONNX importer rejects Clip with min/max inputs (below) and Identity nodes whose input is an initializer (the
    exporter emits them for de-duplicated weights, e.g. SqueezeNet's zero biases). Rename them
    away in memory so it can run the same model; the computation is unchanged."""
    m = onnx.load(path)
    g = m.graph
    inits = {t.name for t in g.initializer}
    outputs = {o.name for o in g.output}
    rename = {}
    keep = []
    consts = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant":
            consts[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)
    for node in g.node:
        ins = [rename.get(i, i) for i in node.input]
        del node.input[:]
        node.input.extend(ins)
        if node.op_type == "Clip" and len(node.input) > 1 and all(i == "" or i in consts for i in node.input[1:]):
            # OpenCV 4.6 reads only opset-6 Clip (min/max attributes), not opset 11's min/max
            # inputs (MobileNetV2's ReLU6): the same bounds as attributes.
            for name, value in zip(("min", "max"), node.input[1:]):
                if value:
                    node.attribute.append(onnx.helper.make_attribute(name, float(consts[value])))
            del node.input[1:]
        if node.op_type == "Identity" and node.input[0] in inits and node.output[0] not in outputs:
            rename[node.output[0]] = node.input[0]
        else:
            keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    return np.frombuffer(m.SerializeToString(), dtype=np.uint8)


def find_model(zoo, families, name):
    """(ONNX path, (C, H, W)) of a zoo model or, with --families, a torchvision family; None if neither."""
    if families and os.path.exists(os.path.join(families, name, "opset17", "model.onnx")):
        path, meta = os.path.join(families, name, "opset17", "model.onnx"), os.path.join(families, name, "meta.json")
    elif os.path.exists(os.path.join(zoo, name, "model.onnx")):
        path, meta = os.path.join(zoo, name, "model.onnx"), os.path.join(zoo, name, "meta.json")
    else:
        return None
    with open(meta, encoding="utf-8") as f:
        shape = json.load(f)["input_shape"]
    return path, tuple(shape[1:])


def throughput(net, blob, seconds):
    net.setInput(blob)
    net.forward()  # warm-up
    runs, start = 0, time.perf_counter()
    while runs < 3 or time.perf_counter() - start < seconds:
        net.setInput(blob)
        net.forward()
        runs += 1
    return runs * blob.shape[0] / (time.perf_counter() - start)


def conv_macs(path, batch):
    """{ONNX Conv node name: (multiply-adds, shape label)} at `batch`, from ONNX shape inference."""
    m = onnx.load(path)
    for v in list(m.graph.input[:1]) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = batch
    del m.graph.value_info[:]
    m = onnx.shape_inference.infer_shapes(m)
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    weights = {t.name: list(t.dims) for t in m.graph.initializer}
    found = {}
    for node in m.graph.node:
        if node.op_type != "Conv":
            continue
        x, w, y = dims[node.input[0]], weights[node.input[1]], dims[node.output[0]]
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        stride = next((a.ints[0] for a in node.attribute if a.name == "strides"), 1)
        label = f"{x[1]:4d}x{x[2]:<3d} -> {y[1]:4d}x{y[2]:<3d} k{w[2]}x{w[3]} s{stride} g{group:<4d}"
        found[node.name] = (y[0] * y[1] * y[2] * y[3] * w[1] * w[2] * w[3], label)
    return found


def per_layer(net, blob, path, name, seconds):
    """Each Convolution layer's mean time (OpenCV fuses the BatchNorm and ReLU after it) and
    GMAC/s, in the ONNX graph's order, the same lines as tessera_onednn_bench --per-layer."""
    macs = conv_macs(path, blob.shape[0])
    names = net.getLayerNames()
    total = np.zeros(len(names))
    runs, start = 0, time.perf_counter()
    while runs < 3 or time.perf_counter() - start < seconds:
        net.setInput(blob)
        net.forward()
        total += np.array(net.getPerfProfile()[1]).reshape(-1)
        runs += 1
    ms = {n: t / runs * 1e3 / cv2.getTickFrequency() for n, t in zip(names, total)}
    for i, node in enumerate(macs):
        layer = "onnx_node!" + node
        if layer in ms and ms[layer] > 0:
            print(f"  {name:14} {blob.shape[0]:3d} {i:3d}  {macs[node][1]} {ms[layer]:8.3f} ms "
                  f"{macs[node][0] / (ms[layer] * 1e6):8.1f} GMAC/s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zoo", required=True)
    p.add_argument("--bundled", required=True)
    p.add_argument("--families", default="", help="tools/make_families.py's folder")
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--models", default="squeezenet1_1,resnet18", help="zoo models after the bundled one")
    p.add_argument("--per-layer", action="store_true", help="each conv layer's ms and GMAC/s, zoo models")
    args = p.parse_args()
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads")
    models = [("fashion-mnist", os.path.join(args.bundled, "model.onnx"), (1, 28, 28))]
    for name in filter(None, args.models.split(",")):
        found = find_model(args.zoo, args.families, name)
        if found is None:
            raise SystemExit(f"opencv_dnn_bench: no model named {name} in {args.zoo} or {args.families or '-'}")
        models.append((name,) + found)
    print(f"{'model':14} {'path':9} {'batch':>6} {'images/s':>12}")
    rng = np.random.default_rng(1)
    for name, path, chw in models:
        try:
            net = cv2.dnn.readNetFromONNX(opencv_readable(path))
        except cv2.error as e:
            print(f"{name:14} {'opencv':9} {1:6d} {'failed':>12}  ({str(e).splitlines()[-1][:80]})", flush=True)
            continue
        for batch in (1, 8):
            blob = rng.standard_normal((batch,) + chw).astype(np.float32)
            try:
                ips = throughput(net, blob, args.seconds)
                print(f"{name:14} {'opencv':9} {batch:6d} {ips:12.1f}", flush=True)
                if args.per_layer and name != "fashion-mnist":
                    per_layer(net, blob, path, name, args.seconds)
            except cv2.error as e:
                print(f"{name:14} {'opencv':9} {batch:6d} {'failed':>12}  ({str(e).splitlines()[-1][:80]})", flush=True)


if __name__ == "__main__":
    main()
