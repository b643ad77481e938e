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
//!   budgets), [`settings`] and [`userfiles`].
//!
//! See ARCHITECTURE.md at the repository root for the invariants.

pub mod artifacts;
pub mod budget;
pub mod cli;
pub mod cpsat;
pub mod diagnostics;
pub mod equations;
pub mod exec;
pub mod jobs;
pub mod mcp;
pub mod minizinc;
pub mod planner;
pub mod progress;
pub mod runtime;
pub mod settings;
#[cfg(test)]
mod strategies;
pub mod tabular;
pub mod unsat;
pub mod userfiles;

/// The lowercase hex SHA-256 of `bytes`: how every layer names content
/// (manifests, stored plans, script and checker provenance).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
