#!/usr/bin/python3
"""Export one model of each torchvision 0.14 classification family, at three opsets, with
PyTorch's outputs: the reference data of tests/reference/test_families_reference.cc.

Usage:
  /usr/bin/python3 tools/make_families.py --out DIR [--families f1,f2,...] [--small|--large] [--force]

For each family (torchvision.models.<family>(weights=None), torch.manual_seed(1234); every
BatchNorm gets random running statistics and affine parameters, as tools/make_zoo.py does, and a
Linear layer initialised to zeros, ViT's head, seeded random weights),
exported as a new user would: torch.onnx.export in eval mode, static batch 1, the exporter's
defaults otherwise (BatchNorm folded into the convs, constant folding on). Writes DIR/<family>/:
  opset13/model.onnx, opset14/model.onnx, opset17/model.onnx
               input "input" [1,3,S,S], output "output" [1,1000] (S = 224; Inception-v3: 299)
  inputs.f32   raw little-endian float32 [K,3,S,S]: K = 4 images, N(0,1) from torch seed 42
  outputs.f32  raw little-endian float32 [K,1000]: PyTorch's logits for each image (batch 1)
  meta.json    {"input_shape", "output_shape", "count", "large", "opsets": {"13": [ops], ...}}

The large families (over ~100 MB of weights, or slow on the host) are exported only with
--large or by name; --small exports the rest. A family whose files all exist is skipped unless
--force. Exits non-zero on any failure.
"""

import argparse
import json
import os
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

# name -> (input side, large). Large: hundreds of MB (VGG, ViT, Wide-ResNet) or slow (Swin).
FAMILIES = {
    "alexnet": (224, False),
    "vgg16_bn": (224, True),
    "resnet50": (224, False),
    "wide_resnet50_2": (224, True),
    "resnext50_32x4d": (224, False),
    "densenet121": (224, False),
    "googlenet": (224, False),
    "inception_v3": (299, False),
    "squeezenet1_1": (224, False),
    "mobilenet_v2": (224, False),
    "mobilenet_v3_large": (224, False),
    "mobilenet_v3_small": (224, False),
    "mnasnet1_0": (224, False),
    "shufflenet_v2_x1_0": (224, False),
    "efficientnet_b0": (224, False),
    "efficientnet_v2_s": (224, False),
    "regnet_x_400mf": (224, False),
    "regnet_y_400mf": (224, False),
    "convnext_tiny": (224, False),
    "swin_t": (224, True),
    "vit_b_16": (224, True),
}
OPSETS = [13, 14, 17]
COUNT = 4
FILES = ["inputs.f32", "outputs.f32", "meta.json"] + [f"opset{o}/model.onnx" for o in OPSETS]


class FamilyError(Exception):
    pass


def build_model(name):
    """torchvision model `name`, seeded random weights, randomised BN state, eval mode."""
    torch.manual_seed(1234)
    kwargs = {"weights": None}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
    model = getattr(torchvision.models, name)(**kwargs)
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for m in model.modules():
            # ViT's head is initialised to zeros (all logits 0): seeded random weights instead.
            if isinstance(m, nn.Linear) and not m.weight.any():
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) * 0.02)
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
    return model.eval()


def write_atomic(path, write):
    tmp = path + ".tmp"
    write(tmp)
    os.replace(tmp, path)


def write_f32(path, array):
    write_atomic(path, np.ascontiguousarray(array, dtype="<f4").tofile)


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def make_family(name, out_dir, force):
    d = os.path.join(out_dir, name)
    if not force and all(os.path.isfile(os.path.join(d, f)) for f in FILES):
        print(f"{name}: exists, skipped (--force to regenerate)")
        return
    t0 = time.time()
    side, large = FAMILIES[name]
    model = build_model(name)
    x = torch.randn(COUNT, 3, side, side, generator=torch.Generator().manual_seed(42))
    with torch.no_grad():
        y = torch.cat([model(x[i:i + 1]) for i in range(COUNT)])
    if tuple(y.shape) != (COUNT, 1000):
        raise FamilyError(f"{name}: output shape {list(y.shape)}")
    meta = {"input_shape": [1, 3, side, side], "output_shape": [1, 1000], "count": COUNT,
            "large": large, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "opsets": {}}
    for opset in OPSETS:
        os.makedirs(os.path.join(d, f"opset{opset}"), exist_ok=True)
        path = os.path.join(d, f"opset{opset}", "model.onnx")
        export_path = path + ".export"
        torch.onnx.export(model, x[0:1], export_path, opset_version=opset,
                          input_names=["input"], output_names=["output"])
        m = onnx.load(export_path)
        os.remove(export_path)
        onnx.checker.check_model(m)
        # The exporter's shape inference may leave the output's dim 0 symbolic (Swin at 13/14).
        out_dims = dims(m.graph.output[0])
        if dims(m.graph.input[0]) != meta["input_shape"] or len(out_dims) != 2 or out_dims[1] != 1000:
            raise FamilyError(f"{name} opset {opset}: input {dims(m.graph.input[0])} "
                              f"output {dims(m.graph.output[0])}")
        write_atomic(path, lambda tmp, m=m: onnx.save(m, tmp))
        ops = sorted({n.op_type for n in m.graph.node})
        meta["opsets"][str(opset)] = ops
        print(f"{name} opset {opset}: {len(m.graph.node)} nodes, ops {ops}")
    write_f32(os.path.join(d, "inputs.f32"), x.numpy())
    write_f32(os.path.join(d, "outputs.f32"), y.numpy())

    def write_meta(tmp):
        with open(tmp, "w") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
    write_atomic(os.path.join(d, "meta.json"), write_meta)
    yn = y.numpy()
    print(f"{name}: logits range [{yn.min():.4g}, {yn.max():.4g}] std {yn.std():.4g}, "
          f"top-1 {yn.argmax(1).tolist()}, {time.time() - t0:.1f} s")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--families", help="comma-separated subset (default: by --small/--large)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--small", action="store_true", help="only the families not marked large")
    group.add_argument("--large", action="store_true", help="only the large families")
    p.add_argument("--force", action="store_true", help="regenerate files that already exist")
    args = p.parse_args()
    if args.families:
        names = [f.strip() for f in args.families.split(",") if f.strip()]
        unknown = [f for f in names if f not in FAMILIES]
        if unknown:
            p.error(f"unknown famil(ies) {unknown}; choose from {list(FAMILIES)}")
    else:
        names = [f for f, (_, large) in FAMILIES.items()
                 if not (args.small and large) and not (args.large and not large)]

    torch.set_num_threads(2)
    warnings.filterwarnings("ignore")
    os.makedirs(args.out, exist_ok=True)
    failures = []
    t0 = time.time()
    for name in names:
        try:
            make_family(name, args.out, args.force)
        except Exception as e:  # report every family, then fail
            if not isinstance(e, FamilyError):
                traceback.print_exc()
            failures.append(f"{name}: {e}")
    print(f"total {time.time() - t0:.1f} s")
    if failures:
        print("make_families FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
