//! The warm pool: a few pre-started forkers (see `exec::Forker`) that have
//! already imported `ortools.sat.python.cp_model`, so a script run skips
//! the interpreter start and the OR-Tools import.
//!
//! A run takes an idle forker out of the pool, has it fork a fresh child
//! for the script, and puts it back if it is still healthy; a forker that
//! failed, died or was killed is dropped (its session swept) and a new one
//! is started in the background. With no idle forker — the pool disabled
//! (`SOLVERGATE_CPSAT_WARM=0`), still starting, all busy, or broken — the
//! run is cold, exactly as before. After three failed starts in a row (an
//! interpreter that cannot import OR-Tools) the pool stops refilling. Only the MCP server arms the pool
//! ([`WarmPool::arm`]), and it starts at the first run; one-shot CLI
//! commands stay cold. The pool writes the `solvergate` helper and its
//! `sitecustomize` into a dir of its own, first on every forker's
//! `PYTHONPATH`, so a forker follows solves (which model each `CpSolver`
//! solved) from before it imports OR-Tools, as a cold run does.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::exec::{ChildCommand, Forker, Limits, LineWatcher, NotForked, RunOutput};

/// The modules every forker imports before it is ready.
const PRELOAD: &[&str] = &["ortools.sat.python.cp_model"];

/// How long a forker may take to import OR-Tools.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// Most forkers a pool keeps, whatever the setting says.
pub const MAX_WARM: usize = crate::settings::MAX_CPSAT_WARM;

#[derive(Debug, Default)]
struct State {
    /// Wanted forkers (0: the pool is off).
    size: usize,
    idle: Vec<Forker>,
    /// Forkers starting or lent out.
    elsewhere: usize,
    python: Option<PathBuf>,
    env_set: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    /// Stops refilling once the server shuts down.
    shutdown: Option<CancellationToken>,
    /// Consecutive start failures; refilling stops after a few.
    failures: usize,
    /// The helper and its start-up hook, first on every forker's
    /// `PYTHONPATH`: a forker follows solves from before it imports
    /// OR-Tools, so its children do from their first line.
    helper: Option<tempfile::TempDir>,
}

/// Idle forkers shared by every clone of a `Cpsat` service.
#[derive(Debug, Clone, Default)]
pub struct WarmPool {
    state: Arc<Mutex<State>>,
}

/// The prefix of the pool's helper dir in the server's scratch root.
const WARM_HELPER_PREFIX: &str = "solvergate-warm-helper-";

impl WarmPool {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Arms the pool for `size` forkers (bounded by [`MAX_WARM`]; 0 leaves
    /// it off) that live until `shutdown`. Nothing starts yet: the first
    /// run starts the pool ([`WarmPool::start_once`]) and is itself cold, so
    /// a server that never runs a CP-SAT script never pays for forkers.
    pub fn arm(&self, size: usize, shutdown: CancellationToken) {
        {
            let mut state = self.lock();
            state.size = size.min(MAX_WARM);
            state.shutdown = Some(shutdown.clone());
        }
        // Shutting down empties the pool, so no forker waits for the exit sweep.
        let pool = self.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            let idle = std::mem::take(&mut pool.lock().idle);
            // Dropping a forker sweeps its session, which may pause.
            let _ = tokio::task::spawn_blocking(move || drop(idle)).await;
        });
    }

    /// Starts an armed pool of `python` forkers (with the helper's dir and
    /// the server's `PYTHONPATH`, if any) the first time it is called.
    pub fn start_once(&self, python: &std::path::Path, pythonpath: Option<&std::ffi::OsStr>) {
        {
            let mut state = self.lock();
            if state.size == 0 || state.python.is_some() {
                return;
            }
            state.python = Some(python.to_path_buf());
            state.env_set = vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())];
            state.env_remove = vec![
                super::script::SEED_VAR.into(),
                super::script::CONFIG_VAR.into(),
            ];
            // Without the helper dir (it could not be written) a child still
            // follows solves from its own `import solvergate` on.
            // Its own prefix: it lives as long as the pool, beside the
            // runs' scratch dirs that come and go.
            let helper = crate::exec::scratch_dir(WARM_HELPER_PREFIX).and_then(|dir| {
                super::script::write_helper(dir.path())?;
                Ok(dir)
            });
            let mut path = OsString::new();
            match helper {
                Ok(dir) => {
                    path.push(dir.path());
                    state.helper = Some(dir);
                }
                Err(error) => eprintln!(
                    "solvergate: {error}; warm CP-SAT runs follow solves only once a script imports solvergate"
                ),
            }
            if let Some(inherited) = pythonpath {
                if !path.is_empty() {
                    path.push(":");
                }
                path.push(inherited);
            }
            if path.is_empty() {
                state.env_remove.push("PYTHONPATH".into());
            } else {
                state.env_set.push(("PYTHONPATH".into(), path));
            }
        }
        self.refill();
    }

    /// Starts forkers in the background until idle + busy reaches the size.
    /// An idle forker that died (killed from outside) is dropped first, not
    /// counted: when two died at once and a run took one of them before it
    /// was seen dead, the other would otherwise hold its place for good.
    fn refill(&self) {
        let mut dead = Vec::new();
        let (python, env_set, env_remove, missing) = {
            let mut state = self.lock();
            for mut forker in std::mem::take(&mut state.idle) {
                if forker.is_healthy() {
                    state.idle.push(forker);
                } else {
                    dead.push(forker);
                }
            }
            let stopped = state.shutdown.as_ref().is_none_or(|t| t.is_cancelled());
            if stopped || state.failures >= 3 {
                return;
            }
            let Some(python) = state.python.clone() else {
                return;
            };
            let missing = state
                .size
                .saturating_sub(state.idle.len() + state.elsewhere);
            state.elsewhere += missing;
            (
                python,
                state.env_set.clone(),
                state.env_remove.clone(),
                missing,
            )
        };
        drop(dead);
        for _ in 0..missing {
            let pool = self.clone();
            let python = python.clone();
            let (env_set, env_remove) = (env_set.clone(), env_remove.clone());
            tokio::spawn(async move {
                let started =
                    Forker::start(&python, PRELOAD, &env_set, &env_remove, READY_WITHIN).await;
                let mut state = pool.lock();
                state.elsewhere = state.elsewhere.saturating_sub(1);
                match started {
                    Ok(forker) if !state.shutdown.as_ref().is_some_and(|t| t.is_cancelled()) => {
                        state.failures = 0;
                        state.idle.push(forker);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        state.failures += 1;
                        eprintln!("solvergate: {error}; CP-SAT scripts run cold");
                    }
                }
            });
        }
    }

    /// Takes a healthy idle forker, dropping dead ones on the way.
    fn take(&self) -> Option<Forker> {
        let mut dead = Vec::new();
        let taken = {
            let mut state = self.lock();
            let mut taken = None;
            while let Some(mut forker) = state.idle.pop() {
                if forker.is_healthy() {
                    taken = Some(forker);
                    break;
                }
                dead.push(forker);
            }
            if taken.is_some() {
                state.elsewhere += 1;
            }
            taken
        };
        let replace = !dead.is_empty();
        drop(dead);
        if replace {
            self.refill();
        }
        taken
    }

    /// Puts a forker back, or drops a broken one and starts another.
    fn give_back(&self, mut forker: Forker) {
        let healthy = forker.is_healthy();
        {
            let mut state = self.lock();
            state.elsewhere = state.elsewhere.saturating_sub(1);
            let open = !state.shutdown.as_ref().is_some_and(|t| t.is_cancelled());
            if healthy && open && state.idle.len() < state.size {
                state.idle.push(forker);
                return;
            }
        }
        drop(forker);
        self.refill();
    }

    /// Runs `command` in a child of a warm forker (`watcher` sees each
    /// stdout line as it is written); `None` when no forker could take it
    /// (the caller runs it cold).
    pub async fn run(
        &self,
        command: &ChildCommand,
        limits: Limits,
        cancel: &CancellationToken,
        watcher: Option<LineWatcher<'_>>,
    ) -> Option<RunOutput> {
        for _ in 0..=MAX_WARM {
            let mut lease = Lease {
                pool: self,
                forker: Some(self.take()?),
            };
            let forker = lease.forker.as_mut()?;
            match forker.run(command, limits, cancel, watcher).await {
                Ok(output) => return Some(output),
                // A forker that broke is dropped and the next one (or a cold
                // run) takes the script; a request no forker can take (not
                // UTF-8) runs cold.
                Err(NotForked(_)) if !forker.is_healthy() && !cancel.is_cancelled() => continue,
                Err(NotForked(_)) => return None,
            }
        }
        None
    }
}

/// A forker lent out for one run: back to the pool when the run ends, or
/// dropped (its session swept) with a run future that was dropped.
struct Lease<'a> {
    pool: &'a WarmPool,
    forker: Option<Forker>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(forker) = self.forker.take() {
            if std::thread::panicking() {
                return;
            }
            self.pool.give_back(forker);
        }
    }
}
