//! The files a user names by path: resolved to absolute, checked to be a
//! regular file of at most [`MAX_USER_FILE_BYTES`], read (or only checked)
//! as UTF-8. Every problem is an `invalid_request` that names the argument
//! and the path, raised before any process starts.
//!
//! Everything here is blocking file I/O: async callers run it through
//! [`off_thread`], never on an async worker thread.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::diagnostics::{Category, ToolError};

/// The largest file a user may name by path (`model_path`, `data_path`,
/// `checker_path`, `script_path`): 16 MiB. Larger files are refused from
/// their size alone, before a byte is read.
pub const MAX_USER_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A ceiling on the size of a file named by path, with the words an error
/// uses when a file is over it.
pub struct SizeLimit {
    /// The most bytes a file may have.
    pub bytes: u64,
    /// What the limit is on, e.g. "files named by path".
    pub applies_to: &'static str,
    /// What the caller can do instead, e.g. "pass a smaller file".
    pub remedy: &'static str,
}

/// The limit on models, data, checkers and scripts named by path.
pub const USER_FILE_LIMIT: SizeLimit = SizeLimit {
    bytes: MAX_USER_FILE_BYTES,
    applies_to: "files named by path",
    remedy: "pass a smaller file",
};

/// Bytes read at a time when a file is only checked, not kept.
const CHUNK_BYTES: usize = 64 * 1024;

/// Resolves `path` (relative to the current directory) to an absolute,
/// symlink-free path of an existing regular file of at most
/// [`MAX_USER_FILE_BYTES`].
pub fn existing_file(argument: &str, path: &str) -> Result<PathBuf, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::invalid(format!("{argument} must not be empty")));
    }
    let resolved = fs::canonicalize(path).map_err(|error| {
        let shown = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
        if error.kind() == io::ErrorKind::NotFound {
            ToolError::invalid(format!("{argument} {} does not exist", shown.display()))
        } else {
            ToolError::invalid(format!(
                "{argument} {} cannot be read: {error}",
                shown.display()
            ))
        }
    })?;
    let meta = fs::metadata(&resolved).map_err(|error| cannot_read(argument, &resolved, &error))?;
    if !meta.is_file() {
        return Err(ToolError::invalid(format!(
            "{argument} {} is not a regular file",
            resolved.display()
        )));
    }
    within_limit(argument, &resolved, meta.len(), &USER_FILE_LIMIT)?;
    Ok(resolved)
}

/// Reads a file as UTF-8 text.
pub fn utf8_text(argument: &str, path: &Path) -> Result<String, ToolError> {
    let (file, size) = open_bounded(argument, path, &USER_FILE_LIMIT)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_USER_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| cannot_read(argument, path, &error))?;
    // The file may have grown since it was measured.
    within_limit(argument, path, bytes.len() as u64, &USER_FILE_LIMIT)?;
    String::from_utf8(bytes)
        .map_err(|error| not_utf8(argument, path, error.utf8_error().valid_up_to() as u64))
}

/// Checks that a file is UTF-8 without holding it in memory: it is read in
/// chunks of 64 KiB.
pub fn check_utf8(argument: &str, path: &Path) -> Result<(), ToolError> {
    let (file, _) = open_bounded(argument, path, &USER_FILE_LIMIT)?;
    let scan = scan_utf8(file.take(MAX_USER_FILE_BYTES + 1), CHUNK_BYTES)
        .map_err(|error| cannot_read(argument, path, &error))?;
    match scan {
        Utf8Scan::Invalid { offset } => Err(not_utf8(argument, path, offset)),
        Utf8Scan::Valid { len } => within_limit(argument, path, len, &USER_FILE_LIMIT),
    }
}

/// An existing, non-empty UTF-8 text file: its absolute path and text.
pub fn text_file(argument: &str, path: &str) -> Result<(PathBuf, String), ToolError> {
    let resolved = existing_file(argument, path)?;
    let text = utf8_text(argument, &resolved)?;
    if text.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "{argument} {} is empty",
            resolved.display()
        )));
    }
    Ok((resolved, text))
}

/// Runs blocking file work (reading the files a request names, writing
/// its temp files) on tokio's blocking pool, so it never stalls an async
/// worker thread. A task that panicked or was dropped by a runtime shutting
/// down is an error, never a panic here.
pub async fn off_thread<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(error) if error.is_cancelled() => Err(ToolError::new(
            Category::Cancelled,
            "the server is shutting down; the request's files were not read",
        )),
        Err(error) => Err(ToolError::new(
            Category::Unknown,
            format!(
                "reading the request's files failed unexpectedly ({error}); nothing ran — retry, and report it if it happens again"
            ),
        )),
    }
}

/// Opens `path`, checks on the open handle that it is a regular file
/// within `limit`, and gives its size.
pub fn open_bounded(
    argument: &str,
    path: &Path,
    limit: &SizeLimit,
) -> Result<(File, u64), ToolError> {
    let file = File::open(path).map_err(|error| {
        if error.kind() == io::ErrorKind::NotFound {
            ToolError::invalid(format!("{argument} {} does not exist", path.display()))
        } else {
            cannot_read(argument, path, &error)
        }
    })?;
    let meta = file
        .metadata()
        .map_err(|error| cannot_read(argument, path, &error))?;
    if !meta.is_file() {
        return Err(ToolError::invalid(format!(
            "{argument} {} is not a regular file",
            path.display()
        )));
    }
    within_limit(argument, path, meta.len(), limit)?;
    Ok((file, meta.len()))
}

fn within_limit(
    argument: &str,
    path: &Path,
    size: u64,
    limit: &SizeLimit,
) -> Result<(), ToolError> {
    if size <= limit.bytes {
        return Ok(());
    }
    Err(ToolError::invalid(format!(
        "{argument} {} is {size} bytes, over the {}-byte ({} MiB) limit on {}; {}",
        path.display(),
        limit.bytes,
        limit.bytes / (1024 * 1024),
        limit.applies_to,
        limit.remedy,
    )))
}

/// The error for a named file that cannot be read: names the argument, the path
/// and the I/O error.
pub fn cannot_read(argument: &str, path: &Path, error: &io::Error) -> ToolError {
    ToolError::invalid(format!(
        "{argument} {} cannot be read: {error}",
        path.display()
    ))
}

fn not_utf8(argument: &str, path: &Path, offset: u64) -> ToolError {
    ToolError::invalid(format!(
        "{argument} {} is not valid UTF-8 (first bad byte at offset {offset}); save it as UTF-8",
        path.display()
    ))
}

/// What a streaming UTF-8 check found.
#[derive(Debug, PartialEq, Eq)]
enum Utf8Scan {
    /// All `len` bytes are UTF-8.
    Valid { len: u64 },
    /// The first byte that is not (a sequence cut off by the end of the
    /// input counts as bad from its first byte, as `String::from_utf8` has it).
    Invalid { offset: u64 },
}

/// Checks `reader` for UTF-8 `chunk` bytes at a time. A character split
/// across two reads is carried over to the next one (at most 3 bytes).
fn scan_utf8(mut reader: impl Read, chunk: usize) -> io::Result<Utf8Scan> {
    let mut buffer = vec![0u8; chunk.max(1) + 3];
    // Bytes before `buffer[0]`, all valid.
    let mut checked: u64 = 0;
    // The start of a character cut off by the last read, at `buffer[..carry]`.
    let mut carry = 0;
    loop {
        let read = match reader.read(&mut buffer[carry..]) {
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if read == 0 {
            return Ok(if carry == 0 {
                Utf8Scan::Valid { len: checked }
            } else {
                Utf8Scan::Invalid { offset: checked }
            });
        }
        let filled = carry + read;
        match std::str::from_utf8(&buffer[..filled]) {
            Ok(_) => {
                checked += filled as u64;
                carry = 0;
            }
            Err(error) if error.error_len().is_some() => {
                return Ok(Utf8Scan::Invalid {
                    offset: checked + error.valid_up_to() as u64,
                });
            }
            Err(error) => {
                // Incomplete at the end: keep the partial character.
                let valid = error.valid_up_to();
                buffer.copy_within(valid..filled, 0);
                checked += valid as u64;
                carry = filled - valid;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes a call.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn scan(bytes: &[u8], chunk: usize, step: usize) -> Utf8Scan {
        scan_utf8(Trickle { bytes, step }, chunk).unwrap()
    }

    #[test]
    fn streaming_check_agrees_with_from_utf8() {
        let cases: [&[u8]; 8] = [
            b"",
            "plain ascii".as_bytes(),
            "caf\u{e9} \u{20ac} \u{1f600} end".as_bytes(),
            b"caf\xe9 latin-1",
            b"ok \xf0\x9f\x98",
            b"\xff",
            b"ab\xe2\x82",
            b"\xe2\x82\xac\xe2\x28\xa1",
        ];
        for bytes in cases {
            let expected = match std::str::from_utf8(bytes) {
                Ok(_) => Utf8Scan::Valid {
                    len: bytes.len() as u64,
                },
                Err(error) => Utf8Scan::Invalid {
                    offset: error.valid_up_to() as u64,
                },
            };
            for chunk in 1..=6 {
                for step in 1..=7 {
                    assert_eq!(
                        scan(bytes, chunk, step),
                        expected,
                        "{bytes:?} chunk {chunk} step {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_character_straddling_a_chunk_boundary_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        for before in CHUNK_BYTES - 3..=CHUNK_BYTES {
            let mut text = "a".repeat(before);
            text.push_str("\u{1f600}\u{e9}\u{20ac}");
            text.push_str(&"b".repeat(CHUNK_BYTES));
            let path = dir.path().join(format!("straddle-{before}.dzn"));
            fs::write(&path, &text).unwrap();
            check_utf8("data_path", &path).unwrap();
        }
    }

    #[test]
    fn a_bad_byte_after_100_kb_is_reported_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = "\u{e9}".repeat(60_000).into_bytes();
        let offset = bytes.len();
        assert!(offset > 100_000);
        bytes.extend_from_slice(b"\xe9 latin-1\n");
        bytes.extend_from_slice(&[b'x'; 200_000]);
        let path = dir.path().join("late.dzn");
        fs::write(&path, &bytes).unwrap();
        let message = check_utf8("data_path", &path).unwrap_err().to_string();
        assert!(
            message.contains(&format!("first bad byte at offset {offset})")),
            "{message}"
        );
        assert!(message.contains("data_path"), "{message}");
        let whole = utf8_text("data_path", &path).unwrap_err().to_string();
        assert_eq!(whole, message, "both readers report the same offset");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.dzn");
        // Sparse: 17 MiB long, no data blocks written.
        File::create(&path)
            .unwrap()
            .set_len(17 * 1024 * 1024)
            .unwrap();
        let message = existing_file("data_path", path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("Diagnostic: invalid_request — data_path "),
            "{message}"
        );
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("17825792 bytes"), "{message}");
        assert!(
            message.contains("16777216-byte (16 MiB) limit"),
            "{message}"
        );
        for read in [utf8_text, check_utf8_text] {
            let message = read("script_path", &path).unwrap_err().to_string();
            assert!(message.contains("17825792 bytes"), "{message}");
        }
        let exact = dir.path().join("exact.dzn");
        File::create(&exact)
            .unwrap()
            .set_len(MAX_USER_FILE_BYTES)
            .unwrap();
        existing_file("data_path", exact.to_str().unwrap()).unwrap();
    }

    fn check_utf8_text(argument: &str, path: &Path) -> Result<String, ToolError> {
        check_utf8(argument, path).map(|()| String::new())
    }

    #[tokio::test]
    async fn off_thread_turns_a_panic_into_an_error() {
        assert_eq!(off_thread(|| Ok(7)).await.unwrap(), 7);
        let error = off_thread::<(), _>(|| panic!("boom")).await.unwrap_err();
        assert_eq!(error.category(), Category::Unknown);
        assert!(error.to_string().contains("failed unexpectedly"), "{error}");
    }
}
