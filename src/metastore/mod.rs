//! Hive Metastore (HMS) client.
//!
//! Speaks the HMS Thrift protocol (binary, buffered or framed) through code generated from our
//! own IDL in `thrift/`. One binary serves HMS 2.3, 3.1 and 4.x: every call is tried in its
//! request-style form first and falls back to the legacy method when the server does not know
//! it (HMS 4.0.1 removed `get_table`, older servers lack the `*_req` calls).
//!
//! The thrift crate's client is blocking; each call runs on tokio's blocking pool, one at a
//! time per [`Metastore`] (the connection is a single request/reply stream).
//!
//! Do not build [`Table`] or [`Partition`] with `Default::default()`: the generated defaults
//! fill fields such as `cat_name` with `""` and `write_id` with 0, which the server then stores
//! or acts on. Start from `None` fields, or from what the metastore returned.

mod config;
mod error;
mod gen;
pub mod meter;
pub mod security;
mod session;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub use config::{parse_uris, MetastoreConfig, MetastoreUri, Transport};
pub use error::MetastoreError;
pub use gen::{
    CheckLockRequest, ColumnStatistics, DataOperationType, Database, EnvironmentContext,
    FieldSchema, LockComponent, LockLevel, LockRequest, LockResponse, LockState, LockType,
    NotificationEvent, Order, Partition, PrincipalPrivilegeSet, PrincipalType, PrivilegeGrantInfo,
    SerDeInfo, ShowLocksResponseElement, SkewedInfo, StorageDescriptor, Table,
};
pub use security::token::{DelegationToken, TokenLogin};

use gen::TThriftHiveMetastoreSyncClient as _;
use session::{Call, Client, Fallbacks, Session};

pub type Result<T, E = MetastoreError> = std::result::Result<T, E>;

/// Environment-context key that stops the metastore from recomputing basic statistics
/// (numFiles, totalSize, ...) on `alter_partition`: the parameters sent are kept as sent.
pub const DO_NOT_UPDATE_STATS: &str = "DO_NOT_UPDATE_STATS";

/// The catalog every pre-catalog (HMS 2.x) object lives in on HMS 3+. Named in every request,
/// as Hive's own client does: some HMS 4.0.1 handlers fail on a null catalog
/// (get_database_req, fetch_partition_names_req); older servers skip the unknown field.
const DEFAULT_CATALOG: &str = "hive";

/// Sent as `processorIdentifier` so the metastore's logs can tell our calls apart.
const PROCESSOR: &str = "hive-orc-compactor";

/// The principal the ticket cache holds tickets for (`kinit`'s), or one line saying why there
/// is none and what to do. Here because the GSSAPI library behind it is the metastore login's.
pub fn cache_principal() -> std::result::Result<String, String> {
    security::gssapi::cache_principal().map_err(|e| {
        format!(
            "no Kerberos ticket to act as ({e}): run `kinit user@REALM`, or pass --principal \
             with --keytab"
        )
    })
}

/// A connection to the metastore (with failover). Cheap to clone; clones share the
/// connection, and their calls queue behind each other.
#[derive(Clone)]
pub struct Metastore {
    session: Arc<Mutex<Session>>,
    answered: Arc<Mutex<Option<MetastoreUri>>>,
    uris: String,
    page_size: usize,
}

fn lock(session: &Mutex<Session>) -> MutexGuard<'_, Session> {
    // A panic mid-call leaves the stream in an unknown state; the session then reconnects
    // on the next broken call, so the data behind a poisoned lock is still usable.
    session.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metastore {
    /// Connects to the first URI of `cfg` that answers a probe call.
    pub async fn connect(cfg: MetastoreConfig) -> Result<Self> {
        let answered = Arc::new(Mutex::new(None));
        let uris = cfg.uri_list();
        let page_size = cfg.page_size.max(1);
        let mut session = Session::new(cfg, answered.clone());
        let session = tokio::task::spawn_blocking(move || session.connect().map(|()| session))
            .await
            .map_err(|e| MetastoreError::Client(e.to_string()))??;
        Ok(Metastore {
            session: Arc::new(Mutex::new(session)),
            answered,
            uris,
            page_size,
        })
    }

    /// Partitions to ask for per call when reading many (see [`MetastoreConfig::page_size`]).
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The URI that answered last; while disconnected, the configured list (for messages).
    pub fn uri(&self) -> String {
        match &*self.answered.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(uri) => uri.to_string(),
            None => self.uris.clone(),
        }
    }

    /// Closes the connection; the next call opens a new one. For after a call the server could
    /// not parse: its end of the stream may be left mid-message.
    pub async fn reconnect(&self) {
        let session = self.session.clone();
        let _ = tokio::task::spawn_blocking(move || lock(&session).drop_connection()).await;
    }

    /// Request-style methods the current server lacks (their legacy forms are used instead).
    pub async fn unsupported_methods(&self) -> Vec<&'static str> {
        let session = self.session.clone();
        tokio::task::spawn_blocking(move || lock(&session).unsupported_methods())
            .await
            .unwrap_or_default()
    }

    async fn run<T, F>(&self, method: &'static str, what: String, kind: Call, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut Client, &mut Fallbacks) -> thrift::Result<T> + Send + 'static,
    {
        let session = self.session.clone();
        tokio::task::spawn_blocking(move || lock(&session).call(method, &what, kind, f))
            .await
            .map_err(|e| MetastoreError::Client(e.to_string()))?
    }

    pub async fn databases(&self) -> Result<Vec<String>> {
        self.run(
            "get_all_databases",
            "databases".into(),
            Call::Idempotent,
            |c, _| c.get_all_databases(),
        )
        .await
    }

    pub async fn database(&self, name: &str) -> Result<Database> {
        let name = name.to_owned();
        let what = format!("database {name}");
        self.run("get_database_req", what, Call::Idempotent, move |c, fb| {
            fb.call(
                c,
                "get_database_req",
                |c| {
                    c.get_database_req(gen::GetDatabaseRequest {
                        name: Some(name.clone()),
                        catalog_name: Some(DEFAULT_CATALOG.to_owned()),
                        processor_capabilities: None,
                        processor_identifier: Some(PROCESSOR.to_owned()),
                    })
                },
                |c| c.get_database(name.clone()),
            )
        })
        .await
    }

    /// Table names of `db`; `pattern` is the metastore's pattern syntax (`*` wildcards, `|`).
    pub async fn tables(&self, db: &str, pattern: Option<&str>) -> Result<Vec<String>> {
        let db = db.to_owned();
        let pattern = pattern.map(str::to_owned);
        let what = format!("database {db}");
        self.run(
            "get_tables",
            what,
            Call::Idempotent,
            move |c, _| match &pattern {
                Some(p) => c.get_tables(db.clone(), p.clone()),
                None => c.get_all_tables(db.clone()),
            },
        )
        .await
    }

    pub async fn get_table(&self, db: &str, table: &str) -> Result<Table> {
        let (db, table) = (db.to_owned(), table.to_owned());
        let what = format!("table {db}.{table}");
        self.run("get_table_req", what, Call::Idempotent, move |c, fb| {
            fb.call(
                c,
                "get_table_req",
                |c| {
                    c.get_table_req(gen::GetTableRequest {
                        db_name: db.clone(),
                        tbl_name: table.clone(),
                        // HMS 3+ refuses to return insert-only tables to clients that do
                        // not declare they know them; we do (to refuse them by name).
                        capabilities: Some(gen::ClientCapabilities {
                            values: vec![gen::ClientCapability::INSERT_ONLY_TABLES],
                        }),
                        cat_name: Some(DEFAULT_CATALOG.to_owned()),
                        valid_write_id_list: None,
                        get_column_stats: None,
                        processor_capabilities: None,
                        processor_identifier: Some(PROCESSOR.to_owned()),
                        engine: None,
                        id: None,
                    })
                    .map(|r| r.table)
                },
                |c| c.get_table(db.clone(), table.clone()),
            )
        })
        .await
    }

    /// `name` is the metastore's escaped partition name, e.g. `dt=2024-01-01/hour=03`.
    pub async fn get_partition_by_name(
        &self,
        db: &str,
        table: &str,
        name: &str,
    ) -> Result<Partition> {
        let (db, table, name) = (db.to_owned(), table.to_owned(), name.to_owned());
        let what = format!("partition {db}.{table}/{name}");
        self.run(
            "get_partition_by_name",
            what,
            Call::Idempotent,
            move |c, _| c.get_partition_by_name(db.clone(), table.clone(), name.clone()),
        )
        .await
    }

    /// `values` in the order of the table's partition keys.
    pub async fn get_partition_by_values(
        &self,
        db: &str,
        table: &str,
        values: &[String],
    ) -> Result<Partition> {
        let (db, table, values) = (db.to_owned(), table.to_owned(), values.to_vec());
        let what = format!("partition {db}.{table} {values:?}");
        self.run("get_partition_req", what, Call::Idempotent, move |c, fb| {
            fb.call(
                c,
                "get_partition_req",
                |c| {
                    c.get_partition_req(gen::GetPartitionRequest {
                        cat_name: Some(DEFAULT_CATALOG.to_owned()),
                        db_name: db.clone(),
                        tbl_name: table.clone(),
                        part_vals: values.clone(),
                        valid_write_id_list: None,
                        id: None,
                    })
                    .map(|r| r.partition)
                },
                |c| c.get_partition(db.clone(), table.clone(), values.clone()),
            )
        })
        .await
    }

    /// All partition names of a table.
    pub async fn partition_names(&self, db: &str, table: &str) -> Result<Vec<String>> {
        let (db, table) = (db.to_owned(), table.to_owned());
        let what = format!("table {db}.{table}");
        self.run(
            "fetch_partition_names_req",
            what,
            Call::Idempotent,
            move |c, fb| {
                fb.call(
                    c,
                    "fetch_partition_names_req",
                    |c| c.fetch_partition_names_req(partitions_request(&db, &table, None)),
                    |c| c.get_partition_names(db.clone(), table.clone(), -1),
                )
            },
        )
        .await
    }

    /// Partitions matching a metastore filter such as `dt >= "2024-01-01"`; `max` of `None`
    /// means all.
    pub async fn partitions_by_filter(
        &self,
        db: &str,
        table: &str,
        filter: &str,
        max: Option<i16>,
    ) -> Result<Vec<Partition>> {
        let (db, table, filter) = (db.to_owned(), table.to_owned(), filter.to_owned());
        let max = max.unwrap_or(-1);
        let what = format!("table {db}.{table}");
        self.run(
            "get_partitions_by_filter_req",
            what,
            Call::Idempotent,
            move |c, fb| {
                fb.call(
                    c,
                    "get_partitions_by_filter_req",
                    |c| {
                        c.get_partitions_by_filter_req(gen::GetPartitionsByFilterRequest {
                            cat_name: Some(DEFAULT_CATALOG.to_owned()),
                            db_name: Some(db.clone()),
                            tbl_name: Some(table.clone()),
                            filter: Some(filter.clone()),
                            max_parts: Some(max),
                            skip_column_schema_for_partition: None,
                            include_param_key_pattern: None,
                            exclude_param_key_pattern: None,
                        })
                    },
                    |c| c.get_partitions_by_filter(db.clone(), table.clone(), filter.clone(), max),
                )
            },
        )
        .await
    }

    /// The partitions with these names (escaped, as [`Metastore::partition_names`] returns
    /// them); names that match no partition are left out. Fetch a large table's partitions in
    /// pages of names, so no single answer holds them all.
    pub async fn partitions_by_names(
        &self,
        db: &str,
        table: &str,
        names: &[String],
    ) -> Result<Vec<Partition>> {
        let (db, table, names) = (db.to_owned(), table.to_owned(), names.to_vec());
        let what = format!("table {db}.{table}");
        self.run(
            "get_partitions_by_names_req",
            what,
            Call::Idempotent,
            move |c, fb| {
                fb.call(
                    c,
                    "get_partitions_by_names_req",
                    |c| {
                        c.get_partitions_by_names_req(gen::GetPartitionsByNamesRequest {
                            db_name: db.clone(),
                            tbl_name: table.clone(),
                            names: Some(names.clone()),
                            processor_identifier: Some(PROCESSOR.to_owned()),
                        })
                        .map(|r| r.partitions)
                    },
                    |c| c.get_partitions_by_names(db.clone(), table.clone(), names.clone()),
                )
            },
        )
        .await
    }

    /// Partitions of a table, at most `max` (`None`: all).
    pub async fn partitions(
        &self,
        db: &str,
        table: &str,
        max: Option<i16>,
    ) -> Result<Vec<Partition>> {
        let (db, table) = (db.to_owned(), table.to_owned());
        let max = max.unwrap_or(-1);
        let what = format!("table {db}.{table}");
        self.run(
            "get_partitions_req",
            what,
            Call::Idempotent,
            move |c, fb| {
                fb.call(
                    c,
                    "get_partitions_req",
                    |c| {
                        c.get_partitions_req(partitions_request(&db, &table, Some(max)))
                            .map(|r| r.partitions)
                    },
                    |c| c.get_partitions(db.clone(), table.clone(), max),
                )
            },
        )
        .await
    }

    /// Replaces a partition (identified by its values) with `partition`, passing `env` as the
    /// environment context (e.g. [`DO_NOT_UPDATE_STATS`]). Never resent automatically: on
    /// `Timeout`/`ConnectionLost` the outcome is unknown, so read the partition back.
    pub async fn alter_partition(
        &self,
        db: &str,
        table: &str,
        mut partition: Partition,
        env: BTreeMap<String, String>,
    ) -> Result<()> {
        // The parameters sent replace the stored ones (and carry the statistics); a null map
        // is never what we mean, so an absent map goes out as an empty one.
        partition.parameters.get_or_insert_with(BTreeMap::new);
        let (db, table) = (db.to_owned(), table.to_owned());
        let what = format!(
            "partition {db}.{table} {:?}",
            partition.values.as_deref().unwrap_or_default()
        );
        let env = EnvironmentContext {
            properties: Some(env),
        };
        self.run(
            "alter_partition_with_environment_context",
            what,
            Call::Once,
            move |c, _| {
                c.alter_partition_with_environment_context(
                    db.clone(),
                    table.clone(),
                    partition.clone(),
                    env.clone(),
                )
            },
        )
        .await
    }

    /// [`Metastore::alter_partition`] for many partitions of one table at once: the metastore
    /// applies them in one transaction, so either all change or none does. Never resent
    /// automatically: on `Timeout`/`ConnectionLost` the outcome is unknown, so read them back.
    pub async fn alter_partitions(
        &self,
        db: &str,
        table: &str,
        mut partitions: Vec<Partition>,
        env: BTreeMap<String, String>,
    ) -> Result<()> {
        for p in &mut partitions {
            p.parameters.get_or_insert_with(BTreeMap::new);
        }
        let (db, table) = (db.to_owned(), table.to_owned());
        let what = format!("{} partitions of {db}.{table}", partitions.len());
        let env = EnvironmentContext {
            properties: Some(env),
        };
        self.run("alter_partitions_req", what, Call::Once, move |c, fb| {
            fb.call(
                c,
                "alter_partitions_req",
                |c| {
                    c.alter_partitions_req(gen::AlterPartitionsRequest {
                        cat_name: Some(DEFAULT_CATALOG.to_owned()),
                        db_name: db.clone(),
                        table_name: table.clone(),
                        partitions: partitions.clone(),
                        environment_context: Some(env.clone()),
                        write_id: None,
                        valid_write_id_list: None,
                    })
                    .map(|_| ())
                },
                |c| {
                    c.alter_partitions_with_environment_context(
                        db.clone(),
                        table.clone(),
                        partitions.clone(),
                        env.clone(),
                    )
                },
            )
        })
        .await
    }

    pub async fn create_database(&self, database: Database) -> Result<()> {
        let what = format!("database {}", database.name.as_deref().unwrap_or_default());
        self.run("create_database", what, Call::Once, move |c, _| {
            c.create_database(database.clone())
        })
        .await
    }

    pub async fn drop_database(&self, name: &str, delete_data: bool, cascade: bool) -> Result<()> {
        let name = name.to_owned();
        let what = format!("database {name}");
        self.run("drop_database", what, Call::Once, move |c, _| {
            c.drop_database(name.clone(), delete_data, cascade)
        })
        .await
    }

    pub async fn create_table(&self, table: Table) -> Result<()> {
        let what = format!(
            "table {}.{}",
            table.db_name.as_deref().unwrap_or_default(),
            table.table_name.as_deref().unwrap_or_default()
        );
        self.run("create_table", what, Call::Once, move |c, _| {
            c.create_table(table.clone())
        })
        .await
    }

    /// Replaces the definition of `db.table` with `table` (whose names may differ: a rename),
    /// passing `env` as the environment context. Never resent automatically: on
    /// `Timeout`/`ConnectionLost` the outcome is unknown, so read the table back.
    pub async fn alter_table(
        &self,
        db: &str,
        name: &str,
        table: Table,
        env: BTreeMap<String, String>,
    ) -> Result<()> {
        let (db, name) = (db.to_owned(), name.to_owned());
        let what = format!("table {db}.{name}");
        let env = EnvironmentContext {
            properties: Some(env),
        };
        self.run(
            "alter_table_with_environment_context",
            what,
            Call::Once,
            move |c, _| {
                c.alter_table_with_environment_context(
                    db.clone(),
                    name.clone(),
                    table.clone(),
                    env.clone(),
                )
            },
        )
        .await
    }

    pub async fn drop_table(&self, db: &str, table: &str, delete_data: bool) -> Result<()> {
        let (db, table) = (db.to_owned(), table.to_owned());
        let what = format!("table {db}.{table}");
        self.run("drop_table", what, Call::Once, move |c, _| {
            c.drop_table(db.clone(), table.clone(), delete_data)
        })
        .await
    }

    /// Drops one partition; with `delete_data`, a managed table's partition directory goes too
    /// (as `ALTER TABLE ... DROP PARTITION` does).
    pub async fn drop_partition(
        &self,
        db: &str,
        table: &str,
        values: &[String],
        delete_data: bool,
    ) -> Result<bool> {
        let (db, table, values) = (db.to_owned(), table.to_owned(), values.to_vec());
        let what = format!("partition {db}.{table} {values:?}");
        self.run("drop_partition", what, Call::Once, move |c, _| {
            c.drop_partition(db.clone(), table.clone(), values.clone(), delete_data)
        })
        .await
    }

    /// Adds partitions (all of one table); returns how many were added.
    pub async fn add_partitions(&self, partitions: Vec<Partition>) -> Result<i32> {
        let what = match partitions.first() {
            Some(p) => format!(
                "partitions of {}.{}",
                p.db_name.as_deref().unwrap_or_default(),
                p.table_name.as_deref().unwrap_or_default()
            ),
            None => return Ok(0),
        };
        self.run("add_partitions", what, Call::Once, move |c, _| {
            c.add_partitions(partitions.clone())
        })
        .await
    }

    /// A metastore delegation token for `owner` (a short user name: the caller's own, or one
    /// it may impersonate as a Hadoop proxy user), renewable by `renewer` (a Kerberos principal,
    /// e.g. YARN's ResourceManager or the caller's own). Ask over a Kerberos (SASL/GSSAPI)
    /// login: that is what Hadoop's secret managers expect (HMS 4.0.1 was seen to issue one over
    /// a token login too). Never resent automatically (each call makes a new token).
    pub async fn delegation_token(&self, owner: &str, renewer: &str) -> Result<DelegationToken> {
        let (owner, renewer) = (owner.to_owned(), renewer.to_owned());
        let what = format!("delegation token for {owner}");
        let s = self
            .run("get_delegation_token", what, Call::Once, move |c, _| {
                c.get_delegation_token(owner.clone(), renewer.clone())
            })
            .await?;
        DelegationToken::decode(&s).map_err(|e| MetastoreError::Internal {
            uri: self.uri(),
            method: "get_delegation_token",
            message: e.to_string(),
        })
    }

    /// Renews `token` (only its renewer may): it stays valid one more renew interval of the
    /// metastore's (`metastore.cluster.delegation.token.renew-interval`, a day by default), never
    /// past its maximum date. Returns the new expiry, milliseconds since the epoch. Safe to
    /// resend: a second renewal only moves the same expiry again.
    pub async fn renew_delegation_token(&self, token: &DelegationToken) -> Result<i64> {
        let encoded = token.encode();
        let what = format!("delegation token {}", token.describe());
        self.run(
            "renew_delegation_token",
            what,
            Call::Idempotent,
            move |c, _| c.renew_delegation_token(encoded.clone()),
        )
        .await
    }

    /// Cancels `token`: the metastore forgets it, and logins with it fail from then on. Only its
    /// owner or its renewer may.
    pub async fn cancel_delegation_token(&self, token: &DelegationToken) -> Result<()> {
        let encoded = token.encode();
        let what = format!("delegation token {}", token.describe());
        self.run("cancel_delegation_token", what, Call::Once, move |c, _| {
            c.cancel_delegation_token(encoded.clone())
        })
        .await
    }

    /// Requests a lock. A metastore without a transaction manager answers `Internal`
    /// ("Internal error processing lock").
    pub async fn lock(&self, request: LockRequest) -> Result<LockResponse> {
        self.run("lock", "lock".into(), Call::Once, move |c, _| {
            c.lock(request.clone())
        })
        .await
    }

    pub async fn check_lock(&self, lock_id: i64) -> Result<LockResponse> {
        self.run(
            "check_lock",
            format!("lock {lock_id}"),
            Call::Idempotent,
            move |c, _| {
                c.check_lock(CheckLockRequest {
                    lockid: lock_id,
                    txnid: None,
                    elapsed_ms: None,
                })
            },
        )
        .await
    }

    pub async fn heartbeat(&self, lock_id: i64) -> Result<()> {
        self.run(
            "heartbeat",
            format!("lock {lock_id}"),
            Call::Idempotent,
            move |c, _| {
                c.heartbeat(gen::HeartbeatRequest {
                    lockid: Some(lock_id),
                    txnid: None,
                })
            },
        )
        .await
    }

    /// The locks on one partition (or, with an empty `partition`, on the table and its
    /// partitions), as `SHOW LOCKS` lists them.
    pub async fn show_locks(
        &self,
        db: &str,
        table: &str,
        partition: &str,
    ) -> Result<Vec<ShowLocksResponseElement>> {
        let request = gen::ShowLocksRequest {
            dbname: Some(db.to_owned()),
            tablename: Some(table.to_owned()),
            partname: Some(partition.to_owned()).filter(|p| !p.is_empty()),
            is_extended: Some(false),
            txnid: None,
        };
        let what = format!("locks on {db}.{table} {partition}");
        let response = self
            .run("show_locks", what, Call::Idempotent, move |c, _| {
                c.show_locks(request.clone())
            })
            .await?;
        Ok(response.locks.unwrap_or_default())
    }

    /// The id of the newest event in the metastore's notification log: 0 while it is empty,
    /// and it stays so on a metastore without a notification listener.
    pub async fn current_notification_id(&self) -> Result<i64> {
        let current = self
            .run(
                "get_current_notificationEventId",
                "the notification log".into(),
                Call::Idempotent,
                |c, _| c.get_current_notification_event_id(),
            )
            .await?;
        Ok(current.event_id)
    }

    /// At most `max` events of the notification log that came after event `after`, oldest
    /// first. The metastore keeps them for its listener's time to live (a day by default).
    pub async fn notifications_since(
        &self,
        after: i64,
        max: i32,
    ) -> Result<Vec<NotificationEvent>> {
        let request = gen::NotificationEventRequest {
            last_event: after,
            max_events: Some(max),
        };
        let what = format!("the notification log after event {after}");
        let response = self
            .run(
                "get_next_notification",
                what,
                Call::Idempotent,
                move |c, _| c.get_next_notification(request.clone()),
            )
            .await?;
        Ok(response.events)
    }

    pub async fn unlock(&self, lock_id: i64) -> Result<()> {
        self.run(
            "unlock",
            format!("lock {lock_id}"),
            Call::Once,
            move |c, _| c.unlock(gen::UnlockRequest { lockid: lock_id }),
        )
        .await
    }
}

/// Connections for concurrent work. Calls on one [`Metastore`] queue behind each other, so a
/// batch of N workers holds N connections, and each worker borrows one per partition.
pub struct MetastorePool {
    idle: Mutex<Vec<Metastore>>,
    permits: tokio::sync::Semaphore,
}

impl MetastorePool {
    /// Opens `size` connections (at least one), each failing over as [`Metastore::connect`].
    pub async fn connect(cfg: MetastoreConfig, size: usize) -> Result<Self> {
        let size = size.max(1);
        let mut idle = Vec::with_capacity(size);
        for _ in 0..size {
            idle.push(Metastore::connect(cfg.clone()).await?);
        }
        Ok(MetastorePool {
            idle: Mutex::new(idle),
            permits: tokio::sync::Semaphore::new(size),
        })
    }

    /// Waits for an idle connection; it returns to the pool when the guard drops.
    pub async fn get(&self) -> Pooled<'_> {
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the pool's semaphore is never closed");
        let metastore = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .expect("a permit guarantees an idle connection");
        Pooled {
            pool: self,
            metastore: Some(metastore),
            _permit: permit,
        }
    }
}

/// A connection borrowed from a [`MetastorePool`].
pub struct Pooled<'a> {
    pool: &'a MetastorePool,
    metastore: Option<Metastore>,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Metastore;
    fn deref(&self) -> &Metastore {
        self.metastore.as_ref().expect("held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(m) = self.metastore.take() {
            // Returned before the permit (a later field) is released.
            self.pool
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(m);
        }
    }
}

fn partitions_request(db: &str, table: &str, max: Option<i16>) -> gen::PartitionsRequest {
    gen::PartitionsRequest {
        cat_name: Some(DEFAULT_CATALOG.to_owned()),
        db_name: db.to_owned(),
        tbl_name: table.to_owned(),
        max_parts: max,
        valid_write_id_list: None,
        id: None,
        skip_column_schema_for_partition: None,
        include_param_key_pattern: None,
        exclude_param_key_pattern: None,
    }
}
