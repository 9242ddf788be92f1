//! The copy loop's read-ahead against the real HDFS that `scripts/cluster` starts: many small
//! inputs opened and read far ahead of writers that keep starting new blocks.
//!
//! This is the case that hung a full-size benchmark (2026-11-30) when reads and opens were
//! futures queued beside the write: one of them was handed an hdfs-native mutex (the NameNode
//! proxy's, or the cached server defaults) that the writer's next block needed, and nobody
//! polled it. Those mutexes are contended when other tasks use the same client, so several
//! copies run at once here, as `--parallel` runs partitions. Every hdfs-native call now runs
//! as a task of its own (`hdfs::Client`, `Reader`, `Writer`). A hang fails the test after a generous timeout instead of stalling the suite; the
//! timeout is no performance claim.
//!
//! It runs in a process of its own (`HOC_TEST_ALONE=read_ahead`, as scripts/test runs it): four
//! writers starting a block every MiB while the other areas load the same three DataNodes made
//! the NameNode answer `addBlock` with NotReplicatedYetException, which hdfs-native 0.14 does
//! not retry (Java's client does): a failure of the load, not of the read-ahead this tests.
//!
//! Needs `HDFS_URL` (scripts/test sets it).

#![cfg(feature = "cluster-tests")]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hdfs_native::WriteOptions;
use hive_orc_compactor::hdfs::{Client, Hdfs, Location};
use hive_orc_compactor::orc::{copy_pieces, OrcError, Piece, ReadAhead};
use xxhash_rust::xxh3::xxh3_64;

use crate::common::{alone, env, rt};

const INPUTS: usize = 400;
const INPUT_LEN: usize = 48 << 10;
/// Copies running at once, each of every input, on one client.
const COPIES: usize = 4;
/// The smallest block the NameNode allows by default: each output of ~19 MiB starts a new
/// block (a new pipeline, and hdfs-native's server defaults looked up) every MiB.
const BLOCK: u64 = 1 << 20;
const HANG: Duration = Duration::from_secs(300);

fn input(n: usize) -> Bytes {
    (0..INPUT_LEN)
        .map(|i| (i.wrapping_mul(31) ^ n.wrapping_mul(7919)) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Each input in two pieces, a gap between them, as padded stripes would be.
fn pieces() -> Vec<Piece> {
    let half = INPUT_LEN as u64 / 2;
    (0..INPUTS)
        .flat_map(|source| {
            [
                Piece {
                    source,
                    range: 0..half - 100,
                },
                Piece {
                    source,
                    range: half..INPUT_LEN as u64,
                },
            ]
        })
        .collect()
}

async fn write(client: &Client, path: &str, data: Bytes) {
    let mut w = client.create(path, WriteOptions::default()).await.unwrap();
    w.write_bytes(data).await.unwrap();
    w.close().await.unwrap();
}

/// Copies every input's pieces into `out` with far read-ahead; returns the pieces' checksums.
async fn copy(client: Client, paths: Arc<Vec<String>>, out: String) -> Vec<u64> {
    let read_ahead = ReadAhead {
        chunk_size: 16 << 10,
        bytes_in_flight: 2 << 20,
        opens_in_flight: 32,
    };
    let mut writer = client
        .create(&out, WriteOptions::default().block_size(BLOCK))
        .await
        .unwrap();
    let open = |source: usize| {
        let client = client.clone();
        let path = paths[source].clone();
        async move {
            client
                .read(&path)
                .await
                .map_err(|e| OrcError::Io(std::io::Error::other(e.to_string())))
        }
    };
    let lengths = vec![INPUT_LEN as u64; INPUTS];
    let sums = copy_pieces(&pieces(), &lengths, open, &mut writer, &read_ahead)
        .await
        .unwrap();
    writer.close().await.unwrap();
    sums
}

/// A client with nothing cached yet (server defaults, connections), as in a new process.
fn new_client() -> Client {
    let root = Location::parse(&format!("{}/", env("HDFS_URL"))).unwrap();
    Hdfs::new().client(&root).unwrap()
}

#[test]
fn many_small_inputs_read_far_ahead_of_writers_starting_new_blocks() {
    if !alone(&["read_ahead"]) {
        return;
    }
    rt().block_on(async {
        let client = new_client();
        let dir = format!("/tmp/read-ahead-test-{}", std::process::id());
        client.mkdirs(&dir, 0o755, true).await.unwrap();
        let paths: Arc<Vec<String>> =
            Arc::new((0..INPUTS).map(|n| format!("{dir}/input-{n:04}")).collect());
        futures::stream::iter(paths.iter().enumerate())
            .map(|(n, p)| write(&client, p, input(n)))
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;

        let outs: Vec<String> = (0..COPIES).map(|n| format!("{dir}/output-{n}")).collect();
        // A client of their own: the first lookups are contended too.
        let client = new_client();
        let copies = outs
            .iter()
            .map(|out| tokio::spawn(copy(client.clone(), Arc::clone(&paths), out.clone())));
        let all = futures::future::join_all(copies);
        let results = tokio::time::timeout(HANG, all)
            .await
            .unwrap_or_else(|_| panic!("the copies made no end in {HANG:?}: read-ahead deadlock"));

        let pieces = pieces();
        let expected: Vec<u8> = pieces
            .iter()
            .flat_map(|p| input(p.source).slice(p.range.start as usize..p.range.end as usize))
            .collect();
        for (out, sums) in outs.iter().zip(results) {
            let sums = sums.unwrap();
            for (p, sum) in pieces.iter().zip(&sums) {
                let bytes = input(p.source).slice(p.range.start as usize..p.range.end as usize);
                assert_eq!(*sum, xxh3_64(&bytes), "{out}: {p:?}");
            }
            let reader = client.read(out).await.unwrap();
            let written = reader.read_range(0, reader.file_length()).await.unwrap();
            assert_eq!(written.len(), expected.len(), "{out}");
            assert!(
                written.len() as u64 > 10 * BLOCK,
                "the writer crossed blocks"
            );
            assert!(written == expected, "{out} holds the pieces in order");
        }
        client.delete(&dir, true).await.unwrap();
    });
}
