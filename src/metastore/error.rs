use std::time::Duration;

const CHECK_METASTORE: &str = "is the metastore running? check --metastore / hive.metastore.uris";

/// What went wrong talking to the metastore, in the cases callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum MetastoreError {
    #[error("invalid metastore URI {uri:?}: {reason} (expected thrift://host:port[,thrift://host2:port...])")]
    InvalidUri { uri: String, reason: String },

    #[error("no metastore answered at {uris}: {last_error}; {CHECK_METASTORE}")]
    Unreachable { uris: String, last_error: String },

    #[error("{what} not found in the metastore at {uri}: {message}")]
    NotFound {
        what: String,
        uri: String,
        message: String,
    },

    #[error("{what} already exists in the metastore at {uri}: {message}")]
    AlreadyExists {
        what: String,
        uri: String,
        message: String,
    },

    /// The metastore refused the call with one of its declared exceptions (MetaException,
    /// InvalidOperationException, ...).
    #[error("metastore {uri} refused {method} ({exception}): {message}")]
    Server {
        uri: String,
        method: &'static str,
        exception: &'static str,
        message: String,
    },

    /// The server failed inside the call without a declared exception (a Thrift application
    /// exception such as "Internal error processing lock"); its log says why.
    #[error("metastore {uri} failed inside {method}: {message}; see the metastore's log")]
    Internal {
        uri: String,
        method: &'static str,
        message: String,
    },

    #[error("metastore {uri} does not implement {method}; this metastore version is not supported (HMS 2.3 or newer is)")]
    UnknownMethod { uri: String, method: &'static str },

    #[error("metastore {uri} did not answer {method} within {after:?}{}; check the metastore's health or raise the metastore timeout",
        if *outcome_unknown { " (the change may or may not have been applied: read it back before retrying)" } else { "" })]
    Timeout {
        uri: String,
        method: &'static str,
        after: Duration,
        outcome_unknown: bool,
    },

    #[error("connection to metastore {uri} broke during {method}: {message}{}; {CHECK_METASTORE}",
        if *outcome_unknown { " (the change may or may not have been applied: read it back before retrying)" } else { "" })]
    ConnectionLost {
        uri: String,
        method: &'static str,
        message: String,
        outcome_unknown: bool,
    },

    #[error("unexpected reply from metastore {uri} to {method}: {message}; does the metastore transport (buffered/framed) match the server?")]
    Protocol {
        uri: String,
        method: &'static str,
        message: String,
    },

    /// SASL could not authenticate (GSSAPI, or DIGEST-MD5 with a token); `message` says why and
    /// how to fix it.
    #[error("{login} authentication to metastore {uris} failed: {message}")]
    Authentication {
        /// "Kerberos" or "delegation token".
        login: &'static str,
        uris: String,
        message: String,
    },

    /// The metastore refused the delegation token: cancelled, expired, or unknown to it.
    #[error("metastore {uris} refused the delegation token {token} from {origin}: {message}; the token is invalid or expired (cancelled, past its renewal or max date, or lost in a metastore restart): get a new one (resubmit the job) or log in with Kerberos")]
    TokenRejected {
        uris: String,
        token: String,
        origin: String,
        message: String,
    },

    #[error("metastore client task failed: {0}")]
    Client(String),
}

/// Server messages can span lines (Java stack traces); our messages are one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
