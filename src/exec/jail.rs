//! One confined run's state, the same for a cold child and a warm-forked
//! one: its scratch dir (the child's `TMPDIR`), its limits and cgroups,
//! and the watches on its scratch dir and (under rlimits) its tree's
//! memory; at the end, what the sandbox enforced and the breach.

use std::io;
use std::path::PathBuf;

use nix::unistd::Pid;

use super::confine::Confinement;
use super::limits::{Breach, RunLimits, ScratchWatch};
use super::memory_watch::TreeMemoryWatch;
use super::{ChildCommand, Ending, SandboxReport, limits, sandbox, watchdog};

/// A confined run, from before its spawn to after its sweep.
pub(super) struct Jail {
    _dir: tempfile::TempDir,
    /// The child's scratch dir: its `TMPDIR`, where it may write.
    pub write_dir: PathBuf,
    limits: Option<RunLimits>,
    scratch: Option<ScratchWatch>,
    memory: Option<TreeMemoryWatch>,
}

impl Jail {
    /// The jail of a run starting now, when children are confined at all
    /// (limits or the sandbox on) and `command` is not an unconfined one.
    pub fn prepare(command: &ChildCommand) -> io::Result<Option<Jail>> {
        if !(limits::enabled() || sandbox::enabled()) || command.unconfined {
            return Ok(None);
        }
        // scratch_dir already falls back to the system temp dir.
        let dir = watchdog::scratch_dir("solvergate-sandbox-")
            .map_err(|error| io::Error::other(error.0.message))?;
        let write_dir = dir.path().join("tmp");
        std::fs::create_dir(&write_dir)?;
        Ok(Some(Jail {
            write_dir,
            _dir: dir,
            limits: RunLimits::prepare()?,
            scratch: None,
            memory: None,
        }))
    }

    /// What the child (cold or forked) applies for `command`: its sandbox
    /// and its limits, prepared now.
    pub fn confinement(&self, command: &ChildCommand) -> io::Result<Confinement> {
        let mut confinement =
            Confinement::sandboxed(&command.write_dirs(&self.write_dir), &command.readable)?;
        if let Some(limits) = &self.limits {
            limits.confine(&mut confinement)?;
        }
        Ok(confinement)
    }

    /// Starts measuring the scratch dir (and `command`'s own writable
    /// dirs) against the scratch limit and, where only rlimits bound
    /// memory, the tree of the session `leader` leads against the memory
    /// limit (under a v1 memory group: its OOM-kill count), from the spawn
    /// on.
    pub fn watch(&mut self, command: &ChildCommand, leader: Pid) {
        if let Some(limits) = &self.limits {
            self.scratch = Some(ScratchWatch::start(
                command.measured_dirs(&self.write_dir),
                limits.scratch_bytes(),
            ));
            self.memory = match (limits.tree_memory_bytes(), limits.v1_oom_counter()) {
                (Some(limit), _) => Some(TreeMemoryWatch::start(leader, limit)),
                (None, Some(oom_control)) => {
                    Some(TreeMemoryWatch::oom_counter(leader, oom_control))
                }
                (None, None) => None,
            };
        }
    }

    /// Resolves once the scratch dir or the tree's memory went over its
    /// limit (never, when neither is watched).
    pub async fn over_limit(&self) {
        let scratch = async {
            match &self.scratch {
                Some(scratch) => scratch.exceeded().await,
                None => std::future::pending().await,
            }
        };
        let memory = async {
            match &self.memory {
                Some(memory) => memory.exceeded().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = scratch => {}
            () = memory => {}
        }
    }

    /// What the sandbox enforced and the breach, once the run is swept:
    /// the memory or scratch breach that stopped it, else what the run's cgroups
    /// counted or its ending shows. The cgroups are emptied and removed
    /// (on the blocking pool) whatever the ending.
    pub async fn finish(
        self,
        ending: Ending,
        return_code: Option<i32>,
        stdout: &str,
        stderr: &str,
    ) -> (Option<SandboxReport>, Option<Breach>) {
        let sandbox = sandbox::enabled().then(sandbox::support).flatten().cloned();
        let watched_breach = match (&self.limits, &self.memory, &self.scratch) {
            // Stopped at the kernel's first OOM kill: the group's count
            // below is the breach.
            (Some(_), Some(memory), _)
                if ending == Ending::OverLimit
                    && memory.fired()
                    && memory.counts_kernel_kills() =>
            {
                None
            }
            (Some(limits), Some(memory), _) if ending == Ending::OverLimit && memory.fired() => {
                let (bytes, processes) = memory.seen();
                Some(limits.memory_breach(bytes, processes))
            }
            (Some(limits), _, Some(scratch)) if ending == Ending::OverLimit => {
                Some(limits.scratch_breach(scratch.bytes()))
            }
            _ => None,
        };
        drop((self.scratch, self.memory));
        let (counted, leftovers) = match self.limits {
            Some(limits) => {
                let (stdout, stderr) = (
                    tail_of(stdout, TAIL).to_owned(),
                    tail_of(stderr, TAIL).to_owned(),
                );
                tokio::task::spawn_blocking(move || limits.finish(return_code, &stdout, &stderr))
                    .await
                    .unwrap_or((None, None))
            }
            None => (None, None),
        };
        // The groups and the scratch dir go off the run's path: the sweep
        // already found the tree gone, and the result does not wait for
        // the kernel to let go of a memory group. (A runtime shutting down
        // drops the task, and with it both, at once.)
        let dir = self._dir;
        drop(tokio::task::spawn_blocking(move || drop((leftovers, dir))));
        (sandbox, watched_breach.or(counted))
    }
}

/// How much of the end of stdout and of stderr a failed run's last words
/// are read from (MiniZinc 2.6 reports a failed allocation as a JSON error
/// on stdout, Python and 2.9 on stderr): 16 KiB.
const TAIL: usize = 16 * 1024;

/// The last `bytes` of `text` (or all of it), cut at a character boundary.
fn tail_of(text: &str, bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_is_cut_at_a_character_boundary() {
        assert_eq!(tail_of("héllo", 4), "llo");
        assert_eq!(tail_of("abc", 10), "abc");
    }
}
