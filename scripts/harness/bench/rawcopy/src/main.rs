//! bench-rawcopy SRC_DIR DST_DIR [--target-size BYTES] [--chunk BYTES] [--depth N]
//!
//! Copies every non-hidden file directly in SRC_DIR (an hdfs://host:port/path URL) into files
//! of about --target-size bytes (default 256 MiB, cut between whole input files, as the
//! compactor cuts) in DST_DIR: every byte read once and written once, reads running ahead of
//! writes by up to --depth chunks of --chunk bytes (defaults 4 x 8 MiB). No parsing, no
//! checksums, no metastore: the floor any compaction of those bytes stands on.
//! Prints one JSON line: files and bytes read and written, seconds.

use std::time::Instant;

use bytes::Bytes;
use hdfs_native::{Client, ClientBuilder, WriteOptions};
use tokio::sync::mpsc;

enum Msg {
    Chunk(Bytes),
    EndOfFile,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn split_url(url: &str) -> Result<(String, String), Error> {
    let rest = url
        .strip_prefix("hdfs://")
        .ok_or_else(|| format!("not an hdfs:// URL: {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    Ok((format!("hdfs://{authority}"), if path.is_empty() { "/".into() } else { path.into() }))
}

fn parse_size(s: &str) -> Result<u64, Error> {
    Ok(s.parse::<u64>().map_err(|e| format!("bad size {s}: {e}"))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut positional = Vec::new();
    let (mut target, mut chunk, mut depth) = (256u64 << 20, 8u64 << 20, 4usize);
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--target-size" => { i += 1; target = parse_size(&args[i])?; }
            "--chunk" => { i += 1; chunk = parse_size(&args[i])?.max(1); }
            "--depth" => { i += 1; depth = parse_size(&args[i])?.max(1) as usize; }
            a => positional.push(a.to_string()),
        }
        i += 1;
    }
    if positional.len() != 2 {
        eprintln!("usage: bench-rawcopy SRC_DIR DST_DIR [--target-size B] [--chunk B] [--depth N]");
        std::process::exit(2);
    }
    let (fs, src) = split_url(&positional[0])?;
    let (fs2, dst) = split_url(&positional[1])?;
    if fs != fs2 {
        return Err("source and destination must be on one filesystem".into());
    }
    let client = ClientBuilder::new().with_url(fs).build()?;
    let t0 = Instant::now();

    let mut files: Vec<_> = client
        .list_status(&src, false)
        .await?
        .into_iter()
        .filter(|f| {
            let name = f.path.rsplit('/').next().unwrap_or("");
            !f.isdir && !name.starts_with('.') && !name.starts_with('_') && f.length > 0
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    client.mkdirs(&dst, 0o755, true).await?;

    let (tx, mut rx) = mpsc::channel::<Msg>(depth);
    let reader_client: Client = client.clone();
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let reader = tokio::spawn(async move {
        let mut bytes_read = 0u64;
        for path in paths {
            let file = reader_client.read(&path).await?;
            let len = file.file_length() as u64;
            let mut offset = 0u64;
            while offset < len {
                let n = chunk.min(len - offset);
                let b = file.read_range(offset as usize, n as usize).await?;
                bytes_read += b.len() as u64;
                offset += n;
                if tx.send(Msg::Chunk(b)).await.is_err() {
                    return Err::<u64, Error>("writer stopped".into());
                }
            }
            if tx.send(Msg::EndOfFile).await.is_err() {
                return Err("writer stopped".into());
            }
        }
        Ok(bytes_read)
    });

    let (mut written, mut in_output, mut outputs) = (0u64, 0u64, 0usize);
    let mut writer = None;
    while let Some(msg) = rx.recv().await {
        match msg {
            Msg::Chunk(b) => {
                if writer.is_none() {
                    let name = format!("{dst}/rawcopy-{outputs:05}");
                    writer = Some(client.create(&name, WriteOptions::default()).await?);
                    outputs += 1;
                }
                let n = b.len() as u64;
                writer.as_mut().unwrap().write_bytes(b).await?;
                written += n;
                in_output += n;
            }
            Msg::EndOfFile => {
                if in_output >= target {
                    writer.take().unwrap().close().await?;
                    in_output = 0;
                }
            }
        }
    }
    if let Some(mut w) = writer.take() {
        w.close().await?;
    }
    let bytes_read = reader.await??;
    println!(
        "{{\"files_in\": {}, \"bytes_read\": {}, \"files_out\": {}, \"bytes_written\": {}, \"seconds\": {:.3}}}",
        files.len(),
        bytes_read,
        outputs,
        written,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
