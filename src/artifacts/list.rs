//! Finding saved artifacts again: a directory that holds a manifest is an
//! artifact; any other directory is searched one level down.
//!
//! Reads manifests only; never hashes or runs anything (that is replay's
//! job), so listing a large tree stays cheap.

use std::fs;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;

use super::manifest::{ArtifactManifest, Backend, MANIFEST_FILE, RunStatus};

/// One artifact found.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactRow {
    /// The artifact's directory, as reached from the root it was found
    /// under (not canonicalised).
    pub dir: String,
    /// The runtime it runs on.
    pub backend: Backend,
    /// The verifying run's status, as the manifest records it.
    pub status: RunStatus,
    /// The verifying run's objective; `null` when it had none.
    pub objective: Option<Number>,
    /// When it was saved: RFC 3339, UTC.
    pub saved_at: String,
    /// The highest gate that passed (`solved`, `checked`, `reported`,
    /// `expectation`).
    pub verified_by: String,
    /// The canonical solver id of a MiniZinc artifact; `null` for the
    /// other backends.
    pub solver: Option<String>,
}

/// A directory that has a manifest we could not read.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UnreadableArtifact {
    /// The directory, as reached from its root.
    pub dir: String,
    /// Why its manifest cannot be read (missing, not JSON, not ours, too
    /// new, ...).
    pub problem: String,
}

/// What `artifacts ls` found, sorted by directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactList {
    /// Every artifact found, once each.
    pub artifacts: Vec<ArtifactRow>,
    /// Directories with a manifest that could not be read.
    pub unreadable: Vec<UnreadableArtifact>,
    /// Paths given that are not directories.
    pub missing: Vec<String>,
}

/// Lists the artifacts at or directly under each of `roots`.
pub fn list(roots: &[PathBuf]) -> ArtifactList {
    let mut found = ArtifactList::default();
    for root in roots {
        if !root.is_dir() {
            found.missing.push(root.display().to_string());
            continue;
        }
        if root.join(MANIFEST_FILE).exists() {
            visit(root, &mut found);
            continue;
        }
        let Ok(entries) = fs::read_dir(root) else {
            found.missing.push(root.display().to_string());
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir() && path.join(MANIFEST_FILE).exists())
            .collect();
        children.sort();
        for child in children {
            visit(&child, &mut found);
        }
    }
    found.artifacts.sort_by(|a, b| a.dir.cmp(&b.dir));
    found.artifacts.dedup_by(|a, b| a.dir == b.dir);
    found
}

fn visit(dir: &Path, found: &mut ArtifactList) {
    match ArtifactManifest::read(dir) {
        Ok(manifest) => found.artifacts.push(ArtifactRow {
            dir: dir.display().to_string(),
            backend: manifest.backend,
            status: manifest.verification.status,
            objective: manifest.verification.objective,
            saved_at: manifest.saved_at,
            verified_by: manifest.verification.level,
            solver: manifest.minizinc.map(|record| record.solver),
        }),
        Err(problem) => found.unreadable.push(UnreadableArtifact {
            dir: dir.display().to_string(),
            problem: problem.to_string(),
        }),
    }
}
