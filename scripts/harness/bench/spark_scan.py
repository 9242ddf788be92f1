"""scripts/bench: how fast Spark reads back each tool's output, every column decoded.

    python spark_scan.py --input LABEL=DIR [--input LABEL=DIR ...] [--runs 3]

For each DIR (local ORC files; names starting with . or _ skipped, as Spark does), in one
local[2] session: one untimed scan, then --runs timed scans of SELECT sum(hash(*)), which
decodes every value of every column (count() would read no column data). The sums must agree
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
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-scan")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g")
             # hash() refuses maps unless told otherwise; the map column must be decoded too.
             .config("spark.sql.legacy.allowHashOnMapType", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    out = {}
    for spec in a.input:
        label, d = spec.split("=", 1)

        def once():
            t0 = time.perf_counter()
            s = spark.read.orc("file://" + os.path.abspath(d)).selectExpr(
                "sum(hash(*)) AS h").collect()[0]["h"]
            return s, time.perf_counter() - t0

        checksum, _ = once()
        runs = [once()[1] for _ in range(a.runs)]
        out[label] = {"runs": [round(s, 4) for s in runs],
                      "median_s": round(statistics.median(runs), 4), "sum_hash": checksum}
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main()
