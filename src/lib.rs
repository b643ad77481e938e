//! solvergate: a local-first MCP server that checks, runs and verifies
//! constraint models on real solver runtimes.
//!
//! Layers, top to bottom (arrows point down only):
//! - faces: [`cli`] (clap commands) and [`mcp`] (the rmcp server);
//! - services: [`minizinc`], [`cpsat`], [`jobs`], [`artifacts`], [`planner`],
//!   [`unsat`], [`tabular`], [`equations`];
//! - foundation: [`exec`] (the only code that spawns processes),
//!   [`runtime`] (where the runtime lives, what it offers),
//!   [`diagnostics`] (the category vocabulary), [`budget`] (run
//!   budgets), [`verdict`] (a checker's typed verdict), [`settings`] and
//!   [`userfiles`].
//!
//! See ARCHITECTURE.md at the repository root for the invariants.

#![warn(missing_docs)]

pub mod artifacts;
pub mod budget;
pub mod cli;
pub mod cpsat;
pub mod diagnostics;
pub mod equations;
pub mod exec;
pub mod jobs;
pub mod kept;
pub mod mcp;
pub mod minizinc;
pub mod planner;
pub mod progress;
pub mod roots;
pub mod runtime;
pub mod settings;
#[cfg(test)]
mod strategies;
pub mod tabular;
pub mod unsat;
pub mod userfiles;
pub mod verdict;

/// Private parsers and validators, reachable from the fuzz targets in
/// `fuzz/` (a cargo-fuzz workspace of its own, outside the build and CI).
/// Not API: hidden from the docs and used by nothing in the crate. Each
/// function only calls the code it names. The parsers that are public
/// anyway (`minizinc::stream`, `cpsat::envelope`, `equations::parse`,
/// `artifacts::manifest`, `planner::explain`) are fuzzed where they live.
#[doc(hidden)]
pub mod fuzzing {
    use std::path::Path;

    use crate::cpsat::{VerdictError, VerdictLine};

    /// The checker protocol's verdict line reader
    /// (`cpsat::checker::parse_verdict`).
    pub fn checker_verdict(stdout: &str) -> Result<VerdictLine, VerdictError> {
        crate::cpsat::parse_verdict(stdout)
    }

    /// The runtime installer's validating extraction of an uncompressed
    /// tar stream into `root` (which must exist and be empty).
    pub fn extract_tar(
        tar: &[u8],
        root: &Path,
    ) -> Result<u64, crate::runtime::install::ArchiveError> {
        crate::runtime::install::extract_tar(tar, root, None, &|| false)
    }
}

/// The lowercase hex SHA-256 of `bytes`: how every layer names content
/// (manifests, stored plans, script and checker provenance).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
