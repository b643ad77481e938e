//! Introspection kept for the process: a runtime's answers (its version,
//! its solver catalog, the CP-SAT interpreter's OR-Tools version) are
//! asked once and reused until the file that gave them changes — another
//! size, modification time or inode, as when a runtime is reinstalled.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// What identifies one version of a file: the file a path resolves to, and
/// the path itself when it is a symlink (a venv's `python`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    target: (u64, u64, u64, Option<SystemTime>),
    link: (u64, Option<SystemTime>),
}

/// The fingerprint of `path`; `None` when it cannot be read (then nothing
/// is cached: the next call asks again).
pub fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::metadata(path).ok()?;
    let link = std::fs::symlink_metadata(path).ok()?;
    Some(Fingerprint {
        target: (
            target.dev(),
            target.ino(),
            target.len(),
            target.modified().ok(),
        ),
        link: (link.len(), link.modified().ok()),
    })
}

/// One value derived from a file, recomputed when the file changes.
/// Concurrent callers wait for one computation.
#[derive(Debug)]
pub struct Cached<T> {
    slot: tokio::sync::Mutex<Option<(Fingerprint, Arc<T>)>>,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Cached {
            slot: tokio::sync::Mutex::new(None),
        }
    }
}

impl<T> Cached<T> {
    /// The value for `path` as it is now: the kept one if the file has not
    /// changed, else `init`'s (kept only on success).
    pub async fn get_or_try_init<E>(
        &self,
        path: &Path,
        init: impl AsyncFnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let print = fingerprint(path);
        let mut slot = self.slot.lock().await;
        if let (Some(print), Some((kept, value))) = (&print, slot.as_ref())
            && kept == print
        {
            return Ok(value.clone());
        }
        let value = Arc::new(init().await?);
        *slot = print.map(|print| (print, value.clone()));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_changed_file_is_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("minizinc");
        std::fs::write(&file, "one").unwrap();
        let cached = Cached::<usize>::default();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let ask = async || Ok::<_, ()>(calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
        assert_eq!(*cached.get_or_try_init(&file, ask).await.unwrap(), 1);
        assert_eq!(*cached.get_or_try_init(&file, ask).await.unwrap(), 1);
        std::fs::write(&file, "two!").unwrap();
        assert_eq!(*cached.get_or_try_init(&file, ask).await.unwrap(), 2);
        let failing = async || Err::<usize, &str>("no");
        std::fs::write(&file, "three").unwrap();
        assert!(cached.get_or_try_init(&file, failing).await.is_err());
        assert_eq!(*cached.get_or_try_init(&file, ask).await.unwrap(), 3);
    }
}
