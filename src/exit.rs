//! Exit codes, the contract with cron and scripts (see the README's table).
//!
//! A batch run exits with the worst code of its partitions, so the codes are ordered by how much
//! a human needs to look: verification failures outrank failures, which outrank busy, and so on.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitCode {
    /// Success, or nothing to do.
    Ok,
    /// The partition (or table) is one the tool must not touch.
    Refused,
    /// Something is changing it right now: retry later.
    Busy,
    /// `analyze --fail-above`: a partition holds more files than the gate allows.
    TooManyFiles,
    /// Usage error: bad flags or a malformed argument.
    Usage,
    /// Failed; the partition is untouched unless the message says otherwise.
    Failed,
    /// New files did not match the old ones; nothing was swapped. A human should look.
    VerificationFailed,
}

impl ExitCode {
    /// The process exit status. Deliberately not the enum order: the numbers are a published
    /// interface that predates the severity order used by [`ExitCode::worst`].
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Failed => 1,
            ExitCode::Usage => 2,
            ExitCode::Refused => 3,
            ExitCode::Busy => 4,
            ExitCode::VerificationFailed => 5,
            ExitCode::TooManyFiles => 6,
        }
    }

    /// The code a batch exits with: the most severe of its parts.
    pub fn worst(codes: impl IntoIterator<Item = ExitCode>) -> ExitCode {
        codes.into_iter().max().unwrap_or(ExitCode::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_prefers_what_needs_a_human() {
        use ExitCode::*;
        assert_eq!(ExitCode::worst([]), Ok);
        assert_eq!(ExitCode::worst([Ok, Refused, Busy]), Busy);
        assert_eq!(
            ExitCode::worst([Failed, VerificationFailed, Ok]),
            VerificationFailed
        );
        assert_eq!(ExitCode::worst([Refused, Failed]), Failed);
    }

    #[test]
    fn published_numbers() {
        let all = [
            ExitCode::Ok,
            ExitCode::Failed,
            ExitCode::Usage,
            ExitCode::Refused,
            ExitCode::Busy,
            ExitCode::VerificationFailed,
            ExitCode::TooManyFiles,
        ];
        let nums: Vec<i32> = all.iter().map(|c| c.code()).collect();
        assert_eq!(nums, vec![0, 1, 2, 3, 4, 5, 6]);
    }
}
