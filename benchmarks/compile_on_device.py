"""Issue 15's programs and the frozen random-run findings on a GPU, through both compile paths.

    python benchmarks/compile_on_device.py cuda

On a GPU Inductor generates Triton kernels, whose fusion and loop order differ from the CPU
code the test suite sees. Each program runs in eager on the device (the oracle for f1-f4), and
through ``torch.compile(backend="fxinplace")`` and Inductor with
``fxinplace.inductor.installed(check=True)``; the frozen random programs run through
``check_compiled`` (each path against its execution oracle) with their inputs moved to the
device, aliasing kept. Exits non-zero on any difference attributed to fxinplace.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test" / "python"))  # issue15_programs, the frozen findings

import torch  # noqa: E402

import fxinplace  # noqa: E402, F401 - registers the backend
import fxinplace.inductor  # noqa: E402
from fxinplace.testing.harness.compile_pipelines import COMPILE_PIPELINES, check_compiled, compile_failures  # noqa: E402
from fxinplace.testing.harness.on_device import ProgramOnDevice, default_device  # noqa: E402
from fxinplace.testing.random.programs import RandomProgram  # noqa: E402


def _issue15_cases(device: str) -> list[tuple[str, object, object]]:
    from issue15_programs import f1, f2, f3, f4

    def f2_args():
        x = torch.arange(16, dtype=torch.int32, device=device).reshape(4, 4)
        return x, torch.tensor([7, 8, 9, 10], dtype=torch.int32, device=device)

    return [
        ("f1", f1, lambda: (torch.arange(16.0, device=device).reshape(4, 4),)),
        ("f2", f2, f2_args),
        ("f3", f3, lambda: (torch.arange(32.0, device=device).reshape(4, 8) / 7,)),
        ("f4", f4, lambda: (torch.arange(64.0, device=device).reshape(8, 8) / 3,)),
    ]


def _same(a: object, b: object) -> bool:
    a_leaves = torch.utils._pytree.tree_leaves(a)
    b_leaves = torch.utils._pytree.tree_leaves(b)
    if len(a_leaves) != len(b_leaves):
        return False
    pairs = zip(a_leaves, b_leaves, strict=True)
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in pairs)


def run_issue15(device: str) -> int:
    failures = 0
    for name, f, make in _issue15_cases(device):
        args = make()
        want = f(*args)
        want_args = args
        for path in ("backend", "hook"):
            torch._dynamo.reset()
            got_args = make()
            if path == "backend":
                got = torch.compile(f, backend="fxinplace", options={"check": True})(*got_args)
            else:
                with fxinplace.inductor.installed(check=True):
                    got = torch.compile(f)(*got_args)
            ok = _same(got, want) and _same(got_args, want_args)
            failures += not ok
            print(f"{name} {path}: {'ok' if ok else 'WRONG'}", flush=True)
    return failures


def run_frozen(device: str) -> int:
    from test_compile_random_findings import FOUND, HOOK_FOUND

    failures = 0
    with default_device(device):
        for table, paths in ((FOUND, ("backend",)), (HOOK_FOUND, ("hook",))):
            for seed, (make_args, inputs, body, returns) in table.items():
                program = RandomProgram(seed, make_args, inputs, body, returns, reject_lines=False)
                pipelines = [p for p in COMPILE_PIPELINES if p.path in paths]
                report = check_compiled(ProgramOnDevice(program, device), pipelines=pipelines)
                found = compile_failures(report)
                failures += bool(found)
                statuses = {k: v.status for k, v in report.results.items()}
                print(f"frozen {seed}: {statuses}", flush=True)
                for pipeline, finding in found:
                    print(f"  [{pipeline}] {finding.kind}: {finding.signature}\n{finding.detail[-800:]}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("device", nargs="?", default="cuda", help="the device to run on (default cuda)")
    device = ap.parse_args().device
    print(f"torch {torch.__version__} on {device}", flush=True)
    failures = run_issue15(device) + run_frozen(device)
    print(f"{failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
