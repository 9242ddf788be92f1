#!/usr/bin/env python3
"""Apache ORC C++, through pyarrow, as the tests' second writer and reader (run scripts/pyorc,
which makes the environment, not this).

  write DIR  ORC files from the C++ writer (pyarrow.orc.write_table) with every type pyarrow
             writes (char and varchar it cannot), about one value in ten null, deterministic
             for a seed, a bloom filter on c_string. Without
             --timestamps no column is a timestamp; with it, c_ts and c_tsl are, and hold
             pre-1970 values with sub-second parts among others (pyarrow stores those
             with negative nanoseconds, which Java ORC refuses to read; with
             --whole-seconds-before-1970 they are whole seconds; with
             --fractions-before-1970-but-not-in-its-last-second none is in the second before
             1970, which ORC's standard layout cannot hold). With --union, c_union
             is a union column, never null (pyarrow's writer cannot write a null union row).
  rows FILE  each file read by the C++ reader, one JSON object per file per line:
             {"file", "rows": [[value per column] per row], "stripes", "compression",
             "writer", "schema"}. Values in a form that survives JSON exactly: timestamps as
             nanoseconds since the epoch, decimals as text, binary as hex, floats by repr.
  rewrite FILE...  each file written again in place by the C++ writer, with its codec and row
             index stride (scripts/fixtures: the clustering set's ORC C++ half).
"""
import argparse
import datetime
import decimal
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.orc as orc

CODECS = ["zlib", "snappy", "zstd", "lz4", "uncompressed"]


def schema(timestamps, union):
    fields = [
        ("c_boolean", pa.bool_()),
        ("c_tinyint", pa.int8()),
        ("c_smallint", pa.int16()),
        ("c_int", pa.int32()),
        ("c_bigint", pa.int64()),
        ("c_float", pa.float32()),
        ("c_double", pa.float64()),
        ("c_dec10_2", pa.decimal128(10, 2)),
        ("c_dec38_18", pa.decimal128(38, 18)),
        ("c_string", pa.string()),
        ("c_binary", pa.binary()),
        ("c_date", pa.date32()),
    ]
    if timestamps:
        fields += [
            ("c_ts", pa.timestamp("ns")),
            ("c_tsl", pa.timestamp("ns", tz="UTC")),
        ]
    fields += [
        ("c_array", pa.list_(pa.int32())),
        ("c_map", pa.map_(pa.string(), pa.int32())),
        ("c_struct", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ]
    if union:
        fields.append(
            ("c_union", pa.sparse_union([pa.field("i", pa.int32()), pa.field("s", pa.string())])))
    return pa.schema(fields)


def column(name, typ, n, rnd, base, before_1970=None):
    """n values of one column; None about one time in ten (never for unions, whose nulls
    pyarrow's writer cannot express)."""

    def maybe(make):
        return [None if rnd.random() < 0.1 else make(base + i) for i in range(n)]

    def ts(r):
        v = rnd.randint(-2 * 10**18, 2 * 10**18) // rnd.choice([1, 1000, 10**9])
        if before_1970 == "whole" and v < 0:
            return v - v % 10**9
        if before_1970 == "not-last-second" and -10**9 < v < 0:
            return v - 10**9
        return v

    if name == "c_union":
        tags = [rnd.randrange(2) for _ in range(n)]
        ints = pa.array([base + i if t == 0 else None for i, t in enumerate(tags)], pa.int32())
        strs = pa.array([f"u{base + i}" if t == 1 else None for i, t in enumerate(tags)])
        return pa.UnionArray.from_sparse(pa.array(tags, pa.int8()), [ints, strs], ["i", "s"])
    makers = {
        "c_boolean": lambda r: r % 3 == 0,
        "c_tinyint": lambda r: rnd.randint(-128, 127),
        "c_smallint": lambda r: rnd.randint(-32768, 32767),
        "c_int": lambda r: rnd.randint(-2**31, 2**31 - 1),
        "c_bigint": lambda r: rnd.randint(-2**63, 2**63 - 1),
        "c_float": lambda r: rnd.uniform(-1e6, 1e6),
        "c_double": lambda r: rnd.uniform(-1e12, 1e12),
        "c_dec10_2": lambda r: decimal.Decimal(rnd.randint(-10**10 + 1, 10**10 - 1)).scaleb(-2),
        # Wide, but with sums that fit 38 digits (where Java rounds a sum and we leave it out).
        "c_dec38_18": lambda r: decimal.Decimal(rnd.randint(-10**30, 10**30)).scaleb(-18),
        "c_string": lambda r: f"s{rnd.randint(0, 50)}-" + "x" * rnd.randint(0, 20),
        "c_binary": lambda r: bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 12))),
        "c_date": lambda r: datetime.date(1900, 1, 1) + datetime.timedelta(days=rnd.randint(0, 80000)),
        # Before 1970 and after, whole seconds and not: the values one decoder misreads.
        "c_ts": ts,
        "c_tsl": ts,
        "c_array": lambda r: [None if rnd.random() < 0.1 else rnd.randint(-1000, 1000)
                              for _ in range(rnd.randint(0, 4))],
        "c_map": lambda r: [(f"k{j}", rnd.randint(-1000, 1000)) for j in range(rnd.randint(0, 3))],
        "c_struct": lambda r: {"a": rnd.randint(-1000, 1000), "b": f"b{r}"},
    }
    return pa.array(maybe(makers[name]), typ)


def write(args):
    os.makedirs(args.dir, exist_ok=True)
    rnd = random.Random(args.seed)
    s = schema(args.timestamps, args.union)
    for f in range(args.files):
        codec = args.codec or CODECS[f % len(CODECS)]
        base = f * args.rows
        before_1970 = ("whole" if args.whole_seconds_before_1970 else
                       "not-last-second" if args.fractions_before_1970_but_not_in_its_last_second
                       else None)
        table = pa.table([column(fl.name, fl.type, args.rows, rnd, base, before_1970)
                          for fl in s],
                         schema=s)
        path = os.path.join(args.dir, f"cpp-{f:03d}.orc")
        orc.write_table(table, path, compression=codec, row_index_stride=args.stride,
                        # ORC column ids: the root is 0, and only primitives come before.
                        bloom_filter_columns=[s.get_field_index("c_string") + 1])
        print(path)


def rewrite(args):
    """Each file written again in place by ORC C++: same rows, codec and row index stride."""
    for path in args.files:
        f = orc.ORCFile(path)
        table = f.read()
        codec = f.compression.lower() if f.compression != "UNCOMPRESSED" else "uncompressed"
        tmp = path + ".cpp-tmp"
        orc.write_table(table, tmp, compression=codec, row_index_stride=f.row_index_stride)
        os.replace(tmp, path)
    print(json.dumps({"rewritten": len(args.files), "pyarrow": pa.__version__}))


def plain(t):
    """The type a column is read as for printing: timestamps as their int64 nanoseconds."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(plain(t.key_type), plain(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(plain(t.value_type))
    return t


def values(col):
    if pa.types.is_union(col.type):
        return col.to_pylist()
    target = plain(col.type)
    return (col.cast(target) if target != col.type else col).to_pylist()


def as_json(v):
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    raise TypeError(f"cannot print {type(v)}")


def rows(args):
    for path in args.files:
        f = orc.ORCFile(path)
        table = f.read()
        cols = [values(c) for c in table.columns]
        out = {
            "file": path,
            "rows": [list(r) for r in zip(*cols)] if cols else [],
            "stripes": f.nstripes,
            "compression": f.compression,
            "writer": f.writer,
            "schema": str(table.schema),
        }
        sys.stdout.write(json.dumps(out, default=as_json) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir")
    w.add_argument("--files", type=int, default=10)
    w.add_argument("--rows", type=int, default=200)
    w.add_argument("--codec", choices=CODECS, help="default: the files take turns")
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--stride", type=int, default=10000, help="rows per row group")
    w.add_argument("--timestamps", action="store_true")
    w.add_argument("--whole-seconds-before-1970", action="store_true")
    w.add_argument("--fractions-before-1970-but-not-in-its-last-second", action="store_true")
    w.add_argument("--union", action="store_true")
    r = sub.add_parser("rows")
    r.add_argument("files", nargs="+")
    rw = sub.add_parser("rewrite", help="write each ORC file again in place with ORC C++")
    rw.add_argument("files", nargs="+")
    args = p.parse_args()
    {"write": write, "rows": rows, "rewrite": rewrite}[args.cmd](args)


if __name__ == "__main__":
    main()
