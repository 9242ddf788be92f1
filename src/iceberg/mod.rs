//! Handing Hive ORC tables over to Apache Iceberg: Hive types and partition values in Iceberg
//! terms, column metrics from ORC footers, the table metadata written onto HDFS, and the
//! metastore definition Iceberg's `HiveCatalog` expects.

pub mod catalog;
pub mod column_metrics;
pub mod hive_type;
pub mod partition;
pub mod schema;
pub mod writer;
