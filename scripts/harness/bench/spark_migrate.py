"""scripts/bench: Iceberg's own Spark procedure on the table `iceberg migrate` was timed on.

    python spark_migrate.py --table DB.T --iceberg-jar PATH

Runs `CALL spark_catalog.system.migrate('DB.T')` in pyspark local[2] with Iceberg's
SparkSessionCatalog over the Hive Metastore. Iceberg's HiveCatalog uses the Hive client on
Spark's main classpath (Hive 2.3.9), whatever spark.sql.hive.metastore.version says, and that
client calls get_table, which HMS 4 removed: the step needs the cluster on HMS 3.1
(HMS_VERSION=3.1). Prints one JSON line with the procedure's result and the seconds of each step.
"""
import argparse
import json
import os
import time

from pyspark.sql import SparkSession


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--iceberg-jar", required=True)
    ap.add_argument("--hms-uri", default=os.environ.get("HMS_URI"))
    ap.add_argument("--default-fs", default=os.environ.get("HDFS_URL"))
    a = ap.parse_args()

    t0 = time.time()
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-migrate")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g")
             .config("spark.jars", a.iceberg_jar)
             .config("spark.sql.extensions",
                     "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.spark_catalog",
                     "org.apache.iceberg.spark.SparkSessionCatalog")
             .config("spark.sql.catalog.spark_catalog.type", "hive")
             .config("spark.sql.catalog.spark_catalog.uri", a.hms_uri)
             .config("spark.hadoop.hive.metastore.uris", a.hms_uri)
             .config("spark.hadoop.fs.defaultFS", a.default_fs)
             .config("spark.sql.warehouse.dir", "/tmp/bench-spark-warehouse")
             .enableHiveSupport()
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    t1 = time.time()
    row = spark.sql(f"CALL spark_catalog.system.migrate('{a.table}')").collect()[0]
    t2 = time.time()
    files = spark.sql(f"SELECT count(*) FROM {a.table}.files").collect()[0][0]
    print(json.dumps({"status": "migrated", "migrated_files": row[0], "files_in_metadata": files,
                      "timed_seconds": round(t2 - t1, 3),
                      "steps": {"session": round(t1 - t0, 3), "migrate": round(t2 - t1, 3)}}))
    spark.stop()


if __name__ == "__main__":
    main()
