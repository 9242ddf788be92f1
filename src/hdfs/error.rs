//! What a failed HDFS call was, in one line: hdfs-native's errors described, and told apart
//! where the tool must decide whether the call happened.

use std::io;

use hdfs_native::HdfsError;

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(
        "'{0}' is not an HDFS location (expected hdfs://namenode/path or viewfs://cluster/path)"
    )]
    BadLocation(String),
    // The HDFS error is rendered into the message and deliberately not a `source`: error
    // chains print every source, and hdfs-native's raw text would repeat what `describe` said.
    #[error("cannot set up an HDFS client for {fs}: {error} (check HADOOP_CONF_DIR)")]
    Client { fs: String, error: HdfsError },
    #[error(
        "cannot move {from} to {to}: {why}; HDFS moves nothing across encryption zones or viewfs \
         mounts"
    )]
    CrossesZone {
        from: String,
        to: String,
        why: String,
    },
    #[error(
        "cannot move {0} to the trash: it is in an encryption zone (or viewfs mount) without a \
         trash of its own, and HDFS moves nothing out of one: make the zone's trash \
         (`hdfs crypto -provisionTrash -path <zone>`), or run without --trash to delete it"
    )]
    NoZoneTrash(String),
    #[error("{op} {location} failed: {}", describe(.error))]
    Io {
        op: &'static str,
        location: String,
        error: HdfsError,
    },
}

/// hdfs-native reports server exceptions as (Java class, message); the class alone says most.
pub(super) fn describe(e: &HdfsError) -> String {
    match e {
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            let first = msg.lines().next().unwrap_or("");
            format!("{short}: {first}")
        }
        HdfsError::IOError(io) => format!("{io} (is the NameNode up and reachable?)"),
        // Kerberos: one line with the fix, as for the metastore.
        HdfsError::GSSAPIError(major, minor, text) => {
            crate::kerberos::explain_hdfs((major.raw() >> 16) & 0xff, *minor, text)
        }
        other => other.to_string(),
    }
}

/// Whether a failed call may have been carried out anyway: the request left and its reply was
/// lost (a broken connection, or a NameNode that failed over), so that only the paths can tell.
/// A server's own exception, or a call refused before it ran, is an answer.
pub(super) fn ambiguous(e: &HdfsError) -> bool {
    match e {
        HdfsError::IOError(_) => true,
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            matches!(
                short,
                "StandbyException" | "RetriableException" | "ObserverRetryOnActiveException"
            )
        }
        _ => false,
    }
}

/// The reason when a rename into, out of or between encryption zones is refused by the
/// NameNode (`... can't be moved from an encryption zone.`), or one across viewfs mounts by
/// hdfs-native.
pub(super) fn ez_rename_refusal(e: &HdfsError) -> Option<String> {
    match e {
        HdfsError::RPCError(_, msg) | HdfsError::FatalRPCError(_, msg)
            if msg.contains("encryption zone") =>
        {
            Some(msg.lines().next().unwrap_or("").trim().to_string())
        }
        HdfsError::InvalidArgument(msg) if msg.contains("across different name services") => {
            Some(format!("{msg} (viewfs mounts)"))
        }
        _ => None,
    }
}

pub(super) fn io_error(e: HdfsError) -> io::Error {
    io::Error::other(describe(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguity_and_zone_refusals() {
        let rpc = |c: &str, m: &str| HdfsError::RPCError(c.into(), m.into());
        assert!(ambiguous(&HdfsError::IOError(io::Error::other("reset"))));
        assert!(ambiguous(&rpc(
            "org.apache.hadoop.ipc.StandbyException",
            ""
        )));
        assert!(!ambiguous(&rpc("java.io.FileNotFoundException", "")));
        assert!(!ambiguous(&HdfsError::FileNotFound("x".into())));
        let ez = rpc(
            "java.io.IOException",
            "/ez/t/k=1/f can't be moved from an encryption zone.",
        );
        assert_eq!(
            ez_rename_refusal(&ez).as_deref(),
            Some("/ez/t/k=1/f can't be moved from an encryption zone.")
        );
        let mounts =
            HdfsError::InvalidArgument("Cannot rename across different name services".into());
        assert!(ez_rename_refusal(&mounts).is_some());
        assert!(ez_rename_refusal(&rpc("java.io.IOException", "other")).is_none());
    }
}
