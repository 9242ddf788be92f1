//! The merge key: which files may share an output.

use std::collections::BTreeMap;

use orc_rust::proto::{self, r#type::Kind};
use prost::Message;

use crate::orc::encoding::compress::Compression;
use crate::orc::marks::LAYOUT;
use crate::orc::tail::orc_tail::OrcTail;

/// What must be equal for stripes of two files to live in one file (docs/design/orc-merge.md, "The merge key").
///
/// Stripes are copied untouched, so everything a reader needs to decode them but finds only in
/// the tail must agree: the type tree, the codec and its block size, the versions that select
/// per-writer workarounds, the row index stride, and the calendar. The software version is
/// included too, because the output claims to be written by the same software as its inputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MergeKey {
    /// The type tree rendered as ORC schema text, for dry runs and messages.
    pub schema: String,
    /// The encoded type messages: every attribute, field name, precision, scale and length.
    types: Vec<u8>,
    pub compression: Compression,
    pub compression_block_size: u64,
    pub file_version: [u32; 2],
    pub writer: u32,
    pub writer_version: u32,
    pub software_version: Option<String>,
    pub row_index_stride: u32,
    pub calendar: i32,
    /// Whether the schema has dates or timestamps, the values a calendar gives meaning.
    pub calendar_values: bool,
    /// Whether the file has one stripe-statistics entry per stripe: an output can only carry
    /// stripe statistics if all its inputs do.
    pub stripe_statistics: bool,
}

/// Files that agree on a [`MergeKey`] and whose user metadata does not conflict.
#[derive(Clone, Debug)]
pub struct MergeGroup {
    pub key: MergeKey,
    /// Indices into the slice given to [`group_tails`], in the order given.
    pub files: Vec<usize>,
}

/// A file that cannot be merged with any other, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmergeable {
    pub file: usize,
    pub reason: String,
}

#[derive(Clone, Debug, Default)]
pub struct Grouping {
    pub groups: Vec<MergeGroup>,
    pub unmergeable: Vec<Unmergeable>,
}

/// The merge key of one file, or the reason it can never be merged.
pub fn merge_key(tail: &OrcTail) -> Result<MergeKey, String> {
    if tail.footer.encryption.is_some() {
        return Err("uses column encryption".into());
    }
    if tail.compression == Compression::Lzo {
        return Err("compressed with LZO, which this tool cannot rewrite".into());
    }
    if let Some(gap) = &tail.statistics_gap {
        return Err(gap.to_string());
    }
    Ok(MergeKey {
        schema: schema_text(&tail.footer.types, 0),
        types: tail
            .footer
            .types
            .iter()
            .flat_map(|t| meaningful(t).encode_length_delimited_to_vec())
            .collect(),
        compression: tail.compression,
        compression_block_size: tail.compression_block_size,
        file_version: tail.file_version,
        writer: tail.writer,
        writer_version: tail.writer_version,
        software_version: tail.footer.software_version.clone(),
        row_index_stride: tail.footer.row_index_stride.unwrap_or(0),
        calendar: tail.footer.calendar.unwrap_or(0),
        calendar_values: tail.footer.types.iter().any(|t| {
            matches!(
                Kind::try_from(t.kind.unwrap_or(-1)),
                Ok(Kind::Date | Kind::Timestamp | Kind::TimestampInstant)
            )
        }),
        stripe_statistics: tail.stripe_statistics,
    })
}

/// A type with only the attributes its kind reads: ORC C++ writes `maximumLength`, `precision`
/// and `scale` as 0 on every type, ORC Java only where they mean something (char and varchar
/// lengths, decimal precision and scale), and the two trees describe the same schema.
fn meaningful(t: &proto::Type) -> proto::Type {
    let kind = Kind::try_from(t.kind.unwrap_or(-1));
    let mut t = t.clone();
    if !matches!(kind, Ok(Kind::Char | Kind::Varchar)) {
        t.maximum_length = None;
    }
    if !matches!(kind, Ok(Kind::Decimal)) {
        t.precision = None;
        t.scale = None;
    }
    t
}

/// Groups files by merge key. Within a key, a file joins the first group whose user metadata
/// it does not contradict (same key, different value): the output's user metadata is the
/// union, and one key cannot carry two values. Groups keep the files' given order, so outputs
/// are deterministic for the same listing.
pub fn group_tails(tails: &[&OrcTail]) -> Grouping {
    let mut grouping = Grouping::default();
    let mut metadata: Vec<BTreeMap<&str, &[u8]>> = Vec::new();
    for (file, tail) in tails.iter().enumerate() {
        let key = match merge_key(tail) {
            Ok(key) => key,
            Err(reason) => {
                grouping.unmergeable.push(Unmergeable { file, reason });
                continue;
            }
        };
        let items = match user_metadata(tail) {
            Ok(items) => items,
            Err(reason) => {
                grouping.unmergeable.push(Unmergeable { file, reason });
                continue;
            }
        };
        let slot = grouping
            .groups
            .iter()
            .zip(&metadata)
            .position(|(g, union)| {
                g.key == key
                    && items
                        .iter()
                        .all(|(k, v)| union.get(k).is_none_or(|u| u == v))
            });
        match slot {
            Some(i) => {
                grouping.groups[i].files.push(file);
                metadata[i].extend(items);
            }
            None => {
                grouping.groups.push(MergeGroup {
                    key,
                    files: vec![file],
                });
                metadata.push(items.into_iter().collect());
            }
        }
    }
    grouping
}

impl MergeKey {
    /// Whether files of the two keys hold values of one schema, counted in one calendar: all
    /// a re-encode needs to write their rows into one file. With `any_calendar` (their files
    /// hold no date or timestamp before the Gregorian reform, see [`calendar_free`]) the
    /// calendars may differ: they count those values alike.
    pub fn same_schema(&self, other: &MergeKey, any_calendar: bool) -> bool {
        self.types == other.types && (any_calendar || self.calendar == other.calendar)
    }

    /// Whether files of the two keys differ in calendar only where it counts: one schema with
    /// dates or timestamps, in two calendars.
    pub fn calendars_differ(&self, other: &MergeKey) -> bool {
        self.calendar_values && self.types == other.types && self.calendar != other.calendar
    }
}

/// 1582-10-15, the first day of the Gregorian calendar, in days since 1970-01-01: the hybrid
/// Julian-Gregorian calendar (ORC Java's default) and the proleptic Gregorian one (ORC C++'s,
/// and Hive 3's) count every day from it on alike, and differ before it.
const GREGORIAN_REFORM_DAY: i64 = -141_427;

/// Whether a file's statistics (`file`, one entry per column of `tail`'s type tree) prove that
/// its dates and timestamps all fall on or after the Gregorian reform, so its calendar does not
/// matter: each such column records a minimum that late, or holds no values.
pub fn calendar_free(tail: &OrcTail, file: &[proto::ColumnStatistics]) -> bool {
    const DAY_MS: i64 = 86_400_000;
    tail.footer.types.iter().enumerate().all(|(id, t)| {
        let stats = file.get(id);
        let empty = stats.is_some_and(|s| s.number_of_values == Some(0));
        match Kind::try_from(t.kind.unwrap_or(-1)) {
            Ok(Kind::Date) => {
                empty
                    || stats
                        .and_then(|s| s.date_statistics.as_ref()?.minimum)
                        .is_some_and(|d| i64::from(d) >= GREGORIAN_REFORM_DAY)
            }
            Ok(Kind::Timestamp | Kind::TimestampInstant) => {
                empty
                    || stats
                        .and_then(|s| {
                            let t = s.timestamp_statistics.as_ref()?;
                            t.minimum_utc.or(t.minimum)
                        })
                        // A day's margin for the writer's time zone.
                        .is_some_and(|ms| ms >= (GREGORIAN_REFORM_DAY + 1) * DAY_MS)
            }
            _ => true,
        }
    })
}

/// The groups of `grouping` that a re-encode may merge, as lists of indices into
/// `grouping.groups`, in the order of each list's first group: groups of the same schema
/// (different codecs, block sizes, writers, writer versions or row index strides) whose user
/// metadata does not conflict; groups of different calendars too when every file of both is
/// `calendar_free` (by index into `tails`). `tails` are those given to [`group_tails`].
pub fn schema_groups(
    grouping: &Grouping,
    tails: &[&OrcTail],
    calendar_free: &dyn Fn(usize) -> bool,
) -> Vec<Vec<usize>> {
    let mut merged: Vec<Vec<usize>> = Vec::new();
    let mut unions: Vec<BTreeMap<&str, &[u8]>> = Vec::new();
    let free: Vec<bool> = grouping
        .groups
        .iter()
        .map(|g| g.files.iter().all(|&f| calendar_free(f)))
        .collect();
    for (i, group) in grouping.groups.iter().enumerate() {
        let mut items: BTreeMap<&str, &[u8]> = BTreeMap::new();
        for &f in &group.files {
            // group_tails kept only files whose metadata it could read.
            items.extend(user_metadata(tails[f]).unwrap_or_default());
        }
        let slot = merged.iter().zip(&unions).position(|(m, union)| {
            let any_calendar = free[i] && m.iter().all(|&g| free[g]);
            grouping.groups[m[0]]
                .key
                .same_schema(&group.key, any_calendar)
                && items
                    .iter()
                    .all(|(k, v)| union.get(k).is_none_or(|u| u == v))
        });
        match slot {
            Some(s) => {
                merged[s].push(i);
                unions[s].extend(items);
            }
            None => {
                merged.push(vec![i]);
                unions.push(items);
            }
        }
    }
    merged
}

/// The layout a file says it was written in (see [`LAYOUT`]), if any.
pub fn layout_of(tail: &OrcTail) -> Option<&str> {
    let item = tail
        .footer
        .metadata
        .iter()
        .find(|m| m.name.as_deref() == Some(LAYOUT))?;
    std::str::from_utf8(item.value.as_deref()?).ok()
}

/// Whether `item` is a [`LAYOUT`] record.
pub fn is_layout_item(item: &proto::UserMetadataItem) -> bool {
    item.name.as_deref() == Some(LAYOUT)
}

/// The user metadata item recording `layout`, for an output's footer.
pub fn layout_item(layout: &str) -> proto::UserMetadataItem {
    proto::UserMetadataItem {
        name: Some(LAYOUT.to_string()),
        value: Some(layout.as_bytes().to_vec()),
    }
}

/// A file's user metadata as name → value, but for [`LAYOUT`]. A name repeated with two values inside one file
/// has no single meaning to carry forward.
pub(crate) fn user_metadata(tail: &OrcTail) -> Result<Vec<(&str, &[u8])>, String> {
    let mut seen: BTreeMap<&str, &[u8]> = BTreeMap::new();
    for item in &tail.footer.metadata {
        let name = item.name.as_deref().unwrap_or("");
        if name == LAYOUT {
            continue;
        }
        let value = item.value.as_deref().unwrap_or(&[]);
        if let Some(prev) = seen.insert(name, value) {
            if prev != value {
                return Err(format!(
                    "user metadata {name:?} appears twice with different values"
                ));
            }
        }
    }
    Ok(seen.into_iter().collect())
}

/// ORC's schema notation (`struct<a:int,b:array<string>>`). Children are validated to come after
/// their parent when the tail is read, so this recursion ends.
fn schema_text(types: &[proto::Type], id: usize) -> String {
    let Some(t) = types.get(id) else {
        return "?".into();
    };
    let child = |i: usize| {
        t.subtypes
            .get(i)
            .map_or_else(|| "?".to_string(), |&c| schema_text(types, c as usize))
    };
    let children = || {
        (0..t.subtypes.len())
            .map(child)
            .collect::<Vec<_>>()
            .join(",")
    };
    match Kind::try_from(t.kind.unwrap_or(-1)) {
        Ok(Kind::Boolean) => "boolean".into(),
        Ok(Kind::Byte) => "tinyint".into(),
        Ok(Kind::Short) => "smallint".into(),
        Ok(Kind::Int) => "int".into(),
        Ok(Kind::Long) => "bigint".into(),
        Ok(Kind::Float) => "float".into(),
        Ok(Kind::Double) => "double".into(),
        Ok(Kind::String) => "string".into(),
        Ok(Kind::Binary) => "binary".into(),
        Ok(Kind::Timestamp) => "timestamp".into(),
        Ok(Kind::TimestampInstant) => "timestamp with local time zone".into(),
        Ok(Kind::Date) => "date".into(),
        Ok(Kind::Decimal) => format!(
            "decimal({},{})",
            t.precision.unwrap_or(38),
            t.scale.unwrap_or(10)
        ),
        Ok(Kind::Varchar) => format!("varchar({})", t.maximum_length.unwrap_or(0)),
        Ok(Kind::Char) => format!("char({})", t.maximum_length.unwrap_or(0)),
        Ok(Kind::List) => format!("array<{}>", child(0)),
        Ok(Kind::Map) => format!("map<{},{}>", child(0), child(1)),
        Ok(Kind::Union) => format!("uniontype<{}>", children()),
        Ok(Kind::Struct) => {
            let fields = (0..t.subtypes.len())
                .map(|i| {
                    let name = t.field_names.get(i).map_or("?", String::as_str);
                    format!("{name}:{}", child(i))
                })
                .collect::<Vec<_>>()
                .join(",");
            format!("struct<{fields}>")
        }
        Err(_) => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::tail::orc_tail::statistics_gap;
    use crate::orc::tail::read::{read_tail, read_tail_with_statistics};
    use crate::orc::testutil::{block_on, MemFile, ALL_TYPES_LZ4, MULTI_STRIPE_ZSTD};
    use std::sync::Arc;

    fn tail(bytes: &[u8]) -> OrcTail {
        block_on(read_tail(&MemFile::new(bytes.to_vec())))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn schema_text_matches_java() {
        let key = merge_key(&tail(ALL_TYPES_LZ4)).unwrap();
        assert_eq!(
            key.schema,
            "struct<b:boolean,t:tinyint,si:smallint,i:int,l:bigint,f:float,d:double,s:string,\
             vc:varchar(10),c:char(5),bin:binary,dec:decimal(38,10),dec2:decimal(10,2),dt:date,\
             ts:timestamp,tsl:timestamp with local time zone,lst:array<int>,m:map<string,int>,\
             st:struct<x:int,y:string>,u:uniontype<int,string>>"
        );
        assert_eq!(key.compression, Compression::Lz4);
        assert!(key.stripe_statistics);
    }

    #[test]
    fn groups_split_by_key_and_by_conflicting_user_metadata() {
        let a = tail(ALL_TYPES_LZ4);
        let b = tail(MULTI_STRIPE_ZSTD);
        let with_meta = |t: &OrcTail, v: &str| {
            let mut t = t.clone();
            Arc::make_mut(&mut t.footer)
                .metadata
                .push(proto::UserMetadataItem {
                    name: Some("spark.version".into()),
                    value: Some(v.as_bytes().to_vec()),
                });
            t
        };
        let a1 = with_meta(&a, "3.5.1");
        let a2 = with_meta(&a, "3.5.1");
        let a3 = with_meta(&a, "3.4.0");
        let g = group_tails(&[&a, &b, &a1, &a2, &a3]);
        let files: Vec<Vec<usize>> = g.groups.iter().map(|g| g.files.clone()).collect();
        assert_eq!(files, vec![vec![0, 2, 3], vec![1], vec![4]]);
        assert!(g.unmergeable.is_empty());
    }

    #[test]
    fn key_parts_each_separate_files() {
        let a = tail(MULTI_STRIPE_ZSTD);
        type Change = Box<dyn Fn(&mut OrcTail)>;
        let variants: Vec<Change> = vec![
            Box::new(|t| t.compression_block_size *= 2),
            Box::new(|t| t.writer = 1),
            Box::new(|t| t.writer_version += 1),
            Box::new(|t| {
                Arc::make_mut(&mut t.footer).software_version = Some("ORC C++ 1.7.0".into())
            }),
            Box::new(|t| Arc::make_mut(&mut t.footer).row_index_stride = Some(5000)),
            Box::new(|t| Arc::make_mut(&mut t.footer).calendar = Some(2)),
            Box::new(|t| t.file_version = [0, 11]),
            Box::new(|t| t.stripe_statistics = false),
            Box::new(|t| {
                Arc::make_mut(&mut t.footer).types[1]
                    .attributes
                    .push(proto::StringPair {
                        key: Some("k".into()),
                        value: Some("v".into()),
                    })
            }),
            Box::new(|t| Arc::make_mut(&mut t.footer).types[0].field_names[0] = "renamed".into()),
        ];
        for (i, change) in variants.iter().enumerate() {
            let mut b = a.clone();
            change(&mut b);
            let g = group_tails(&[&a, &b]);
            assert_eq!(g.groups.len(), 2, "variant {i} merged");
        }
    }

    #[test]
    fn a_re_encode_merges_groups_of_one_schema_unless_metadata_or_calendar_conflict() {
        let a = tail(MULTI_STRIPE_ZSTD);
        let mut zlib = a.clone();
        zlib.compression = Compression::Zlib;
        let mut cpp = a.clone();
        cpp.writer = 1;
        Arc::make_mut(&mut cpp.footer).row_index_stride = Some(5000);
        let mut julian = a.clone();
        Arc::make_mut(&mut julian.footer).calendar = Some(2);
        let other = tail(ALL_TYPES_LZ4);
        let mut conflicting = a.clone();
        conflicting.compression = Compression::Snappy;
        Arc::make_mut(&mut conflicting.footer).metadata = a.footer.metadata.clone();
        Arc::make_mut(&mut conflicting.footer)
            .metadata
            .push(proto::UserMetadataItem {
                name: Some("k".into()),
                value: Some(b"1".to_vec()),
            });
        let mut agreeing = a.clone();
        agreeing.compression = Compression::Lz4;
        Arc::make_mut(&mut agreeing.footer)
            .metadata
            .push(proto::UserMetadataItem {
                name: Some("k".into()),
                value: Some(b"2".to_vec()),
            });
        let tails = [&a, &zlib, &cpp, &julian, &other, &agreeing, &conflicting];
        let g = group_tails(&tails);
        assert_eq!(g.groups.len(), 7, "every file a merge key of its own");
        let merged = schema_groups(&g, &tails, &|_| false);
        let files = |m: &Vec<usize>| -> Vec<usize> {
            m.iter().flat_map(|&i| g.groups[i].files.clone()).collect()
        };
        let as_files: Vec<Vec<usize>> = merged.iter().map(files).collect();
        assert_eq!(as_files, vec![vec![0, 1, 2, 5], vec![3], vec![4], vec![6]]);
    }

    #[test]
    fn unmergeable_files_carry_a_reason() {
        let a = tail(MULTI_STRIPE_ZSTD);
        let mut encrypted = a.clone();
        Arc::make_mut(&mut encrypted.footer).encryption = Some(proto::Encryption::default());
        let (_, statistics) = block_on(read_tail_with_statistics(&MemFile::new(
            MULTI_STRIPE_ZSTD.to_vec(),
        )))
        .unwrap()
        .unwrap();
        let columns = a.footer.types.len();
        let mut no_count = a.clone();
        let mut counted = statistics.file.clone();
        counted[1].number_of_values = None;
        no_count.statistics_gap = statistics_gap(columns, &counted);
        let mut no_stats = a.clone();
        no_stats.statistics_gap = statistics_gap(columns, &[]);
        let g = group_tails(&[&encrypted, &no_count, &no_stats, &a]);
        assert_eq!(g.groups.len(), 1);
        assert_eq!(g.groups[0].files, vec![3]);
        let reasons: Vec<&str> = g.unmergeable.iter().map(|u| u.reason.as_str()).collect();
        assert!(reasons[0].contains("encryption"), "{reasons:?}");
        assert!(reasons[1].contains("value count"), "{reasons:?}");
        assert!(reasons[2].contains("file statistics"), "{reasons:?}");
    }
}
