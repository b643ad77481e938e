//! Verified saves, replay and listing of artifacts on disk.
//!
//! A save re-verifies what a client proposes on the real runtime and writes
//! a directory only when every gate passes ([`minizinc`], [`cpsat`], and
//! load plans in [`plan`]); the directory carries a manifest ([`manifest`])
//! with every file's sha256 and everything needed to run it again. [`replay`] checks the files against
//! the manifest and re-runs the artifact; [`list`] finds artifacts again.
//! [`target`] owns the one rule about writing: a target path names a whole
//! old or a whole new directory at every instant.
//!
//! What this module does not do: decide whether a model is right. It runs
//! the gates the caller names and reports what the runtime said.

pub mod cpsat;
pub mod includes;
pub mod list;
pub mod manifest;
pub mod minizinc;
pub mod plan;
pub mod replay;
pub mod target;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::cpsat::Cpsat;
use crate::minizinc::MiniZinc;
use crate::planner::Planner;

pub use cpsat::{SavePythonRequest, SaveVerifiedPythonResult, VerificationLevel};
pub use list::{ArtifactList, ArtifactRow, list};
pub use manifest::{
    ArtifactManifest, Backend, Expectation, MANIFEST_FILE, RunStatus, SaveStatus, SavedFile,
};
pub use minizinc::{SaveModelRequest, SaveVerifiedModelResult};
pub use plan::{SavePlanRequest, SavePlanResult};
pub use replay::{ReplayOutcome, ReplayResult};

/// Saves and replays on one MiniZinc and one CP-SAT runtime.
#[derive(Clone)]
pub struct Artifacts {
    minizinc: MiniZinc,
    cpsat: Cpsat,
    planner: Planner,
    /// Where in-progress saves record their staging dirs.
    journal: PathBuf,
    /// Test hooks (debug builds): a pause between staging and swap, so a
    /// test can kill a save inside that window.
    pause_before_swap: Option<Duration>,
}

impl Artifacts {
    /// Saves and replays on these runtimes and this planner, recording
    /// in-progress saves in the `journal` directory (the faces pass the
    /// data dir's, which [`target::recover_interrupted`] sweeps at
    /// start-up); test hooks off.
    pub fn new(minizinc: MiniZinc, cpsat: Cpsat, planner: Planner, journal: PathBuf) -> Self {
        Artifacts {
            minizinc,
            cpsat,
            planner,
            journal,
            pause_before_swap: None,
        }
    }

    /// With test hooks on (debug builds only), every save pauses 400 ms
    /// between writing its staging dir and swapping it in.
    pub fn with_test_hooks(mut self, on: bool) -> Self {
        self.pause_before_swap = (on && cfg!(debug_assertions)).then(|| Duration::from_millis(400));
        self
    }
}

/// Now, RFC 3339 in UTC to the second.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
