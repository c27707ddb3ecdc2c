#!/usr/bin/python3
"""Convert an ONNX model into Caffe files (deploy.prototxt + model.caffemodel) with the same
computation, for the operators that have an exact Caffe layer:

  Conv -> Convolution, Relu -> ReLU, MaxPool/AveragePool -> Pooling (floor rounding as
  round_mode: FLOOR when Caffe's default ceil rounding would give another size),
  GlobalAveragePool -> Pooling global, Flatten -> Flatten, Gemm -> InnerProduct,
  Add -> Eltwise SUM, Mul -> Eltwise PROD, Concat -> Concat, BatchNormalization -> BatchNorm + Scale,
  LRN -> LRN, Softmax -> Softmax, Dropout/Identity -> dropped.

Anything else (or a variant Caffe cannot express: asymmetric pads, AveragePool excluding pads)
is an error naming the node. The input becomes an Input layer of shape [1, C, H, W].

Usage: /usr/bin/python3 tools/onnx2caffe.py MODEL.onnx OUT_DIR [--name NAME] [--proto-cache DIR]
"""

import argparse
import math
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import caffe_format  # noqa: E402


class ConvertError(Exception):
    pass


def caffe_pool_dim(size, k, s, p, ceil):
    out = (math.ceil if ceil else math.floor)((size + 2 * p - k) / s) + 1
    if p > 0 and (out - 1) * s >= size + p:
        out -= 1
    return out


def onnx_pool_dim(size, k, s, pb, pe, ceil):
    span = size + pb + pe - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + pb:
        out -= 1
    return out


def convert(onnx_path, out_dir, pb, name=None):
    model = onnx.load(onnx_path)
    model = shape_inference.infer_shapes(model)
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    inputs = [i for i in g.input if i.name not in inits]
    if len(inputs) != 1:
        raise ConvertError(f"{onnx_path}: {len(inputs)} inputs; one image input is supported")

    net = pb.NetParameter()
    net.name = name or os.path.splitext(os.path.basename(onnx_path))[0]
    blobs = {}
    alias = {}  # ONNX tensor -> Caffe blob
    used = set()

    def blob_name(t):
        return alias.get(t, t)

    def layer_name(node, weight=None):
        base = weight.rsplit(".", 1)[0] if weight else (node.name or node.output[0])
        base = re.sub(r"[^A-Za-z0-9_.]+", "_", base).strip("_") or node.op_type.lower()
        n, i = base, 2
        while n in used:
            n, i = f"{base}_{i}", i + 1
        used.add(n)
        return n

    def attrs(node):
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def fail(node, why):
        raise ConvertError(f"{onnx_path}: node '{node.name}' ({node.op_type}): {why}")

    def add(node, ltype, lname, bottoms):
        # Tops are named after their layer (ONNX's tensor names are exporter paths); the
        # graph output keeps its ONNX name.
        layer = net.layer.add()
        layer.name = lname
        layer.type = ltype
        layer.bottom.extend(blob_name(b) for b in bottoms)
        top = node.output[0] if node.output[0] in graph_outputs else lname
        alias[node.output[0]] = top
        layer.top.append(top)
        return layer

    graph_outputs = {o.name for o in g.output}
    x = inputs[0]
    in_shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    layer = net.layer.add()
    layer.name = "input"
    layer.type = "Input"
    layer.top.append(x.name)
    layer.input_param.shape.add().dim.extend([1] + in_shape[1:])
    used.add("input")

    for node in g.node:
        a = attrs(node)
        op = node.op_type
        if op in ("Dropout", "Identity"):
            if node.input[0] in inits:
                inits[node.output[0]] = inits[node.input[0]]
            else:
                alias[node.output[0]] = blob_name(node.input[0])
            continue
        if op == "Conv":
            w = inits.get(node.input[1])
            if w is None:
                fail(node, "the weight is not an initializer")
            pads = a.get("pads", [0, 0, 0, 0])
            if pads[0] != pads[2] or pads[1] != pads[3]:
                fail(node, f"asymmetric pads {pads}")
            layer = add(node, "Convolution", layer_name(node, node.input[1]), [node.input[0]])
            p = layer.convolution_param
            p.num_output = w.shape[0]
            p.kernel_h, p.kernel_w = w.shape[2], w.shape[3]
            p.stride_h, p.stride_w = a.get("strides", [1, 1])
            p.pad_h, p.pad_w = pads[0], pads[1]
            dil = a.get("dilations", [1, 1])
            if dil != [1, 1]:
                if dil[0] != dil[1]:
                    fail(node, f"dilations {dil} differ per axis")
                p.dilation.append(dil[0])
            if a.get("group", 1) != 1:
                p.group = a["group"]
            arrays = [w]
            if len(node.input) > 2 and node.input[2]:
                arrays.append(inits[node.input[2]])
            else:
                p.bias_term = False
            blobs[layer.name] = arrays
        elif op == "Relu":
            add(node, "ReLU", layer_name(node), [node.input[0]])
        elif op in ("MaxPool", "AveragePool"):
            pads = a.get("pads", [0, 0, 0, 0])
            k, s = a["kernel_shape"], a.get("strides", [1, 1])
            if pads[0] != pads[2] or pads[1] != pads[3]:
                fail(node, f"asymmetric pads {pads}")
            if op == "AveragePool" and any(pads) and not a.get("count_include_pad", 0):
                fail(node, "AveragePool excluding pads from the count (Caffe includes them)")
            ceil = bool(a.get("ceil_mode", 0))
            in_hw = shapes[node.input[0]][2:]
            want = [onnx_pool_dim(in_hw[i], k[i], s[i], pads[i], pads[i + 2], ceil) for i in range(2)]
            caffe_ceil = [caffe_pool_dim(in_hw[i], k[i], s[i], pads[i], True) for i in range(2)]
            caffe_floor = [caffe_pool_dim(in_hw[i], k[i], s[i], pads[i], False) for i in range(2)]
            layer = add(node, "Pooling", layer_name(node), [node.input[0]])
            p = layer.pooling_param
            p.pool = pb.PoolingParameter.MAX if op == "MaxPool" else pb.PoolingParameter.AVE
            p.kernel_h, p.kernel_w = k
            p.stride_h, p.stride_w = s
            p.pad_h, p.pad_w = pads[0], pads[1]
            if want != caffe_ceil:
                if want != caffe_floor:
                    fail(node, f"output {want} matches neither Caffe rounding")
                p.round_mode = pb.PoolingParameter.FLOOR
        elif op == "GlobalAveragePool":
            layer = add(node, "Pooling", layer_name(node), [node.input[0]])
            layer.pooling_param.pool = pb.PoolingParameter.AVE
            layer.pooling_param.global_pooling = True
        elif op == "Flatten":
            layer = add(node, "Flatten", layer_name(node), [node.input[0]])
            if a.get("axis", 1) != 1:
                layer.flatten_param.axis = a["axis"]
        elif op == "Gemm":
            w = inits.get(node.input[1])
            if w is None or a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                fail(node, f"only x * W' + b with a constant W is supported ({a})")
            layer = add(node, "InnerProduct", layer_name(node, node.input[1]), [node.input[0]])
            p = layer.inner_product_param
            if a.get("transB", 0):
                p.num_output = w.shape[0]
            else:
                p.num_output = w.shape[1]
                p.transpose = True
            arrays = [w]
            if len(node.input) > 2 and node.input[2]:
                arrays.append(inits[node.input[2]].reshape(-1))
            else:
                p.bias_term = False
            blobs[layer.name] = arrays
        elif op in ("Add", "Mul"):
            if any(i in inits for i in node.input):
                fail(node, "a constant operand (Caffe's Eltwise takes blobs)")
            if shapes.get(node.input[0]) != shapes.get(node.input[1]):
                fail(node, "broadcasting operands")
            layer = add(node, "Eltwise", layer_name(node), list(node.input))
            layer.eltwise_param.operation = pb.EltwiseParameter.SUM if op == "Add" else pb.EltwiseParameter.PROD
        elif op == "Concat":
            layer = add(node, "Concat", layer_name(node), list(node.input))
            layer.concat_param.axis = a["axis"]
        elif op == "BatchNormalization":
            scale, bias, mean, var = (inits[i] for i in node.input[1:5])
            bn = add(node, "BatchNorm", layer_name(node), [node.input[0]])
            bn.batch_norm_param.eps = a.get("epsilon", 1e-5)
            blobs[bn.name] = [mean, var, np.array([1.0], dtype=np.float32)]
            sc = net.layer.add()  # in place on the BatchNorm's top, as Caffe nets do
            sc.name, sc.type = bn.name + "_scale", "Scale"
            used.add(sc.name)
            sc.bottom.append(bn.top[0])
            sc.top.append(bn.top[0])
            sc.scale_param.bias_term = True
            blobs[sc.name] = [scale, bias]
        elif op == "LRN":
            layer = add(node, "LRN", layer_name(node), [node.input[0]])
            p = layer.lrn_param
            p.local_size = a["size"]
            p.alpha = a.get("alpha", 1e-4)
            p.beta = a.get("beta", 0.75)
            p.k = a.get("bias", 1.0)
        elif op == "Softmax":
            layer = add(node, "Softmax", layer_name(node), [node.input[0]])
            rank = len(shapes[node.input[0]])
            layer.softmax_param.axis = a.get("axis", -1) % rank
        else:
            fail(node, "no Caffe equivalent in the converter")

    outputs = [o.name for o in g.output]
    if len(outputs) != 1:
        raise ConvertError(f"{onnx_path}: {len(outputs)} outputs; one is supported")
    caffe_format.write_model(pb, net, blobs, out_dir)
    return net


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("onnx")
    p.add_argument("out_dir")
    p.add_argument("--name", help="the network's name (default: the ONNX file's stem)")
    p.add_argument("--proto-cache", default=os.path.join(caffe_format.ROOT, "build", "caffe_py"),
                   help="where caffe.proto is compiled for Python")
    args = p.parse_args()
    pb = caffe_format.load_caffe_pb2(args.proto_cache)
    try:
        net = convert(args.onnx, args.out_dir, pb, name=args.name)
    except ConvertError as e:
        print(f"onnx2caffe: {e}", file=sys.stderr)
        return 1
    print(f"{args.out_dir}: {len(net.layer)} layers ({', '.join(sorted({l.type for l in net.layer}))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
