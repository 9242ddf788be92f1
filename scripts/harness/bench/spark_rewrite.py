"""scripts/bench: the Spark rewrite users copy from blog posts, on one partition.

    python spark_rewrite.py --table DB.T --partition dt=2026-11-01 --location LOC
                            --original ORIGINAL_DIR --bytes N --codec zlib
                            [--mode hive|path] [--target-size BYTES] [--sort-by COL]

Both modes read the partition, coalesce(n) with n = ceil(bytes / target), write ORC to a
staging directory (with --sort-by COL instead repartitionByRange(n, COL).sortWithinPartitions(COL):
the clustered rewrite, rows ordered across the n files), check the row count of what was written against what was read, then:
  hive  INSERT OVERWRITE TABLE ... PARTITION (...) SELECT * FROM the staged files, through the
        Hive Metastore (spark.sql.catalogImplementation=hive, hive.metastore.uris); before the
        timed part the partition is pointed back at ORIGINAL_DIR, since the benchmark's earlier
        phases moved it.
  path  read ORIGINAL_DIR by path and swap directories (rename the old one aside, the staged
        one into its place); the metastore is not touched.
Prints one JSON line with the row counts and the seconds of each step.
"""
import argparse
import json
import math
import os
import time

from pyspark.sql import SparkSession


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--partition", required=True)
    ap.add_argument("--original", required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--codec", default="zlib")
    ap.add_argument("--mode", choices=["hive", "path"], default="hive")
    ap.add_argument("--target-size", type=int, default=256 << 20)
    ap.add_argument("--sort-by", help="range-partition by this column and sort each partition")
    # Spark 3.5's builtin Hive client (2.3.9) calls get_table, which HMS 4 removed; 3.1.3's
    # client uses get_table_req. Its jars come from Maven Central (cached in ~/.ivy2).
    ap.add_argument("--hive-version", default="3.1.3")
    ap.add_argument("--hive-jars", default="maven")
    ap.add_argument("--hms-uri", default=os.environ.get("HMS_URI"))
    ap.add_argument("--default-fs", default=os.environ.get("HDFS_URL"))
    a = ap.parse_args()

    t0 = time.time()
    b = (SparkSession.builder.master("local[2]").appName("bench-spark-rewrite")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "2g")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.local.dir", os.environ.get("SPARK_LOCAL_DIRS", "/tmp"))
         .config("spark.hadoop.fs.defaultFS", a.default_fs)
         .config("spark.sql.orc.compression.codec", a.codec)
         .config("spark.sql.warehouse.dir", "/tmp/bench-spark-warehouse"))
    if a.mode == "hive":
        b = (b.config("spark.hadoop.hive.metastore.uris", a.hms_uri)
             .config("spark.sql.hive.metastore.version", a.hive_version)
             .config("spark.sql.hive.metastore.jars", a.hive_jars)
             .config("hive.exec.dynamic.partition.mode", "nonstrict")
             .enableHiveSupport())
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    jvm = spark._jvm
    hconf = spark._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(a.default_fs), hconf)
    Path = jvm.org.apache.hadoop.fs.Path
    t_start = time.time()

    key, value = a.partition.split("=", 1)
    n = max(1, math.ceil(a.bytes / a.target_size))
    steps = {"session": round(t_start - t0, 3)}
    if a.mode == "hive":
        # Untimed set-up: the partition back at the files the other tools read.
        spark.sql(f"ALTER TABLE {a.table} PARTITION ({key}='{value}') SET LOCATION '{a.original}'")
        t1 = time.time()
        steps["setup"] = round(t1 - t_start, 3)
        df = spark.table(a.table).where(f"{key} = '{value}'").drop(key)
        location = a.original
    else:
        t1 = time.time()
        df = spark.read.orc(a.original)
        location = a.original
    staging = location.rstrip("/") + f"/../.spark-staging-{int(t1)}"
    rows_in = df.count()
    t2 = time.time()
    steps["count_input"] = round(t2 - t1, 3)
    if a.sort_by:
        out = df.repartitionByRange(n, a.sort_by).sortWithinPartitions(a.sort_by)
    else:
        out = df.coalesce(n)
    out.write.mode("overwrite").option("compression", a.codec).orc(staging)
    t3 = time.time()
    steps["write_staging"] = round(t3 - t2, 3)
    staged = spark.read.orc(staging)
    rows_staged = staged.count()
    t4 = time.time()
    steps["count_staging"] = round(t4 - t3, 3)
    if rows_staged != rows_in:
        raise SystemExit(f"count check failed: read {rows_in}, staged {rows_staged}")
    if a.mode == "hive":
        staged.createOrReplaceTempView("bench_staged")
        spark.sql(f"INSERT OVERWRITE TABLE {a.table} PARTITION ({key}='{value}') "
                  f"SELECT * FROM bench_staged")
        fs.delete(Path(staging), True)
    else:
        old = Path(location.rstrip("/") + f".old-spark-{int(t1)}")
        if not fs.rename(Path(location), old) or not fs.rename(Path(staging), Path(location)):
            raise SystemExit("swapping directories failed")
    t5 = time.time()
    steps["publish"] = round(t5 - t4, 3)
    rows_after = spark.table(a.table).where(f"{key} = '{value}'").count() if a.mode == "hive" \
        else spark.read.orc(location).count()
    steps["count_after"] = round(time.time() - t5, 3)
    files_after = 0
    if a.mode == "hive":
        part = spark.sql(f"DESCRIBE FORMATTED {a.table} PARTITION ({key}='{value}')").collect()
        loc = [r for r in part if r[0].strip() == "Location"]
        location = loc[0][1] if loc else location
    for st in fs.listStatus(Path(location)):
        name = st.getPath().getName()
        if st.isFile() and not name.startswith(("_", ".")):
            files_after += 1
    print(json.dumps({"rows_in": rows_in, "rows_staged": rows_staged, "rows_after": rows_after,
                      "coalesce": n, "files_after": files_after, "location_after": location,
                      "timed_seconds": round(time.time() - t1, 3), "steps": steps}))
    spark.stop()


if __name__ == "__main__":
    main()
