//! Puts the git commit and target into `--version` for release builds, so an operator can tell
//! which build runs on an edge node. Debug and test builds say only the crate version: tracking
//! git there would rebuild the crate after every commit.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=HOC_GIT_COMMIT");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let commit = std::env::var("HOC_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| if release { git_commit() } else { None });
    let info = match commit {
        Some(commit) => format!(
            " (commit {commit}, {})",
            std::env::var("TARGET").unwrap_or_default()
        ),
        None => String::new(),
    };
    println!("cargo:rustc-env=HOC_BUILD_INFO={info}");
}

/// The checkout's commit, and tells Cargo to rerun when it moves. None outside a git checkout
/// (e.g. a source archive), where the version alone is shown.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD names the branch; the branch's reflog moves with every commit, checkout and reset.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            if std::path::Path::new(&file).exists() {
                println!("cargo:rerun-if-changed={file}");
            }
        }
    }
    Some(commit)
}
