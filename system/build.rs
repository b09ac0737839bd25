//! Embeds the git commit the binary is built from (`MARVIN_GIT_COMMIT`), or "unknown"
//! where git or the repository is missing, so every experiment's `config.toml` can say
//! which code produced it. A worktree with uncommitted changes gets a `-dirty` suffix.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty());
    let commit = match commit {
        Some(c) => {
            // Tracked files only: build outputs and scratch files do not make a tree dirty.
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}-dirty")
            } else {
                c
            }
        }
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=MARVIN_GIT_COMMIT={commit}");
    // Rebuilt when HEAD moves to another commit or branch.
    for path in ["HEAD", "index"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &head_ref]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
