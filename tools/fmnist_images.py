#!/usr/bin/python3
"""Write the first N Fashion-MNIST images of a split as grayscale PNG and/or JPEG files.

Usage: /usr/bin/python3 tools/fmnist_images.py --out DIR --count N [--format png|jpg|both]
       [--split t10k|train]

Files are named {index:05d}_{label_index}.{png,jpg} (JPEG quality 95); DIR/labels.csv lists
file,label_index,label_name for every file written. Used by the integration tests (test split)
and to make a model's int8 calibration set (training split: models/fashion-mnist/calibration).
"""

import argparse
import csv
import os
import sys

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fashion_mnist import LABELS, load_split  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--format", choices=["png", "jpg", "both"], default="png")
    p.add_argument("--split", choices=["t10k", "train"], default="t10k")
    args = p.parse_args()

    try:
        images, labels = load_split(args.split)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not 1 <= args.count <= images.shape[0]:
        p.error(f"--count must be in 1..{images.shape[0]}")
    exts = ["png", "jpg"] if args.format == "both" else [args.format]

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "labels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "label_index", "label_name"])
        for i in range(args.count):
            label = int(labels[i])
            img = Image.fromarray(images[i], mode="L")
            for ext in exts:
                name = f"{i:05d}_{label}.{ext}"
                path = os.path.join(args.out, name)
                if ext == "png":
                    img.save(path, format="PNG")
                else:
                    img.save(path, format="JPEG", quality=95)
                w.writerow([name, label, LABELS[label]])
    print(f"wrote {args.count * len(exts)} images and labels.csv to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
