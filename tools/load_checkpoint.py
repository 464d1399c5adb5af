#!/usr/bin/env python3
"""Print what a relpos checkpoint holds, using only h5py and numpy.

Usage (Debian: apt-get install python3-h5py python3-numpy):
    /usr/bin/python3 tools/load_checkpoint.py runs/x/ckpt_00001000.h5

Shows that a checkpoint is plain HDF5 (layout: docs/checkpoint.md): the /state
attributes, the resolved config, then one line per parameter and optimizer
state: dotted name, shape, dtype and L2 norm. It does not check the digests
(relpos inspect does).
"""

import argparse
import sys

import h5py
import numpy as np

SCALAR_ATTRIBUTES = ("format_version", "step", "tokens_seen")


def tensors_under(group):
    """Yields (path below group as a list of names, dataset) for every dataset."""
    found = []

    def collect(path, obj):  # returning None lets visititems go on
        if isinstance(obj, h5py.Dataset):
            found.append((path.split("/"), obj))

    group.visititems(collect)
    return found


def describe(name, dataset):
    values = dataset[()]
    norm = float(np.linalg.norm(np.asarray(values, dtype=np.float64).ravel()))
    return "%s shape=%s dtype=%s norm=%.9g" % (name, dataset.shape, dataset.dtype, norm)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    args = parser.parse_args()
    try:
        f = h5py.File(args.checkpoint, "r")
    except OSError as error:
        sys.exit("checkpoint %s: cannot open as HDF5: %s" % (args.checkpoint, error))
    with f:
        if "state" not in f:
            sys.exit("checkpoint %s: no /state group" % args.checkpoint)
        state = f["state"].attrs
        for key in SCALAR_ATTRIBUTES:
            print("%s: %s" % (key, int(state[key])))
        for key in sorted(k for k in state if k not in SCALAR_ATTRIBUTES):
            print("rng %s: %s" % (key, [int(v) for v in state[key]]))
        print("config:")
        print(f["config"][()].tobytes().decode("utf-8"))  # format 2: UTF-8 bytes
        print("params:")
        for parts, dataset in tensors_under(f["params"]):
            print("  " + describe(".".join(parts), dataset))
        if "optim" in f:
            print("optim:")
            for parts, dataset in tensors_under(f["optim"]):
                print("  " + describe(".".join(parts[:-1]) + "/" + parts[-1], dataset))
        if "knn_memory" in f:  # a run with model.knn_memory (docs/knn-memory.md)
            print("knn_memory:")
            for parts, dataset in tensors_under(f["knn_memory"]):
                print("  " + describe("/".join(parts), dataset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
