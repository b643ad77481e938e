//! Confinement of the children we start, on by default (`--no-sandbox` or
//! `SOLVERGATE_SANDBOX=0` turns it off; Linux): a CP-SAT script, a checker,
//! MiniZinc and its solvers may write only inside their run's own scratch
//! dir, reach no network, and read only their runtime, the system's files,
//! their scratch dir and what the call named ([`super::reads`]).
//!
//! What the kernel can enforce is probed once at start-up
//! (`confine::probe_sandbox`, which confines `/bin/true` each way it
//! tries) and recorded here as the [`Mode`] every run applies: a run
//! applies all of it or does not start, so its report is the probe's. A
//! kernel that supports neither Landlock nor network namespaces leaves the
//! sandbox off, said once on stderr and in `check_runtime`.
//!
//! How, per run ([`super::confine`]): the server builds the run's Landlock
//! ruleset ([`ruleset`]: writes only beneath the run's scratch dir, plus
//! `/dev/null`; no TCP; abstract UNIX sockets and signals scoped to the
//! run), and the forked child enters the network namespace made once at
//! start-up (no interface but a down loopback), applies the ruleset and
//! execs. Runs share that namespace only where Landlock's scopes (ABI 6)
//! keep them apart inside it; an older kernel gives each run a namespace
//! of its own, as it costs about 3 ms.
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
    /// `enforced`: the run read only its runtime, the system's files, its
    /// scratch dir and what the call named (`--allow-read DIR` or
    /// `SOLVERGATE_READ_ROOTS` widen it); or `unsupported`.
    #[serde(default = "unsupported")]
    pub reads: String,
}

fn unsupported() -> String {
    "unsupported".to_owned()
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

/// How a confined child is cut off from the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Network {
    /// Not at all: the sandbox is off.
    #[default]
    Open,
    /// The namespace the server made at start-up (`confine::SharedNet`): no
    /// interface but a down loopback that no run may bring up. Landlock
    /// scopes keep runs apart inside it (abstract UNIX sockets, signals).
    Shared,
    /// A namespace of the run's own (`unshare`), about 3 ms a run: where
    /// Landlock cannot scope runs apart (before ABI 6).
    Own,
}

/// What every confined run applies, as the start-up probe found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mode {
    /// How the network is cut.
    pub network: Network,
    /// Whether Landlock restricts writes.
    pub landlock: bool,
}

impl Mode {
    /// Neither part: the sandbox stays off.
    pub const NOTHING: Mode = Mode {
        network: Network::Open,
        landlock: false,
    };
}

/// What the start-up probe found: what runs apply, and what it enforces
/// in words.
static SUPPORT: OnceLock<(Mode, SandboxReport)> = OnceLock::new();

/// Records what the start-up probe found ([`super::confine::probe_sandbox`])
/// on a kernel of Landlock ABI `abi`, and turns the sandbox on unless
/// neither part could be enforced. Returns the report every run carries.
pub(super) fn record_support(mode: Mode, abi: i64) -> SandboxReport {
    let report = SandboxReport {
        landlock: match (mode.landlock, abi) {
            (false, _) => "unsupported",
            (true, 3..) => "enforced",
            (true, _) => "partial",
        }
        .to_owned(),
        network: match mode.network {
            Network::Open => "unsupported",
            Network::Shared | Network::Own => "enforced",
        }
        .to_owned(),
        reads: if mode.landlock {
            "enforced"
        } else {
            "unsupported"
        }
        .to_owned(),
    };
    if mode != Mode::NOTHING {
        enable();
    }
    let _ = SUPPORT.set((mode, report.clone()));
    report
}

/// What every confined run applies, once the sandbox is on.
pub(super) fn mode() -> Option<Mode> {
    SUPPORT.get().filter(|_| enabled()).map(|(mode, _)| *mode)
}

/// What the sandbox is on this server, in words: `landlock enforced,
/// network enforced, reads enforced`, or why it is off.
pub fn state_in_words() -> String {
    match (SUPPORT.get(), enabled()) {
        (None, _) => "off (SOLVERGATE_SANDBOX=0 or --no-sandbox)".to_owned(),
        (Some(_), false) => {
            "unsupported by this kernel (no Landlock, no network namespaces): children run unsandboxed".to_owned()
        }
        (Some((_, found)), true) => {
            format!(
                "landlock {}, network {}, reads {}",
                found.landlock, found.network, found.reads
            )
        }
    }
}

/// The start-up probe's report, once it ran: what every sandboxed run
/// enforces.
pub fn support() -> Option<&'static SandboxReport> {
    SUPPORT.get().map(|(_, report)| report)
}

/// What to add to a failed run's message when its output shows a read the
/// sandbox refused (MiniZinc's "Cannot open file", Python's
/// `PermissionError`): how to let it read the file. `None` when reads are
/// not confined or the output shows no refusal.
pub fn refusal_hint(output: &str) -> Option<&'static str> {
    let confined = enabled() && support().is_some_and(|found| found.reads == "enforced");
    (confined
        && ["Cannot open file", "Permission denied", "PermissionError"]
            .iter()
            .any(|sign| output.contains(sign)))
    .then_some(
        " (the sandbox lets a run read only its runtime, the system's files, its scratch dir and the files the call names, with their directories: keep what it reads beside the model or script, or widen it with --allow-read DIR or SOLVERGATE_READ_ROOTS)",
    )
}

/// Whether runs share the network namespace made at start-up (where
/// Landlock's scopes keep them apart), rather than each making its own.
pub fn shares_network_namespace() -> bool {
    mode().is_some_and(|mode| mode.network == Network::Shared)
}

/// The Landlock ABI this kernel speaks (0 without Landlock).
pub(super) fn landlock_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only answers.
    let abi = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    abi.max(0)
}

/// The ABI from which Landlock scopes a run's abstract UNIX sockets and
/// signals to itself (Linux 6.12), which lets runs share one network
/// namespace.
pub(super) const SCOPED_ABI: i64 = 6;

/// A run's Landlock ruleset, built in the server: write only beneath
/// `writes` (and to `/dev/null`), read only there, beneath the read roots
/// ([`super::reads`]) and `reads` (what the call named); no TCP bind or
/// connect, and (ABI 6) no abstract UNIX socket or signal reaching outside
/// the run. Each part the kernel lacks is left out (best effort); what is
/// written is what the probe reports.
pub(super) fn ruleset(
    writes: &[PathBuf],
    reads: &[PathBuf],
) -> std::io::Result<std::os::fd::OwnedFd> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };
    let bounded = super::reads::bounded();
    let handled = if bounded {
        AccessFs::from_all(ABI::V3)
    } else {
        AccessFs::from_write(ABI::V3)
    };
    let created = Ruleset::default()
        .handle_access(handled)
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4)))
        .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI::V6)))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(writes, handled)))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(
                ["/dev/null"],
                AccessFs::from_file(ABI::V3) & handled,
            ))
        })
        .and_then(|ruleset| match bounded {
            true => super::reads::add_rules(ruleset, reads),
            false => Ok(ruleset),
        })
        .map_err(std::io::Error::other)?;
    Option::<std::os::fd::OwnedFd>::from(created)
        .ok_or_else(|| std::io::Error::other("this kernel has no Landlock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ruleset_is_built_where_the_kernel_has_landlock() {
        let dir = tempfile::tempdir().unwrap();
        let built = ruleset(&[dir.path().to_path_buf()], &[]);
        assert_eq!(built.is_ok(), landlock_abi() > 0, "{built:?}");
        // A write dir that cannot be opened grants nothing (the crate
        // leaves its rule out): the ruleset only grows stricter.
        if landlock_abi() > 0 {
            assert!(ruleset(&[dir.path().join("missing")], &[dir.path().join("gone")]).is_ok());
        }
    }
}
