"""tools/check-layers.py against the tree and against copies of it with a back-edge injected.

usage: check_layers_test.py REPO_ROOT

The tree must pass. Each injected include — a lower layer reaching a higher one, a folder reaching
a later folder of its own layer, the CUDA device module reaching the engine — must make the check
exit 1 and name the file and line; a folder missing from core/layers.txt must fail too.
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1]).resolve()
SCRIPT = ROOT / "tools" / "check-layers.py"
failures = []


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                          capture_output=True, text=True)


def copy_tree(into):
    """The parts of the checkout the check reads: core/layers.txt, core/src, core/cuda."""
    core = into / "core"
    core.mkdir()
    shutil.copy(ROOT / "core" / "layers.txt", core / "layers.txt")
    shutil.copytree(ROOT / "core" / "src", core / "src")
    shutil.copytree(ROOT / "core" / "cuda", core / "cuda")


def expect(name, result, code, *needles):
    if result.returncode != code:
        failures.append(f"{name}: exit {result.returncode}, expected {code}\n{result.stderr}")
        return
    for needle in needles:
        if needle not in result.stderr:
            failures.append(f"{name}: {needle!r} not in the report:\n{result.stderr}")


def inject(root, relative, line):
    path = root / relative
    text = path.read_text()
    marker = "#pragma once\n" if "#pragma once\n" in text else ""
    if marker:
        text = text.replace(marker, marker + line + "\n", 1)
        number = text.splitlines().index(line) + 1
    else:
        text = line + "\n" + text
        number = 1
    path.write_text(text)
    return number


expect("the tree", run(ROOT), 0)

cases = [
    # (name, file to edit, include, what the report must say)
    ("base reaches serve", "core/src/util/check.hpp", '#include "serve/server.hpp"',
     'util (base) includes "serve/server.hpp" (serve)'),
    ("compute reaches engine", "core/src/model/dsv4_model.cpp",
     '#include "executor/executor.hpp"', 'model (compute) includes "executor/executor.hpp" (engine)'),
    ("ops reaches model", "core/src/ops/linear.hpp", '#include "model/dsv4_weights.hpp"',
     'ops (compute) includes "model/dsv4_weights.hpp" (compute)'),
    ("serve reaches the tools", "core/src/serve/server.cpp", '#include "ab/ab_runner.hpp"',
     'serve (serve) includes "ab/ab_runner.hpp" (tools)'),
    ("the CUDA module reaches engine", "core/cuda/kernels/ops_launch.hpp",
     '#include "runtime/runtime.hpp"', 'cuda (compute) includes "runtime/runtime.hpp" (engine)'),
]
for name, relative, line, said in cases:
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        copy_tree(root)
        expect(name + " (copy before the edit)", run(root), 0)
        number = inject(root, relative, line)
        expect(name, run(root), 1, f"{relative}:{number}: {said}")

with tempfile.TemporaryDirectory() as scratch:
    root = pathlib.Path(scratch)
    copy_tree(root)
    (root / "core" / "src" / "newfolder").mkdir()
    expect("a folder in no layer", run(root), 1, "core/src/newfolder: folder in no layer")

for failure in failures:
    print(failure, file=sys.stderr)
print(f"check_layers_test: {len(cases) + 2 - len(failures)} of {len(cases) + 2} checks passed "
      f"({len(failures)} failed)")
sys.exit(1 if failures else 0)
