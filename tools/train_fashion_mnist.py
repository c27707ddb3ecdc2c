#!/usr/bin/python3
"""Train Tessera's bundled default model: a small CNN on Fashion-MNIST.

The network follows CaffePresso's small MNIST/CIFAR-10 nets: three 3x3 conv + ReLU + 2x2 max-pool
stages (32, 64, 128 channels), then two fully-connected layers. It outputs logits; the serving
side applies the softmax.

Writes into --out: model.onnx (opset 13, input "input" [N,1,28,28], output "logits" [N,10]),
labels.txt, model.toml and MODEL_CARD.md.

Usage: /usr/bin/python3 tools/train_fashion_mnist.py [--epochs 8] [--seed 1] [--out models/fashion-mnist]

The network class and the data loader are importable (tools/make_zoo.py uses them); training
only runs when this file is executed.
"""

import argparse
import gzip
import os
import random
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN = 0.2860
STD = 0.3530
LABELS = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]
DEFAULT_EPOCHS = 8
BATCH_SIZE = 128
LEARNING_RATE = 1e-3


class FashionNet(nn.Module):
    """conv3x3(32)-relu-pool, conv3x3(64)-relu-pool, conv3x3(128)-relu-pool, fc 1152->256, relu, fc 256->10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc1 = nn.Linear(128 * 3 * 3, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 32x14x14
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 64x7x7
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)  # 128x3x3
        x = torch.flatten(x, 1)                      # 1152
        x = F.relu(self.fc1(x))                      # 256
        return self.fc2(x)                           # 10 logits


def read_idx(path):
    """Read a gzip'd IDX file (ubyte) into a numpy uint8 array of its declared shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    if magic >> 8 != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: expected {np.prod(dims)} bytes of data, found {arr.size}")
    return arr.reshape(dims)


def load_split(split, data_dir=DATA_DIR):
    """Return (images uint8 [N,28,28], labels uint8 [N]) for split 'train' or 't10k'."""
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{split}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels


def normalise(images_u8):
    """uint8 [N,28,28] -> float32 tensor [N,1,28,28], (p/255 - mean)/std."""
    x = torch.from_numpy(images_u8.astype(np.float32) / 255.0)
    return ((x - MEAN) / STD).unsqueeze(1).contiguous()


@torch.no_grad()
def predict_logits(model, x, batch=1000):
    model.eval()
    return torch.cat([model(x[i:i + batch]) for i in range(0, x.shape[0], batch)])


def top1(logits, labels):
    return (logits.argmax(1).numpy() == np.asarray(labels)).mean().item()


def set_determinism(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def param_table(model):
    """Rows (layer, output shape, parameters) for the model card."""
    rows = [("input", "1x28x28", 0)]
    shapes = {"conv1": "32x28x28", "conv2": "64x14x14", "conv3": "128x7x7",
              "fc1": "256", "fc2": "10"}
    pooled = {"conv1": "32x14x14", "conv2": "64x7x7", "conv3": "128x3x3"}
    for name, mod in model.named_children():
        n = sum(p.numel() for p in mod.parameters())
        if isinstance(mod, nn.Conv2d):
            rows.append((f"{name}: conv 3x3 pad 1, {mod.out_channels} + ReLU", shapes[name], n))
            rows.append(("maxpool 2x2 stride 2", pooled[name], 0))
            if name == "conv3":
                rows.append(("flatten", "1152", 0))
        else:
            act = " + ReLU" if name == "fc1" else " (logits)"
            rows.append((f"{name}: linear {mod.in_features}->{mod.out_features}{act}", shapes[name], n))
    return rows


MODEL_TOML = """\
name = "fashion-mnist"
file = "model.onnx"
format = "onnx"
labels = "labels.txt"

[input]
width = 28
height = 28
channels = 1          # 1 = grayscale, 3 = RGB
scale = 255.0         # pixel / scale, then (x - mean) / std
mean = [0.2860]
std = [0.3530]
invert = "auto"       # true | false | "auto": invert when the image's border is brighter than its centre (photos of an object on a light background); dataset images are light-on-dark
resize = "fit"        # "stretch" | "fit" (keep aspect, pad with the background) | "center_crop"
"""


def write_card(path, model, args, acc, train_seconds, history):
    rows = param_table(model)
    total = sum(r[2] for r in rows)
    table = "\n".join(f"| {name} | {shape} | {n:,} |" for name, shape, n in rows)
    hist = "\n".join(f"| {e} | {loss:.4f} | {a * 100:.2f}% |" for e, loss, a in history)
    cmd = "/usr/bin/python3 tools/train_fashion_mnist.py"
    cmd += f" --epochs {args.epochs} --seed {args.seed} --out {args.out}"
    text = f"""# fashion-mnist — Tessera's bundled default model

A small CNN that classifies 28x28 grayscale Fashion-MNIST images into 10 clothing classes,
in the spirit of CaffePresso's small MNIST/CIFAR-10 networks: three conv 3x3 + ReLU + max-pool
stages feeding two fully-connected layers. The conv stages map onto the FPGA fabric; the two
FC layers and the softmax run on the host.

**The ONNX model outputs logits.** There is no Softmax node; the serving side applies softmax.

## Files

| file | what |
|---|---|
| `model.onnx` | ONNX opset 13; input `input` float32 `[N,1,28,28]`, output `logits` float32 `[N,10]`; dynamic batch dim `N` |
| `labels.txt` | the 10 class names, one per line, in output order |
| `model.toml` | Tessera's model config (input size, normalisation, invert/resize policy) |

## Architecture

| layer | output shape (CxHxW) | parameters |
|---|---|---|
{table}
| **total** | | **{total:,}** |

No BatchNorm, no dropout. ONNX ops: Conv, Relu, MaxPool, Flatten, Gemm.

## Input

`x = (pixel / 255 - 0.2860) / 0.3530` on a single grayscale channel (0.2860 / 0.3530 are the
mean / std of the Fashion-MNIST training pixels). Dataset images are a light object on a dark
(black) background; `model.toml` asks Tessera to invert images whose border is brighter than
their centre (ordinary product photos) and to resize keeping the aspect ratio.

## Data

Fashion-MNIST (Zalando Research, MIT licence) from Debian's `dataset-fashion-mnist` package:
60,000 training and 10,000 test images, 28x28 grayscale, 10 balanced classes. Trained on all
60,000 training images; the test set is used only for the figures below.

Labels: {", ".join(LABELS)}.

## Training

```
{cmd}
```

- seed: {args.seed} (`random`, `numpy`, `torch.manual_seed`; `torch.use_deterministic_algorithms(True)`)
- epochs: {args.epochs}, batch {BATCH_SIZE}, Adam (lr {LEARNING_RATE}, cosine decay to 0 over the run),
  cross-entropy loss
- augmentation: random horizontal flip (p = 0.5)
- PyTorch {torch.__version__}, CPU, 2 threads; training took {train_seconds:.0f} s (wall clock)

| epoch | train loss | test top-1 |
|---|---|---|
{hist}

## Accuracy

top-1 on the 10,000 Fashion-MNIST test images (fp32, PyTorch): **{acc * 100:.2f}%**

## Accuracy measured by Tessera

top-1 (fp32, Tessera): to be measured by tessera eval

## Limitations

Trained only on centred, small, light-on-dark product images. Photos with clutter, several
objects, or an unusual pose are out of distribution; the classes Shirt / T-shirt/top /
Pullover / Coat are the usual confusions.
"""
    with open(path, "w") as f:
        f.write(text)


def train(args):
    torch.set_num_threads(2)
    set_determinism(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    train_x, train_y = load_split("train")
    test_x, test_y = load_split("t10k")
    xtr = normalise(train_x)
    ytr = torch.from_numpy(train_y.astype(np.int64))
    xte = normalise(test_x)

    model = FashionNet()
    opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    steps_per_epoch = (xtr.shape[0] + BATCH_SIZE - 1) // BATCH_SIZE
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)

    history = []
    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.randperm(xtr.shape[0], generator=gen)
        total_loss = 0.0
        for i in range(0, xtr.shape[0], BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            xb, yb = xtr[idx], ytr[idx]
            flip = torch.rand(xb.shape[0], generator=gen) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.item() * xb.shape[0]
        acc = top1(predict_logits(model, xte), test_y)
        history.append((epoch, total_loss / xtr.shape[0], acc))
        print(f"epoch {epoch}/{args.epochs}: loss {total_loss / xtr.shape[0]:.4f} "
              f"test top-1 {acc * 100:.2f}% ({time.time() - t0:.0f} s)", flush=True)
    train_seconds = time.time() - t0

    model.eval()
    acc = top1(predict_logits(model, xte), test_y)
    os.makedirs(args.out, exist_ok=True)
    export_onnx(model, os.path.join(args.out, "model.onnx"))
    with open(os.path.join(args.out, "labels.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")
    with open(os.path.join(args.out, "model.toml"), "w") as f:
        f.write(MODEL_TOML)
    write_card(os.path.join(args.out, "MODEL_CARD.md"), model, args, acc, train_seconds, history)
    print(f"training time: {train_seconds:.1f} s")
    print(f"PyTorch test top-1: {acc * 100:.2f}%")
    return acc


def export_onnx(model, path):
    import onnx
    model.eval()
    dummy = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(
        model, dummy, path,
        opset_version=13,
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        do_constant_folding=True,
        training=torch.onnx.TrainingMode.EVAL,
    )
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"wrote {path}: ops {ops}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="models/fashion-mnist")
    args = p.parse_args()
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    try:
        train(args)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
