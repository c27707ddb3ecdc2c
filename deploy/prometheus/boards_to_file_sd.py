#!/usr/bin/python3
"""Turns a boards list (host:port [name] per line, # comments) into a Prometheus file_sd JSON file.

    deploy/prometheus/boards_to_file_sd.py boards.txt deploy/prometheus/targets/boards.json

Each board becomes one target group with the label board_name (its name, else its host). The file
is written atomically (temp + rename) so Prometheus never reads half of it.
"""
import json
import os
import re
import sys
import tempfile

TARGET = re.compile(r"^[A-Za-z0-9.\-_\[\]:]+:[0-9]{1,5}$")


def parse_boards(text):
    groups, seen = [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) > 2 or not TARGET.match(fields[0]):
            raise ValueError(f"line {number}: want 'host:port [name]', got {raw!r}")
        port = int(fields[0].rsplit(":", 1)[1])
        if not 0 < port < 65536:
            raise ValueError(f"line {number}: port {port} out of range")
        if fields[0] in seen:
            raise ValueError(f"line {number}: {fields[0]} listed twice")
        seen.add(fields[0])
        name = fields[1] if len(fields) == 2 else fields[0].rsplit(":", 1)[0]
        groups.append({"targets": [fields[0]], "labels": {"board_name": name}})
    return groups


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        try:
            groups = parse_boards(f.read())
        except ValueError as e:
            print(f"{argv[1]}: {e}", file=sys.stderr)
            return 1
    out_dir = os.path.dirname(os.path.abspath(argv[2]))
    fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(groups, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, argv[2])
    print(f"{argv[2]}: {len(groups)} boards")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
