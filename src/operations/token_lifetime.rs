//! How long a YARN job's delegation tokens work, and what a long job does about it.
//!
//! A task has no Kerberos ticket: it reaches the metastore with the metastore token the job
//! carries, and HDFS with the HDFS tokens the Hadoop client got at submission. Each token
//! stops working one renew interval after its last renewal (a day by default), and nothing
//! renews it past its maximum date (7 days after it was issued, by default). YARN's
//! ResourceManager renews the HDFS tokens of a running job, but not the metastore's (its
//! renewer class is not on the ResourceManager's classpath): the edge node that submitted the
//! job renews that one for as long as it follows the job ([`keep_renewing`]).
//!
//! The maximum date is a hard wall. A partition whose compaction is cut by it would stop
//! between steps, which the protocol survives, but a lock or a swap left to a later run is
//! a worse end than a partition never begun. So a task starts no partition once less than a
//! margin (`--yarn-token-margin`) remains before the first of its tokens ends ([`start_by`]);
//! each one left out is reported failed, untouched, with what to do; and the edge node refuses
//! up front a job whose tokens leave no room at all ([`check_before_submit`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::metastore::security::token::Credentials;
use crate::metastore::{DelegationToken, Metastore};
use crate::operations::batch::StartBy;

/// `--yarn-token-margin`'s default: longer than most partitions take, short against the
/// tokens' 7 days; a tenth of their lifetime where tokens live less than 10 hours.
const DEFAULT_MARGIN: Duration = Duration::from_secs(3600);

/// The margin `explicit` (`--yarn-token-margin`) or the default for a token issued at
/// `issue_ms` that ends at `end_ms`.
fn margin(explicit: Option<Duration>, issue_ms: i64, end_ms: i64) -> Duration {
    explicit.unwrap_or_else(|| {
        let lifetime = Duration::from_millis((end_ms - issue_ms).max(0) as u64);
        DEFAULT_MARGIN.min(lifetime / 10)
    })
}

/// After a failed renewal, the next try comes this much later (or at the expiry, if sooner).
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// For a task: when it must have started its last partition, from the tokens YARN gave it.
/// `None` when no token in the file has a maximum date (an unsecured cluster).
pub fn start_by(creds: &Credentials, explicit_margin: Option<Duration>) -> Option<StartBy> {
    let (token, end_ms) = creds.first_to_end()?;
    let issue_ms = token.identifier().map_or(end_ms, |id| id.issue_date);
    let margin = margin(explicit_margin, issue_ms, end_ms);
    let end = UNIX_EPOCH + Duration::from_millis(end_ms.max(0) as u64);
    Some(StartBy {
        at: end.checked_sub(margin).unwrap_or(UNIX_EPOCH),
        reason: format!(
            "not started, nothing changed: the job's delegation tokens stop working at {} \
             ({} reaches its maximum lifetime; nothing renews it further) and a task starts a \
             partition only while --yarn-token-margin ({}) remains; compact it in a new job \
             (new tokens), in smaller slices (--limit, --where), or with --yarn-keytab",
            utc(end_ms),
            token.describe(),
            humantime(margin),
        ),
    })
}

/// For the edge node, with the metastore token just got for the job: a job whose tokens end
/// before a task could start anything is refused before it is submitted.
pub fn check_before_submit(
    token: &DelegationToken,
    explicit_margin: Option<Duration>,
) -> anyhow::Result<()> {
    let Some(id) = token.identifier() else {
        return Ok(());
    };
    let end_ms = id.max_date;
    let margin = margin(explicit_margin, id.issue_date, end_ms);
    let left = Duration::from_millis((end_ms - now_ms()).max(0) as u64);
    if left <= margin {
        anyhow::bail!(
            "the job's metastore token can be renewed only until {} ({} from now: the metastore's \
             delegation token maximum lifetime), not longer than --yarn-token-margin ({}), so no \
             task could start a partition; nothing was submitted: lower --yarn-token-margin, or \
             raise metastore.cluster.delegation.token.max-lifetime on the metastore",
            utc(end_ms),
            humantime(left),
            humantime(margin),
        );
    }
    Ok(())
}

/// Renews `token` while the job runs: at once (which also tells its expiry), then each time
/// half of what is left has passed, so one failed renewal leaves time for several more tries.
/// Once the token is at its maximum date, says so loudly (and again when the tasks' margin
/// begins) and waits for the job to end: it never returns, the caller drops it.
pub async fn keep_renewing(
    metastore: &Metastore,
    token: &DelegationToken,
    explicit_margin: Option<Duration>,
) {
    let id = token.identifier();
    let end_ms = id.as_ref().map(|id| id.max_date);
    let margin = id.map_or(Duration::ZERO, |id| {
        margin(explicit_margin, id.issue_date, id.max_date)
    });
    let mut expiry_ms: Option<i64> = None;
    let mut last_error: Option<String> = None;
    loop {
        match metastore.renew_delegation_token(token).await {
            Ok(expiry) => {
                last_error = None;
                tracing::info!(
                    "renewed the job's metastore token {} until {}",
                    token.describe(),
                    utc(expiry)
                );
                expiry_ms = Some(expiry);
                if end_ms.is_some_and(|end| expiry >= end) {
                    break;
                }
            }
            Err(e) => {
                let shown = e.to_string();
                // The same failure every 30 s is one warning, not hundreds.
                if last_error.as_deref() != Some(shown.as_str()) {
                    tracing::warn!(
                        "could not renew the job's metastore token {} ({shown}); trying again \
                         until it expires at {}",
                        token.describe(),
                        expiry_ms.map_or("?".into(), utc),
                    );
                    last_error = Some(shown);
                }
            }
        }
        let wait = match (expiry_ms, &last_error) {
            (Some(expiry), None) => half_of_what_is_left(expiry),
            (Some(expiry), Some(_)) => half_of_what_is_left(expiry).min(RETRY_AFTER),
            (None, _) => RETRY_AFTER,
        };
        tokio::time::sleep(wait).await;
    }
    let end = end_ms.unwrap_or_default();
    tracing::warn!(
        "the job's metastore token {} is renewed up to its maximum lifetime, {}: its tasks \
         start no partition after {} (--yarn-token-margin {}); partitions not started by then \
         are reported failed, untouched, for a new job",
        token.describe(),
        utc(end),
        utc(end - margin.as_millis() as i64),
        humantime(margin),
    );
    let until_margin = (end - margin.as_millis() as i64) - now_ms();
    if until_margin > 0 {
        tokio::time::sleep(Duration::from_millis(until_margin as u64)).await;
        tracing::error!(
            "the job's delegation tokens end at {}: from now on its tasks start no new \
             partition; run the rest again in a new job (new tokens), in smaller slices \
             (--limit, --where), or with --yarn-keytab",
            utc(end),
        );
    }
    std::future::pending::<()>().await;
}

fn half_of_what_is_left(expiry_ms: i64) -> Duration {
    let left = (expiry_ms - now_ms()).max(0) as u64;
    Duration::from_millis(left / 2).max(Duration::from_secs(1))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms after the epoch"),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

/// `1h`, `1h30m`, `1m30s`, `45s`: as the duration flags are written.
fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    let parts = [(s / 3600, "h"), (s / 60 % 60, "m"), (s % 60, "s")];
    let shown: String = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    if shown.is_empty() {
        "0s".into()
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_margin_is_an_hour_or_a_tenth_of_short_lifetimes() {
        let week = 7 * 86_400_000;
        assert_eq!(margin(None, 0, week), DEFAULT_MARGIN);
        assert_eq!(margin(None, 0, 1_800_000), Duration::from_secs(180));
        let asked = Some(Duration::from_secs(5));
        assert_eq!(margin(asked, 0, week), Duration::from_secs(5));
    }

    #[test]
    fn margins_read_as_people_write_them() {
        assert_eq!(humantime(Duration::from_secs(3600)), "1h");
        assert_eq!(humantime(Duration::from_secs(7 * 86_400)), "168h");
        assert_eq!(humantime(Duration::from_secs(5400)), "1h30m");
        assert_eq!(humantime(Duration::from_secs(90)), "1m30s");
        assert_eq!(humantime(Duration::ZERO), "0s");
    }

    #[test]
    fn renewals_come_at_half_of_what_is_left_and_never_spin() {
        let in_a_minute = now_ms() + 60_000;
        let wait = half_of_what_is_left(in_a_minute);
        assert!(wait > Duration::from_secs(28) && wait <= Duration::from_secs(30));
        assert_eq!(half_of_what_is_left(0), Duration::from_secs(1));
    }
}
