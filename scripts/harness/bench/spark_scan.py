"""scripts/bench: how fast Spark reads back each tool's output, every column decoded.

    python spark_scan.py --input LABEL=DIR [--input LABEL=DIR ...] [--runs 5]

For each DIR (local ORC files; names starting with . or _ skipped, as Spark does), in one
local[2] session: one untimed scan of every DIR, then --runs rounds, each a timed scan of every
DIR in turn, of SELECT sum(hash(*)), which decodes every value of every column (count() would
read no column data). Rounds, not all of one DIR's runs then the next's: the JVM keeps getting
faster through a session, so whichever DIR came last was read by the warmest JVM (the first,
ours, measured 1.09-1.23x Spark's own output that way, pyarrow's output alike). The sums must agree
between inputs holding the same rows, whatever their order: a check that all outputs hold the
same data. Prints one JSON line: per label, each run's seconds, their median and the sum.
"""
import argparse
import json
import os
import statistics
import time

from pyspark.sql import SparkSession


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", action="append", required=True, metavar="LABEL=DIR")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-scan")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g")
             # hash() refuses maps unless told otherwise; the map column must be decoded too.
             .config("spark.sql.legacy.allowHashOnMapType", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    inputs = [spec.split("=", 1) for spec in a.input]

    def once(d):
        t0 = time.perf_counter()
        s = spark.read.orc("file://" + os.path.abspath(d)).selectExpr(
            "sum(hash(*)) AS h").collect()[0]["h"]
        return s, time.perf_counter() - t0

    checksums = {label: once(d)[0] for label, d in inputs}
    runs = {label: [] for label, _ in inputs}
    for _ in range(a.runs):
        for label, d in inputs:
            runs[label].append(once(d)[1])
    out = {label: {"runs": [round(s, 4) for s in runs[label]],
                   "median_s": round(statistics.median(runs[label]), 4),
                   "sum_hash": checksums[label]}
           for label, _ in inputs}
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main()
