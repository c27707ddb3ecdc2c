#!/usr/bin/python3
"""The side-by-side table of tests/bench/run_bench.sh: reads the outputs of tessera_bench,
opencv_dnn_bench.py and tessera_onednn_bench (any may be missing) and prints, per model and
batch, images/s of Tessera int8 (emulator + host FC), Tessera fp32 (host path), OpenCV's DNN fp32
and oneDNN's int8 convolutions of the same model, with the ratios: Tessera int8 / oneDNN int8,
Tessera int8 / OpenCV fp32 and Tessera fp32 / OpenCV fp32. oneDNN's column times only the
convolutions (no pool, add or FC), so it is an upper bound for a whole network.

Usage: /usr/bin/python3 tests/bench/bench_table.py TESSERA_OUT OPENCV_OUT ONEDNN_OUT
"""
import sys


def rows(path, column_of_path):
    """{(model, batch): {column: images/s}} from lines `model path batch images/s ...`."""
    found = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split()
        if len(parts) < 4 or parts[1] not in column_of_path or not parts[2].isdigit():
            continue
        try:
            value = float(parts[3])
        except ValueError:
            continue  # "failed"
        found.setdefault((parts[0], int(parts[2])), {})[column_of_path[parts[1]]] = value
    return found


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    table = {}
    for path, columns in ((sys.argv[1], {"int8-emu": "int8", "fp32-host": "fp32"}),
                          (sys.argv[2], {"opencv": "opencv"}), (sys.argv[3], {"int8": "onednn"})):
        for key, values in rows(path, columns).items():
            table.setdefault(key, {}).update(values)
    header = ["model", "batch", "int8", "fp32", "OpenCV fp32", "oneDNN int8 conv", "int8/oneDNN", "int8/OpenCV",
              "fp32/OpenCV"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    fmt = lambda v: f"{v:.1f}" if v is not None else "-"
    for (model, batch), v in table.items():
        i8, f32, cv, dn = (v.get(k) for k in ("int8", "fp32", "opencv", "onednn"))
        cells = [model, str(batch), fmt(i8), fmt(f32), fmt(cv), fmt(dn), ratio(i8, dn), ratio(i8, cv), ratio(f32, cv)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
