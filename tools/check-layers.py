#!/usr/bin/env python3
"""Fails when core code includes a header of a higher layer (core/layers.txt, docs/layers.md).

usage: tools/check-layers.py [--root DIR] [--stamp FILE] [--table]

Reads the layer table core/layers.txt (layers lowest first, and in each the folders of core/src
lowest first), and every `#include "folder/..."` of core/src and of core/cuda (the CUDA device
module, placed at the top of the compute layer). An include of a higher layer, or of a later folder
of the same layer, is a back-edge: each is printed as
`file:line: folder (layer) includes "path" (folder's layer)` and the exit status is 1. A folder of
core/src that the table does not place is an error too. Standard library only: the build runs it.

--root   the checkout to check (default: the one holding this script)
--stamp  a file touched when the check passes (the build's record that it ran)
--table  print the table as Markdown (layer, folders, may use) and exit
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"')
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh"}
# Directories outside core/src that belong to a layer.
EXTRA_DIRS = {"core/cuda": "compute"}


def read_table(path):
    """[(layer, [folders])] in order, lowest first."""
    layers = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) < 2:
            sys.exit(f"{path}:{number}: a layer needs at least one folder")
        layers.append((line[0], line[1:]))
    return layers


def print_table(layers):
    print("| layer | folders of core/src | may use |")
    print("|---|---|---|")
    for index, (layer, folders) in enumerate(layers):
        below = ", ".join(name for name, _ in layers[:index]) or "—"
        print(f"| {layer} | {', '.join(folders)} | {below} |")


def check(root, layers):
    """Returns the list of problems (strings); empty when the layers hold."""
    rank = {}  # folder -> (layer index, index in its layer): includes may only go to lower ranks
    layer_of = {}
    for index, (layer, folders) in enumerate(layers):
        for position, folder in enumerate(folders):
            if folder in layer_of:
                return [f"core/layers.txt: folder {folder} is in two layers"]
            rank[folder] = (index, position)
            layer_of[folder] = layer
    top_of_layer = {layer: (index, len(folders)) for index, (layer, folders) in enumerate(layers)}

    problems = []
    src = root / "core" / "src"
    units = []  # (directory, its layer, its rank)
    for child in sorted(p for p in src.iterdir() if p.is_dir()):
        if child.name not in layer_of:
            problems.append(f"core/src/{child.name}: folder in no layer of core/layers.txt")
            continue
        units.append((child, layer_of[child.name], rank[child.name]))
    for relative, layer in EXTRA_DIRS.items():
        if (root / relative).is_dir():
            units.append((root / relative, layer, top_of_layer[layer]))

    for directory, layer, own_rank in units:
        for path in sorted(directory.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            lines = path.read_text(errors="replace").splitlines()
            for number, line in enumerate(lines, 1):
                match = INCLUDE.match(line)
                if not match or match.group(1) not in layer_of:
                    continue
                target = match.group(1)
                if rank[target] > own_rank:
                    include = line.split('"')[1]
                    problems.append(
                        f"{path.relative_to(root)}:{number}: {directory.name} ({layer}) includes "
                        f'"{include}" ({layer_of[target]})')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--stamp", type=pathlib.Path)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    layers = read_table(args.root / "core" / "layers.txt")
    if args.table:
        print_table(layers)
        return 0
    problems = check(args.root, layers)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-layers: {len(problems)} include(s) against the layers of core/layers.txt "
              "(docs/layers.md): move what they reach for down, or the code up", file=sys.stderr)
        return 1
    if args.stamp:
        args.stamp.parent.mkdir(parents=True, exist_ok=True)
        args.stamp.touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
