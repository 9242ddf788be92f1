//! Writes one Iceberg table version (format v2): manifests, one manifest list, one snapshot and
//! the table metadata JSON, onto HDFS.
//!
//! The `iceberg` crate encodes everything; its `FileIO` has no HDFS storage, so it writes each
//! Avro file into its in-memory storage, and we copy the bytes onto HDFS with hdfs-native and
//! drop them from memory at once. Manifests are rolled every [`FILES_PER_MANIFEST`] files, so
//! memory holds one manifest's entries at a time whatever the size of the table.

use std::collections::HashMap;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, ManifestFile, ManifestListWriter, ManifestWriter,
    ManifestWriterBuilder, Operation, Schema, Snapshot, SortOrder, Summary, TableMetadata,
    TableMetadataBuilder, Transform, UnboundPartitionSpec, MAIN_BRANCH,
};

use crate::hdfs::{Hdfs, Location};

/// Entries per manifest. The crate's manifest writer holds every entry until the manifest is
/// closed, then encodes it whole (and the bytes pass through memory once more on their way to
/// HDFS), so this bounds what a migration holds: a few MB for entries with metrics for a few
/// dozen columns. Iceberg's own writers roll at 8 MB of manifest (several times this many
/// entries); more, smaller manifests cost query planning next to nothing.
pub const FILES_PER_MANIFEST: usize = 4_000;

/// What a written table version is made of.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    pub metadata_location: String,
    pub table_uuid: String,
    pub snapshot_id: i64,
    /// Every file written, metadata JSON last (for cleanup after a failed commit).
    pub files: Vec<String>,
    pub data_files: u64,
    pub records: u64,
    pub manifests: usize,
}

pub struct TableWriter<'a> {
    hdfs: &'a Hdfs,
    metadata_dir: Location,
    memory: FileIO,
    metadata: TableMetadata,
    snapshot_id: i64,
    current: Option<ManifestWriter>,
    in_current: usize,
    manifests: Vec<ManifestFile>,
    written: Vec<String>,
    data_files: u64,
    records: u64,
    properties: HashMap<String, String>,
}

impl<'a> TableWriter<'a> {
    /// A new table at `location` (its metadata goes to `<location>/metadata`) with an identity
    /// partition spec over `partition_keys` (columns of `schema`).
    pub fn new(
        hdfs: &'a Hdfs,
        schema: Schema,
        partition_keys: &[String],
        location: &Location,
        properties: HashMap<String, String>,
    ) -> anyhow::Result<Self> {
        let mut spec = UnboundPartitionSpec::builder();
        for key in partition_keys {
            let field = schema
                .field_by_name(key)
                .ok_or_else(|| anyhow!("partition key {key} is not in the schema"))?;
            spec = spec.add_partition_field(field.id, key, Transform::Identity)?;
        }
        let metadata = TableMetadataBuilder::new(
            schema,
            spec.build(),
            SortOrder::unsorted_order(),
            location.to_string(),
            FormatVersion::V2,
            properties,
        )?
        .build()?
        .metadata;
        Ok(TableWriter {
            hdfs,
            metadata_dir: location.child("metadata"),
            memory: FileIO::new_with_memory(),
            metadata,
            snapshot_id: snapshot_id(),
            current: None,
            in_current: 0,
            manifests: vec![],
            written: vec![],
            data_files: 0,
            records: 0,
            properties: HashMap::new(),
        })
    }

    /// The schema with the ids the table uses (the builder assigns fresh ids).
    pub fn schema(&self) -> &Schema {
        self.metadata.current_schema()
    }

    pub fn partition_spec_id(&self) -> i32 {
        self.metadata.default_partition_spec_id()
    }

    pub fn metadata_dir(&self) -> &Location {
        &self.metadata_dir
    }

    /// Table properties, set on the version `finish` writes.
    pub fn set_properties(&mut self, properties: HashMap<String, String>) {
        self.properties.extend(properties);
    }

    /// Deletes what was written so far (after a failure or a refusal), best effort.
    pub async fn abandon(self) {
        for path in &self.written {
            if let Ok(l) = Location::parse(path) {
                if let Err(e) = self.hdfs.delete(&l, false).await {
                    tracing::warn!("could not delete {l}: {e}");
                }
            }
        }
        if !self.written.is_empty() {
            // Only when empty (non-recursive), as it was created for these files.
            let _ = self.hdfs.delete(&self.metadata_dir, false).await;
        }
    }

    /// Adds one data file to the snapshot's current manifest; [`TableWriter::roll`] writes the
    /// manifest out once it is full.
    pub fn add(&mut self, file: DataFile) -> anyhow::Result<()> {
        if self.current.is_none() {
            let path = self.metadata_dir.child(&format!(
                "{}-m{}.avro",
                uuid::Uuid::new_v4(),
                self.manifests.len()
            ));
            let output = self.memory.new_output(path.to_string())?;
            self.current = Some(
                ManifestWriterBuilder::new(
                    output,
                    Some(self.snapshot_id),
                    self.metadata.current_schema().clone(),
                    self.metadata.default_partition_spec().as_ref().clone(),
                )
                .build_v2_data(),
            );
        }
        self.records += file.record_count();
        self.data_files += 1;
        // -1: the entry inherits the snapshot's sequence number, as appended files do.
        self.current
            .as_mut()
            .expect("a manifest is open")
            .add_file(file, -1)?;
        self.in_current += 1;
        Ok(())
    }

    /// Writes the current manifest out if it holds [`FILES_PER_MANIFEST`] files or more. Call
    /// it when no other HDFS read of the caller is left unpolled: a write waiting on the
    /// DataNodes while reads hold their connections can wait forever.
    pub async fn roll(&mut self) -> anyhow::Result<()> {
        if self.in_current >= FILES_PER_MANIFEST {
            self.close_manifest().await?;
        }
        Ok(())
    }

    async fn close_manifest(&mut self) -> anyhow::Result<()> {
        if let Some(writer) = self.current.take() {
            let manifest = writer.write_manifest_file().await?;
            self.flush(&manifest.manifest_path).await?;
            self.manifests.push(manifest);
            self.in_current = 0;
        }
        Ok(())
    }

    /// Copies one file the crate wrote into memory onto HDFS, then frees the memory.
    async fn flush(&mut self, path: &str) -> anyhow::Result<()> {
        let bytes = self.memory.new_input(path)?.read().await?;
        self.put(path, bytes).await?;
        self.memory.delete(path).await?;
        Ok(())
    }

    async fn put(&mut self, path: &str, bytes: Bytes) -> anyhow::Result<()> {
        let location = Location::parse(path)?;
        if self.written.is_empty() {
            self.hdfs
                .mkdirs(&self.metadata_dir, 0o755)
                .await
                .with_context(|| format!("creating {}", self.metadata_dir))?;
        }
        let mut writer = self.hdfs.create(&location, 0o644).await?;
        writer
            .write_bytes(bytes)
            .await
            .map_err(|e| anyhow!("writing {location}: {e}"))?;
        writer
            .close()
            .await
            .map_err(|e| anyhow!("closing {location}: {e}"))?;
        self.written.push(path.to_owned());
        Ok(())
    }

    /// Writes the manifest list, the snapshot and the metadata JSON. Nothing is committed in
    /// the metastore yet: until then, the files are unreferenced.
    pub async fn finish(mut self) -> anyhow::Result<Written> {
        self.close_manifest().await?;
        let sequence_number = self.metadata.next_sequence_number();
        let list_path = self
            .metadata_dir
            .child(&format!(
                "snap-{}-1-{}.avro",
                self.snapshot_id,
                uuid::Uuid::new_v4()
            ))
            .to_string();
        let mut list = ManifestListWriter::v2(
            self.memory.new_output(&list_path)?.writer().await?,
            self.snapshot_id,
            None,
            sequence_number,
        );
        let manifests = self.manifests.len();
        list.add_manifests(std::mem::take(&mut self.manifests).into_iter())?;
        list.close().await?;
        self.flush(&list_path).await?;
        let summary = Summary {
            operation: Operation::Append,
            additional_properties: HashMap::from([
                ("added-data-files".into(), self.data_files.to_string()),
                ("added-records".into(), self.records.to_string()),
                ("total-data-files".into(), self.data_files.to_string()),
                ("total-records".into(), self.records.to_string()),
                ("total-delete-files".into(), "0".into()),
                ("total-position-deletes".into(), "0".into()),
                ("total-equality-deletes".into(), "0".into()),
            ]),
        };
        let snapshot = Snapshot::builder()
            .with_snapshot_id(self.snapshot_id)
            .with_sequence_number(sequence_number)
            .with_timestamp_ms(chrono::Utc::now().timestamp_millis())
            .with_manifest_list(list_path)
            .with_summary(summary)
            .with_schema_id(self.metadata.current_schema_id())
            .build();
        let metadata = TableMetadataBuilder::new_from_metadata(self.metadata.clone(), None)
            .set_properties(std::mem::take(&mut self.properties))?
            .set_branch_snapshot(snapshot, MAIN_BRANCH)?
            .build()?
            .metadata;
        let metadata_location = self
            .metadata_dir
            .child(&format!("00000-{}.metadata.json", uuid::Uuid::new_v4()))
            .to_string();
        let json = serde_json::to_vec(&metadata)?;
        self.put(&metadata_location, json.into()).await?;
        Ok(Written {
            metadata_location,
            table_uuid: metadata.uuid().to_string(),
            snapshot_id: self.snapshot_id,
            files: self.written,
            data_files: self.data_files,
            records: self.records,
            manifests,
        })
    }
}

/// A positive random id, as Iceberg's own snapshot ids are.
fn snapshot_id() -> i64 {
    let u = uuid::Uuid::new_v4().as_u64_pair();
    ((u.0 ^ u.1) & (i64::MAX as u64)) as i64
}
