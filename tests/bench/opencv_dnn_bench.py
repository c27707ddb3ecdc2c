#!/usr/bin/python3
"""images/s of OpenCV's DNN module (an independent runtime) on the same ONNX files as
tessera_bench, at batch 1 and 8, float32 on the CPU with OpenCV's default thread count.

Usage: /usr/bin/python3 tests/bench/opencv_dnn_bench.py --zoo DIR --bundled DIR [--seconds S]
                         [--models squeezenet1_1,resnet18,...]
"""
import argparse
import os
import time

import cv2
import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper


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


def throughput(net, blob, seconds):
    net.setInput(blob)
    net.forward()  # warm-up
    runs, start = 0, time.perf_counter()
    while runs < 3 or time.perf_counter() - start < seconds:
        net.setInput(blob)
        net.forward()
        runs += 1
    return runs * blob.shape[0] / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zoo", required=True)
    p.add_argument("--bundled", required=True)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--models", default="squeezenet1_1,resnet18", help="zoo models after the bundled one")
    args = p.parse_args()
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads")
    models = [("fashion-mnist", os.path.join(args.bundled, "model.onnx"), (1, 28, 28))]
    models += [(name, os.path.join(args.zoo, name, "model.onnx"), (3, 224, 224))
               for name in args.models.split(",") if name]
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
            except cv2.error as e:
                print(f"{name:14} {'opencv':9} {batch:6d} {'failed':>12}  ({str(e).splitlines()[-1][:80]})", flush=True)


if __name__ == "__main__":
    main()
