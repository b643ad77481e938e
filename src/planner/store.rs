//! Planner results on disk, addressed by their SHA-256, so a `result_id`
//! from one process resolves in a later one.
//!
//! Only results are stored, never problems. The store is bounded: past
//! `max_results` files the least recently used are removed (a read counts
//! as a use). A file whose bytes no longer hash to its name is refused as
//! tampered, never served.

use std::fs;
use std::path::PathBuf;
use std::time::SystemTime;

use super::LoadPlan;
use crate::diagnostics::{Category, ToolError};

/// The default bound, overridable with `SOLVERGATE_PLANNER_MAX_RESULTS`
/// (defined with the other settings, which sit below the planner).
pub use crate::settings::DEFAULT_PLANNER_MAX_RESULTS as DEFAULT_MAX_RESULTS;

/// Stored planner results in a directory, named by their SHA-256, at most
/// `max_results` of them.
#[derive(Debug, Clone)]
pub struct ResultStore {
    dir: PathBuf,
    max_results: usize,
}

impl ResultStore {
    /// A store in `dir` (created on the first put) that keeps the `max_results`
    /// most recently used results (at least 1).
    pub fn new(dir: PathBuf, max_results: usize) -> Self {
        ResultStore {
            dir,
            max_results: max_results.max(1),
        }
    }

    fn path(&self, id: &str) -> Result<PathBuf, ToolError> {
        let valid = id.len() == 64
            && id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if !valid {
            return Err(ToolError::invalid(format!(
                "result_id {id:?} is not a planner result id (64 lowercase hex digits from plan_load)"
            )));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// Stores canonical result bytes under their id (blocking).
    pub fn put(&self, id: &str, bytes: &[u8]) -> Result<(), ToolError> {
        // The id is checked before it names a file.
        self.path(id)?;
        let io = |error: std::io::Error| {
            ToolError::invalid(format!(
                "could not store the result in {}: {error}",
                self.dir.display()
            ))
        };
        // Two calls storing the same cohort at once each stage their own.
        crate::kept::write_whole(&self.dir, &format!("{id}.json"), bytes).map_err(io)?;
        crate::kept::keep_newest(&self.dir, self.max_results);
        Ok(())
    }

    /// The stored result for `id` (blocking).
    pub fn get(&self, id: &str) -> Result<LoadPlan, ToolError> {
        let path = self.path(id)?;
        let bytes = fs::read(&path).map_err(|_| {
            ToolError::invalid(format!(
                "no stored planner result {id}; ids come from plan_load, and only the last {} results are kept",
                self.max_results
            ))
        })?;
        let actual = crate::sha256_hex(&bytes);
        if actual != id {
            return Err(ToolError::new(
                Category::NotVerified,
                format!(
                    "the stored result {} was changed since it was written (its bytes hash to {actual}); it is refused as tampered — plan the cohort again",
                    path.display()
                ),
            ));
        }
        let plan: LoadPlan = serde_json::from_slice(&bytes).map_err(|error| {
            ToolError::new(
                Category::NotVerified,
                format!(
                    "the stored result {} cannot be read: {error}",
                    path.display()
                ),
            )
        })?;
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(note: &str) -> LoadPlan {
        LoadPlan {
            planner: super::super::PLANNER_FORMAT.to_owned(),
            solver: "org.gecode.gecode".to_owned(),
            cards: Vec::new(),
            modes: Default::default(),
            packing: Vec::new(),
            recommended: None,
            notes: vec![note.to_owned()],
        }
    }

    #[test]
    fn results_round_trip_and_tampering_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), 8);
        let result = plan("one");
        let id = result.id();
        store.put(&id, &result.canonical()).unwrap();
        assert_eq!(store.get(&id).unwrap(), result);
        let path = dir.path().join(format!("{id}.json"));
        let edited = String::from_utf8(result.canonical())
            .unwrap()
            .replace("one", "two");
        fs::write(&path, edited).unwrap();
        let error = store.get(&id).unwrap_err();
        assert_eq!(error.0.category, Category::NotVerified, "{error}");
        assert!(store.get("not-an-id").is_err());
        assert!(
            store
                .get(&"0".repeat(64))
                .unwrap_err()
                .0
                .message
                .contains("no stored")
        );
    }

    #[test]
    fn the_least_recently_used_results_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), 2);
        let plans: Vec<LoadPlan> = (0..3).map(|i| plan(&format!("plan {i}"))).collect();
        let ids: Vec<String> = plans.iter().map(LoadPlan::id).collect();
        store.put(&ids[0], &plans[0].canonical()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.put(&ids[1], &plans[1].canonical()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.get(&ids[0]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store.put(&ids[2], &plans[2].canonical()).unwrap();
        assert!(
            store.get(&ids[0]).is_ok(),
            "a recently read result was evicted"
        );
        assert!(
            store.get(&ids[1]).is_err(),
            "the least recently used result stayed"
        );
        assert!(store.get(&ids[2]).is_ok());
    }
}
