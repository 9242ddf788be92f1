//! Files the tool writes on the local disk (the HTML report, the metrics textfile): written
//! whole or not at all, so a reader (a browser, node_exporter's textfile collector) never sees
//! half a file, and a run killed while writing leaves the previous file as it was.

use std::io::Write;
use std::path::Path;

/// Writes `contents` to a hidden temporary file beside `path`, syncs it, and renames it over
/// `path` (a rename within one directory is atomic on POSIX file systems).
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // The temporary name starts with a dot and does not end in .prom: the textfile collector
    // reads only *.prom files.
    let mut file = tempfile::Builder::new()
        .prefix(".hive-orc-compactor-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    file.write_all(contents)?;
    file.as_file().sync_all()?;
    // tempfile creates the file 0600; a report or metrics file is for others to read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.prom");
        write_atomically(&path, b"one\n").unwrap();
        write_atomically(&path, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let missing = dir.path().join("no/such/dir/x.prom");
        assert!(write_atomically(&missing, b"").is_err());
    }
}
