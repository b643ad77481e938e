//! Files the server keeps in its data dir across processes (planner
//! results, background jobs): each written whole or not at all, and a
//! folder of them bounded by count, the least recently touched removed
//! first.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Writes `bytes` as `dir/name` through a staging file of its own in the
/// same folder, renamed into place: a reader sees the old file or the new
/// one, never part of one, and two writers of one name at once do not
/// rename each other's staging file away. Creates `dir`.
pub fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut staged = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    staged.write_all(bytes)?;
    staged
        .persist(dir.join(name))
        .map_err(|error| error.error)?;
    Ok(())
}

/// Removes the `.json` files of `dir` past the `max` most recently
/// modified.
pub fn keep_newest(dir: &Path, max: usize) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut kept: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .collect();
    if kept.len() <= max {
        return;
    }
    kept.sort();
    let excess = kept.len() - max;
    for (_, path) in kept.into_iter().take(excess) {
        let _ = fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_keeps_its_newest_files_and_only_json_counts() {
        let dir = tempfile::tempdir().unwrap();
        for (index, name) in ["a.json", "b.json", "c.json"].iter().enumerate() {
            write_whole(dir.path(), name, b"{}").unwrap();
            let file = fs::File::options()
                .append(true)
                .open(dir.path().join(name))
                .unwrap();
            let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + index as u64);
            file.set_modified(at).unwrap();
        }
        fs::write(dir.path().join("notes.txt"), "kept").unwrap();
        keep_newest(dir.path(), 2);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["b.json", "c.json", "notes.txt"]);
    }
}
