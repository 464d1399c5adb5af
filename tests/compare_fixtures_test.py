#!/usr/bin/env python3
"""tests/compare_fixtures.py on planted fixtures: last-bit noise passes, a change fails.

Usage: compare_fixtures_test.py  (ctest: compare_fixtures_catches_changes)
"""

import json
import os
import subprocess
import sys
import tempfile

COMPARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_fixtures.py")


def differs(new, old):
    """True when compare_fixtures.py reports a mismatch between the two JSON values."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [os.path.join(folder, name) for name in ("new.json", "old.json")]
        for path, value in zip(paths, (new, old)):
            with open(path, "w") as f:
                json.dump(value, f)
        result = subprocess.run([sys.executable, COMPARE, *paths], capture_output=True, text=True)
    return result.returncode != 0


def fixture(grad, bias_grad):
    return {"tensors": {"q": [3.0, -1.5, 0.25], "grad_q": grad, "grad_b1": bias_grad}}


def main():
    base = fixture([2.0, -0.5, 1.0], [0.0, 8.9e-16, 1.8e-15])
    cases = [
        ("identical", fixture([2.0, -0.5, 1.0], [0.0, 8.9e-16, 1.8e-15]), False),
        ("last-bit noise in a tensor", fixture([2.0, -0.5 + 2e-16, 1.0], base["tensors"]["grad_b1"]),
         False),
        ("a tensor of cancellation remainders redrawn",
         fixture([2.0, -0.5, 1.0], [8.9e-16, 0.0, 1.7e-15]), False),
        ("a gradient off by 1e-9 of its tensor", fixture([2.0, -0.5 + 2e-9, 1.0],
                                                        base["tensors"]["grad_b1"]), True),
        ("a small tensor off by 1e-6 absolute", fixture([2.0, -0.5, 1.0], [1e-6, 8.9e-16, 1.8e-15]),
         True),
        ("a length changed", fixture([2.0, -0.5], base["tensors"]["grad_b1"]), True),
    ]
    failed = 0
    for name, new, expected in cases:
        got = differs(new, base)
        print(f"{'ok  ' if got == expected else 'FAIL'} {name}: "
              f"{'reported' if got else 'passed'}, expected {'reported' if expected else 'passed'}")
        failed += got != expected
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
