#!/usr/bin/python3
"""Generate reference data for Tessera's C++ tests: ONNX models with PyTorch's outputs.

Usage:
  /usr/bin/python3 tools/make_zoo.py --out DIR [--models m1,m2,...] [--bundled models/fashion-mnist] [--force]

For each torchvision model (random weights, torch.manual_seed(1234); BatchNorm layers get
non-trivial running statistics and affine parameters so BN folding is really exercised),
writes DIR/<name>/:
  model.onnx   opset 13, input "input" [2,3,224,224] (static batch 2), output "output" [2,1000];
               BatchNormalization nodes are kept (not folded by the exporter)
  input.f32    raw little-endian float32, NCHW [2,3,224,224], N(0,1) from torch seed 42
  output.f32   raw little-endian float32 [2,1000], PyTorch's output for input.f32
  meta.json    {"input_shape", "output_shape", "opset", "torch", "ops", ...}

With --bundled DIR (the trained Fashion-MNIST model), rebuilds the PyTorch network from
DIR/model.onnx's initializers and writes DIR_OUT/fashion-mnist/:
  test_images.u8   the 10,000 t10k images, raw uint8 [10000,28,28]
  test_labels.u8   their labels, uint8 [10000]
  logits.f32       PyTorch logits, float32 [10000,10], for (p/255 - 0.2860)/0.3530
  meta.json        {"count", "input_shape", "top1_torch"}

A model whose files all exist is skipped unless --force. Exits non-zero on any failure.
"""

import argparse
import json
import os
import re
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# resnet50 is planned (`tessera plan`, tests/integration) but not run against PyTorch here.
ZOO_MODELS = ["squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet", "resnet50"]
OPSET = 13
INPUT_SHAPE = [2, 3, 224, 224]
OUTPUT_SHAPE = [2, 1000]
SUPPORTED_OPS = {
    "Conv", "Relu", "Clip", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul",
    "Add", "Concat", "Flatten", "Reshape", "BatchNormalization", "LRN", "Dropout", "Softmax",
    "Identity",
}
TOLERATED_OPS = {"Constant", "Shape", "Gather", "Unsqueeze"}
ZOO_FILES = ["model.onnx", "input.f32", "output.f32", "meta.json"]
BUNDLED_FILES = ["test_images.u8", "test_labels.u8", "logits.f32", "meta.json"]


class ZooError(Exception):
    pass


def build_model(name):
    """torchvision model `name` with seeded random weights and randomised BN state, eval mode."""
    torch.manual_seed(1234)
    if name == "googlenet":
        model = torchvision.models.googlenet(
            weights=None, aux_logits=False, init_weights=True, transform_input=False)
    else:
        model = getattr(torchvision.models, name)(weights=None)
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
    return model.eval()


def op_types(model_proto):
    return sorted({n.op_type for n in model_proto.graph.node})


def graph_dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def all_exist(d, files):
    return all(os.path.isfile(os.path.join(d, f)) for f in files)


def write_atomic(path, write):
    """Call write(tmp_path), then rename onto path, so readers never see a partial file."""
    tmp = path + ".tmp"
    write(tmp)
    os.replace(tmp, path)


def write_f32(path, array):
    write_atomic(path, np.ascontiguousarray(array, dtype="<f4").tofile)


def write_json(path, obj):
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
    write_atomic(path, write)


def make_zoo_model(name, out_dir, force):
    d = os.path.join(out_dir, name)
    if not force and all_exist(d, ZOO_FILES):
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        print(f"{name}: exists, skipped (--force to regenerate); ops {meta.get('ops')}")
        return
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    model = build_model(name)
    x = torch.randn(*INPUT_SHAPE, generator=torch.Generator().manual_seed(42))
    with torch.no_grad():
        y = model(x)
    if tuple(y.shape) != tuple(OUTPUT_SHAPE):
        raise ZooError(f"{name}: output shape {list(y.shape)}, expected {OUTPUT_SHAPE}")

    onnx_path = os.path.join(d, "model.onnx")
    export_path = onnx_path + ".export"
    # PRESERVE with the model in eval mode exports inference semantics but skips the exporter's
    # eval-only peephole pass, which would fold BatchNormalization into Conv: we want the BN
    # nodes in the file so the C++ importer's fold-BN pass is what gets tested.
    torch.onnx.export(
        model, x, export_path,
        opset_version=OPSET,
        input_names=["input"], output_names=["output"],
        do_constant_folding=True,
        training=torch.onnx.TrainingMode.PRESERVE,
    )
    # The exporter's file as it is (Constant and Identity nodes included): the importer must
    # load real exports, not tidied ones.
    m = onnx.load(export_path)
    os.remove(export_path)
    onnx.checker.check_model(m)
    write_atomic(onnx_path, lambda tmp: onnx.save(m, tmp))
    ops = op_types(m)
    in_dims = graph_dims(m.graph.input[0])
    out_dims = graph_dims(m.graph.output[0])
    if len(m.graph.input) != 1 or m.graph.input[0].name != "input" or in_dims != INPUT_SHAPE:
        raise ZooError(f"{name}: ONNX inputs {[i.name for i in m.graph.input]} {in_dims}")
    if len(m.graph.output) != 1 or m.graph.output[0].name != "output" or out_dims != OUTPUT_SHAPE:
        raise ZooError(f"{name}: ONNX outputs {[o.name for o in m.graph.output]} {out_dims}")

    write_f32(os.path.join(d, "input.f32"), x.numpy())
    write_f32(os.path.join(d, "output.f32"), y.numpy())
    yn = y.numpy()
    meta = {
        "input_shape": INPUT_SHAPE,
        "output_shape": OUTPUT_SHAPE,
        "opset": OPSET,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "ops": ops,
        "batchnorm_nodes": sum(n.op_type == "BatchNormalization" for n in m.graph.node),
        "output_stats": {"min": float(yn.min()), "max": float(yn.max()),
                         "mean": float(yn.mean()), "std": float(yn.std())},
    }
    write_json(os.path.join(d, "meta.json"), meta)

    print(f"{name}: ops {ops}")
    print(f"{name}: {len(m.graph.node)} nodes, {meta['batchnorm_nodes']} BatchNormalization, "
          f"output range [{yn.min():.4g}, {yn.max():.4g}] std {yn.std():.4g}, "
          f"{time.time() - t0:.1f} s")
    extra = set(ops) - SUPPORTED_OPS
    tolerated = extra & TOLERATED_OPS
    unsupported = extra - TOLERATED_OPS
    if tolerated:
        print(f"{name}: WARNING: helper ops present (avoid if possible): {sorted(tolerated)}")
    if unsupported:
        print(f"{name}: WARNING: ops outside the supported list: {sorted(unsupported)}")


def card_top1(card_path):
    """The PyTorch test top-1 (percent) that MODEL_CARD.md reports."""
    with open(card_path) as f:
        text = f.read()
    match = re.search(r"\(fp32, PyTorch\):\s*\*\*([0-9.]+)%\*\*", text)
    if not match:
        raise ZooError(f"{card_path}: no '(fp32, PyTorch): **NN.NN%**' line")
    return float(match.group(1))


def rebuild_from_onnx(onnx_path):
    """A FashionNet whose parameters are DIR/model.onnx's initializers (Conv/Gemm, graph order)."""
    from onnx import numpy_helper
    import train_fashion_mnist as tfm

    m = onnx.load(onnx_path)
    onnx.checker.check_model(m)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    tensors = []  # (weight, bias) per Conv/Gemm node, in graph order
    for node in m.graph.node:
        if node.op_type not in ("Conv", "Gemm"):
            continue
        if len(node.input) != 3 or node.input[1] not in inits or node.input[2] not in inits:
            raise ZooError(f"{onnx_path}: {node.op_type} {node.name} without constant weight+bias")
        w, b = inits[node.input[1]], inits[node.input[2]]
        if node.op_type == "Gemm":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                raise ZooError(f"{onnx_path}: unexpected Gemm attributes {attrs}")
            if not attrs.get("transB", 0):
                w = w.T
        tensors.append((w, b))

    model = tfm.FashionNet()
    layers = [mod for mod in model.children() if isinstance(mod, (nn.Conv2d, nn.Linear))]
    if len(layers) != len(tensors):
        raise ZooError(f"{onnx_path}: {len(tensors)} Conv/Gemm nodes, FashionNet has {len(layers)} layers")
    with torch.no_grad():
        for layer, (w, b) in zip(layers, tensors):
            if tuple(w.shape) != tuple(layer.weight.shape) or tuple(b.shape) != tuple(layer.bias.shape):
                raise ZooError(f"{onnx_path}: weight {w.shape}/bias {b.shape} does not fit {layer}")
            layer.weight.copy_(torch.from_numpy(np.array(w, dtype=np.float32)))
            layer.bias.copy_(torch.from_numpy(np.array(b, dtype=np.float32)))
    return model.eval(), tfm


def make_bundled(bundled_dir, out_dir, force):
    d = os.path.join(out_dir, "fashion-mnist")
    if not force and all_exist(d, BUNDLED_FILES):
        print("fashion-mnist: exists, skipped (--force to regenerate)")
        return
    onnx_path = os.path.join(bundled_dir, "model.onnx")
    card_path = os.path.join(bundled_dir, "MODEL_CARD.md")
    for p in (onnx_path, card_path):
        if not os.path.isfile(p):
            raise ZooError(f"--bundled: {p} not found")
    t0 = time.time()
    model, tfm = rebuild_from_onnx(onnx_path)
    images, labels = tfm.load_split("t10k")
    logits = tfm.predict_logits(model, tfm.normalise(images)).numpy()
    acc = tfm.top1(torch.from_numpy(logits), labels)
    reported = card_top1(card_path)
    if abs(acc * 100 - reported) > 0.006:
        raise ZooError(f"fashion-mnist: rebuilt model gives {acc * 100:.2f}% top-1, "
                       f"the card reports {reported:.2f}%")

    os.makedirs(d, exist_ok=True)
    write_atomic(os.path.join(d, "test_images.u8"),
                 np.ascontiguousarray(images, dtype=np.uint8).tofile)
    write_atomic(os.path.join(d, "test_labels.u8"),
                 np.ascontiguousarray(labels, dtype=np.uint8).tofile)
    write_f32(os.path.join(d, "logits.f32"), logits)
    meta = {"count": int(images.shape[0]), "input_shape": [1, 1, 28, 28],
            "top1_torch": round(acc, 6)}
    write_json(os.path.join(d, "meta.json"), meta)
    print(f"fashion-mnist: rebuilt from ONNX, top-1 {acc * 100:.2f}% (card: {reported:.2f}%), "
          f"{time.time() - t0:.1f} s")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--models", default=",".join(ZOO_MODELS),
                   help=f"comma-separated subset of {','.join(ZOO_MODELS)} ('' for none)")
    p.add_argument("--bundled", help="directory of the trained Fashion-MNIST model")
    p.add_argument("--force", action="store_true", help="regenerate files that already exist")
    args = p.parse_args()

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in ZOO_MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {ZOO_MODELS}")

    torch.set_num_threads(2)
    # The exporter warns about constant folding with TrainingMode.PRESERVE; the models are in
    # eval mode, so folding is safe (the outputs are checked against PyTorch's).
    warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
    os.makedirs(args.out, exist_ok=True)
    failures = []
    t0 = time.time()
    for name in models:
        try:
            make_zoo_model(name, args.out, args.force)
        except Exception as e:  # report every model, then fail
            if not isinstance(e, ZooError):
                traceback.print_exc()
            failures.append(f"{name}: {e}")
    if args.bundled:
        try:
            make_bundled(args.bundled, args.out, args.force)
        except Exception as e:
            if not isinstance(e, ZooError):
                traceback.print_exc()
            failures.append(f"fashion-mnist: {e}")
    print(f"total {time.time() - t0:.1f} s")
    if failures:
        print("make_zoo FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
