#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz) into OUT/<target>/, from the project's
own data (the bundled model, its calibration images and config files) and small synthetic files.

    /usr/bin/python3 tools/make_fuzz_corpus.py build-asan/fuzz-seeds
"""
import io
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "fashion-mnist"
CAFFE = ROOT / "models" / "caffe" / "fashion-mnist"


def write(out, target, name, data):
    folder = out / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def images():
    """A few calibration PNGs, as PNG (gray, RGB) and JPEG (baseline, progressive, RGB)."""
    from PIL import Image
    found = {}
    for path in sorted((MODEL / "calibration").glob("*.png"))[:3]:
        png = path.read_bytes()
        img = Image.open(io.BytesIO(png))
        found[path.stem + ".png"] = png
        for mode, suffix, kwargs in (("L", "_gray.jpg", {}), ("RGB", "_rgb.jpg", {}),
                                     ("L", "_prog.jpg", {"progressive": True}), ("RGB", "_rgb.png", {})):
            buf = io.BytesIO()
            img.convert(mode).save(buf, format="PNG" if suffix.endswith(".png") else "JPEG", **kwargs)
            found[path.stem + suffix] = buf.getvalue()
    return found


def pb_varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_field(number, value):
    """A length-delimited (bytes, str, message) or varint (int) protobuf field."""
    if isinstance(value, int):
        return pb_varint(number << 3) + pb_varint(value)
    if isinstance(value, str):
        value = value.encode()
    return pb_varint(number << 3 | 2) + pb_varint(len(value)) + value


def kserve_proto_requests(png):
    """ModelInferRequest (grpc_predict_v2.proto): FP32 contents, raw contents and BYTES (an image)."""
    def tensor(datatype, shape, contents=b""):
        packed = b"".join(pb_varint(d) for d in shape)
        return pb_field(1, "input") + pb_field(2, datatype) + pb_field(3, packed) + contents
    fp32 = pb_field(6, struct.pack("<784f", *([0.5] * 784)))
    yield "fp32", pb_field(1, "fashion-mnist") + pb_field(5, tensor("FP32", [1, 1, 28, 28], pb_field(5, fp32)))
    yield "raw", (pb_field(1, "fashion-mnist") + pb_field(2, "1") + pb_field(3, "id-7") +
                  pb_field(5, tensor("FP32", [1, 1, 28, 28])) + pb_field(6, pb_field(1, "probabilities")) +
                  pb_field(7, struct.pack("<784f", *([0.25] * 784))))
    yield "bytes", pb_field(1, "fashion-mnist") + pb_field(5, tensor("BYTES", [1], pb_field(5, pb_field(8, png))))
    # Batches: FP32 [3,1,28,28] raw, BYTES [2] images, with Triton's timeout parameter (int64_param).
    timeout = pb_field(4, pb_field(1, "timeout") + pb_field(2, pb_field(2, 5000000)))
    yield "batch_raw", (pb_field(1, "fashion-mnist") + timeout + pb_field(5, tensor("FP32", [3, 1, 28, 28])) +
                        pb_field(7, struct.pack("<2352f", *([0.25] * 2352))))
    yield "batch_bytes", pb_field(1, "fashion-mnist") + pb_field(5, tensor("BYTES", [2], pb_field(5, pb_field(8, png) + pb_field(8, png))))


def kserve_json_requests(png):
    import base64
    b64 = base64.b64encode(png).decode()
    flat = ",".join(["0.5"] * 784)
    nested = "[[" + ",".join("[" + ",".join(["0.1"] * 28) + "]" for _ in range(28)) + "]]"
    yield "flat", f'{{"inputs":[{{"name":"input","shape":[1,1,28,28],"datatype":"FP32","data":[{flat}]}}]}}'
    yield "nested", (f'{{"id":"x","inputs":[{{"name":"input","shape":[1,1,28,28],"datatype":"FP32",'
                     f'"data":[{nested}]}}],"outputs":[{{"name":"probabilities","parameters":{{"classification":3}}}}]}}')
    yield "bytes", f'{{"inputs":[{{"name":"input","shape":[1],"datatype":"BYTES","data":["{b64}"]}}]}}'
    yield "binary", ('{"inputs":[{"name":"input","shape":[1,1,28,28],"datatype":"FP32",'
                     '"parameters":{"binary_data_size":3136}}]}')
    yield "batch", (f'{{"inputs":[{{"name":"input","shape":[2,1],"datatype":"BYTES","data":["{b64}","{b64}"]}}],'
                    '"parameters":{"timeout":100000,"priority":1,"binary_data_output":false}}')


def kserve_binary_requests(png):
    """Triton's binary tensor data extension, as fuzz_kserve_binary reads it: the
    Inference-Header-Content-Length value, a newline, then the JSON header and the binary tensors."""
    def body(header, binary):
        return str(len(header)).encode() + b"\n" + header.encode() + binary
    fp32 = struct.pack("<784f", *([0.5] * 784))
    yield "fp32", body('{"inputs":[{"name":"input","shape":[1,1,28,28],"datatype":"FP32",'
                       '"parameters":{"binary_data_size":3136}}],"parameters":{"binary_data_output":true}}', fp32)
    yield "batch", body('{"inputs":[{"name":"input","shape":[2,1,28,28],"datatype":"FP32",'
                        '"parameters":{"binary_data_size":6272}}]}', fp32 + fp32)
    element = struct.pack("<I", len(png)) + png
    yield "bytes_classification", body(
        '{"id":"t","inputs":[{"name":"image","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":'
        + str(2 * len(element)) + '}}],"outputs":[{"name":"probabilities","parameters":'
        '{"classification":3,"binary_data":true}}]}', element + element)
    yield "uint8", body('{"inputs":[{"name":"px","shape":[1,28,28,1],"datatype":"UINT8",'
                        '"parameters":{"binary_data_size":784}}]}', bytes(range(256)) * 3 + bytes(16))


def kserve_shm_inputs():
    """fuzz_kserve_shm: mode byte (0 JSON infer, 1 ModelInferRequest, 2 register body), then the bytes."""
    shm_in = '{"shared_memory_region":"r","shared_memory_byte_size":3136}'
    shm_out = '{"shared_memory_region":"r","shared_memory_offset":3136,"shared_memory_byte_size":40}'
    yield "json_fp32", b"\0" + (f'{{"inputs":[{{"name":"input","shape":[1,1,28,28],"datatype":"FP32",'
                                f'"parameters":{shm_in}}}],"outputs":[{{"name":"probabilities",'
                                f'"parameters":{shm_out}}}]}}').encode()
    yield "json_bytes", b"\0" + ('{"inputs":[{"name":"input","shape":[1],"datatype":"BYTES","parameters":'
                                 '{"shared_memory_region":"r","shared_memory_byte_size":12}}]}').encode()

    def param(key, value):
        # InferParameter: int64_param = 2, string_param = 3; a map entry is key = 1, value = 2.
        inner = pb_field(3, value) if isinstance(value, str) else pb_field(2, value)
        return pb_field(1, key) + pb_field(2, inner)
    tensor = (pb_field(1, "input") + pb_field(2, "FP32") + pb_field(3, b"".join(pb_varint(d) for d in [1, 1, 28, 28])) +
              pb_field(4, param("shared_memory_region", "r")) + pb_field(4, param("shared_memory_byte_size", 3136)))
    output = (pb_field(1, "probabilities") + pb_field(2, param("shared_memory_region", "r")) +
              pb_field(2, param("shared_memory_offset", 3136)) + pb_field(2, param("shared_memory_byte_size", 40)))
    yield "proto_fp32", b"\1" + pb_field(1, "fashion-mnist") + pb_field(5, tensor) + pb_field(6, output)
    yield "register", b"\2" + b'{"key":"/tessera-fuzz-none","offset":0,"byte_size":64}'


def http_requests(png, json_bodies):
    def req(line, headers=(), body=b""):
        head = line + "\r\nHost: localhost\r\n" + "".join(h + "\r\n" for h in headers)
        if body:
            head += f"Content-Length: {len(body)}\r\n"
        return head.encode() + b"\r\n" + body
    boundary = "----tessera7MA4YWxkTrZu0gW"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"boot.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png + f"\r\n--{boundary}--\r\n".encode()
    yield "healthz", req("GET /healthz HTTP/1.1")
    yield "models", req("GET /v1/models HTTP/1.1")
    yield "index", req("GET / HTTP/1.1")
    yield "static", req("GET /js/app.js HTTP/1.1")
    yield "traversal", req("GET /../../etc/passwd HTTP/1.1")
    yield "classify", req("POST /v1/classify?model=fashion-mnist&top_k=3 HTTP/1.1", ["Content-Type: image/png"], png)
    yield "classify_form", req("POST /v1/classify HTTP/1.1", [f"Content-Type: multipart/form-data; boundary={boundary}"], form)
    yield "v2", req("GET /v2 HTTP/1.1")
    yield "v2_live", req("GET /v2/health/live HTTP/1.1")
    yield "v2_model", req("GET /v2/models/fashion-mnist HTTP/1.1")
    yield "v2_ready", req("GET /v2/models/fashion-mnist/versions/1/ready HTTP/1.1")
    for name, body in json_bodies:
        yield "v2_infer_" + name, req("POST /v2/models/fashion-mnist/infer HTTP/1.1",
                                      ["Content-Type: application/json"], body.encode())


def url_targets():
    yield "plain", "/v1/classify?model=fashion-mnist&top_k=3"
    yield "escapes", "/v2/models/fashion%2Dmnist/infer?a=x%20y&b=1+2&c=&d"
    yield "bad", "/x?%zz=1&%00=2&=3"


def multipart_bodies(png):
    boundary = "XyZ"
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png[:64] + f"\r\n--{boundary}--\r\n".encode()
    yield "one", f"multipart/form-data; boundary={boundary}\n".encode() + part
    two = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n").encode() + part
    yield "two", f'multipart/form-data; boundary="{boundary}"; charset=utf-8\n'.encode() + two


def onnx_models():
    """The smallest nets the importer takes: conv + relu + pool + gemm, and add/concat/reshape."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    b = numpy_helper.from_array(np.zeros((2,), np.float32), "b")
    fw = numpy_helper.from_array(np.ones((3, 8), np.float32), "fw")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["p", "p"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "fw"], ["y"], transB=1),
             helper.make_node("Softmax", ["y"], ["s"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 3])], [w, b, fw, shape])
    yield "tiny_conv", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


CAFFE_PROTOTXT = """name: "tiny"
input: "data"
input_shape { dim: 1 dim: 1 dim: 4 dim: 4 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 2 kernel_size: 3 pad: 1 bias_term: false } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool1" top: "fc" inner_product_param { num_output: 3 bias_term: false } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
"""


def caffe_inputs():
    # BlobProto: shape=7 (BlobShape dim=1 packed), data=5 (packed float); LayerParameter: name=1, blobs=7;
    # NetParameter: layer=100.
    def blob(dims, values):
        return pb_field(7, pb_field(1, b"".join(pb_varint(d) for d in dims))) + pb_field(5, struct.pack(f"<{len(values)}f", *values))
    conv = pb_field(1, "conv1") + pb_field(7, blob([2, 1, 3, 3], [0.1] * 18))
    fc = pb_field(1, "fc") + pb_field(7, blob([3, 8], [0.2] * 24))
    caffemodel = pb_field(100, conv) + pb_field(100, fc)
    yield "tiny", CAFFE_PROTOTXT.encode() + b"#CAFFEMODEL\n" + caffemodel
    yield "mean", b"#CAFFEMODEL\n" + blob([1, 1, 2, 2], [1.0, 2.0, 3.0, 4.0])
    yield "bundled_prototxt", (CAFFE / "deploy.prototxt").read_bytes()


def emu_programs():
    """One conv layer (1x8x8 -> 4x6x6, 3x3) and one standalone max pool, as fuzz_emu_program lays them out."""
    header = struct.pack("<16I", 0x31525354, 1, 1, 1, 4096, 0, 1024, *([0] * 9))
    dims = struct.pack("<6H", 1, 8, 8, 4, 6, 6)
    buffers = struct.pack("<II", 64, 64)

    def layer(**f):
        names = ("op in_c in_h in_w in_offset in_channel_base in_channels_total in2_offset in2_channel_base "
                 "in2_channels_total out_c out_h out_w out_offset out_channel_base out_channels_total conv_h conv_w "
                 "kernel_h kernel_w stride_h stride_w pad_top pad_left dilation_h dilation_w groups weight_offset "
                 "quant_offset act_lo act_hi pool_kind pool_h pool_w pool_stride_h pool_stride_w pool_pad_top "
                 "pool_pad_left tile_m tile_n tile_r tile_c r0 r1 r2 r3").split()
        return struct.pack("<29I2i15I", *[f.get(n, 0) for n in names])
    conv = layer(op=1, in_c=1, in_h=8, in_w=8, in_channels_total=1, out_c=4, out_h=6, out_w=6, out_offset=1024,
                 out_channels_total=4, conv_h=6, conv_w=6, kernel_h=3, kernel_w=3, stride_h=1, stride_w=1,
                 dilation_h=1, dilation_w=1, groups=1, act_lo=-128, act_hi=127, tile_m=4, tile_n=1, tile_r=6, tile_c=6)
    yield "conv", header + dims + buffers + conv
    pool = layer(op=2, in_c=1, in_h=8, in_w=8, in_channels_total=1, out_c=1, out_h=4, out_w=4, out_offset=1024,
                 out_channels_total=1, act_lo=-128, act_hi=127, pool_kind=1, pool_h=2, pool_w=2, pool_stride_h=2,
                 pool_stride_w=2, tile_m=1, tile_n=1, tile_r=4, tile_c=4)
    header1 = struct.pack("<16I", 0x31525354, 1, 1, 1, 4096, 0, 1024, *([0] * 9))
    yield "pool", header1 + struct.pack("<6H", 1, 8, 8, 1, 4, 4) + buffers + pool


def fleet_answers():
    """A peer's /v1/telemetry and /v2/health/ready answers (fuzz_fleet_rows: [status]telemetry\\0ready)."""
    import json
    latency = [{"stage": "queue", "p99_us": 900, "count": 4}, {"stage": "total", "p99_us": 1500, "count": 4}]
    telemetry = {"device_kind": "emu", "board": "zcu102", "power_watts": 3.25, "temperature_c": None,
                 "images_per_second": 12.5, "queue_depth": 3, "ready": True,
                 "models": [{"name": "fashion-mnist", "latency": latency}],
                 "devices": [{"index": 0, "state": "serving", "images_per_second": 12.5, "power_watts": 3.25,
                              "temperature_c": None, "fabric_utilization": 0.5}]}
    ready = '{"ready":true}'
    yield "healthy", b"\0" + json.dumps(telemetry).encode() + b"\0" + ready.encode()
    yield "ready-a-string", b"\0" + json.dumps(dict(telemetry, ready="yes")).encode() + b"\0" + b'{"ready":"yes"}'
    bad_stage = dict(telemetry, models=[{"name": 5, "latency": [{"stage": 5, "p99_us": "1", "count": None}]}])
    yield "stage-a-number", b"\0" + json.dumps(bad_stage).encode() + b"\0" + ready.encode()
    yield "unauthorized", b"\x0f" + b'{"error":{"message":"missing bearer token"}}\0' + b'{"error":{"code":16}}'


def client_kserve_answers():
    """Answers a KServe server gives `tessera --protocol kserve` (fuzz_client_kserve_answer: [0]
    header-length(4, LE; ffffffff none) HTTP body, or [1] ModelInferResponse)."""
    import json

    def bytes_elements(*strings):
        return b"".join(struct.pack("<I", len(s)) + s.encode() for s in strings)

    classes = ["0.970000:9:Ankle boot", "0.020000:7:Sneaker", "0.010000:5"]
    plain = {"model_name": "fashion-mnist", "model_version": "1", "id": "bench-1",
             "outputs": [{"name": "probabilities", "datatype": "BYTES", "shape": [1, 3], "data": classes}]}
    yield "http-json", b"\0" + b"\xff" * 4 + json.dumps(plain).encode()
    raw = bytes_elements(*classes)
    header = json.dumps({"model_name": "fashion-mnist", "outputs": [
        {"name": "logits", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 8}},
        {"name": "probabilities", "datatype": "BYTES", "shape": [1, 3], "parameters": {"binary_data_size": len(raw)}}]})
    yield "http-binary", b"\0" + struct.pack("<I", len(header)) + header.encode() + bytes(8) + raw
    yield "http-error", b"\0" + b"\xff" * 4 + b'{"error":"no such model"}'
    output = pb_field(1, "probabilities") + pb_field(2, "BYTES") + pb_field(3, 1) + pb_field(3, 3)
    yield "grpc-raw", b"\1" + pb_field(1, "fashion-mnist") + pb_field(2, "1") + pb_field(5, output) + pb_field(6, raw)
    contents = b"".join(pb_field(8, c) for c in classes)
    yield "grpc-contents", b"\1" + pb_field(1, "fashion-mnist") + pb_field(5, output + pb_field(5, contents))


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build-asan/fuzz-seeds")
    imgs = images()
    png = imgs[sorted(k for k in imgs if k.endswith(".png"))[0]]
    for name, data in imgs.items():
        write(out, "fuzz_image_decode", name, bytes([name.count("rgb")]) + data)
    for name, data in multipart_bodies(png):
        write(out, "fuzz_multipart", name, data)
    for name, data in url_targets():
        write(out, "fuzz_url_query", name, data)
    json_bodies = list(kserve_json_requests(png))
    for name, data in json_bodies:
        write(out, "fuzz_kserve_json", name + ".json", data)
    for name, data in kserve_proto_requests(png):
        write(out, "fuzz_kserve_proto", name + ".pb", data)
    for name, data in kserve_shm_inputs():
        write(out, "fuzz_kserve_shm", name, data)
    for name, data in kserve_binary_requests(png):
        write(out, "fuzz_kserve_binary", name + ".bin", data)
    for name, data in http_requests(png, json_bodies[:1] + json_bodies[2:3]):
        write(out, "fuzz_http_routes", name + ".http", data)
    for name, data in onnx_models():
        write(out, "fuzz_onnx_import", name + ".onnx", data)
    for name, data in caffe_inputs():
        write(out, "fuzz_caffe_import", name, data)
    write(out, "fuzz_model_toml", "bundled.toml", (MODEL / "model.toml").read_bytes())
    write(out, "fuzz_model_toml", "caffe.toml", (CAFFE / "model.toml").read_bytes())
    write(out, "fuzz_daemon_config", "tesserad.toml", (ROOT / "deploy" / "tesserad.toml").read_bytes())
    for name, data in emu_programs():
        write(out, "fuzz_emu_program", name + ".bin", data)
    for name, data in fleet_answers():
        write(out, "fuzz_fleet_rows", name, data)
    for name, data in client_kserve_answers():
        write(out, "fuzz_client_kserve_answer", name, data)
    print(f"make_fuzz_corpus: seeds in {out}")


if __name__ == "__main__":
    main()
