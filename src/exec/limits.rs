//! Resource limits on every child tree: memory, tasks, the size of any one
//! file, the run's scratch directory.
//!
//! The server's limits are set once at start-up ([`enable`]); a call may
//! only lower them ([`LimitCaps`], carried into a run by [`with_caps`]).
//! How each is enforced depends on the host, found once:
//!
//! | limit | cgroup available | otherwise |
//! |---|---|---|
//! | memory | the tree's group: `memory.max` / `memory.limit_in_bytes` | `RLIMIT_DATA` per process, and the tree's sum measured by the executor ([`super::memory_watch`]) |
//! | processes | the tree's group: `pids.max` | `RLIMIT_NPROC` in a user namespace of the run's own (not for root, whom the kernel exempts, nor where the kernel refuses the namespace: probed at start-up) |
//! | file size | `RLIMIT_FSIZE` | `RLIMIT_FSIZE` |
//! | scratch | the executor measures the run's scratch dir | the same |
//!
//! A breach is a fact of the run ([`Breach`], on `RunOutput::breach`): read
//! from what the kernel counted (an OOM kill, a refused fork), from the
//! measurement that stopped the tree (its scratch dir; under rlimits, its
//! memory), or — under rlimits, where the
//! kernel counts nothing — from how a failed run ended: SIGXFSZ, or the
//! runtime's own terminal form of a refused allocation, fork or write at
//! the very end of its stderr or stdout ([`super::last_words`]; a word
//! merely mentioned is not one). That last is the one place the executor
//! reads a child's output, and only of a run that failed.
//!
//! A program that is refused an allocation, catches the error and exits 0
//! with an answer was not stopped by a limit: the limit held and the
//! program went on. That run is not a breach (no `resource_limit`), and
//! nothing is said of it: under rlimits the kernel counts no refusal, and
//! the only trace would be words in the output of a run that succeeded,
//! which the executor does not read.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use tokio_util::sync::CancellationToken;

use super::cgroup::{self, Host};
use super::confine::{self, Confinement, Rlimit};
use super::last_words::{self, Refused};
use crate::diagnostics::{Category, Diagnostic, ToolError};

/// One mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// Tasks a run's tree may hold unless configured.
pub const DEFAULT_MAX_PROCESSES: u64 = 256;
/// The largest file a child may write unless configured, in MiB.
pub const DEFAULT_FILE_SIZE_MB: u64 = 1024;
/// What a run's scratch dir may hold unless configured, in MiB.
pub const DEFAULT_SCRATCH_MB: u64 = 4096;

/// What a run's tree may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// Memory, in MiB: the whole tree's under a cgroup, each process's data
    /// segment under rlimits.
    pub memory_mb: u64,
    /// Processes and threads in the tree at once.
    pub processes: u64,
    /// The largest file any process of the tree may write, in MiB.
    pub file_size_mb: u64,
    /// What the run's scratch dir may hold in all, in MiB.
    pub scratch_mb: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits::defaults()
    }
}

impl ResourceLimits {
    /// The defaults: half of physical memory, 256 processes, 1 GiB files,
    /// 4 GiB of scratch.
    pub fn defaults() -> ResourceLimits {
        ResourceLimits {
            memory_mb: (physical_memory_bytes() / 2 / MIB).max(1),
            processes: DEFAULT_MAX_PROCESSES,
            file_size_mb: DEFAULT_FILE_SIZE_MB,
            scratch_mb: DEFAULT_SCRATCH_MB,
        }
    }

    /// These limits, each lowered to `caps`' value where it has a lower one.
    pub fn lowered_by(self, caps: &LimitCaps) -> ResourceLimits {
        let low = |ours: u64, theirs: Option<u64>| theirs.map_or(ours, |theirs| ours.min(theirs));
        ResourceLimits {
            memory_mb: low(self.memory_mb, caps.memory_mb),
            processes: low(self.processes, caps.processes),
            file_size_mb: low(self.file_size_mb, caps.file_size_mb),
            scratch_mb: low(self.scratch_mb, caps.scratch_mb),
        }
    }

    /// The value of one limit, in its unit.
    pub fn value(&self, kind: LimitKind) -> u64 {
        match kind {
            LimitKind::Memory => self.memory_mb,
            LimitKind::Processes => self.processes,
            LimitKind::FileSize => self.file_size_mb,
            LimitKind::Scratch => self.scratch_mb,
        }
    }
}

/// Physical memory, from `/proc/meminfo` (16 GiB when it cannot be read).
fn physical_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(16 * 1024 * MIB)
}

/// Lower limits for one call: each field may only lower the server's
/// value; a higher one is ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitCaps {
    /// Memory in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub memory_mb: Option<u64>,
    /// Processes and threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub processes: Option<u64>,
    /// Largest file in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub file_size_mb: Option<u64>,
    /// Scratch dir in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub scratch_mb: Option<u64>,
}

impl LimitCaps {
    /// A zero, which no limit can be, refused with the field's name.
    pub fn validate(&self) -> Result<(), ToolError> {
        for (name, value) in [
            ("memory_mb", self.memory_mb),
            ("processes", self.processes),
            ("file_size_mb", self.file_size_mb),
            ("scratch_mb", self.scratch_mb),
        ] {
            if value == Some(0) {
                return Err(ToolError::invalid(format!(
                    "limits.{name} must be at least 1"
                )));
            }
        }
        Ok(())
    }
}

/// Which limit a breach is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Memory.
    Memory,
    /// Processes and threads.
    Processes,
    /// The size of one file.
    FileSize,
    /// The run's scratch dir as a whole.
    Scratch,
}

impl LimitKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Memory => "memory",
            LimitKind::Processes => "processes",
            LimitKind::FileSize => "file_size",
            LimitKind::Scratch => "scratch",
        }
    }

    /// The unit of the limit's value.
    pub fn unit(self) -> &'static str {
        match self {
            LimitKind::Processes => "processes",
            _ => "MiB",
        }
    }

    /// The environment variable that sets the server's value.
    pub fn variable(self) -> &'static str {
        match self {
            LimitKind::Memory => "SOLVERGATE_MEMORY_LIMIT_MB",
            LimitKind::Processes => "SOLVERGATE_MAX_PROCESSES",
            LimitKind::FileSize => "SOLVERGATE_FILE_SIZE_LIMIT_MB",
            LimitKind::Scratch => "SOLVERGATE_SCRATCH_LIMIT_MB",
        }
    }
}

/// How one limit is enforced on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A cgroup v2 group per run.
    CgroupV2,
    /// A cgroup v1 group per run.
    CgroupV1,
    /// An rlimit on each process.
    Rlimit,
    /// The executor measures and stops the tree.
    Watchdog,
    /// Not enforced on this host (said why in [`Enforcement::notes`]).
    None,
}

impl Via {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::CgroupV2 => "cgroup_v2",
            Via::CgroupV1 => "cgroup_v1",
            Via::Rlimit => "rlimit",
            Via::Watchdog => "watchdog",
            Via::None => "none",
        }
    }

    fn of(version: cgroup::Version) -> Via {
        match version {
            cgroup::Version::V2 => Via::CgroupV2,
            cgroup::Version::V1 => Via::CgroupV1,
        }
    }
}

/// How the server's limits are enforced here, for `check_runtime` and the
/// start-up banner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Enforcement {
    /// The server's limits.
    pub memory_mb: u64,
    /// How the memory limit is enforced.
    pub memory_via: Via,
    /// Processes and threads per run.
    pub processes: u64,
    /// How the process limit is enforced.
    pub processes_via: Via,
    /// The largest file, in MiB (always `RLIMIT_FSIZE`).
    pub file_size_mb: u64,
    /// The scratch dir, in MiB (always measured by the executor).
    pub scratch_mb: u64,
    /// What a reader should know (a limit not enforced, and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Enforcement {
    /// One line: `memory 512 MiB (cgroup v1), processes 64 (rlimit), …`.
    pub fn summary(&self) -> String {
        format!(
            "memory {} MiB ({}), processes {} ({}), files {} MiB (rlimit), scratch {} MiB (watchdog)",
            self.memory_mb,
            self.memory_via.as_str(),
            self.processes,
            self.processes_via.as_str(),
            self.file_size_mb,
            self.scratch_mb,
        )
    }
}

/// How to choose the mechanism: the best the host offers, rlimits only, or
/// none at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// A cgroup where the host lets us make one, rlimits otherwise.
    #[default]
    Auto,
    /// rlimits only, even where a cgroup could be made.
    Rlimit,
    /// No per-run limits: for a host that bounds the whole server some
    /// other way (a container's own cgroup), and to measure what limits
    /// cost (`benches/limits.rs`).
    Off,
}

/// The server's limits and the host's mechanisms, once enabled.
#[derive(Debug)]
struct Config {
    limits: ResourceLimits,
    host: Host,
    /// How memory and processes are bounded, decided once from `host`.
    memory_via: Via,
    processes_via: Via,
    /// Why processes are not bounded, when they are not.
    processes_unbounded: Option<&'static str>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// Applies `limits` to every child started from now on (except an
/// unconfined one), between its fork and exec. Called once, at start-up,
/// before any thread but the main one runs: on cgroup v2 it moves this
/// process into a leaf group.
pub fn enable(limits: ResourceLimits, mode: Mode) {
    let host = match mode {
        Mode::Auto => Host::discover(),
        Mode::Rlimit => Host::default(),
        Mode::Off => return,
    };
    let memory_via = host
        .memory
        .as_ref()
        .map_or(Via::Rlimit, |parent| Via::of(parent.version));
    let (processes_via, unbounded) = match &host.pids {
        Some(parent) => (Via::of(parent.version), None),
        None if nix::unistd::geteuid().is_root() => (
            Via::None,
            Some(
                "the kernel exempts root from RLIMIT_NPROC and no writable cgroup has a pids controller",
            ),
        ),
        None if !confine::probe_user_namespace(limits.processes) => (
            Via::None,
            Some(
                "this kernel refuses a user namespace of the run's own, in which alone RLIMIT_NPROC counts only the run's processes (Ubuntu's AppArmor restriction of unprivileged user namespaces, or user.max_user_namespaces at 0), and no writable cgroup has a pids controller",
            ),
        ),
        None => (Via::Rlimit, None),
    };
    let _ = CONFIG.set(Config {
        limits,
        host,
        memory_via,
        processes_via,
        processes_unbounded: unbounded,
    });
}

/// Whether [`enable`] was called.
pub fn enabled() -> bool {
    CONFIG.get().is_some()
}

/// How the server's limits are enforced, when enabled.
pub fn enforcement() -> Option<Enforcement> {
    let config = CONFIG.get()?;
    let (memory_via, processes_via) = (config.memory_via, config.processes_via);
    let mut notes = Vec::new();
    if memory_via == Via::Rlimit {
        notes.push(
            "memory is bounded per process (RLIMIT_DATA), not for the tree as a whole: no writable cgroup with a memory controller".to_owned(),
        );
    }
    if let Some(why) = config.processes_unbounded {
        notes.push(format!("processes are not bounded: {why}"));
    }
    notes.extend(config.host.v2_refused.clone());
    Some(Enforcement {
        memory_mb: config.limits.memory_mb,
        memory_via,
        processes: config.limits.processes,
        processes_via,
        file_size_mb: config.limits.file_size_mb,
        scratch_mb: config.limits.scratch_mb,
        notes,
    })
}

tokio::task_local! {
    static CAPS: LimitCaps;
}

/// Runs `future` with `caps` lowering the limits of every child it starts.
/// A job carries its call's caps into its own task the same way.
pub async fn with_caps<F: Future>(caps: LimitCaps, future: F) -> F::Output {
    CAPS.scope(caps, future).await
}

/// The caps of the call being served (none outside [`with_caps`]).
pub fn current_caps() -> LimitCaps {
    CAPS.try_with(|caps| *caps).unwrap_or_default()
}

/// A run's limits and how they are applied: what the child applies,
/// and the groups to read and remove afterwards.
#[derive(Debug)]
pub(super) struct RunLimits {
    /// The limits of this run.
    pub limits: ResourceLimits,
    group: Option<cgroup::RunGroup>,
    memory_via: Via,
    processes_via: Via,
}

impl RunLimits {
    /// The limits for a run starting now, its groups made; `None` when
    /// limits are not enabled.
    pub fn prepare() -> std::io::Result<Option<RunLimits>> {
        let Some(config) = CONFIG.get() else {
            return Ok(None);
        };
        let limits = config.limits.lowered_by(&current_caps());
        let wants_group = config.host.memory.is_some() || config.host.pids.is_some();
        let group = match wants_group {
            true => Some(cgroup::RunGroup::create(
                &config.host,
                limits.memory_mb.saturating_mul(MIB),
                limits.processes,
            )?),
            false => None,
        };
        Ok(Some(RunLimits {
            limits,
            group,
            memory_via: config.memory_via,
            processes_via: config.processes_via,
        }))
    }

    /// Adds these limits to `confinement`: the run's cgroups to join (their
    /// files opened now), the rlimits to set.
    pub fn confine(&self, confinement: &mut Confinement) -> std::io::Result<()> {
        if let Some(group) = &self.group {
            confinement.join(group.join_files())?;
        }
        let mut rlimit = |name, value| confinement.rlimits.push(Rlimit { name, value });
        rlimit("fsize", self.limits.file_size_mb.saturating_mul(MIB));
        if self.memory_via == Via::Rlimit {
            rlimit("data", self.limits.memory_mb.saturating_mul(MIB));
        }
        if self.processes_via == Via::Rlimit {
            rlimit("nproc", self.limits.processes);
            // Counted per user: a namespace of the run's own counts only
            // the run's processes.
            confinement.userns = true;
        }
        Ok(())
    }

    /// What the run's tree may hold in memory, in bytes, when only
    /// rlimits bound it (each process's data segment, not the tree's sum):
    /// the executor then watches the tree's sum ([`super::memory_watch`]).
    /// `None` under a cgroup, which bounds the tree itself.
    pub fn tree_memory_bytes(&self) -> Option<u64> {
        (self.memory_via == Via::Rlimit).then(|| self.limits.memory_mb.saturating_mul(MIB))
    }

    /// Where the kernel counts OOM kills in the run's v1 memory group, which
    /// the executor watches to stop the tree at the first (see
    /// [`super::cgroup::RunGroup::v1_oom_counter`]).
    pub fn v1_oom_counter(&self) -> Option<PathBuf> {
        self.group.as_ref().and_then(|group| group.v1_oom_counter())
    }

    /// The breach of a run the executor stopped because its tree held
    /// `bytes` in `processes` processes.
    pub fn memory_breach(&self, bytes: u64, processes: u64) -> Breach {
        Breach {
            limit: LimitKind::Memory,
            value: self.limits.memory_mb,
            unit: LimitKind::Memory.unit().to_owned(),
            via: self.memory_via,
            observed: format!(
                "the tree's {processes} process(es) held {} MiB together",
                bytes.div_ceil(MIB)
            ),
        }
    }

    /// What the run's scratch dir may hold, in bytes.
    pub fn scratch_bytes(&self) -> u64 {
        self.limits.scratch_mb.saturating_mul(MIB)
    }

    /// The breach a finished run shows, if any: the kernel's counters
    /// first, then (under rlimits, for a failed run) its ending. The run's
    /// groups come back with it, to be dropped (emptied and removed) once
    /// the result is out. `stdout` and `stderr` are the ends of what the
    /// run printed.
    pub fn finish(
        mut self,
        return_code: Option<i32>,
        stdout: &str,
        stderr: &str,
    ) -> (Option<Breach>, Option<cgroup::RunGroup>) {
        let group = self.group.take();
        let counted = group.as_ref().map(cgroup::RunGroup::counted);
        (self.breach(counted, return_code, stdout, stderr), group)
    }

    fn breach(
        &self,
        counted: Option<cgroup::Counted>,
        return_code: Option<i32>,
        stdout: &str,
        stderr: &str,
    ) -> Option<Breach> {
        let limits = self.limits;
        let breach = |limit: LimitKind, via: Via, observed: String| Breach {
            limit,
            value: limits.value(limit),
            unit: limit.unit().to_owned(),
            via,
            observed,
        };
        if let Some(counted) = counted {
            if counted.oom_kills > 0 {
                let peak = counted
                    .memory_peak
                    .map(|bytes| format!(", peak {} MiB", bytes.div_ceil(MIB)))
                    .unwrap_or_default();
                return Some(breach(
                    LimitKind::Memory,
                    self.memory_via,
                    format!(
                        "the kernel killed {} process(es) of the tree at the limit{peak}",
                        counted.oom_kills
                    ),
                ));
            }
            if counted.forks_refused > 0 {
                let peak = counted
                    .tasks_peak
                    .map(|tasks| format!(", peak {tasks}"))
                    .unwrap_or_default();
                return Some(breach(
                    LimitKind::Processes,
                    self.processes_via,
                    format!(
                        "{} fork(s) refused at the limit{peak}",
                        counted.forks_refused
                    ),
                ));
            }
        }
        let failed = return_code.is_some_and(|code| code != 0);
        if !failed {
            return None;
        }
        if return_code == Some(-(nix::sys::signal::Signal::SIGXFSZ as i32)) {
            let observed = "a write past the limit (SIGXFSZ)".to_owned();
            return Some(breach(LimitKind::FileSize, Via::Rlimit, observed));
        }
        let words = last_words::read(stdout, stderr)?;
        match words.refused {
            Refused::FileSize => Some(breach(LimitKind::FileSize, Via::Rlimit, words.line)),
            Refused::Memory if self.memory_via == Via::Rlimit => {
                Some(breach(LimitKind::Memory, Via::Rlimit, words.line))
            }
            Refused::Processes if self.processes_via == Via::Rlimit => {
                Some(breach(LimitKind::Processes, Via::Rlimit, words.line))
            }
            Refused::Memory | Refused::Processes => None,
        }
    }

    /// The breach of a run the executor stopped because its scratch dir
    /// held `bytes`.
    pub fn scratch_breach(&self, bytes: u64) -> Breach {
        Breach {
            limit: LimitKind::Scratch,
            value: self.limits.scratch_mb,
            unit: LimitKind::Scratch.unit().to_owned(),
            via: Via::Watchdog,
            observed: format!("the scratch dir held {} MiB", bytes.div_ceil(MIB)),
        }
    }
}

/// How often a run's scratch dir is measured.
const SCRATCH_POLL: Duration = Duration::from_millis(250);

/// What one entry of a scratch dir is charged at least, in bytes: a
/// million empty files are not free.
const ENTRY_CHARGE: u64 = 512;

/// Measures a run's scratch dir every [`SCRATCH_POLL`] on the blocking
/// pool, and fires once it holds more than its limit. Stops when dropped.
pub(super) struct ScratchWatch {
    over: CancellationToken,
    seen: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl ScratchWatch {
    /// Starts measuring `dirs` (together) against `limit` bytes.
    pub fn start(dirs: Vec<PathBuf>, limit: u64) -> ScratchWatch {
        let over = CancellationToken::new();
        let seen = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (over, seen) = (over.clone(), seen.clone());
            async move {
                let mut tick = tokio::time::interval(SCRATCH_POLL);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                loop {
                    tick.tick().await;
                    let dirs = dirs.clone();
                    let Ok(bytes) = tokio::task::spawn_blocking(move || usage(&dirs, limit)).await
                    else {
                        return;
                    };
                    if bytes > limit {
                        seen.store(bytes, Ordering::Relaxed);
                        over.cancel();
                        return;
                    }
                }
            }
        });
        ScratchWatch { over, seen, task }
    }

    /// Resolves once the dir went over its limit.
    pub async fn exceeded(&self) {
        self.over.cancelled().await;
    }

    /// What the dir held when it went over, in bytes.
    pub fn bytes(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }
}

impl Drop for ScratchWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What `dirs` hold on disk together, each entry charged at least
/// [`ENTRY_CHARGE`]; the walk stops as soon as it passes `limit`.
fn usage(dirs: &[PathBuf], limit: u64) -> u64 {
    use std::os::unix::fs::MetadataExt;
    super::note_blocking_work();
    let mut total = 0u64;
    let mut pending = dirs.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            total = total.saturating_add((meta.blocks() * 512).max(ENTRY_CHARGE));
            if meta.is_dir() {
                pending.push(entry.path());
            }
            if total > limit {
                return total;
            }
        }
    }
    total
}

/// A run that went over one of its limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Breach {
    /// Which limit.
    pub limit: LimitKind,
    /// Its value for this run, in [`Breach::unit`].
    pub value: u64,
    /// `MiB` or `processes`.
    pub unit: String,
    /// How it was enforced.
    pub via: Via,
    /// What was seen: the kernel's count, the runtime's message, the
    /// scratch dir's size.
    pub observed: String,
}

impl Breach {
    /// The `resource_limit` diagnostic of a run that ended on this breach;
    /// `what` names the run (`the script`, `MiniZinc`, `the checker`).
    pub fn diagnostic(&self, what: &str) -> Diagnostic {
        let mut details = Map::new();
        details.insert("limit".into(), Value::from(self.limit.as_str()));
        details.insert("value".into(), Value::from(self.value));
        details.insert("unit".into(), Value::from(self.unit.clone()));
        details.insert("mechanism".into(), Value::from(self.via.as_str()));
        details.insert("observed".into(), Value::from(self.observed.clone()));
        let mut diagnostic = Diagnostic::new(Category::ResourceLimit, self.in_words(what));
        diagnostic.details = Some(details);
        diagnostic
    }

    /// "the script hit its memory limit of 512 MiB: …; the server's limit
    /// is SOLVERGATE_MEMORY_LIMIT_MB, …".
    pub fn in_words(&self, what: &str) -> String {
        let limit = match self.limit {
            LimitKind::FileSize => "file size limit",
            LimitKind::Scratch => "scratch dir limit",
            LimitKind::Memory => "memory limit",
            LimitKind::Processes => "process limit",
        };
        format!(
            "{what} hit its {limit} of {} {}: {}; the server's limit is {}, and a call's `limits` may only lower it",
            self.value,
            self.unit,
            self.observed,
            self.limit.variable()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_only_lower() {
        let server = ResourceLimits {
            memory_mb: 1000,
            processes: 100,
            file_size_mb: 50,
            scratch_mb: 500,
        };
        let caps = LimitCaps {
            memory_mb: Some(2000),
            processes: Some(10),
            file_size_mb: None,
            scratch_mb: Some(499),
        };
        assert_eq!(
            server.lowered_by(&caps),
            ResourceLimits {
                memory_mb: 1000,
                processes: 10,
                file_size_mb: 50,
                scratch_mb: 499,
            }
        );
        assert!(LimitCaps::default().validate().is_ok());
        let zero = LimitCaps {
            processes: Some(0),
            ..LimitCaps::default()
        };
        assert!(
            zero.validate()
                .unwrap_err()
                .to_string()
                .contains("limits.processes must be at least 1")
        );
    }

    #[test]
    fn the_default_memory_is_half_of_physical() {
        let defaults = ResourceLimits::defaults();
        assert_eq!(defaults.memory_mb, physical_memory_bytes() / 2 / MIB);
        assert_eq!(defaults.processes, 256);
    }

    fn rlimited() -> RunLimits {
        RunLimits {
            limits: ResourceLimits {
                memory_mb: 512,
                processes: 64,
                file_size_mb: 64,
                scratch_mb: 100,
            },
            group: None,
            memory_via: Via::Rlimit,
            processes_via: Via::Rlimit,
        }
    }

    #[test]
    fn rlimit_breaches_are_read_from_a_failed_run_only() {
        let python = "Traceback (most recent call last):\n  File \"x.py\", line 1\nMemoryError\n";
        let breach = rlimited().breach(None, Some(1), "", python).unwrap();
        assert_eq!((breach.limit, breach.value), (LimitKind::Memory, 512));
        assert_eq!(breach.observed, "MemoryError");
        assert_eq!(rlimited().breach(None, Some(0), "", python), None);
        let minizinc_json =
            "{\"type\": \"error\", \"what\": \"error\", \"message\": \"out of memory\"}\n";
        assert_eq!(
            rlimited()
                .breach(None, Some(1), minizinc_json, "")
                .unwrap()
                .limit,
            LimitKind::Memory
        );
        let fork = "Traceback (most recent call last):\n  File \"x.py\", line 3\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n";
        assert_eq!(
            rlimited().breach(None, Some(1), "", fork).unwrap().limit,
            LimitKind::Processes
        );
        let efbig = "Traceback (most recent call last):\n  File \"x.py\", line 3\nOSError: [Errno 27] File too large\n";
        assert_eq!(
            rlimited().breach(None, Some(1), "", efbig).unwrap().limit,
            LimitKind::FileSize
        );
        assert_eq!(
            rlimited().breach(None, Some(-25), "", "").unwrap().limit,
            LimitKind::FileSize
        );
        assert_eq!(
            rlimited().breach(None, Some(1), "", "ValueError: no\n"),
            None
        );
        // Only what the rlimits bound: memory under a cgroup is the
        // kernel's to count.
        let mut grouped = rlimited();
        grouped.memory_via = Via::CgroupV1;
        assert_eq!(grouped.breach(None, Some(1), "", python), None);
    }

    #[test]
    fn usage_charges_small_files_and_stops_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for i in 0..100 {
            std::fs::write(dir.path().join("sub").join(i.to_string()), "").unwrap();
        }
        let dirs = [dir.path().to_path_buf()];
        let measured = usage(&dirs, u64::MAX);
        assert!(measured >= 101 * ENTRY_CHARGE, "{measured}");
        assert!(usage(&dirs, 10 * ENTRY_CHARGE) <= 12 * ENTRY_CHARGE + 8192);
    }

    #[test]
    fn a_breach_names_the_limit_and_what_was_seen() {
        let breach = rlimited().scratch_breach(200 * MIB + 1);
        let diagnostic = breach.diagnostic("the script");
        assert_eq!(diagnostic.category, Category::ResourceLimit);
        assert_eq!(
            diagnostic.message,
            "the script hit its scratch dir limit of 100 MiB: the scratch dir held 201 MiB; the server's limit is SOLVERGATE_SCRATCH_LIMIT_MB, and a call's `limits` may only lower it"
        );
        let details = diagnostic.details.unwrap();
        assert_eq!(details["limit"], "scratch");
        assert_eq!(details["value"], 100);
        assert_eq!(details["mechanism"], "watchdog");
    }
}
