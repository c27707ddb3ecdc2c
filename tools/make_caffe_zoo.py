#!/usr/bin/python3
"""Generate Caffe test networks and OpenCV's outputs on them, for Tessera's Caffe importer tests.

Usage:
  /usr/bin/python3 tools/make_caffe_zoo.py --out DIR [--zoo ZOO_DIR] [--bundled models/fashion-mnist]

Writes DIR/<net>/:
  deploy.prototxt   the network (BVLC Caffe's text format)
  opencv.prototxt   the same in OpenCV's dialect (floor pooling spelled ceil_mode: false)
  model.caffemodel  weights: seeded random (numpy default_rng, seed per net), or converted
  input.f32         raw float32 NCHW input, N(0,1)-ish, seeded
  opencv.f32        OpenCV DNN's output (cv2.dnn.readNetFromCaffe) for input.f32
  meta.json         {"input_shape", "output_shape", "layer_types", "opencv", "onnx"?}

Networks: the CaffePresso table-1 configurations (seeds/001: MNIST, CIFAR-10, STL-10,
Caltech101), Caffe's CIFAR-10 "quick" net, nets covering every supported layer type (one in the
legacy V1 `layers` format), and ONNX models converted by tools/onnx2caffe.py: the bundled
Fashion-MNIST model (--bundled) and torchvision zoo models (--zoo, from tools/make_zoo.py);
for those meta.json names the ONNX file so the test can compare both imports.
Exits non-zero on any failure.

OpenCV 4.6's Caffe reader departs from Caffe in two settings, which these nets therefore leave
at their defaults (tests/unit/test_caffe_importer.cc checks them against Caffe's formulas):
LRN's `k` (OpenCV always uses 1) and InnerProduct's `transpose` (OpenCV ignores it).
"""

import argparse
import json
import os
import sys
import time
import traceback

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import caffe_format  # noqa: E402
import onnx2caffe  # noqa: E402

FILES = ["deploy.prototxt", "opencv.prototxt", "model.caffemodel", "input.f32", "opencv.f32", "meta.json"]
ZOO_CONVERTED = ["squeezenet1_1", "resnet18", "googlenet", "alexnet"]


class NetWriter:
    """Builds a NetParameter layer by layer with seeded random weights."""

    def __init__(self, pb, name, seed, v1=False):
        self.pb = pb
        self.net = pb.NetParameter()
        self.net.name = name
        self.rng = np.random.default_rng(seed)
        self.blobs = {}
        self.v1 = v1
        self.shapes = {}

    def input(self, name, shape, legacy=False):
        if legacy:
            self.net.input.append(name)
            self.net.input_dim.extend(shape)
        else:
            layer = self.net.layer.add()
            layer.name, layer.type = name, "Input"
            layer.top.append(name)
            layer.input_param.shape.add().dim.extend(shape)
        return name

    def layer(self, ltype, name, bottoms, tops=None):
        if self.v1:
            layer = self.net.layers.add()
            layer.type = getattr(self.pb.V1LayerParameter, ltype)
        else:
            layer = self.net.layer.add()
            layer.type = ltype
        layer.name = name
        layer.bottom.extend(bottoms if isinstance(bottoms, list) else [bottoms])
        layer.top.extend(tops or [name])
        return layer

    def weights(self, name, *shapes, scale=None):
        arrays = []
        for i, s in enumerate(shapes):
            fan_in = int(np.prod(s[1:])) if len(s) > 1 else 1
            std = scale if scale is not None else (np.sqrt(2.0 / fan_in) if i == 0 else 0.1)
            arrays.append((self.rng.standard_normal(s) * std).astype(np.float32))
        self.blobs[name] = arrays

    def conv(self, name, bottom, cin, cout, k, pad=0, stride=1, group=1, dilation=1, hw_form=False, top=None):
        layer = self.layer("Convolution" if not self.v1 else "CONVOLUTION", name, bottom, [top] if top else None)
        p = layer.convolution_param
        p.num_output = cout
        if hw_form:
            p.kernel_h, p.kernel_w = k
            p.pad_h, p.pad_w = pad
            p.stride_h, p.stride_w = stride
            kh, kw = k
        else:
            p.kernel_size.append(k)
            if pad:
                p.pad.append(pad)
            if stride != 1:
                p.stride.append(stride)
            kh = kw = k
        if group != 1:
            p.group = group
        if dilation != 1:
            p.dilation.append(dilation)
        self.weights(name, (cout, cin // group, kh, kw), (cout,))
        return layer.top[0]

    def pool(self, name, bottom, method, k=None, stride=1, pad=0, global_pool=False, floor=False):
        layer = self.layer("Pooling" if not self.v1 else "POOLING", name, bottom)
        p = layer.pooling_param
        p.pool = getattr(self.pb.PoolingParameter, method)
        if global_pool:
            p.global_pooling = True
        else:
            p.kernel_size = k
            p.stride = stride
            if pad:
                p.pad = pad
        if floor:
            p.round_mode = self.pb.PoolingParameter.FLOOR
        return name

    def relu(self, name, bottom, slope=0.0, in_place=True):
        layer = self.layer("ReLU" if not self.v1 else "RELU", name, bottom, [bottom] if in_place else None)
        if slope:
            layer.relu_param.negative_slope = slope
        return layer.top[0]

    def ip(self, name, bottom, k, n, axis=None, transpose=False):
        layer = self.layer("InnerProduct" if not self.v1 else "INNER_PRODUCT", name, bottom)
        p = layer.inner_product_param
        p.num_output = n
        if axis is not None:
            p.axis = axis
        if transpose:
            p.transpose = True
        self.weights(name, (k, n) if transpose else (n, k), (n,), scale=np.sqrt(2.0 / k))
        self.blobs[name][1] = (self.rng.standard_normal(n) * 0.1).astype(np.float32)
        return name


def caffepresso_mnist(w):
    """Table 1, MNIST: 5 maps then 50 maps, 5x5 kernels, 2x2 pool/subsample; FC on the host."""
    x = w.input("data", [1, 1, 28, 28])
    x = w.pool("pool1", w.relu("relu1", w.conv("conv1", x, 1, 5, 5)), "MAX", 2, 2)
    x = w.pool("pool2", w.relu("relu2", w.conv("conv2", x, 5, 50, 5)), "MAX", 2, 2)
    x = w.relu("relu3", w.ip("ip1", x, 50 * 4 * 4, 500))
    return w.ip("ip2", x, 500, 10), [2, 1, 28, 28]


def caffepresso_cifar10(w):
    """Table 1, CIFAR-10: 32, 32, 64 maps, 5x5 kernels (padded), 2x2 pool/subsample."""
    x = w.input("data", [1, 3, 32, 32])
    x = w.pool("pool1", w.relu("relu1", w.conv("conv1", x, 3, 32, 5, pad=2)), "MAX", 2, 2)
    x = w.pool("pool2", w.relu("relu2", w.conv("conv2", x, 32, 32, 5, pad=2)), "MAX", 2, 2)
    x = w.pool("pool3", w.relu("relu3", w.conv("conv3", x, 32, 64, 5, pad=2)), "MAX", 2, 2)
    return w.ip("ip1", x, 64 * 4 * 4, 10), [2, 3, 32, 32]


def caffepresso_stl10(w):
    """Table 1, STL-10: 32 and 32 maps on 96x96, 5x5 kernels, 2x2 pool/subsample."""
    x = w.input("data", [1, 3, 96, 96])
    x = w.pool("pool1", w.relu("relu1", w.conv("conv1", x, 3, 32, 5)), "MAX", 2, 2)
    x = w.pool("pool2", w.relu("relu2", w.conv("conv2", x, 32, 32, 5)), "MAX", 2, 2)
    return w.ip("ip1", x, 32 * 21 * 21, 10), [1, 3, 96, 96]


def caffepresso_caltech101(w):
    """Table 1, Caltech101: 64 then 256 maps on 151x151, 9x9 kernels, 10x10 pool subsampled
    by 5, then 6x6 pool subsampled by 4 (Caffe's ceil rounding: 143 -> 28, 20 -> 5)."""
    x = w.input("data", [1, 3, 151, 151])
    x = w.pool("pool1", w.relu("relu1", w.conv("conv1", x, 3, 64, 9)), "AVE", 10, 5)
    x = w.pool("pool2", w.relu("relu2", w.conv("conv2", x, 64, 256, 9)), "MAX", 6, 4)
    return w.ip("ip1", x, 256 * 5 * 5, 101), [1, 3, 151, 151]


def cifar10_quick(w):
    """Caffe's examples/cifar10/cifar10_quick.prototxt (deploy form), legacy input: fields,
    3x3/2 pools with ceil rounding (32 -> 16 -> 8 -> 4), AVE pools after conv2/conv3, softmax."""
    x = w.input("data", [1, 3, 32, 32], legacy=True)
    x = w.relu("relu1", w.pool("pool1", w.conv("conv1", x, 3, 32, 5, pad=2), "MAX", 3, 2))
    x = w.pool("pool2", w.relu("relu2", w.conv("conv2", x, 32, 32, 5, pad=2)), "AVE", 3, 2)
    x = w.pool("pool3", w.relu("relu3", w.conv("conv3", x, 32, 64, 5, pad=2)), "AVE", 3, 2)
    x = w.ip("ip2", w.ip("ip1", x, 64 * 4 * 4, 64), 64, 10)
    w.layer("Softmax", "prob", x)
    return "prob", [2, 3, 32, 32]


def legacy_v1(w):
    """The V1 `layers` format with input:/input_dim: CONVOLUTION, RELU, POOLING, LRN (across
    channels), CONCAT, DROPOUT, FLATTEN, INNER_PRODUCT, SOFTMAX."""
    pb = w.pb
    x = w.input("data", [1, 3, 24, 24], legacy=True)
    a = w.relu("relu1", w.conv("conv1", x, 3, 8, 3, pad=1))
    b = w.relu("relu1b", w.conv("conv1b", x, 3, 8, 5, pad=2))
    c = w.layer("CONCAT", "concat", [a, b]).top[0]
    p = w.pool("pool1", c, "MAX", 3, 2)
    lrn = w.layer("LRN", "norm1", p)
    lrn.lrn_param.local_size = 5
    lrn.lrn_param.alpha = 1e-2
    lrn.lrn_param.beta = 0.75
    d = w.layer("DROPOUT", "drop", "norm1", ["norm1"]).top[0]
    f = w.layer("FLATTEN", "flat", d).top[0]
    y = w.ip("ip1", f, 16 * 12 * 12, 10)
    sm = w.layer("SOFTMAX", "prob", y)
    del pb, sm
    return "prob", [2, 3, 24, 24]


def layer_zoo(w):
    """Every other layer form: Convolution with group, dilation and the _h/_w forms,
    BatchNorm + Scale (in place), leaky ReLU, Split, Eltwise SUM (coeffs)/PROD/MAX, Concat,
    LRN within channel, Pooling AVE with pad, global MAX and AVE, standalone Scale with bias,
    Reshape, Flatten, InnerProduct, Softmax."""
    pb = w.pb
    x = w.input("data", [1, 3, 20, 20])
    c1 = w.conv("conv1", x, 3, 8, (3, 5), pad=(1, 2), stride=(1, 1), hw_form=True)
    bn = w.layer("BatchNorm", "bn1", c1, [c1])
    bn.batch_norm_param.eps = 1e-3
    w.blobs["bn1"] = [w.rng.standard_normal(8).astype(np.float32) * 0.5 * 3.0,
                      (w.rng.random(8).astype(np.float32) + 0.5) * 3.0, np.array([3.0], np.float32)]
    sc = w.layer("Scale", "scale1", c1, [c1])
    sc.scale_param.bias_term = True
    w.blobs["scale1"] = [(w.rng.random(8) + 0.5).astype(np.float32), (w.rng.standard_normal(8) * 0.1).astype(np.float32)]
    r = w.relu("relu1", c1, slope=0.1)
    w.layer("Split", "split1", r, ["s1", "s2", "s3"])
    g = w.conv("conv_group", "s1", 8, 8, 3, pad=1, group=2)
    d = w.conv("conv_dilated", "s2", 8, 8, 3, pad=2, dilation=2)
    e_sum = w.layer("Eltwise", "sum", [g, d, "s3"])
    e_sum.eltwise_param.operation = pb.EltwiseParameter.SUM
    e_sum.eltwise_param.coeff.extend([1.0, -0.5, 2.0])
    e_prod = w.layer("Eltwise", "prod", [g, d])
    e_prod.eltwise_param.operation = pb.EltwiseParameter.PROD
    e_max = w.layer("Eltwise", "max", ["sum", "prod", "s3"])
    e_max.eltwise_param.operation = pb.EltwiseParameter.MAX
    cat = w.layer("Concat", "concat", ["max", "sum"]).top[0]
    lrn = w.layer("LRN", "norm", cat)
    lrn.lrn_param.local_size = 3
    lrn.lrn_param.alpha = 0.5
    lrn.lrn_param.beta = 0.75
    lrn.lrn_param.norm_region = pb.LRNParameter.WITHIN_CHANNEL
    p = w.pool("pool_avg", "norm", "AVE", 3, 2, pad=1)          # 20 -> 11 (ceil), padded windows
    s2 = w.layer("Scale", "scale2", p)
    s2.scale_param.bias_term = True
    w.blobs["scale2"] = [(w.rng.random(16) + 0.5).astype(np.float32), (w.rng.standard_normal(16) * 0.1).astype(np.float32)]
    w.layer("Split", "split2", "scale2", ["t1", "t2"])
    gmax = w.pool("global_max", "t1", "MAX", global_pool=True)
    gavg = w.pool("global_avg", "t2", "AVE", global_pool=True)
    both = w.layer("Concat", "concat2", [gmax, gavg]).top[0]              # 32 x 1 x 1
    rs = w.layer("Reshape", "reshape", both)
    rs.reshape_param.shape.dim.extend([0, 4, 8])                          # N x 4 x 8
    fl = w.layer("Flatten", "flatten", "reshape").top[0]                  # N x 32
    y = w.ip("ip", fl, 32, 12)
    sm = w.layer("Softmax", "prob", y)
    del sm
    return "prob", [2, 3, 20, 20]


def ip_axis(w):
    """InnerProduct over axis 2 (keeps a per-channel dim) followed by Flatten and a plain IP."""
    x = w.input("data", [1, 3, 6, 6])
    c = w.relu("relu1", w.conv("conv1", x, 3, 4, 3, pad=1))
    a = w.ip("ip_axis2", c, 36, 5, axis=2)           # N x 4 x 5
    return w.ip("ip2", a, 20, 7), [2, 3, 6, 6]


GENERATED = {
    "caffepresso_mnist": (caffepresso_mnist, 11),
    "caffepresso_cifar10": (caffepresso_cifar10, 12),
    "caffepresso_stl10": (caffepresso_stl10, 13),
    "caffepresso_caltech101": (caffepresso_caltech101, 14),
    "cifar10_quick": (cifar10_quick, 15),
    "legacy_v1": (legacy_v1, 16),
    "layer_zoo": (layer_zoo, 17),
    "ip_axis": (ip_axis, 18),
}


def write_f32(path, array):
    tmp = path + ".tmp"
    np.ascontiguousarray(array, dtype="<f4").tofile(tmp)
    os.replace(tmp, path)


def run_opencv(d, input_shape, seed):
    with open(os.path.join(d, "deploy.prototxt")) as f:
        text = f.read()
    with open(os.path.join(d, "opencv.prototxt"), "w") as f:
        f.write(caffe_format.opencv_prototxt(text))
    net = cv2.dnn.readNetFromCaffe(os.path.join(d, "opencv.prototxt"), os.path.join(d, "model.caffemodel"))
    x = np.random.default_rng(seed).standard_normal(input_shape).astype(np.float32)
    net.setInput(x)
    y = net.forward()
    write_f32(os.path.join(d, "input.f32"), x)
    write_f32(os.path.join(d, "opencv.f32"), y)
    return list(y.shape)


def finish(d, name, pb, input_shape, output_shape, onnx_path=None, t0=0.0):
    net = pb.NetParameter()
    from google.protobuf import text_format
    with open(os.path.join(d, "deploy.prototxt")) as f:
        text_format.Parse(f.read(), net)
    types = sorted({l.type for l in net.layer} | {pb.V1LayerParameter.LayerType.Name(l.type) for l in net.layers})
    meta = {"input_shape": input_shape, "output_shape": output_shape, "layer_types": types,
            "opencv": cv2.__version__}
    if onnx_path:
        meta["onnx"] = os.path.abspath(onnx_path)
    with open(os.path.join(d, "meta.json.tmp"), "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(os.path.join(d, "meta.json.tmp"), os.path.join(d, "meta.json"))
    print(f"{name}: {types} -> {output_shape}, {time.time() - t0:.1f} s", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--zoo", help="tools/make_zoo.py's output folder (converted: " + ",".join(ZOO_CONVERTED) + ")")
    p.add_argument("--bundled", help="the ONNX bundled model's folder (models/fashion-mnist)")
    p.add_argument("--force", action="store_true")
    args = p.parse_args()
    pb = caffe_format.load_caffe_pb2(os.path.join(args.out, "_proto"))
    failures = []

    jobs = [(name, "generated") for name in GENERATED]
    if args.bundled:
        jobs.append(("fashion-mnist", os.path.join(args.bundled, "model.onnx")))
    if args.zoo:
        jobs += [(m, os.path.join(args.zoo, m, "model.onnx")) for m in ZOO_CONVERTED]
    for name, source in jobs:
        d = os.path.join(args.out, name)
        if not args.force and all(os.path.isfile(os.path.join(d, f)) for f in FILES):
            print(f"{name}: exists, skipped (--force to regenerate)")
            continue
        t0 = time.time()
        try:
            os.makedirs(d, exist_ok=True)
            if source == "generated":
                build, seed = GENERATED[name]
                w = NetWriter(pb, name, seed, v1=name == "legacy_v1")
                _, input_shape = build(w)
                caffe_format.write_model(pb, w.net, w.blobs, d)
                out_shape = run_opencv(d, input_shape, seed + 100)
                finish(d, name, pb, input_shape, out_shape, t0=t0)
            else:
                onnx2caffe.convert(source, d, pb, name=name)
                import onnx
                dims = [x.dim_value for x in onnx.load(source).graph.input[0].type.tensor_type.shape.dim]
                input_shape = [2] + dims[1:]
                out_shape = run_opencv(d, input_shape, 7)
                finish(d, name, pb, input_shape, out_shape, onnx_path=source, t0=t0)
        except Exception as e:  # report every net, then fail
            traceback.print_exc()
            failures.append(f"{name}: {e}")
    if failures:
        print("make_caffe_zoo FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
