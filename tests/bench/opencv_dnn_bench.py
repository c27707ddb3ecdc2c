#!/usr/bin/python3
"""images/s of OpenCV's DNN module (an independent runtime) on the same ONNX files as
tessera_bench, at batch 1 and 8, float32 on the CPU with OpenCV's default thread count.

Usage: /usr/bin/python3 tests/bench/opencv_dnn_bench.py --zoo DIR --bundled DIR [--seconds S]
"""
import argparse
import os
import time

import cv2
import numpy as np
import onnx


def opencv_readable(path):
    """OpenCV 4.6's ONNX importer rejects Identity nodes whose input is an initializer (the
    exporter emits them for de-duplicated weights, e.g. SqueezeNet's zero biases). Rename them
    away in memory so it can run the same model; the computation is unchanged."""
    m = onnx.load(path)
    g = m.graph
    inits = {t.name for t in g.initializer}
    outputs = {o.name for o in g.output}
    rename = {}
    keep = []
    for node in g.node:
        ins = [rename.get(i, i) for i in node.input]
        del node.input[:]
        node.input.extend(ins)
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
    args = p.parse_args()
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads")
    models = [("fashion-mnist", os.path.join(args.bundled, "model.onnx"), (1, 28, 28)),
              ("squeezenet1_1", os.path.join(args.zoo, "squeezenet1_1", "model.onnx"), (3, 224, 224)),
              ("resnet18", os.path.join(args.zoo, "resnet18", "model.onnx"), (3, 224, 224))]
    print(f"{'model':14} {'path':9} {'batch':>6} {'images/s':>12}")
    rng = np.random.default_rng(1)
    for name, path, chw in models:
        net = cv2.dnn.readNetFromONNX(opencv_readable(path))
        for batch in (1, 8):
            blob = rng.standard_normal((batch,) + chw).astype(np.float32)
            try:
                ips = throughput(net, blob, args.seconds)
                print(f"{name:14} {'opencv':9} {batch:6d} {ips:12.1f}", flush=True)
            except cv2.error as e:
                print(f"{name:14} {'opencv':9} {batch:6d} {'failed':>12}  ({str(e).splitlines()[-1][:80]})", flush=True)


if __name__ == "__main__":
    main()
