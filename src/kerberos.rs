//! Kerberos: the process's login (`--principal`/`--keytab`, else the ticket cache) shared by the
//! HDFS client and the metastore's SASL/GSSAPI transport, and one-line explanations of Kerberos
//! failures with their fix.
//!
//! Nothing here loads a Kerberos library: `libgssapi_krb5.so.2` is opened at run time, and only
//! when a Kerberos connection is made, so the tool runs without Kerberos installed.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Who the tool is. Without a keytab the tickets come from the cache (`KRB5CCNAME`, `kinit`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Login {
    /// `user@REALM`; `None`: the default principal of the ticket cache.
    pub principal: Option<String>,
    /// With a keytab the tool gets (and, when they expire, renews) its own tickets, into a
    /// private in-memory cache.
    pub keytab: Option<PathBuf>,
}

static LOGIN: OnceLock<Login> = OnceLock::new();

/// Sets the process's Kerberos login, once (later calls are ignored).
pub fn set_login(login: Login) -> Result<(), String> {
    if login.keytab.is_some() && login.principal.is_none() {
        return Err("--keytab needs --principal (the keytab's principal, user@REALM)".into());
    }
    let _ = LOGIN.set(login);
    Ok(())
}

/// The login set by [`set_login`]; the default (ticket cache) otherwise.
pub fn login() -> Login {
    LOGIN.get().cloned().unwrap_or_default()
}

/// The metastore's principal for one URI: `_HOST` replaced by the URI's host, lowercased, as
/// Hadoop's `SecurityUtil.getServerPrincipal` does.
pub fn server_principal(pattern: &str, host: &str) -> String {
    pattern.replace("_HOST", &host.to_ascii_lowercase())
}

// MIT krb5 error codes (com_err table "krb5", base -1765328384), as GSSAPI minor statuses.
const KRB5_BASE: i64 = -1_765_328_384;
const C_PRINCIPAL_UNKNOWN: i64 = KRB5_BASE + 6;
const S_PRINCIPAL_UNKNOWN: i64 = KRB5_BASE + 7;
const PREAUTH_FAILED: i64 = KRB5_BASE + 24;
const TKT_EXPIRED: i64 = KRB5_BASE + 32;
const SKEW: i64 = KRB5_BASE + 37;
const CC_NOTFOUND: i64 = KRB5_BASE + 141;
/// The client's own check of the KDC's reply (`kdc_timesync = 0`); 37 is the KDC's or the
/// server's verdict.
const KDCREP_SKEW: i64 = KRB5_BASE + 148;
const KDC_UNREACH: i64 = KRB5_BASE + 156;
const FCC_NOFILE: i64 = KRB5_BASE + 195;

/// A Kerberos failure, classified for its fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    NoTicket,
    Expired,
    UnknownServer,
    UnknownClient,
    BadKey,
    ClockSkew,
    KdcUnreachable,
    Other,
}

/// Classifies a GSSAPI failure from its minor status (a krb5 error code) and its text.
pub fn classify(routine_error: u32, minor: u32, text: &str) -> Failure {
    let code = i64::from(minor as i32);
    let t = text.to_ascii_lowercase();
    match code {
        S_PRINCIPAL_UNKNOWN => return Failure::UnknownServer,
        C_PRINCIPAL_UNKNOWN => return Failure::UnknownClient,
        TKT_EXPIRED => return Failure::Expired,
        SKEW | KDCREP_SKEW => return Failure::ClockSkew,
        KDC_UNREACH => return Failure::KdcUnreachable,
        FCC_NOFILE | CC_NOTFOUND => return Failure::NoTicket,
        PREAUTH_FAILED => return Failure::BadKey,
        _ => {}
    }
    if t.contains("server not found in kerberos database") {
        Failure::UnknownServer
    } else if t.contains("client not found in kerberos database") {
        Failure::UnknownClient
    } else if t.contains("cannot contact any kdc") || t.contains("cannot find kdc") {
        Failure::KdcUnreachable
    } else if t.contains("clock skew") {
        Failure::ClockSkew
    } else if t.contains("ticket expired") || routine_error == 11 {
        Failure::Expired
    } else if t.contains("no kerberos credentials")
        || t.contains("no credentials cache")
        || t.contains("credentials cache file")
        || routine_error == 7
    {
        Failure::NoTicket
    } else if t.contains("preauthentication failed") || t.contains("key table entry not found") {
        Failure::BadKey
    } else {
        Failure::Other
    }
}

/// One line: what failed and how to fix it. `server` is the principal asked for. Never holds a
/// secret: principals and file names only.
pub fn explain(failure: Failure, server: &str, detail: &str) -> String {
    let login = login();
    let who = login.principal.as_deref().unwrap_or("USER@REALM");
    let fix = match failure {
        Failure::NoTicket => format!(
            "no Kerberos ticket: run `kinit {who}` (KRB5CCNAME names the cache), or pass \
             --principal and --keytab"
        ),
        Failure::Expired => format!(
            "the Kerberos ticket has expired: run `kinit {who}` again, or pass --principal and \
             --keytab so the tool renews its own tickets"
        ),
        Failure::UnknownServer => format!(
            "the KDC does not know the server principal {server}: check \
             hive.metastore.kerberos.principal (or --metastore-principal; _HOST is replaced by \
             the host of the metastore URI)"
        ),
        Failure::UnknownClient => format!(
            "the KDC does not know the client principal {who}: check --principal and the realm"
        ),
        Failure::BadKey => format!(
            "the KDC refused the key for {who}: the keytab does not hold this principal's \
             current key (check --keytab and --principal)"
        ),
        Failure::ClockSkew => "clock skew too great between this host, the KDC and the server: \
             synchronise the clocks (NTP)"
            .to_string(),
        Failure::KdcUnreachable => "cannot reach the KDC: check the [realms] kdc entries of \
             krb5.conf (KRB5_CONFIG, default /etc/krb5.conf) and that the KDC is up"
            .to_string(),
        Failure::Other => "Kerberos authentication failed".to_string(),
    };
    format!("{fix} ({detail})")
}

/// One line for a Kerberos failure on the way to HDFS (hdfs-native's GSSAPI error: the major
/// status's routine error, the krb5 minor status and the library's text). hdfs-native takes
/// the NameNode's principal from the NameNode's own SASL offer (`protocol/serverId`), so an
/// unknown server principal is the cluster's matter, not a flag of ours.
pub fn explain_hdfs(routine_error: u32, minor: u32, text: &str) -> String {
    let detail = format!("GSSAPI: {}", text.trim());
    let fix = match classify(routine_error, minor, text) {
        Failure::UnknownServer => format!(
            "the KDC does not know the principal the NameNode announced: check the NameNode's \
             dfs.namenode.kerberos.principal and the [domain_realm] of krb5.conf ({detail})"
        ),
        Failure::Other => format!("Kerberos authentication failed ({detail})"),
        failure => explain(failure, "", &detail),
    };
    format!("Kerberos authentication to HDFS failed: {fix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_placeholder_is_the_uri_host_lowercased() {
        assert_eq!(
            server_principal("hive/_HOST@EXAMPLE.COM", "HMS1.Example.com"),
            "hive/hms1.example.com@EXAMPLE.COM"
        );
        assert_eq!(
            server_principal("hive/metastore@R", "x"),
            "hive/metastore@R"
        );
    }

    #[test]
    fn classifies_by_code_then_text() {
        let m = |c: i64| c as i32 as u32;
        assert_eq!(
            classify(13, m(S_PRINCIPAL_UNKNOWN), ""),
            Failure::UnknownServer
        );
        assert_eq!(classify(13, m(SKEW), ""), Failure::ClockSkew);
        assert_eq!(classify(7, m(KDCREP_SKEW), ""), Failure::ClockSkew);
        assert_eq!(classify(13, m(TKT_EXPIRED), ""), Failure::Expired);
        // A principal's or password's expiry in the KDC database is no ticket to renew.
        assert_eq!(
            classify(13, 0, "Client's entry in database has expired"),
            Failure::Other
        );
        assert_eq!(classify(13, m(KDC_UNREACH), ""), Failure::KdcUnreachable);
        assert_eq!(classify(13, m(FCC_NOFILE), ""), Failure::NoTicket);
        assert_eq!(classify(11, 0, ""), Failure::Expired);
        assert_eq!(
            classify(
                7,
                0,
                "No Kerberos credentials available (default cache: FILE:/tmp/x)"
            ),
            Failure::NoTicket
        );
        assert_eq!(classify(13, 0, "something else"), Failure::Other);
    }

    #[test]
    fn explanations_are_one_line_and_name_the_fix() {
        for f in [
            Failure::NoTicket,
            Failure::Expired,
            Failure::UnknownServer,
            Failure::ClockSkew,
            Failure::KdcUnreachable,
        ] {
            let s = explain(f, "hive/h@R", "detail");
            assert!(!s.contains('\n'), "{s}");
        }
        assert!(explain(Failure::NoTicket, "s", "d").contains("kinit"));
        assert!(explain(Failure::UnknownServer, "hive/h@R", "d").contains("hive/h@R"));
    }

    #[test]
    fn hdfs_failures_are_explained_for_hdfs() {
        let m = |c: i64| c as i32 as u32;
        // What hdfs-native reports for a cache without a TGT (MIT 1.20).
        let s = explain_hdfs(
            13,
            m(CC_NOTFOUND),
            "Unspecified GSS failure.  Minor code may provide more information: Matching \
             credential not found (filename: /tmp/cc)",
        );
        assert!(s.starts_with("Kerberos authentication to HDFS failed: no Kerberos ticket"));
        assert!(s.contains("kinit"), "{s}");
        let s = explain_hdfs(13, m(TKT_EXPIRED), "Ticket expired");
        assert!(s.contains("has expired") && s.contains("kinit"), "{s}");
        let s = explain_hdfs(13, m(S_PRINCIPAL_UNKNOWN), "Server not found");
        assert!(s.contains("dfs.namenode.kerberos.principal"), "{s}");
        assert!(!s.contains("hive.metastore"), "{s}");
        assert!(!explain_hdfs(13, m(SKEW), "skew").contains('\n'));
    }

    #[test]
    fn keytab_needs_a_principal() {
        assert!(set_login(Login {
            principal: None,
            keytab: Some("/k".into())
        })
        .is_err());
    }
}
