"""scripts/spark read|scan: partitions of Hive tables as Spark 3.5 reads them through the metastore.

    python spark_read.py --hive-jars DIR SPEC
    python spark_read.py --hive-jars DIR --scan SPEC

SPEC is a JSON array of {"table": "db.t", "partition": "k=v", "queries": [WHERE, ...]}: one
Spark session reads them all (a session takes long to start). Spark's Hive support reads each
table's definition and the partition's location from the metastore (HMS_URI) and the files with
its own vectorized ORC reader (Hive ORC tables are converted to it), with ORC predicate pushdown
on. Prints one JSON array, an object per SPEC entry:
  rows     the partition's row count
  digest   SHA-256 of its rows (partition column left out), each row as canonical JSON, sorted:
           two reads give the same digest exactly when they give the same multiset of rows
  queries  for each --query: the WHERE clause, the rows it selects (canonical JSON, sorted) and
           the scan's "number of output rows": the rows of the row groups the ORC reader did
           not skip by min/max statistics or bloom filters (the filter itself runs after)

With --scan (scripts/spark scan: what clustering buys, on partitions too big to collect) no row
is brought to the driver: per SPEC entry
  rows     the partition's row count
  queries  for each WHERE clause, `SELECT count(*) ... WHERE <partition> AND (<clause>)`:
           "count" (the rows it selects), "scan_output_rows" (the ORC scan's "number of output
           rows", as above: rows of the row groups not skipped), "files_read" (the scan's
           "number of files read") and "seconds"
Predicates run on the columns as the table declares them (no casts), so they push down.
"""
import argparse
import base64
import datetime
import decimal
import hashlib
import json
import os
import re
import shutil
import tempfile
import time

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, count, lit


def plain(v):
    """A value as JSON can hold it, one way for each Spark type."""
    if isinstance(v, (bytes, bytearray)):
        return {"binary": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, (datetime.datetime, datetime.date)):
        return {type(v).__name__: v.isoformat()}
    if isinstance(v, float):
        # -0.0 and NaN survive; JSON numbers would lose the first and refuse the second.
        return {"double": v.hex()}
    if isinstance(v, dict):
        return {"map": sorted([plain(k), plain(x)] for k, x in v.items())}
    if isinstance(v, (list, tuple)):
        if hasattr(v, "asDict"):
            return {k: plain(x) for k, x in v.asDict().items()}
        return [plain(x) for x in v]
    return v


def canonical(row):
    return json.dumps(plain(row), sort_keys=True, ensure_ascii=False)


def scan_metric(df, name):
    """A metric of the one ORC scan in the plan `df` last ran."""
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    counts = []
    for i in range(leaves.size()):
        metrics = leaves.apply(i).metrics()
        if metrics.contains(name):
            counts.append(metrics.apply(name).value())
    if len(counts) != 1:
        raise SystemExit(f"expected one scan with the metric {name}, found {len(counts)}")
    return counts[0]


def scan_output_rows(df):
    """The ORC scan's output row count in the plan `df` last ran."""
    return scan_metric(df, "numOutputRows")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", help="JSON: [{table, partition (k=v, one level), queries}]")
    ap.add_argument("--hms-uri", default=os.environ.get("HMS_URI"))
    ap.add_argument("--default-fs", default=os.environ.get("HDFS_URL"))
    ap.add_argument("--hive-jars", required=True, help="directory of the Hive 3.1.3 client jars")
    ap.add_argument("--scan", action="store_true",
                    help="counts and scan metrics only (see the docstring)")
    a = ap.parse_args()

    # Hive's session leaves its scratch and resources directories behind: in one of ours.
    scratch = tempfile.mkdtemp(prefix="hoc-spark-read-")
    try:
        run(a, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(a, scratch):
    # One core unless SPARK_READ_MASTER says otherwise (scripts/bench-cluster: local[2]).
    spark = (SparkSession.builder.master(os.environ.get("SPARK_READ_MASTER", "local[1]"))
             .appName("hoc-spark-read")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "1g")
             # A session reads a few partitions and ends: C1 alone and the serial collector
             # halve its CPU (40 s to 22 s for a 180,000-row read), C2 compiling for code that
             # ends before it pays off.
             .config("spark.driver.extraJavaOptions",
                     os.environ.get("SPARK_READ_JAVA_OPTS",
                                    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"))
             .config("spark.sql.session.timeZone", "UTC")
             # The scan's metrics are read off the plan that ran: no adaptive re-planning.
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.orc.filterPushdown", "true")
             .config("spark.sql.hive.convertMetastoreOrc", "true")
             .config("spark.hadoop.fs.defaultFS", a.default_fs)
             .config("spark.hadoop.hive.metastore.uris", a.hms_uri)
             # Spark 3.5's builtin Hive client (2.3.9) calls get_table, which HMS 4 removed.
             .config("spark.sql.hive.metastore.version", "3.1.3")
             .config("spark.sql.hive.metastore.jars", "path")
             .config("spark.sql.hive.metastore.jars.path",
                     "file://" + os.path.abspath(a.hive_jars) + "/*.jar")
             .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
             .config("spark.local.dir", os.path.join(scratch, "local"))
             .config("spark.hadoop.hive.exec.local.scratchdir", os.path.join(scratch, "hive"))
             .config("spark.hadoop.hive.downloaded.resources.dir",
                     os.path.join(scratch, "resources"))
             .enableHiveSupport()
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    what = scan if a.scan else read
    print(json.dumps([what(spark, s) for s in json.loads(a.spec)]))
    spark.stop()


def read(spark, spec):
    key, value = spec["partition"].split("=", 1)
    part = spark.table(spec["table"]).where(f"`{key}` = '{value}'").drop(key)
    # Spark's own text of a column holding timestamps or dates, at any depth: Python's
    # datetime cannot hold every year Spark reads (0001-01-01 in UTC is year 0 in a zone west
    # of it).
    part = part.select([col(f.name).cast("string").alias(f.name)
                        if re.search(r"\b(timestamp|timestamp_ntz|date)\b", f.dataType.simpleString())
                        else col(f.name)
                        for f in part.schema.fields])
    lines = sorted(canonical(r) for r in part.collect())
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    queries = []
    for where in spec.get("queries", []):
        df = part.where(where)
        rows = sorted(canonical(r) for r in df.collect())
        queries.append({"where": where, "rows": rows, "scan_output_rows": scan_output_rows(df)})
    return {"rows": len(lines), "digest": digest, "queries": queries}


def scan(spark, spec):
    key, value = spec["partition"].split("=", 1)
    part = spark.table(spec["table"]).where(f"`{key}` = '{value}'")
    total = part.agg(count(lit(1))).collect()[0][0]
    queries = []
    for where in spec.get("queries", []):
        df = part.where(where).agg(count(lit(1)).alias("n"))
        t0 = time.perf_counter()
        n = df.collect()[0][0]
        queries.append({"where": where, "count": n,
                        "scan_output_rows": scan_metric(df, "numOutputRows"),
                        "files_read": scan_metric(df, "numFiles"),
                        "seconds": round(time.perf_counter() - t0, 3)})
    return {"table": spec["table"], "partition": spec["partition"], "rows": total,
            "queries": queries}


if __name__ == "__main__":
    main()
