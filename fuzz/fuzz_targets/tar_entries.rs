//! A runtime archive's tar stream (uncompressed), as the installer's
//! validating extraction reads it, into a fresh directory per input. It must
//! never panic; accepted or refused, nothing is written beside the root;
//! once accepted, nothing in the tree resolves (by the kernel's own lookup,
//! following every link) to a place outside the root.
//!
//! Set TMPDIR to a tmpfs (`/dev/shm`) to keep the runs off the disk.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;

/// Every path under `dir`, without following links.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        out.push(path.clone());
        if fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
            walk(&path, out);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let outer = std::env::temp_dir().join(format!("solvergate-fuzz-tar-{}", std::process::id()));
    let _ = fs::remove_dir_all(&outer);
    let root = outer.join("root");
    fs::create_dir_all(&root).expect("a scratch root under TMPDIR");
    let result = solvergate::fuzzing::extract_tar(data, &root);
    let beside: Vec<_> = fs::read_dir(&outer)
        .expect("the scratch dir")
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert_eq!(beside, ["root"], "{result:?}");
    if result.is_ok() {
        let root = fs::canonicalize(&root).expect("the root");
        let mut paths = Vec::new();
        walk(&root, &mut paths);
        for path in paths {
            if let Ok(resolved) = fs::canonicalize(&path) {
                assert!(resolved.starts_with(&root), "{path:?} -> {resolved:?}");
            }
        }
    }
});
