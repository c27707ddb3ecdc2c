#!/usr/bin/env python3
"""Writes the xclbin container of the software-emulated XRT device (kernels/sw_emu/).

No bitstream inside: the emulated device runs the HLS kernel's C++ (tessera_accel.cpp) instead.
Everything else is what `v++ --link` would record, derived from the repository's own sources:
  - the compute units and the memory bank of each of their arguments from the board's v++ link
    configuration (kernels/connectivity_<board>.cfg: `nk=` and `sp=` lines);
  - the kernel's arguments, in order, from the HLS top function's signature (kernels/tessera_accel.h);
  - the kernel clock from the board profile (accel/plan/boards/<board>.toml `fabric_clock_mhz`,
    the one hardware spec kernels/Makefile builds the Vitis kernel from; a .cfg sets no clock);
  - the platform from the .cfg's header comment.
The format is XRT's axlf (xrt/xclbin.h): header with a uuid, then the sections MEM_TOPOLOGY,
IP_LAYOUT, CONNECTIVITY, CLOCK_FREQ_TOPOLOGY and EMBEDDED_METADATA (the XML XRT reads a kernel's
arguments from). The uuid is derived from the file's contents, so the same inputs give the same bytes.

Usage: make_xclbin.py --config kernels/connectivity_aws_f1.cfg --header kernels/tessera_accel.h
                      --profile accel/plan/boards/aws-f1.toml --out aws_f1.xclbin
"""
import argparse
import hashlib
import re
import struct
import sys
import tomllib

# xrt/xclbin.h
EMBEDDED_METADATA, MEM_TOPOLOGY, CONNECTIVITY, IP_LAYOUT, CLOCK_FREQ_TOPOLOGY = 2, 6, 7, 8, 11
MEM_DDR4 = 1
IP_KERNEL = 1
AP_CTRL_HS = 0
CT_DATA, CT_KERNEL = 1, 2
XCLBIN_SW_EMU = 5
AXLF_PREFIX = 456  # sizeof(axlf) 496 minus the one axlf_section_header it declares
SECTION_HEADER = 40


def parse_config(text):
    """(kernel, [instances], {(instance, arg): bank}, clock_mhz or None, platform)."""
    kernel, instances, banks, clock, section = None, [], {}, None, None
    platform = None
    m = re.search(r"\((xilinx_[A-Za-z0-9_.-]+)\)", text) or re.search(r"e\.g\. (xilinx_[A-Za-z0-9_.-]+)", text)
    if m:
        platform = m.group(1)
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        if section == "connectivity" and key == "nk":
            name, count, *names = value.split(":")
            kernel = name
            instances = names[0].split(".") if names else [f"{name}_{i + 1}" for i in range(int(count))]
            if len(instances) != int(count):
                sys.exit(f"nk={value}: {count} instances but {len(instances)} names")
        elif section == "connectivity" and key == "sp":
            port, _, bank = value.partition(":")
            instance, _, arg = port.partition(".")
            banks[(instance, arg)] = bank
        elif section == "clock" and key == "freqHz":
            clock = int(value.split(":")[0]) // 1000000
    if kernel is None:
        sys.exit("no nk= line in the [connectivity] section")
    return kernel, instances, banks, clock, platform


def parse_signature(text, kernel):
    """Argument names of `kernel`'s top function, in order, and whether each is a pointer."""
    m = re.search(r"void\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", text)
    if not m:
        sys.exit(f"no function {kernel} in the header")
    args = []
    for param in m.group(1).split(","):
        param = " ".join(param.split())
        name = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", param).group(1)
        args.append((name, "*" in param, param[: param.rfind(name)].strip()))
    return args


def cstr(text, size):
    data = text.encode()
    if len(data) >= size:
        sys.exit(f"name too long for {size} bytes: {text}")
    return data + b"\0" * (size - len(data))


def metadata_xml(kernel, args, instances, platform):
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<project name="tessera_accel"><platform vendor="xilinx" boardid="{platform}" name="sw_emu">',
             '<device name="fpga0"><core name="OCL_REGION_0" target="sw_emu">',
             f'<kernel name="{kernel}" language="c" vlnv="xilinx.com:hls:{kernel}:1.0" hwControlProtocol="ap_ctrl_hs">']
    offset = 0x10
    for index, (name, pointer, ctype) in enumerate(args):
        qualifier = 1 if pointer else 0
        port = f"M_AXI_GMEM{index}" if pointer else "S_AXI_CONTROL"
        lines.append(f'<arg name="{name}" addressQualifier="{qualifier}" id="{index}" port="{port}" '
                     f'size="0x8" offset="0x{offset:x}" hostOffset="0x0" hostSize="0x8" type="{ctype}"/>')
        offset += 0xc
    for instance in instances:
        lines.append(f'<instance name="{instance}"/>')
    lines += ["</kernel>", "</core></device></platform></project>", ""]
    return "\n".join(lines).encode()


def build(config_text, header_text, profile_clock_mhz):
    kernel, instances, banks, clock, platform = parse_config(config_text)
    args = parse_signature(header_text, kernel)
    if clock is None:
        clock = profile_clock_mhz
    bank_names = []
    for instance in instances:
        for name, pointer, _ in args:
            if pointer and (instance, name) not in banks:
                sys.exit(f"no sp= line for {instance}.{name}")
            if pointer and banks[(instance, name)] not in bank_names:
                bank_names.append(banks[(instance, name)])
    # MEM_TOPOLOGY: the banks the configuration connects, in order of first use (the group ids).
    mem = struct.pack("<i", len(bank_names)) + b"\0" * 4  # int32 count, padded to mem_data's alignment
    for k, name in enumerate(bank_names):
        mem += struct.pack("<BB6xQQ16s", MEM_DDR4, 1, 4 * 1024 * 1024, 0x4000000000 * k, cstr(name, 16))
    # IP_LAYOUT: one IP_KERNEL per instance, "kernel:instance", sorted by base address.
    ips = struct.pack("<i", len(instances)) + b"\0" * 4
    for k, instance in enumerate(instances):
        ips += struct.pack("<IIQ64s", IP_KERNEL, AP_CTRL_HS << 8, 0x1800000 + 0x10000 * k,
                           cstr(f"{kernel}:{instance}", 64))
    # CONNECTIVITY: (argument index, ip_layout index, mem_topology index) per pointer argument.
    conns = []
    for k, instance in enumerate(instances):
        for index, (name, pointer, _) in enumerate(args):
            if pointer:
                conns.append(struct.pack("<iii", index, k, bank_names.index(banks[(instance, name)])))
    conn = struct.pack("<i", len(conns)) + b"".join(conns)
    clocks = struct.pack("<h", 2)  # clock_freq entries are 2-byte aligned: no padding
    for freq, kind, name in ((clock, CT_DATA, "DATA_CLK"), (2 * clock, CT_KERNEL, "KERNEL_CLK")):
        clocks += struct.pack("<HB5x128s", freq, kind, cstr(name, 128))
    sections = [(MEM_TOPOLOGY, "MEM_TOPOLOGY", mem), (IP_LAYOUT, "IP_LAYOUT", ips),
                (CONNECTIVITY, "CONNECTIVITY", conn), (CLOCK_FREQ_TOPOLOGY, "CLOCK_FREQ_TOPO", clocks),
                (EMBEDDED_METADATA, "EMBEDDED_METADA", metadata_xml(kernel, args, instances, platform or ""))]
    first = AXLF_PREFIX + SECTION_HEADER * len(sections)  # section data follows the section table
    headers, body = b"", b""
    for kind, name, data in sections:
        body += b"\0" * ((-(first + len(body))) % 8)  # each section 8-byte aligned
        headers += struct.pack("<I16s4xQQ", kind, cstr(name, 16), first + len(body), len(data))
        body += data
    length = AXLF_PREFIX + len(headers) + len(body)
    uuid = hashlib.sha256(config_text.encode() + header_text.encode() + body).digest()[:16]

    def axlf(uuid_bytes):
        head = b"xclbin2\0" + struct.pack("<i", -1) + b"\xff" * 28 + b"\xff" * 256 + struct.pack("<Q", 0)
        head += struct.pack("<QQQHBBHH16s64s16s16sI", length, 0, 0, 0, 2, 1, XCLBIN_SW_EMU, 0, b"\0" * 16,
                            cstr(platform or "unknown", 64), uuid_bytes, b"\0" * 16, len(sections))
        head += b"\0" * 4  # axlf_section_header is 8-byte aligned: 4 bytes of padding after m_numSections
        assert len(head) == AXLF_PREFIX, len(head)
        return head + headers + body

    return axlf(uuid)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="kernels/connectivity_<board>.cfg")
    parser.add_argument("--header", required=True, help="kernels/tessera_accel.h")
    parser.add_argument("--profile", required=True, help="accel/plan/boards/<board>.toml (fabric_clock_mhz)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as f:
        config_text = f.read()
    with open(args.header, encoding="utf-8") as f:
        header_text = f.read()
    with open(args.profile, "rb") as f:
        clock_mhz = int(tomllib.load(f)["fabric_clock_mhz"])
    data = build(config_text, header_text, clock_mhz)
    with open(args.out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
