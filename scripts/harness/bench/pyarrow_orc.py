"""scripts/bench: Apache ORC C++ (through pyarrow) on local copies of a benchmark partition.

    python pyarrow_orc.py reencode --input DIR --output FILE [--codec zlib] [--stripe-size N]
    python pyarrow_orc.py read --input DIR [--column NAME] [--runs 3]
    python pyarrow_orc.py rewrite-each --input DIR [--codec zlib]

reencode  decodes every ORC file of DIR (sorted by name; names starting with . or _ skipped)
          and appends its rows to one ORCWriter: the C++ library decoding and re-encoding the
          same files as `compact --stripes rewrite`, with the same codec and stripe size.
read      reads every file of DIR whole (or only --column), --runs times after one untimed
          pass, and reports each run's seconds, their median and the files' stripe count.
rewrite-each  writes every ORC file of DIR again in place with the C++ writer, one file
          for one: the same rows from another writer (timestamps before 1970 with a fraction
          of a second stored as ORC C++ stores them, with negative nanoseconds, which ORC Java
          refuses to read and the tool heals as it re-encodes).
Each prints one JSON line.
"""
import argparse
import json
import os
import statistics
import time

import pyarrow
from pyarrow import orc


def data_files(d):
    return [os.path.join(d, n) for n in sorted(os.listdir(d))
            if not n.startswith((".", "_")) and os.path.isfile(os.path.join(d, n))]


def reencode(a):
    paths = data_files(a.input)
    t0 = time.perf_counter()
    rows = 0
    with orc.ORCWriter(a.output, compression=a.codec, stripe_size=a.stripe_size) as w:
        for p in paths:
            t = orc.read_table(p)
            rows += t.num_rows
            w.write(t)
    seconds = time.perf_counter() - t0
    stripes = orc.ORCFile(a.output).nstripes
    print(json.dumps({"files_in": len(paths), "rows": rows, "files_out": 1, "stripes": stripes,
                      "bytes_out": os.path.getsize(a.output), "seconds": round(seconds, 3),
                      "pyarrow": pyarrow.__version__}))


def rewrite_each(a):
    paths = data_files(a.input)
    t0 = time.perf_counter()
    for p in paths:
        orc.write_table(orc.read_table(p), p, compression=a.codec)
    print(json.dumps({"files": len(paths), "seconds": round(time.perf_counter() - t0, 3),
                      "pyarrow": pyarrow.__version__}))


def read(a):
    paths = data_files(a.input)
    columns = [a.column] if a.column else None

    def once():
        t0 = time.perf_counter()
        rows = sum(orc.read_table(p, columns=columns).num_rows for p in paths)
        return rows, time.perf_counter() - t0

    rows, _ = once()  # page cache and library warm-up, untimed
    runs = [once()[1] for _ in range(a.runs)]
    stripes = sum(orc.ORCFile(p).nstripes for p in paths)
    print(json.dumps({"files": len(paths), "rows": rows, "stripes": stripes, "column": a.column,
                      "runs": [round(s, 4) for s in runs],
                      "median_s": round(statistics.median(runs), 4)}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reencode")
    r.add_argument("--input", required=True)
    r.add_argument("--output", required=True)
    r.add_argument("--codec", default="zlib")
    r.add_argument("--stripe-size", type=int, default=64 << 20)
    r.set_defaults(run=reencode)
    q = sub.add_parser("read")
    q.add_argument("--input", required=True)
    q.add_argument("--column")
    q.add_argument("--runs", type=int, default=3)
    q.set_defaults(run=read)
    e = sub.add_parser("rewrite-each")
    e.add_argument("--input", required=True)
    e.add_argument("--codec", default="zlib")
    e.set_defaults(run=rewrite_each)
    a = ap.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
