#!/usr/bin/env python3
"""tools/rope_extension_table.py --study on planted evaluations: the means, the 95% t
intervals and the differences paired by seed it prints are the ones computed by hand.

Usage: rope_extension_table_test.py  (ctest: rope_extension_table_pairs_by_seed)
"""

import json
import os
import subprocess
import sys
import tempfile

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                     "rope_extension_table.py")

# bits/byte at 64 and 256 of three seeds. yarn is the plain model + 0.1 + a small per-seed
# wobble at 256 (differences 0.09, 0.10, 0.11: mean 0.1, sd 0.01, half-width
# 4.303 * 0.01 / sqrt(3) = 0.0248, excludes 0) and equal to it at 64 but for seed 2's
# +0.03 (differences 0, 0, 0.03: mean 0.01, half-width 4.303 * 0.01732 / sqrt(3) = 0.0430,
# does not exclude 0). The plain model's seeds differ by 1.0, so unpaired intervals
# would never separate the two.
PLAIN = {0: (2.0, 3.0), 1: (3.0, 4.0), 2: (4.0, 5.0)}
YARN = {0: (2.0, 3.09), 1: (3.0, 4.10), 2: (4.03, 5.11)}


def write(folder, seed, kind, values):
    results = [{"length": n, "bits_per_byte": v, "loss": v * 0.6931}
               for n, v in zip((64, 256), values)]
    with open(os.path.join(folder, "base-s%d-%s.json" % (seed, kind)), "w") as f:
        json.dump({"results": results}, f)


def main():
    with tempfile.TemporaryDirectory() as folder:
        for seed in PLAIN:
            write(folder, seed, "none", PLAIN[seed])
            write(folder, seed, "yarn", YARN[seed])
        out = subprocess.run([sys.executable, TABLE, folder, "--study"], capture_output=True,
                             text=True, check=True).stdout
    expected = [
        "| none | 3 | 3.0000 ± 2.4843 | 4.0000 ± 2.4843 |",  # 4.303 * 1 / sqrt(3)
        "| yarn | +0.0100 ± 0.0430 | +0.1000 ± 0.0248* |",
    ]
    missing = [line for line in expected if line not in out.splitlines()]
    if missing:
        print(out)
        sys.exit("rope_extension_table.py --study: lines not printed: %s" % missing)
    print("ok: means, intervals and paired differences as computed by hand")


if __name__ == "__main__":
    main()
