//! The binary `compact --on-yarn` ships to its tasks, kept on HDFS under its content hash:
//! `<yarn-dir>/binaries/<sha256>`, beside the runs' work directories `<yarn-dir>/<run-id>`.
//! Runs of one build upload it once; `cleanup` removes the builds no run used for a while.
//!
//! Promises:
//! 1. A file under a final name is a whole upload of the content its name hashes, as far as
//!    its length tells: an upload goes to `<sha256>.<run-id>.uploading` in the cache and is
//!    renamed in without overwriting, so concurrent runs never see half a binary and a crashed
//!    upload leaves no final name. A final name holding another length is replaced.
//! 2. A cached binary is never modified once in place. YARN records each shipped file's
//!    modification time when a job is submitted and refuses to localise it for that job's
//!    later containers once the time differs ("changed on src filesystem"), so touching it
//!    would fail the tasks of another run's job still going. A run's use is recorded on
//!    `<sha256>.used` instead: its modification time is set by every run that reuses the
//!    binary. The last use is the later of the two files' times.
//! 3. The cache directory is made with permission 0700 and its files are readable by the user
//!    alone (tasks run as the same user).
//! 4. The content is read from the running program's own file (`/proc/self/exe` where there
//!    is one), hashed once and uploaded from the same open file: a build installed over the
//!    path meanwhile changes neither.

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use sha2::Digest;

use crate::hdfs::{Entry, Files, Hdfs, Location};

/// The cache's directory name under the YARN work directory.
pub const DIR: &str = "binaries";
const USED: &str = ".used";
const UPLOADING: &str = ".uploading";

/// The cache directory for runs whose work directories go under `yarn_dir`.
pub fn dir(yarn_dir: &Location) -> Location {
    yarn_dir.child(DIR)
}

/// What a name in the cache directory is.
#[derive(Debug, PartialEq, Eq)]
pub enum Name<'a> {
    /// `<sha256>`: a cached binary.
    Binary(&'a str),
    /// `<sha256>.used`: its modification time is the binary's last use.
    Used(&'a str),
    /// `<sha256>.<run-id>.uploading`: a run's upload in progress, or a crashed one's.
    Uploading,
    /// Not ours: left alone.
    Other,
}

pub fn name(file: &str) -> Name<'_> {
    let hash = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if hash(file) {
        return Name::Binary(file);
    }
    if let Some(sha) = file.strip_suffix(USED).filter(|s| hash(s)) {
        return Name::Used(sha);
    }
    match file.strip_suffix(UPLOADING).and_then(|s| s.split_once('.')) {
        Some((sha, run)) if hash(sha) && !run.is_empty() => Name::Uploading,
        _ => Name::Other,
    }
}

/// The marker whose modification time is the last use of the binary `sha256`.
pub fn used_marker(cache: &Location, sha256: &str) -> Location {
    cache.child(&format!("{sha256}{USED}"))
}

/// The program the tasks run: its open file, hashed once.
#[derive(Debug, Clone)]
pub struct LocalBinary {
    /// Where it was read from, for messages.
    pub path: PathBuf,
    pub sha256: String,
    pub length: u64,
    file: Arc<std::fs::File>,
}

impl LocalBinary {
    /// This running program. On Linux `/proc/self/exe` opens the very file the process runs,
    /// even if another build has been installed over its path since it started.
    pub fn this_program() -> anyhow::Result<LocalBinary> {
        let proc = Path::new("/proc/self/exe");
        let path = std::env::current_exe()
            .context("cannot find this program's own file to ship it to the YARN tasks")?;
        let open = if proc.exists() { proc } else { &path };
        let file = std::fs::File::open(open).with_context(|| {
            format!(
                "cannot open this program's own file {} to ship it to the YARN tasks: give a \
                 build on HDFS with --yarn-binary",
                path.display()
            )
        })?;
        LocalBinary::of(path, file)
    }

    /// Hashes `file` from its start, streaming.
    pub fn of(path: PathBuf, mut file: std::fs::File) -> anyhow::Result<LocalBinary> {
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut length = 0u64;
        loop {
            let n = file
                .read(&mut buf)
                .with_context(|| format!("reading {} to hash it", path.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            length += n as u64;
        }
        let sha256 = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(LocalBinary {
            path,
            sha256,
            length,
            file: Arc::new(file),
        })
    }

    /// Where the cache under `yarn_dir` keeps it.
    pub fn cached(&self, yarn_dir: &Location) -> Location {
        dir(yarn_dir).child(&self.sha256)
    }
}

/// How a run's tasks get their binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// `--yarn-binary`: the build named, as it is; the cache is not used.
    Given,
    /// Not in the cache (or there with the wrong length): uploaded by this run.
    Upload,
    /// In the cache already: used as it is, its use recorded.
    Reuse,
}

/// Whether the cache holds `binary` whole; reads only (for a dry run).
pub async fn look_up(
    hdfs: &Hdfs,
    binary: &LocalBinary,
    yarn_dir: &Location,
) -> anyhow::Result<Action> {
    Ok(match whole(hdfs, &binary.cached(yarn_dir), binary).await? {
        Some(_) => Action::Reuse,
        None => Action::Upload,
    })
}

/// Makes sure the cache under `yarn_dir` holds `binary` and returns what it took: an upload,
/// or a reuse (recorded on its `.used` marker).
pub async fn ship(
    hdfs: &Hdfs,
    binary: &LocalBinary,
    yarn_dir: &Location,
    run_id: &str,
) -> anyhow::Result<Action> {
    let cache = dir(yarn_dir);
    let cached = binary.cached(yarn_dir);
    hdfs.mkdirs(&cache, 0o700).await?;
    if let Some(e) = whole(hdfs, &cached, binary).await? {
        mark_used(hdfs, &cache, binary).await;
        tracing::info!(
            "the tasks run {cached}: in the cache already (cached {}), not uploaded again",
            when(e.modification_time)
        );
        return Ok(Action::Reuse);
    }
    let temporary = cache.child(&format!("{}.{run_id}{UPLOADING}", binary.sha256));
    let started = std::time::Instant::now();
    upload(hdfs, binary, &temporary).await?;
    // Looked at again only now, after the upload: another run may have cached it meanwhile,
    // and its job may already run it.
    let placed = match hdfs.status(&cached).await? {
        Some(e) if e.length == binary.length => Err(None),
        Some(e) => {
            tracing::warn!(
                "{cached} holds {} bytes, not the {} of this build: replacing it",
                e.length,
                binary.length
            );
            hdfs.delete(&cached, false).await?;
            hdfs.rename(&temporary, &cached).await.map_err(Some)
        }
        None => hdfs.rename(&temporary, &cached).await.map_err(Some),
    };
    if let Err(e) = placed {
        let _ = hdfs.delete(&temporary, false).await;
        // The rename lost to another run's: theirs is the same content.
        if whole(hdfs, &cached, binary).await?.is_none() {
            let why = e.map_or_else(String::new, |e| format!(": {e}"));
            anyhow::bail!("cannot put this build in the cache as {cached}{why}");
        }
        mark_used(hdfs, &cache, binary).await;
        tracing::info!("the tasks run {cached}: another run cached it meanwhile");
        return Ok(Action::Reuse);
    }
    tracing::info!(
        "the tasks run {cached}: uploaded {} in {:.1} s",
        bytesize::ByteSize::b(binary.length).display().iec(),
        started.elapsed().as_secs_f64()
    );
    Ok(Action::Upload)
}

/// The cached file's status if it holds the binary whole (as far as its length tells).
async fn whole(
    hdfs: &Hdfs,
    cached: &Location,
    binary: &LocalBinary,
) -> anyhow::Result<Option<Entry>> {
    Ok(hdfs
        .status(cached)
        .await?
        .filter(|e| e.length == binary.length))
}

/// Copies the binary's open file from its start to the new file `to`, which a failure removes.
async fn upload(hdfs: &Hdfs, binary: &LocalBinary, to: &Location) -> anyhow::Result<()> {
    let mut file = binary
        .file
        .try_clone()
        .with_context(|| format!("reading {} to upload it", binary.path.display()))?;
    file.rewind()
        .with_context(|| format!("reading {} to upload it", binary.path.display()))?;
    let chunks =
        tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 4 << 20);
    hdfs.write_new(to, chunks, 0o700).await?;
    let written = hdfs.status(to).await?.map_or(0, |e| e.length);
    if written != binary.length {
        let _ = hdfs.delete(to, false).await;
        anyhow::bail!(
            "uploading {} to {to} wrote {written} of its {} bytes",
            binary.path.display(),
            binary.length
        );
    }
    Ok(())
}

/// Records a run's use of the cached binary. A failure only warns: the binary is there, and
/// the worst that follows is that cleanup counts its retention from an earlier use.
async fn mark_used(hdfs: &Hdfs, cache: &Location, binary: &LocalBinary) {
    let marker = used_marker(cache, &binary.sha256);
    let now = chrono::Utc::now().timestamp_millis() as u64;
    let marked = async {
        if hdfs.status(&marker).await?.is_some() {
            hdfs.set_modification_time(&marker, now).await?;
            return anyhow::Ok(());
        }
        match hdfs.create(&marker, 0o600).await {
            Ok(mut w) => w
                .close()
                .await
                .map_err(|e| anyhow::anyhow!("closing {marker}: {e}"))?,
            // Another run made it meanwhile: its time is as recent as ours.
            Err(_) if hdfs.status(&marker).await?.is_some() => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    };
    if let Err(e) = marked.await {
        tracing::warn!(
            "could not record this run's use of the cached binary on {marker} ({e:#}); cleanup \
             may count its retention from an earlier use"
        );
    }
}

/// What cleanup removes from the cache directory's files, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Binaries whose last use is older than the retention, each followed by its marker, and
    /// uploads started as long ago (a run still writing one is younger: it started at most
    /// one job's length ago).
    pub remove: Vec<String>,
    /// Binaries used within the retention.
    pub keep: Vec<String>,
}

/// Decides the sweep of the cache directory's `files` at `now` (milliseconds since the epoch):
/// a binary goes when neither it nor its marker was touched for `retention`.
pub fn sweep(files: &[Entry], now: u64, retention: std::time::Duration) -> Sweep {
    let old = |mtime: u64| now.saturating_sub(mtime) > retention.as_millis() as u64;
    // sha256 -> (the binary's time, the marker's time)
    let mut uses: BTreeMap<&str, (Option<u64>, Option<u64>)> = BTreeMap::new();
    let mut out = Sweep::default();
    for f in files {
        match name(&f.name) {
            Name::Binary(sha) => uses.entry(sha).or_default().0 = Some(f.modification_time),
            Name::Used(sha) => uses.entry(sha).or_default().1 = Some(f.modification_time),
            Name::Uploading if old(f.modification_time) => out.remove.push(f.name.clone()),
            Name::Uploading | Name::Other => {}
        }
    }
    for (sha, (binary, marker)) in uses {
        let last = binary.max(marker).unwrap_or(0);
        if !old(last) {
            if binary.is_some() {
                out.keep.push(sha.to_string());
            }
            continue;
        }
        if binary.is_some() {
            out.remove.push(sha.to_string());
        }
        if marker.is_some() {
            out.remove.push(format!("{sha}{USED}"));
        }
    }
    out
}

fn when(millis: u64) -> String {
    chrono::DateTime::from_timestamp_millis(millis as i64)
        .map_or_else(|| millis.to_string(), |t| t.to_rfc3339())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn names_in_the_cache_are_told_apart() {
        assert_eq!(name(SHA), Name::Binary(SHA));
        assert_eq!(name(&format!("{SHA}.used")), Name::Used(SHA));
        assert_eq!(
            name(&format!("{SHA}.20261205T113000Z-1a2b3c4d.uploading")),
            Name::Uploading
        );
        for other in [
            "hive-orc-compactor",
            &SHA[1..],
            &format!("{SHA}.uploading"),
            &format!("{}x", &SHA[1..]),
            ".used",
        ] {
            assert_eq!(name(other), Name::Other, "{other}");
        }
    }

    fn entry(name: &str, days_ago: u64) -> Entry {
        Entry {
            name: name.into(),
            length: 1,
            block_size: None,
            modification_time: NOW - days_ago * DAY,
            owner: "u".into(),
            group: "g".into(),
            permission: 0o700,
        }
    }

    const DAY: u64 = 86_400_000;
    const NOW: u64 = 1_000 * DAY;

    #[test]
    fn a_binary_goes_when_neither_it_nor_its_marker_was_touched_for_the_retention() {
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        let c = "c".repeat(64);
        let d = "d".repeat(64);
        let files = [
            // Uploaded long ago, reused yesterday: kept.
            entry(&a, 90),
            entry(&format!("{a}.used"), 1),
            // Uploaded long ago, last reused 31 days ago: goes, marker after it.
            entry(&b, 90),
            entry(&format!("{b}.used"), 31),
            // Uploaded 29 days ago, never reused: kept.
            entry(&c, 29),
            // A marker whose binary is gone already: goes once old.
            entry(&format!("{d}.used"), 40),
            // An upload abandoned long ago goes; one in progress stays.
            entry(&format!("{a}.20261001T000000Z-00000000.uploading"), 40),
            entry(&format!("{b}.20261205T000000Z-00000000.uploading"), 0),
            // Not ours.
            entry("hive-orc-compactor", 400),
        ];
        let s = sweep(&files, NOW, std::time::Duration::from_secs(30 * 86400));
        assert_eq!(
            s.remove,
            [
                format!("{a}.20261001T000000Z-00000000.uploading"),
                b.clone(),
                format!("{b}.used"),
                format!("{d}.used"),
            ]
        );
        assert_eq!(s.keep, [a, c]);
        // Exactly at the retention: not older than it, kept.
        let e = "e".repeat(64);
        let s = sweep(
            &[entry(&e, 30)],
            NOW,
            std::time::Duration::from_secs(30 * 86400),
        );
        assert_eq!((s.remove.len(), s.keep.len()), (0, 1));
    }

    #[test]
    fn the_hash_is_the_files_sha256() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"test").unwrap();
        f.rewind().unwrap();
        // sha256("test"), as `sha256sum` prints it.
        let b = LocalBinary::of("t".into(), f).unwrap();
        assert_eq!((b.sha256.as_str(), b.length), (SHA, 4));
        let yarn = Location::parse("hdfs://nn/user/u/.hive-orc-compactor/yarn").unwrap();
        assert_eq!(
            b.cached(&yarn).to_string(),
            format!("hdfs://nn/user/u/.hive-orc-compactor/yarn/binaries/{SHA}")
        );
    }
}
