#!/usr/bin/env python3
"""Compare regenerated JSON fixtures with the committed ones.

Usage: compare_fixtures.py NEW COMMITTED  (two files, or two folders of *.json)

Everything that is not a float must be equal: the set of files, keys, list
lengths, strings, booleans and integers (bucket and index tensors). A float may
differ by 1e-12 relative to the largest magnitude in its array (its tensor), or
to itself when it is not in an array. float64 BLAS results differ in the last
bits between OpenBLAS kernels (Haswell, SkylakeX), so PyTorch on another CPU does
not reproduce the files byte for byte: the differences seen are below 1e-15 of
the tensor's largest value, but reach 5e-11 of the value itself where a gradient
entry is the small result of a cancellation. A tensor whose every entry is such a
remainder has no scale of its own (FIRE's first-layer bias gradient in
fire_causal.json is zero in exact arithmetic: its units' slopes are constant and a
causal softmax row's logit gradients sum to zero, so the file holds 1e-15 noise that
an AMD EPYC Zen 4 reproduces as 0 or 2e-15), so an array's scale is at least
FILE_SCALE_FLOOR of the largest magnitude in its file. Prints each mismatch with its
JSON path; exits 1 if there is any.
"""

import json
import math
import os
import sys

RELATIVE_TOLERANCE = 1e-12
FILE_SCALE_FLOOR = 1e-3  # an array's scale: at least this fraction of its file's largest float
MAX_REPORTED = 10  # mismatches printed per file


def is_float_array(values):
    return any(isinstance(v, float) for v in values) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def magnitude(values):
    return max((abs(v) for v in values if math.isfinite(v)), default=0.0)


def largest_float(value):
    """The largest finite float magnitude anywhere in a JSON value."""
    if isinstance(value, dict):
        return max((largest_float(v) for v in value.values()), default=0.0)
    if isinstance(value, list):
        return max((largest_float(v) for v in value), default=0.0)
    return abs(value) if isinstance(value, float) and math.isfinite(value) else 0.0


def compare(new, old, path, mismatches, worst, floor, scale=None):
    """Appends to mismatches; worst[0] tracks the largest scaled float difference.
    `scale`: the largest magnitude of the array a float belongs to; `floor`: the least
    scale of an array (FILE_SCALE_FLOOR of the file's largest float)."""
    if type(new) is not type(old):
        mismatches.append(f"{path}: {type(new).__name__} {new!r} != {type(old).__name__} {old!r}")
    elif isinstance(new, dict):
        if new.keys() != old.keys():
            mismatches.append(f"{path}: keys {sorted(new)} != {sorted(old)}")
            return
        for key in new:
            compare(new[key], old[key], f"{path}.{key}", mismatches, worst, floor)
    elif isinstance(new, list):
        if len(new) != len(old):
            mismatches.append(f"{path}: length {len(new)} != {len(old)}")
            return
        array_scale = (max(magnitude(new), magnitude(old), floor)
                       if is_float_array(new) else None)
        for i, (a, b) in enumerate(zip(new, old)):
            compare(a, b, f"{path}[{i}]", mismatches, worst, floor, array_scale)
    elif isinstance(new, float):
        if new == old or (math.isnan(new) and math.isnan(old)):
            return
        reference = max(abs(new), abs(old)) if scale is None else scale
        difference = abs(new - old) / reference if math.isfinite(new - old) else math.inf
        worst[0] = max(worst[0], difference)
        if not difference <= RELATIVE_TOLERANCE:
            mismatches.append(f"{path}: {new!r} != {old!r} (difference {difference:.3g} of "
                              f"{'the array' if scale is not None else 'the value'}'s magnitude)")
    elif new != old:
        mismatches.append(f"{path}: {new!r} != {old!r}")


def json_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".json"))


def main(new_path, old_path):
    if os.path.isdir(new_path):
        new_names, old_names = json_files(new_path), json_files(old_path)
        if new_names != old_names:
            print(f"{new_path} and {old_path} hold different files: "
                  f"only new: {sorted(set(new_names) - set(old_names))}, "
                  f"only committed: {sorted(set(old_names) - set(new_names))}")
            return 1
        pairs = [(os.path.join(new_path, n), os.path.join(old_path, n)) for n in new_names]
    else:
        pairs = [(new_path, old_path)]
    failed, worst = False, [0.0]
    for new_file, old_file in pairs:
        mismatches = []
        with open(new_file) as a, open(old_file) as b:
            new_json, old_json = json.load(a), json.load(b)
        floor = FILE_SCALE_FLOOR * max(largest_float(new_json), largest_float(old_json))
        compare(new_json, old_json, "$", mismatches, worst, floor)
        for line in mismatches[:MAX_REPORTED]:
            print(f"{old_file}: {line}")
        if len(mismatches) > MAX_REPORTED:
            print(f"{old_file}: ... {len(mismatches) - MAX_REPORTED} more mismatches")
        failed = failed or bool(mismatches)
    print(f"{old_path}: {len(pairs)} file(s), largest float difference {worst[0]:.3g} of its "
          f"array's magnitude (tolerance {RELATIVE_TOLERANCE:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
