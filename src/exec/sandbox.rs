//! Confinement of the children we start, on by default (`--no-sandbox` or
//! `SOLVERGATE_SANDBOX=0` turns it off; Linux): a CP-SAT script, a checker,
//! MiniZinc and its solvers may write only inside their run's own scratch
//! dir and reach no network. Reads stay allowed: models, data and
//! libraries live anywhere.
//!
//! Whether the kernel can enforce it is probed once at start-up
//! (`confine::probe_sandbox`): the trampoline confines `/bin/true` and
//! reports. A kernel
//! that supports neither Landlock nor network namespaces leaves the
//! sandbox off, said once on stderr and in `check_runtime`.
//!
//! How: the trampoline ([`super::confine`]), a fresh single-threaded
//! process, moves itself into a new network namespace (inside a new user
//! namespace when it is not root), restricts itself with Landlock (writes
//! only beneath the run's scratch dir, plus `/dev/null`), reports what it
//! managed to enforce, and execs the program, which inherits both. A kernel
//! without Landlock or namespaces does not stop the run: the report says
//! `unsupported`, and the result carries the report.
//!
//! The installer's children (pip needs the network) are never confined.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a confined run actually got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxReport {
    /// Landlock: `enforced` (writes only in the run's temp dir),
    /// `partial` (the kernel supports only part of the rules) or
    /// `unsupported`.
    pub landlock: String,
    /// `enforced` (a network namespace of its own: no interface but a
    /// down loopback) or `unsupported`.
    pub network: String,
}

static ENABLED: OnceLock<()> = OnceLock::new();

/// Confines every child started from now on (except the installer's);
/// called when the start-up probe found the kernel supports the sandbox.
fn enable() {
    let _ = ENABLED.set(());
}

/// Whether [`enable`] was called: every child but an unconfined one runs in the
/// sandbox.
pub fn enabled() -> bool {
    ENABLED.get().is_some()
}

/// Directories every sandboxed child may also write beneath.
static WRITABLE: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Lets every sandboxed child write beneath `dirs` too (set once, at
/// start-up, from `SOLVERGATE_SANDBOX_WRITABLE`).
pub fn allow_writes(dirs: Vec<PathBuf>) {
    let _ = WRITABLE.set(dirs);
}

/// Where a sandboxed child may write: its scratch dir and the allowed dirs.
pub(super) fn writable(scratch: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![scratch.to_path_buf()];
    dirs.extend(WRITABLE.get().into_iter().flatten().cloned());
    dirs
}

/// What the kernel let the trampoline enforce when probed at start-up.
static SUPPORT: OnceLock<SandboxReport> = OnceLock::new();

/// Records what the start-up probe found ([`super::confine::probe_sandbox`])
/// and turns the sandbox on unless neither part could be enforced.
pub(super) fn record_support(found: SandboxReport) {
    if found.landlock != "unsupported" || found.network != "unsupported" {
        enable();
    }
    let _ = SUPPORT.set(found);
}

/// What the sandbox is on this server, in words: `landlock enforced,
/// network enforced`, or why it is off.
pub fn state_in_words() -> String {
    match (SUPPORT.get(), enabled()) {
        (None, _) => "off (SOLVERGATE_SANDBOX=0 or --no-sandbox)".to_owned(),
        (Some(_), false) => {
            "unsupported by this kernel (no Landlock, no network namespaces): children run unsandboxed".to_owned()
        }
        (Some(found), true) => format!("landlock {}, network {}", found.landlock, found.network),
    }
}

/// The start-up probe's report, once it ran.
pub fn support() -> Option<&'static SandboxReport> {
    SUPPORT.get()
}

/// Reads what the trampoline wrote; `None` if it never got that far or
/// the run was not sandboxed.
pub(super) fn read_report(report: &Path) -> Option<SandboxReport> {
    parse_report(&std::fs::read_to_string(report).ok()?)
}

/// The sandbox's part of a trampoline's report.
pub(super) fn parse_report(text: &str) -> Option<SandboxReport> {
    Some(SandboxReport {
        landlock: report_field(text, "landlock")?.to_owned(),
        network: report_field(text, "network")?.to_owned(),
    })
}

/// The value of `name` in a trampoline's report (`name=value` lines).
pub(super) fn report_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
}

/// A network namespace of our own; as a non-root user, inside a user
/// namespace that maps us to ourselves.
pub(super) fn isolate_network() -> &'static str {
    use nix::sched::{CloneFlags, unshare};
    if unshare(CloneFlags::CLONE_NEWNET).is_ok() {
        return "enforced";
    }
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    if unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).is_err() {
        return "unsupported";
    }
    // Map our own ids so files keep their owner; setgroups must be denied
    // before an unprivileged gid map.
    let mapped = std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")));
    if mapped.is_err() {
        // In the namespaces, but as an unmapped user: still no network.
        eprintln!("solvergate sandbox: could not map ids in the user namespace");
    }
    "enforced"
}

/// Landlock: read and execute everywhere, write only beneath `dirs` (and
/// to `/dev/null`).
pub(super) fn restrict_writes(dirs: &[PathBuf]) -> &'static str {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };
    let abi = ABI::V3;
    let restricted = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(dirs, AccessFs::from_all(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
        })
        .and_then(|ruleset| ruleset.restrict_self());
    match restricted {
        Ok(status) => match status.ruleset {
            RulesetStatus::FullyEnforced => "enforced",
            RulesetStatus::PartiallyEnforced => "partial",
            RulesetStatus::NotEnforced => "unsupported",
        },
        Err(error) => {
            eprintln!("solvergate sandbox: Landlock could not be applied: {error}");
            "unsupported"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report");
        std::fs::write(&path, "landlock=enforced\nnetwork=unsupported\n").unwrap();
        assert_eq!(
            read_report(&path),
            Some(SandboxReport {
                landlock: "enforced".into(),
                network: "unsupported".into()
            })
        );
        assert_eq!(read_report(&dir.path().join("missing")), None);
    }
}
