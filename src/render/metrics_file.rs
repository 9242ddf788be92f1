//! `--metrics-file`: what a run did, as the gauges of one Prometheus textfile, written when the
//! command ends (failed or not) so that node_exporter's textfile collector and the alerts on it
//! see every run. Labels are the command, database, table and status: never a partition, so the
//! series stay as few as the tables.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use hive_orc_compactor::exit::ExitCode;
use hive_orc_compactor::metastore::meter::Calls;
use hive_orc_compactor::operations::analyze::AnalyzeReport;
use hive_orc_compactor::operations::batch::{BatchSummary, Counts};
use hive_orc_compactor::operations::cleanup::CleanupReport;
use hive_orc_compactor::operations::iceberg::{CheckReport, Costs, MigrateReport, RevertReport};
use hive_orc_compactor::operations::outcome::{Outcome, Status};
use hive_orc_compactor::textfile::Textfile;

const LAST_SUCCESS: &str = "hive_orc_compactor_last_success_timestamp_seconds";
const LAST_SUCCESS_HELP: &str = "When the command last ended without a failure for the table \
     (kept from the previous file for tables this run did not succeed on).";

/// Collects one command's gauges; [`Recorder::finish`] adds the run's own and writes the file.
pub struct Recorder {
    path: PathBuf,
    command: &'static str,
    started: Instant,
    gauges: Mutex<Textfile>,
    /// Metastore calls other processes made for this run: `--on-yarn`'s tasks.
    tasks_calls: Mutex<Calls>,
}

/// `db.table` as the two labels.
fn split(table: &str) -> (&str, &str) {
    table.split_once('.').unwrap_or(("", table))
}

/// A status as `--json` spells it.
fn status_name(status: Status) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl Recorder {
    pub fn new(path: PathBuf, command: &'static str) -> Self {
        Recorder {
            path,
            command,
            started: Instant::now(),
            gauges: Mutex::new(Textfile::default()),
            tasks_calls: Mutex::default(),
        }
    }

    fn with(&self, f: impl FnOnce(&mut Textfile)) {
        let mut gauges = self.gauges.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut gauges);
    }

    /// A per-table gauge of this command: `hive_orc_compactor_<command>_<name>`.
    fn table_gauge(t: &mut Textfile, command: &str, name: &str, help: &str, table: &str, v: f64) {
        let (database, table) = split(table);
        t.gauge(
            &format!("hive_orc_compactor_{command}_{name}"),
            help,
            &[("database", database), ("table", table)],
            v,
        );
    }

    fn status_gauge(t: &mut Textfile, command: &str, table: &str, status: &str, v: f64) {
        let (database, table) = split(table);
        t.gauge(
            &format!("hive_orc_compactor_{command}_partitions"),
            "Partitions of the table by how the command ended for them.",
            &[("database", database), ("table", table), ("status", status)],
            v,
        );
    }

    fn succeeded(&self, t: &mut Textfile, table: &str) {
        let (database, table) = split(table);
        let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
        t.gauge(
            LAST_SUCCESS,
            LAST_SUCCESS_HELP,
            &[
                ("command", self.command),
                ("database", database),
                ("table", table),
            ],
            now,
        );
    }

    pub fn compact(&self, s: &BatchSummary) {
        self.with(|t| {
            for table in &s.tables {
                let c: &Counts = &table.counts;
                let statuses = [
                    (Status::Compacted, c.compacted),
                    (Status::NothingToDo, c.nothing_to_do),
                    (Status::DryRun, c.dry_run),
                    (Status::Skipped, c.skipped),
                    (Status::Refused, c.refused),
                    (Status::Busy, c.busy),
                    (Status::Failed, c.failed),
                    (Status::VerificationFailed, c.verification_failed),
                ];
                for (status, n) in statuses {
                    Self::status_gauge(t, "compact", &table.table, &status_name(status), n as f64);
                }
                let figures = [
                    (
                        "files_before",
                        "Data files of the compacted partitions before.",
                        c.files_before as f64,
                    ),
                    (
                        "files_after",
                        "Data files of the compacted partitions after.",
                        c.files_after as f64,
                    ),
                    (
                        "bytes_before",
                        "Bytes of the compacted partitions before.",
                        c.bytes_before as f64,
                    ),
                    (
                        "bytes_after",
                        "Bytes of the compacted partitions after.",
                        c.bytes_after as f64,
                    ),
                    (
                        "bytes_rewritten",
                        "Bytes written into new files.",
                        c.bytes_rewritten as f64,
                    ),
                ];
                for (name, help, v) in figures {
                    Self::table_gauge(t, "compact", name, help, &table.table, v);
                }
                let prefix = format!("{}/", table.table);
                let suspended = s
                    .suspended
                    .iter()
                    .filter(|k| k.starts_with(&prefix))
                    .count();
                Self::table_gauge(
                    t,
                    "compact",
                    "suspended_partitions",
                    "Partitions skipped as suspended (their last attempts all failed).",
                    &table.table,
                    suspended as f64,
                );
                let trouble = c.refused + c.busy + c.failed + c.verification_failed + c.dry_run;
                if trouble == 0 && !s.interrupted {
                    self.succeeded(t, &table.table);
                }
            }
        });
    }

    pub fn analyze(&self, r: &AnalyzeReport) {
        self.with(|t| {
            for table in &r.tables {
                let figures = [
                    ("partitions", "Partitions surveyed (a refused table counts one).", table.partitions as f64),
                    ("eligible_partitions", "Partitions the tool may compact.", table.eligible as f64),
                    ("files", "Data files.", table.files as f64),
                    ("bytes", "Bytes of the data files.", table.bytes as f64),
                    ("small_files", "Data files below the small-file size.", table.small_files as f64),
                    ("ideal_files", "Files the data needs at the target size: ceil(bytes / target) per partition.", table.files_needed as f64),
                    ("excess_files", "Files beyond the ideal count.", table.excess_files as f64),
                    ("removable_files", "Files compaction would remove (eligible partitions only).", table.removable_files as f64),
                    ("namenode_objects", "Inodes and blocks of the data files.", table.namenode_objects as f64),
                    ("namenode_objects_removable", "Inodes and blocks compaction would remove.", table.namenode_objects_removable as f64),
                    ("errors", "Partitions or tables that could not be read.", table.errors as f64),
                    ("health", "Share of the bytes in healthy files, 0-100.", f64::from(table.health)),
                    ("backlog_partitions", "Partitions with files to remove, not suspended.", table.backlog.partitions as f64),
                    ("backlog_seconds", "Estimated seconds of work to clear the backlog.", table.backlog.seconds),
                    ("backlog_bytes", "Bytes compaction would read to clear the backlog.", table.backlog.bytes_read as f64),
                    ("suspended_partitions", "Partitions compact skips as suspended.", table.suspended as f64),
                ];
                for (name, help, v) in figures {
                    Self::table_gauge(t, "analyze", name, help, &table.scope, v);
                }
                if table.errors == 0 {
                    self.succeeded(t, &table.scope);
                }
            }
        });
    }

    pub fn cleanup(&self, r: &CleanupReport) {
        self.with(|t| {
            for table in &r.tables_checked {
                let partitions: Vec<_> = r
                    .partitions
                    .iter()
                    .filter(|p| &p.outcome.table == table)
                    .collect();
                for status in [
                    Status::Cleaned,
                    Status::DryRun,
                    Status::NothingToDo,
                    Status::Failed,
                ] {
                    let n = partitions
                        .iter()
                        .filter(|p| p.outcome.status == status)
                        .count();
                    Self::status_gauge(t, "cleanup", table, &status_name(status), n as f64);
                }
                let removed: usize = partitions.iter().map(|p| p.files_removed()).sum();
                let help = "Replaced data files removed (in a dry run: to be removed).";
                Self::table_gauge(t, "cleanup", "files_removed", help, table, removed as f64);
                if !r.dry_run
                    && partitions
                        .iter()
                        .all(|p| p.outcome.status != Status::Failed)
                {
                    self.succeeded(t, table);
                }
            }
            t.gauge(
                "hive_orc_compactor_cleanup_partitions_checked",
                "Partitions whose leftovers the run checked.",
                &[],
                r.partitions_checked as f64,
            );
        });
    }

    /// The outcome of an `iceberg` command for one table, and what it holds.
    fn iceberg_table(&self, t: &mut Textfile, outcome: &Outcome, costs: Option<&Costs>) {
        let (database, table) = split(&outcome.table);
        let status = status_name(outcome.status);
        t.gauge(
            &format!(
                "hive_orc_compactor_{}_status",
                self.command.replace('-', "_")
            ),
            "1 for how the command ended for the table (the status label).",
            &[
                ("database", database),
                ("table", table),
                ("status", &status),
            ],
            1.0,
        );
        if let Some(c) = costs {
            let command = self.command.replace('-', "_");
            let figures = [
                ("files", "Data files the table holds.", c.files as f64),
                ("bytes", "Bytes of the data files.", c.bytes as f64),
                ("rows", "Rows of the data files.", c.rows as f64),
                (
                    "small_files",
                    "Data files below the small-file size.",
                    c.small_files as f64,
                ),
                (
                    "excess_files",
                    "Files compaction would remove first.",
                    c.excess_files as f64,
                ),
            ];
            for (name, help, v) in figures {
                Self::table_gauge(t, &command, name, help, &outcome.table, v);
            }
        }
        if outcome.status.exit_code() == ExitCode::Ok && outcome.status != Status::DryRun {
            self.succeeded(t, &outcome.table);
        }
    }

    pub fn iceberg_check(&self, r: &CheckReport) {
        self.with(|t| {
            for table in &r.tables {
                self.iceberg_table(t, &table.outcome, Some(&table.costs));
            }
        });
    }

    pub fn iceberg_migrate(&self, r: &MigrateReport) {
        self.with(|t| self.iceberg_table(t, &r.outcome, Some(&r.costs)));
    }

    pub fn iceberg_revert(&self, r: &RevertReport) {
        self.with(|t| self.iceberg_table(t, &r.outcome, None));
    }

    /// The metastore calls of the run's YARN tasks, counted with this process's.
    pub fn tasks_calls(&self, calls: &Calls) {
        *self.tasks_calls.lock().unwrap_or_else(|e| e.into_inner()) = calls.clone();
    }

    /// Adds the run's exit code, duration, end time and metastore calls (this process's
    /// `calls` and its tasks'), keeps the previous file's last-success times this run did not
    /// renew, and writes the file atomically.
    pub fn finish(&self, code: ExitCode, calls: &Calls) -> anyhow::Result<()> {
        let calls = calls.plus(&self.tasks_calls.lock().unwrap_or_else(|e| e.into_inner()));
        let mut gauges = self.gauges.lock().unwrap_or_else(|e| e.into_inner());
        let command = [("command", self.command)];
        // A gauge, not a counter: the file holds one run, and the next run starts again at 0.
        for (method, n) in calls.by_method() {
            gauges.gauge(
                "hive_orc_compactor_metastore_calls",
                "Calls the run sent to the metastore, by Thrift method.",
                &[("command", self.command), ("method", method)],
                *n as f64,
            );
        }
        gauges.gauge(
            "hive_orc_compactor_exit_code",
            "The command's exit code (0 ok, 1 failed, 2 usage, 3 refused, 4 busy, 5 verification failed).",
            &command,
            f64::from(code.code()),
        );
        gauges.gauge(
            "hive_orc_compactor_run_seconds",
            "How long the command ran.",
            &command,
            self.started.elapsed().as_secs_f64(),
        );
        gauges.gauge(
            "hive_orc_compactor_run_end_timestamp_seconds",
            "When the command ended.",
            &command,
            chrono::Utc::now().timestamp_millis() as f64 / 1000.0,
        );
        if let Ok(earlier) = std::fs::read_to_string(&self.path) {
            gauges.carry_over(&earlier, LAST_SUCCESS, LAST_SUCCESS_HELP);
        }
        gauges.write(&self.path).map_err(|e| {
            anyhow::anyhow!(
                "cannot write the metrics file {}: {e}; check that its directory exists and is writable",
                self.path.display()
            )
        })
    }
}
