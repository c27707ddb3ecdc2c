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
        net = cv2.dnn.readNetFromONNX(path)
        for batch in (1, 8):
            blob = rng.standard_normal((batch,) + chw).astype(np.float32)
            try:
                ips = throughput(net, blob, args.seconds)
                print(f"{name:14} {'opencv':9} {batch:6d} {ips:12.1f}", flush=True)
            except cv2.error as e:
                print(f"{name:14} {'opencv':9} {batch:6d} {'failed':>12}  ({str(e).splitlines()[-1][:80]})", flush=True)


if __name__ == "__main__":
    main()
