//! How a command ended for one partition (or table): one status (which gives the exit code), the rule and
//! reason when it did not do its work, and warnings. Every per-partition report carries an
//! [`Outcome`]; every operation that can stop early stops with a [`Stop`], turned into the
//! outcome in one place ([`Outcome::stop`]).

use anyhow::anyhow;
use serde::{Deserialize, Serialize};

use crate::eligibility::{Refusal, Rule};
use crate::exit::ExitCode;
use crate::hdfs::FsError;
use crate::relocate::RelocateError;

/// What `--json` prints as `status`. Each command uses the statuses that fit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Compacted,
    RolledBack,
    /// `cleanup` removed (or settled) what runs left behind.
    Cleaned,
    /// `iceberg migrate` committed the Iceberg table.
    Migrated,
    /// `iceberg revert` gave the Hive table back.
    Reverted,
    /// `iceberg check`: nothing blocks the move. `inspect`: the tool would not refuse it.
    Ready,
    /// `verify`: the files, the metastore's statistics and the journal agree.
    Verified,
    NothingToDo,
    DryRun,
    /// Not attempted: a selection threshold or budget left it out (the reason says which).
    Skipped,
    Refused,
    /// Something is changing it right now: retry.
    Busy,
    Failed,
    VerificationFailed,
}

impl Status {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Compacted
            | Status::RolledBack
            | Status::Cleaned
            | Status::Migrated
            | Status::Reverted
            | Status::Ready
            | Status::Verified
            | Status::NothingToDo
            | Status::DryRun
            | Status::Skipped => ExitCode::Ok,
            Status::Refused => ExitCode::Refused,
            Status::Busy => ExitCode::Busy,
            Status::Failed => ExitCode::Failed,
            Status::VerificationFailed => ExitCode::VerificationFailed,
        }
    }

    /// How text output names the status.
    pub fn as_text(self) -> &'static str {
        match self {
            Status::Compacted => "compacted",
            Status::RolledBack => "rolled back",
            Status::Cleaned => "cleaned",
            Status::Migrated => "migrated",
            Status::Reverted => "reverted",
            Status::Ready => "ready",
            Status::Verified => "verified",
            Status::NothingToDo => "nothing to do",
            Status::DryRun => "dry run",
            Status::Skipped => "skipped",
            Status::Refused => "refused",
            Status::Busy => "busy",
            Status::Failed => "failed",
            Status::VerificationFailed => "VERIFICATION FAILED",
        }
    }
}

/// Why an operation stopped before doing its work; each maps to one status.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    #[error(transparent)]
    Refused(Refusal),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Verification(String),
    #[error("interrupted before the swap; the partition is as it was")]
    Interrupted,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<FsError> for Stop {
    fn from(e: FsError) -> Self {
        Stop::Failed(e.into())
    }
}

impl From<RelocateError> for Stop {
    fn from(e: RelocateError) -> Self {
        match e {
            RelocateError::Moved { .. } => Stop::Busy(e.to_string()),
            RelocateError::Unconfirmed(_) => Stop::Failed(anyhow!("{e}")),
            RelocateError::Failed(e) => Stop::Failed(e),
        }
    }
}

impl Stop {
    pub fn status(&self) -> Status {
        match self {
            Stop::Refused(_) => Status::Refused,
            Stop::Busy(_) => Status::Busy,
            Stop::Verification(_) => Status::VerificationFailed,
            Stop::Interrupted | Stop::Failed(_) => Status::Failed,
        }
    }
}

/// The fields every per-partition report starts with (flattened into its JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub table: String,
    pub partition: String,
    pub status: Status,
    pub reason: Option<String>,
    pub rule: Option<Rule>,
    /// Things that did not stop the run but an admin should know (e.g. owner not kept).
    pub warnings: Vec<String>,
}

impl Outcome {
    /// A run of `table`/`partition` that has not ended yet: failed until it says otherwise.
    pub fn new(table: &str, partition: &str) -> Self {
        Outcome {
            table: table.to_string(),
            partition: partition.to_string(),
            status: Status::Failed,
            reason: None,
            rule: None,
            warnings: vec![],
        }
    }

    /// Ends the run with `stop`: its status, its rule when refused, and its message (with every
    /// cause of a failure) as the reason.
    pub fn stop(&mut self, stop: Stop) {
        self.status = stop.status();
        if let Stop::Refused(r) = &stop {
            self.rule = Some(r.rule);
        }
        self.reason = Some(match &stop {
            Stop::Failed(e) => format!("{e:#}"),
            other => other.to_string(),
        });
    }

    /// Ends the command: with the status it reached, or with the stop that ended it early.
    pub fn end(&mut self, ended: Result<Status, Stop>) {
        match ended {
            Ok(status) => self.status = status,
            Err(stop) => self.stop(stop),
        }
    }

    /// Like [`Outcome::stop`], for a command that goes on past a failure (`cleanup`, one run
    /// after another): the more severe status wins and every reason is kept, in order.
    pub fn stop_and_go_on(&mut self, stop: Stop) {
        let before = self.clone();
        self.stop(stop);
        if before.exit_code() > self.exit_code() {
            self.status = before.status;
            self.rule = before.rule;
        }
        if let (Some(first), Some(then)) = (before.reason, &self.reason) {
            self.reason = Some(format!("{first}; {then}"));
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        self.status.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_sets_status_rule_and_reason() {
        let mut o = Outcome::new("d.t", "dt=1");
        o.stop(Stop::Refused(Refusal::new(Rule::NotHdfs, "on s3")));
        assert_eq!(o.status, Status::Refused);
        assert_eq!(o.rule, Some(Rule::NotHdfs));
        assert_eq!(o.reason.as_deref(), Some("on s3"));
        assert_eq!(o.exit_code(), ExitCode::Refused);

        let mut o = Outcome::new("d.t", "dt=1");
        o.stop(Stop::Failed(anyhow!("inner").context("outer")));
        assert_eq!(o.status, Status::Failed);
        assert_eq!(o.reason.as_deref(), Some("outer: inner"));
        assert_eq!(o.rule, None);
    }

    #[test]
    fn going_on_keeps_every_reason_and_the_worst_status() {
        let mut o = Outcome::new("d.t", "dt=1");
        o.status = Status::NothingToDo;
        o.stop_and_go_on(Stop::Busy("locked".into()));
        assert_eq!(
            (o.status, o.reason.as_deref()),
            (Status::Busy, Some("locked"))
        );
        o.stop_and_go_on(Stop::Failed(anyhow!("gone")));
        o.stop_and_go_on(Stop::Busy("again".into()));
        assert_eq!(o.status, Status::Failed);
        assert_eq!(o.reason.as_deref(), Some("locked; gone; again"));
    }

    #[test]
    fn json_names_stay_as_scripts_read_them() {
        let mut o = Outcome::new("d.t", "dt=1");
        o.stop(Stop::Verification("bad".into()));
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["status"], "verification-failed");
        assert_eq!(v["table"], "d.t");
        assert_eq!(v["partition"], "dt=1");
        assert_eq!(v["reason"], "bad");
        assert_eq!(v["rule"], serde_json::Value::Null);
        assert_eq!(v["warnings"], serde_json::json!([]));
        assert_eq!(
            serde_json::to_value(Status::RolledBack).unwrap(),
            "rolled-back"
        );
        assert_eq!(
            serde_json::to_value(Status::NothingToDo).unwrap(),
            "nothing-to-do"
        );
    }
}
