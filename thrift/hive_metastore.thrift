// The part of the Hive Metastore (HMS) Thrift protocol that hive-orc-compactor speaks.
//
// Written for this project. Field ids and types follow the public HMS protocol
// (Apache Hive, standalone-metastore, Hive master / 4.x), so this client talks to HMS 2.3, 3.1
// and 4.x alike.
//
// Fields that HMS declares with default requiredness are declared `optional` here. The wire
// format is the same; the difference is in the generated reader, which would otherwise turn an
// absent field (a Java null) into Some("") / Some(0) and so send back a value where the server
// had none.
//
// Rule for editing: every struct that we read and then send back (Table, Partition and all
// they contain) must list EVERY field the newest metastore has. A field left out here is
// skipped when decoding and therefore silently dropped by a read-modify-write.
//
// Regenerate the Rust code with `thrift/generate` after any change.

namespace rs hive_metastore

// ---------------------------------------------------------------------------------------------
// Enums

enum PrincipalType {
  USER = 1,
  ROLE = 2,
  GROUP = 3,
}

enum SerdeType {
  HIVE = 1,
  SCHEMA_REGISTRY = 2,
}

enum DatabaseType {
  NATIVE = 1,
  REMOTE = 2,
}

enum ClientCapability {
  TEST_CAPABILITY = 1,
  INSERT_ONLY_TABLES = 2,
}

enum LockLevel {
  DB = 1,
  TABLE = 2,
  PARTITION = 3,
}

enum LockState {
  ACQUIRED = 1,
  WAITING = 2,
  ABORT = 3,
  NOT_ACQUIRED = 4,
}

enum LockType {
  SHARED_READ = 1,
  SHARED_WRITE = 2,
  EXCLUSIVE = 3,
  EXCL_WRITE = 4,
}

enum DataOperationType {
  SELECT = 1,
  INSERT = 2,
  UPDATE = 3,
  DELETE = 4,
  UNSET = 5,
  NO_TXN = 6,
}

// ---------------------------------------------------------------------------------------------
// Metadata objects (read-modify-write: complete field lists)

struct FieldSchema {
  1: optional string name,
  2: optional string type,
  3: optional string comment,
}

struct EnvironmentContext {
  1: optional map<string, string> properties,
}

struct PrivilegeGrantInfo {
  1: optional string privilege,
  2: optional i32 createTime,
  3: optional string grantor,
  4: optional PrincipalType grantorType,
  5: optional bool grantOption,
}

struct PrincipalPrivilegeSet {
  1: optional map<string, list<PrivilegeGrantInfo>> userPrivileges,
  2: optional map<string, list<PrivilegeGrantInfo>> groupPrivileges,
  3: optional map<string, list<PrivilegeGrantInfo>> rolePrivileges,
}

struct Database {
  1: optional string name,
  2: optional string description,
  3: optional string locationUri,
  4: optional map<string, string> parameters,
  5: optional PrincipalPrivilegeSet privileges,
  6: optional string ownerName,
  7: optional PrincipalType ownerType,
  8: optional string catalogName,
  9: optional i32 createTime,
  10: optional string managedLocationUri,
  11: optional DatabaseType type,
  12: optional string connector_name,
  13: optional string remote_dbname,
}

struct SerDeInfo {
  1: optional string name,
  2: optional string serializationLib,
  3: optional map<string, string> parameters,
  4: optional string description,
  5: optional string serializerClass,
  6: optional string deserializerClass,
  7: optional SerdeType serdeType,
}

struct Order {
  1: optional string col,
  2: optional i32 order,
}

struct SkewedInfo {
  1: optional list<string> skewedColNames,
  2: optional list<list<string>> skewedColValues,
  3: optional map<list<string>, string> skewedColValueLocationMaps,
}

struct StorageDescriptor {
  1: optional list<FieldSchema> cols,
  2: optional string location,
  3: optional string inputFormat,
  4: optional string outputFormat,
  5: optional bool compressed,
  6: optional i32 numBuckets,
  7: optional SerDeInfo serdeInfo,
  8: optional list<string> bucketCols,
  9: optional list<Order> sortCols,
  10: optional map<string, string> parameters,
  11: optional SkewedInfo skewedInfo,
  12: optional bool storedAsSubDirectories,
}

// Column statistics: Table and Partition can carry them (fields 21 and 12).

struct BooleanColumnStatsData {
  1: required i64 numTrues,
  2: required i64 numFalses,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

struct DoubleColumnStatsData {
  1: optional double lowValue,
  2: optional double highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

struct LongColumnStatsData {
  1: optional i64 lowValue,
  2: optional i64 highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

struct StringColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct BinaryColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

struct Decimal {
  1: required binary unscaled,
  3: required i16 scale,
}

struct DecimalColumnStatsData {
  1: optional Decimal lowValue,
  2: optional Decimal highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

struct Date {
  1: required i64 daysSinceEpoch,
}

struct DateColumnStatsData {
  1: optional Date lowValue,
  2: optional Date highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

struct Timestamp {
  1: required i64 secondsSinceEpoch,
}

struct TimestampColumnStatsData {
  1: optional Timestamp lowValue,
  2: optional Timestamp highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

union ColumnStatisticsData {
  1: BooleanColumnStatsData booleanStats,
  2: LongColumnStatsData longStats,
  3: DoubleColumnStatsData doubleStats,
  4: StringColumnStatsData stringStats,
  5: BinaryColumnStatsData binaryStats,
  6: DecimalColumnStatsData decimalStats,
  7: DateColumnStatsData dateStats,
  8: TimestampColumnStatsData timestampStats,
}

struct ColumnStatisticsObj {
  1: required string colName,
  2: required string colType,
  3: required ColumnStatisticsData statsData,
}

struct ColumnStatisticsDesc {
  1: required bool isTblLevel,
  2: required string dbName,
  3: required string tableName,
  4: optional string partName,
  5: optional i64 lastAnalyzed,
  6: optional string catName,
}

struct ColumnStatistics {
  1: required ColumnStatisticsDesc statsDesc,
  2: required list<ColumnStatisticsObj> statsObj,
  3: optional bool isStatsCompliant,
  4: optional string engine,
}

struct FileMetadata {
  1: optional i8 type = 1,
  2: optional i8 version = 1,
  3: optional list<binary> data,
}

struct ObjectDictionary {
  1: required map<string, list<binary>> values,
}

// Materialized views only; referenced by Table.
struct CreationMetadata {
  1: required string catName,
  2: required string dbName,
  3: required string tblName,
  4: required set<string> tablesUsed,
  5: optional string validTxnList,
  6: optional i64 materializationTime,
  7: optional list<SourceTable> sourceTables,
}

struct Table {
  1: optional string tableName,
  2: optional string dbName,
  3: optional string owner,
  4: optional i32 createTime,
  5: optional i32 lastAccessTime,
  6: optional i32 retention,
  7: optional StorageDescriptor sd,
  8: optional list<FieldSchema> partitionKeys,
  9: optional map<string, string> parameters,
  10: optional string viewOriginalText,
  11: optional string viewExpandedText,
  12: optional string tableType,
  13: optional PrincipalPrivilegeSet privileges,
  14: optional bool temporary = false,
  15: optional bool rewriteEnabled,
  16: optional CreationMetadata creationMetadata,
  17: optional string catName,
  18: optional PrincipalType ownerType = PrincipalType.USER,
  19: optional i64 writeId = -1,
  20: optional bool isStatsCompliant,
  21: optional ColumnStatistics colStats,
  22: optional i8 accessType,
  23: optional list<string> requiredReadCapabilities,
  24: optional list<string> requiredWriteCapabilities,
  25: optional i64 id,
  26: optional FileMetadata fileMetadata,
  27: optional ObjectDictionary dictionary,
  28: optional i64 txnId,
}

struct SourceTable {
  1: required Table table,
  2: required i64 insertedCount,
  3: required i64 updatedCount,
  4: required i64 deletedCount,
}

struct Partition {
  1: optional list<string> values,
  2: optional string dbName,
  3: optional string tableName,
  4: optional i32 createTime,
  5: optional i32 lastAccessTime,
  6: optional StorageDescriptor sd,
  7: optional map<string, string> parameters,
  8: optional PrincipalPrivilegeSet privileges,
  9: optional string catName,
  10: optional i64 writeId = -1,
  11: optional bool isStatsCompliant,
  12: optional ColumnStatistics colStats,
  13: optional FileMetadata fileMetadata,
}

// ---------------------------------------------------------------------------------------------
// Request / response wrappers (write-only or read-only: only the fields we may set or read
// need to be right, but ids must match)

struct ClientCapabilities {
  1: required list<ClientCapability> values,
}

struct GetDatabaseRequest {
  1: optional string name,
  2: optional string catalogName,
  3: optional list<string> processorCapabilities,
  4: optional string processorIdentifier,
}

struct GetTableRequest {
  1: required string dbName,
  2: required string tblName,
  3: optional ClientCapabilities capabilities,
  4: optional string catName,
  6: optional string validWriteIdList,
  7: optional bool getColumnStats,
  8: optional list<string> processorCapabilities,
  9: optional string processorIdentifier,
  10: optional string engine,
  11: optional i64 id = -1,
}

struct GetTableResult {
  1: required Table table,
  2: optional bool isStatsCompliant,
}

struct GetPartitionRequest {
  1: optional string catName,
  2: required string dbName,
  3: required string tblName,
  4: required list<string> partVals,
  5: optional string validWriteIdList,
  6: optional i64 id = -1,
}

struct GetPartitionResponse {
  1: required Partition partition,
}

struct PartitionsRequest {
  1: optional string catName,
  2: required string dbName,
  3: required string tblName,
  4: optional i16 maxParts = -1,
  5: optional string validWriteIdList,
  6: optional i64 id = -1,
  7: optional bool skipColumnSchemaForPartition,
  8: optional string includeParamKeyPattern,
  9: optional string excludeParamKeyPattern,
}

struct PartitionsResponse {
  1: required list<Partition> partitions,
}

struct GetPartitionsByFilterRequest {
  1: optional string catName,
  2: string dbName,
  3: string tblName,
  4: string filter,
  5: optional i16 maxParts = -1,
  6: optional bool skipColumnSchemaForPartition,
  7: optional string includeParamKeyPattern,
  8: optional string excludeParamKeyPattern,
}

// Argument of get_partitions_by_names_req (HMS 4+). Only sent, never read back, so only the
// fields we set are declared.
struct GetPartitionsByNamesRequest {
  1: required string db_name,
  2: required string tbl_name,
  3: optional list<string> names,
  6: optional string processorIdentifier,
}

struct GetPartitionsByNamesResult {
  1: required list<Partition> partitions,
}

// Argument of get_partition_names_req; `expr` is a serialized Hive expression.
struct PartitionsByExprRequest {
  1: required string dbName,
  2: required string tblName,
  3: required binary expr,
  4: optional string defaultPartitionName,
  5: optional i16 maxParts = -1,
  6: optional string catName,
  7: optional string order,
  8: optional string validWriteIdList,
  9: optional i64 id = -1,
}

struct AlterPartitionsRequest {
  1: optional string catName,
  2: required string dbName,
  3: required string tableName,
  4: required list<Partition> partitions,
  5: optional EnvironmentContext environmentContext,
  6: optional i64 writeId = -1,
  7: optional string validWriteIdList,
}

struct AlterPartitionsResponse {
}

// ---------------------------------------------------------------------------------------------
// Locks

struct LockComponent {
  1: required LockType type,
  2: required LockLevel level,
  3: required string dbname,
  4: optional string tablename,
  5: optional string partitionname,
  6: optional DataOperationType operationType = DataOperationType.UNSET,
  7: optional bool isTransactional = false,
  8: optional bool isDynamicPartitionWrite = false,
}

struct LockRequest {
  1: required list<LockComponent> component,
  2: optional i64 txnid,
  3: required string user,
  4: required string hostname,
  5: optional string agentInfo = "Unknown",
  6: optional bool zeroWaitReadEnabled = false,
  7: optional bool exclusiveCTAS = false,
  8: optional bool locklessReadsEnabled = false,
}

struct LockResponse {
  1: required i64 lockid,
  2: required LockState state,
  3: optional string errorMessage,
}

struct CheckLockRequest {
  1: required i64 lockid,
  2: optional i64 txnid,
  3: optional i64 elapsed_ms,
}

struct UnlockRequest {
  1: required i64 lockid,
}

struct HeartbeatRequest {
  1: optional i64 lockid,
  2: optional i64 txnid,
}

// What `SHOW LOCKS` reads: after a lock call that got no answer, the tool looks here for a lock
// the metastore may have granted to that call (found by its agentInfo) and releases it. Every
// field is read only; the filters narrow the answer to one partition.
struct ShowLocksRequest {
  1: optional string dbname,
  2: optional string tablename,
  3: optional string partname,
  4: optional bool isExtended = false,
  // 4.x only; older servers skip it.
  5: optional i64 txnid,
}

struct ShowLocksResponseElement {
  1: required i64 lockid,
  2: required string dbname,
  3: optional string tablename,
  4: optional string partname,
  5: required LockState state,
  6: required LockType type,
  7: optional i64 txnid,
  8: required i64 lastheartbeat,
  9: optional i64 acquiredat,
  10: required string user,
  11: required string hostname,
  12: optional i32 heartbeatCount = 0,
  13: optional string agentInfo,
  14: optional i64 blockedByExtId,
  15: optional i64 blockedByIntId,
  16: optional i64 lockIdInternal,
}

struct ShowLocksResponse {
  1: list<ShowLocksResponseElement> locks,
}

// ---------------------------------------------------------------------------------------------
// The notification log: what a metastore with a notification listener
// (metastore.transactional.event.listeners) records of each change, read by Impala's catalog,
// Atlas and Hive replication. Read-only for us: only the request's first two fields are sent
// (HMS 4's filters by database and table are left to the reader, 2.x/3.x lack them).

struct NotificationEventRequest {
  1: required i64 lastEvent,
  2: optional i32 maxEvents,
}

struct NotificationEvent {
  1: required i64 eventId,
  // Seconds since the epoch.
  2: required i32 eventTime,
  // ALTER_PARTITION, ALTER_PARTITIONS (HMS 4.1 and later), ADD_PARTITION, ...
  3: required string eventType,
  4: optional string dbName,
  5: optional string tableName,
  // JSON, or base64 of gzipped JSON: messageFormat says which.
  6: required string message,
  7: optional string messageFormat,
  8: optional string catName,
}

struct NotificationEventResponse {
  1: required list<NotificationEvent> events,
}

struct CurrentNotificationEventId {
  1: required i64 eventId,
}

// ---------------------------------------------------------------------------------------------
// Exceptions

exception MetaException {
  1: string message,
}

exception UnknownTableException {
  1: string message,
}

exception UnknownDBException {
  1: string message,
}

exception AlreadyExistsException {
  1: string message,
}

exception InvalidObjectException {
  1: string message,
}

exception NoSuchObjectException {
  1: string message,
}

exception InvalidOperationException {
  1: string message,
}

exception NoSuchTxnException {
  1: string message,
}

exception TxnAbortedException {
  1: string message,
}

exception TxnOpenException {
  1: string message,
}

exception NoSuchLockException {
  1: string message,
}

// ---------------------------------------------------------------------------------------------
// Service. The real one extends fb303.FacebookService; we call none of its methods, and the
// method name alone selects the call on the wire, so the base service is left out.

service ThriftHiveMetastore {
  // Probe: pure configuration lookup, no metastore database access.
  string get_config_value(1: string name, 2: string defaultValue)

  list<string> get_all_databases() throws (1: MetaException o1)
  Database get_database(1: string name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  Database get_database_req(1: GetDatabaseRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  void create_database(1: Database database)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  void drop_database(1: string name, 2: bool deleteData, 3: bool cascade)
      throws (1: NoSuchObjectException o1, 2: InvalidOperationException o2, 3: MetaException o3)

  list<string> get_all_tables(1: string db_name) throws (1: MetaException o1)
  list<string> get_tables(1: string db_name, 2: string pattern) throws (1: MetaException o1)
  // Removed in HMS 4.0.1; kept for 2.x servers.
  Table get_table(1: string dbname, 2: string tbl_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetTableResult get_table_req(1: GetTableRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  void create_table(1: Table tbl)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)
  void drop_table(1: string dbname, 2: string name, 3: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  // Replaces a table's definition (also renames it). Iceberg's HiveCatalog commits with it;
  // HMS 4 honours expected_parameter_key/value in the context as a compare-and-swap.
  void alter_table_with_environment_context(1: string dbname, 2: string tbl_name,
      3: Table new_tbl, 4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)

  i32 add_partitions(1: list<Partition> new_parts)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  bool drop_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
                      4: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  Partition get_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetPartitionResponse get_partition_req(1: GetPartitionRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  Partition get_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  PartitionsResponse get_partitions_req(1: PartitionsRequest req)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_partition_names(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Newest servers only (after 4.0.1).
  list<string> fetch_partition_names_req(1: PartitionsRequest partitionReq)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_partition_names_req(1: PartitionsByExprRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_filter(1: string db_name, 2: string tbl_name,
      3: string filter, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_filter_req(1: GetPartitionsByFilterRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_names(1: string db_name, 2: string tbl_name,
      3: list<string> names)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetPartitionsByNamesResult get_partitions_by_names_req(1: GetPartitionsByNamesRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  void alter_partition_with_environment_context(1: string db_name, 2: string tbl_name,
      3: Partition new_part, 4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  // Many partitions of one table in one metastore transaction: all change or none does.
  // The request form is HMS 4's; 2.3 and 3.1 take the legacy one.
  AlterPartitionsResponse alter_partitions_req(1: AlterPartitionsRequest req)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  void alter_partitions_with_environment_context(1: string db_name, 2: string tbl_name,
      3: list<Partition> new_parts, 4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)

  LockResponse lock(1: LockRequest rqst)
      throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2)
  LockResponse check_lock(1: CheckLockRequest rqst)
      throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2, 3: NoSuchLockException o3)
  void unlock(1: UnlockRequest rqst)
      throws (1: NoSuchLockException o1, 2: TxnOpenException o2)
  void heartbeat(1: HeartbeatRequest ids)
      throws (1: NoSuchLockException o1, 2: NoSuchTxnException o2, 3: TxnAbortedException o3)
  ShowLocksResponse show_locks(1: ShowLocksRequest rqst)

  // Events after lastEvent, oldest first, at most maxEvents; the id of the newest one.
  NotificationEventResponse get_next_notification(1: NotificationEventRequest rqst)
  CurrentNotificationEventId get_current_notificationEventId()

  // Delegation tokens, for tasks without a Kerberos ticket (SASL DIGEST-MD5); asked for over
  // Kerberos (GSSAPI). The token travels in Hadoop's URL-safe string form.
  string get_delegation_token(1: string token_owner, 2: string renewer_kerberos_principal_name)
      throws (1: MetaException o1)
  // The token's new expiry, milliseconds since the epoch; only its renewer may renew it, and
  // never past the token's maximum date.
  i64 renew_delegation_token(1: string token_str_form) throws (1: MetaException o1)
  void cancel_delegation_token(1: string token_str_form) throws (1: MetaException o1)
}
