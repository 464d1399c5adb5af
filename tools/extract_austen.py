#!/usr/bin/env python3
"""Extracts Jane Austen's six novels from Debian's r-cran-janeaustenr into
data/corpus/austen.txt, without R: a small reader of R's lazy-load database
(data/Rdata.rdx + Rdata.rdb) and of R's XDR serialization format.

    tools/extract_austen.py                 # apt-get download + dpkg -x into a temp dir
    tools/extract_austen.py --deb FILE.deb  # from a .deb already downloaded
    tools/extract_austen.py --out PATH      # default: data/corpus/austen.txt

The package stores each novel as a character vector, one element per line of the
Project Gutenberg text (blank lines included). The corpus file is the six novels in
publication order, each line followed by a newline, the novels separated by one
blank line. Provenance and licence: data/corpus/README.md.
"""

import argparse
import gzip
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

PACKAGE = "r-cran-janeaustenr"
DATA_DIR = "usr/lib/R/site-library/janeaustenr/data"
# Publication order: the R package's own names for the novels.
NOVELS = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]

# SEXP types of R's serialization (R Internals, "Serialization formats").
SYMSXP, LISTSXP, CHARSXP, LGLSXP, INTSXP, REALSXP, STRSXP, VECSXP = 1, 2, 9, 10, 13, 14, 16, 19
REFSXP, NILVALUE_SXP = 255, 254
SPECIAL_ENVIRONMENTS = {253, 242, 241, 251, 252}  # global, empty, base env, missing arg, unbound
HAS_ATTR, HAS_TAG = 1 << 9, 1 << 10
NA_INT = -(2**31)


class RData(Exception):
    pass


class XdrReader:
    """Reads the subset of R's XDR serialization that data files of strings use."""

    def __init__(self, data):
        self.data, self.pos, self.refs = data, 0, []

    def take(self, n):
        if self.pos + n > len(self.data):
            raise RData("truncated serialized object")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def header(self):
        if self.take(2) != b"X\n":
            raise RData("not R's XDR serialization format")
        version = self.int()
        self.int(), self.int()  # the writer's R version and the oldest that reads it
        if version == 3:
            self.take(self.int())  # native encoding name
        elif version != 2:
            raise RData(f"serialization version {version} is not supported")

    def item(self):
        flags = self.int()
        kind, levels = flags & 0xFF, flags >> 12
        if kind == NILVALUE_SXP or kind in SPECIAL_ENVIRONMENTS:
            return None
        if kind == REFSXP:
            index = flags >> 8 or self.int()  # packed into the flags, else the next int
            if not 1 <= index <= len(self.refs):
                raise RData(f"reference {index} to an unread symbol")
            return self.refs[index - 1]
        if kind == SYMSXP:
            name = self.item()  # a CHARSXP
            self.refs.append(name)
            return name
        if kind == CHARSXP:
            length = self.int()
            if length == -1:
                return None  # NA_character_
            raw = self.take(length)
            return raw.decode("latin-1") if levels & 4 else raw.decode("utf-8")
        if kind == LISTSXP:  # a pairlist: (attributes), (tag), car, cdr
            if flags & HAS_ATTR:
                self.item()  # a pairlist's own attributes: unused here
            tag = self.item() if flags & HAS_TAG else None
            head = self.item()
            rest = self.item()
            return [(tag, head)] + (rest if isinstance(rest, list) else [])
        if kind in (LGLSXP, INTSXP):
            values = [self.int() for _ in range(self.int())]
            value = [None if v == NA_INT else v for v in values]
        elif kind == REALSXP:
            n = self.int()
            value = list(struct.unpack(f">{n}d", self.take(8 * n)))
        elif kind in (STRSXP, VECSXP):
            value = [self.item() for _ in range(self.int())]
        else:
            raise RData(f"SEXP type {kind} is not supported by this reader")
        if flags & HAS_ATTR:
            attributes = dict(self.item())
            names = attributes.get("names")
            if names is not None and kind == VECSXP:
                return dict(zip(names, value))
        return value


def unserialize(data):
    reader = XdrReader(data)
    reader.header()
    return reader.item()


def lazy_load(data_dir):
    """{name: object} of an R package's lazy-load database Rdata.rdx/.rdb."""
    with open(os.path.join(data_dir, "Rdata.rdx"), "rb") as f:
        index = unserialize(gzip.decompress(f.read()))
    with open(os.path.join(data_dir, "Rdata.rdb"), "rb") as f:
        database = f.read()
    objects = {}
    for name, (offset, length) in index["variables"].items():
        record = database[offset : offset + length]
        # Each record: 4 bytes big-endian uncompressed length, then a zlib stream.
        (size,) = struct.unpack(">I", record[:4])
        payload = zlib.decompress(record[4:])
        if len(payload) != size:
            raise RData(f"{name}: {len(payload)} bytes after decompression, the index says {size}")
        objects[name] = unserialize(payload)
    return objects


def unpack_package(tmp):
    """apt-get download + dpkg -x into tmp; -> the path of the .deb."""
    subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, check=True)
    debs = [f for f in os.listdir(tmp) if f.startswith(PACKAGE) and f.endswith(".deb")]
    if len(debs) != 1:
        raise RData(f"expected one {PACKAGE} .deb in {tmp}, found {debs}")
    return os.path.join(tmp, debs[0])


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deb", help=f"a downloaded {PACKAGE} .deb (default: apt-get download it)")
    parser.add_argument("--out", default=os.path.join(root, "data", "corpus", "austen.txt"))
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="relpos_austen_")
    try:
        deb = args.deb or unpack_package(tmp)
        subprocess.run(["dpkg", "-x", deb, os.path.join(tmp, "x")], check=True)
        novels = lazy_load(os.path.join(tmp, "x", DATA_DIR))
        missing = [n for n in NOVELS if n not in novels]
        if missing:
            raise RData(f"{deb}: no {missing} in the package's data (found {sorted(novels)})")
        text = "\n".join("".join(line + "\n" for line in novels[n]) for n in NOVELS)
        encoded = text.encode("utf-8")
        with open(args.out + ".tmp", "wb") as f:
            f.write(encoded)
            f.flush()
            os.fsync(f.fileno())
        os.replace(args.out + ".tmp", args.out)
        lines = sum(len(novels[n]) for n in NOVELS)
        print(f"wrote {args.out}: {len(encoded)} bytes, {lines} lines of {len(NOVELS)} novels from {os.path.basename(deb)}")
    except (RData, subprocess.CalledProcessError, OSError) as e:
        print(f"extract_austen: error: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
