//! A bounded, in-process registry of background jobs, generic over what a
//! job produces.
//!
//! At most `max_running` jobs run; up to `max_queued` more wait and start in
//! submission order as slots free; a submission beyond that is refused.
//! Finished jobs are kept for polling up to `max_retained_terminal`, oldest
//! evicted first. A job's work gets a cancellation token (a child of the
//! registry's shutdown token); cancelling a queued job drops it before it
//! starts, cancelling a running one cancels its token and waits for the work
//! to end, so its processes are gone when `cancel` returns.
//!
//! A job's work runs in a task of its own: a panic in it becomes a `failed`
//! job, never a held slot, and a guard finishes the job even if its task is
//! dropped. A job's final snapshot travels on its completion channel, so a
//! waiter that subscribed in time gets it even after retention evicted the
//! job. Results are stored once (`Arc`); snapshots share them.
//!
//! A job runs under the resource-limit caps of the call that admitted it
//! (`exec::limits::with_caps`): they are read at admission and carried
//! into the job's task, since a queued job starts from whichever task
//! freed its slot.
//!
//! A registry may keep a journal ([`Journal`], [`JobRegistry::keep_in`]):
//! it is told of every job at admission, before its work can start, again
//! when the work was handed to something that outlives the server (a Slurm
//! job), and with its final snapshot (those two on the blocking pool,
//! never under the lock) — except a job that shutdown ended, whose journal
//! entry stays as it was, so a later server reads it as interrupted. A job
//! an earlier server handed off is taken in under its own id
//! ([`JobRegistry::adopt`]) and ends here like any other.
//!
//! The one rule a maintainer must keep: the registry lock is never held
//! across an `.await`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::exec::limits::{LimitCaps, current_caps, with_caps};
use crate::settings::JobBounds;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Admitted, waiting for a free slot.
    Queued,
    /// Its work is running.
    Running,
    /// Its work finished with a result (which may itself report a solver
    /// error).
    Succeeded,
    /// Our machinery failed, or the work panicked; no result.
    Failed,
    /// Ran out of time; the partial result is kept.
    Timeout,
    /// Cancelled by a client or by shutdown, queued or running.
    Cancelled,
}

impl JobState {
    /// Whether the job has ended (anything but `queued` and `running`).
    pub fn is_terminal(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }

    /// The state as it reads in the JSON (`succeeded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Timeout => "timeout",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// How a job's work ended.
#[derive(Debug, Clone)]
pub enum Outcome<R> {
    /// Finished with a result.
    Succeeded(R),
    /// Ran out of time; the partial result is kept.
    TimedOut(R),
    /// Our machinery failed; no result.
    Failed(String),
    /// Stopped by its cancellation token; no result.
    Cancelled,
}

/// The work of one job, started with its cancellation token.
pub type Work<R> = Pin<Box<dyn Future<Output = Outcome<R>> + Send>>;
/// Builds a job's work from its cancellation token; called once, when the job
/// gets a slot.
pub type Start<R> = Box<dyn FnOnce(CancellationToken) -> Work<R> + Send>;

/// `start` with `caps` lowering the limits of every child its work starts.
fn under_caps<R: Send + 'static>(caps: LimitCaps, start: Start<R>) -> Start<R> {
    Box::new(move |token| Box::pin(with_caps(caps, async move { start(token).await })))
}

/// A job as a poll sees it. Cheap to clone: the meta and the result are
/// shared, not copied.
#[derive(Debug)]
pub struct JobSnapshot<R, M> {
    /// Opaque id for get / cancel (a UUID in simple form).
    pub id: String,
    /// What the submitter attached (e.g. the requested budget).
    pub meta: Arc<M>,
    /// Where the job is in its life.
    pub state: JobState,
    /// When it was submitted.
    pub submitted_at: SystemTime,
    /// When it got a slot; `None` while queued, and for a job that ended before
    /// it started.
    pub started_at: Option<SystemTime>,
    /// When it ended; `None` until then.
    pub finished_at: Option<SystemTime>,
    /// Running time so far, or in all once finished; 0 while queued.
    pub elapsed_ms: u64,
    /// What the work produced: present for `succeeded` and `timeout`.
    pub result: Option<Arc<R>>,
    /// Why the job failed or was cancelled.
    pub message: Option<String>,
}

impl<R, M> Clone for JobSnapshot<R, M> {
    fn clone(&self) -> Self {
        JobSnapshot {
            id: self.id.clone(),
            meta: self.meta.clone(),
            state: self.state,
            submitted_at: self.submitted_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            elapsed_ms: self.elapsed_ms,
            result: self.result.clone(),
            message: self.message.clone(),
        }
    }
}

/// Where a registry keeps its jobs beyond this process ([`super::store`]).
pub trait Journal<R, M>: Send + Sync {
    /// A job was admitted; called before its work can start.
    fn admitted(&self, job: &JobSnapshot<R, M>);
    /// A job ended; called with its final snapshot, on the blocking pool.
    fn ended(&self, job: JobSnapshot<R, M>);
    /// The stored status of a job the registry does not hold.
    fn find(&self, id: &str) -> Option<serde_json::Value>;
    /// Resolves when job `job`'s work has been handed to something that
    /// may outlive this server (a Slurm job): the registry then tells
    /// [`Self::admitted`] again with the job as it is then, off the lock.
    /// `None` (the default): the record written at admission stays.
    fn handed_off(&self, _job: &JobSnapshot<R, M>) -> Option<HandedOff> {
        None
    }
}

/// What [`Journal::handed_off`] returns.
pub type HandedOff = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Resolves to a job's final snapshot, whether or not the registry still
/// retains the job.
pub struct Completion<R, M> {
    done: watch::Receiver<Option<JobSnapshot<R, M>>>,
}

impl<R, M> Completion<R, M> {
    /// The final snapshot; `None` only if the registry itself went away
    /// without finishing the job.
    pub async fn finished(mut self) -> Option<JobSnapshot<R, M>> {
        let finished = self.done.wait_for(Option::is_some).await.ok()?;
        finished.clone()
    }
}

/// An admitted job: its first snapshot and its completion.
pub type Admitted<R, M> = (JobSnapshot<R, M>, Completion<R, M>);

/// A submission the registry has no room for.
#[derive(Debug, thiserror::Error)]
#[error(
    "the {what} registry is full ({running} running of {max_running}, {queued} queued of {max_queued}); {asked} more cannot be admitted — retry when a job finishes, or raise the bounds"
)]
pub struct RegistryFull {
    /// What the registry holds, as messages name it ("solve job").
    pub what: &'static str,
    /// How many jobs the refused submission asked to admit.
    pub asked: usize,
    /// Jobs running when it was refused.
    pub running: usize,
    /// The registry's bound on running jobs.
    pub max_running: usize,
    /// Jobs queued when it was refused.
    pub queued: usize,
    /// The registry's bound on queued jobs.
    pub max_queued: usize,
}

struct Entry<R, M> {
    meta: Arc<M>,
    state: JobState,
    submitted_at: SystemTime,
    started_at: Option<SystemTime>,
    started: Option<Instant>,
    finished_at: Option<SystemTime>,
    ran_ms: u64,
    result: Option<Arc<R>>,
    message: Option<String>,
    token: CancellationToken,
    start: Option<Start<R>>,
    /// Carries the final snapshot once the job is terminal.
    done: watch::Sender<Option<JobSnapshot<R, M>>>,
}

struct Inner<R, M> {
    jobs: HashMap<String, Entry<R, M>>,
    /// Every retained job, in submission order.
    order: Vec<String>,
    queue: VecDeque<String>,
    running: usize,
    terminal: VecDeque<String>,
}

struct Shared<R, M> {
    what: &'static str,
    bounds: JobBounds,
    shutdown: CancellationToken,
    inner: Mutex<Inner<R, M>>,
    journal: OnceLock<Arc<dyn Journal<R, M>>>,
    /// Set by [`JobRegistry::shutdown`]: what ends from now on was ended by it.
    stopping: AtomicBool,
}

/// The registry; cloning shares it. `R` is what a job produces, `M` what
/// the submitter attaches to it.
pub struct JobRegistry<R, M = ()> {
    shared: Arc<Shared<R, M>>,
}

impl<R, M> Clone for JobRegistry<R, M> {
    fn clone(&self) -> Self {
        JobRegistry {
            shared: self.shared.clone(),
        }
    }
}

impl<R: Send + Sync + 'static, M: Send + Sync + 'static> JobRegistry<R, M> {
    /// `what` names the registry in messages ("solve job").
    pub fn new(what: &'static str, bounds: JobBounds, shutdown: CancellationToken) -> Self {
        JobRegistry {
            shared: Arc::new(Shared {
                what,
                bounds,
                shutdown,
                inner: Mutex::new(Inner {
                    jobs: HashMap::new(),
                    order: Vec::new(),
                    queue: VecDeque::new(),
                    running: 0,
                    terminal: VecDeque::new(),
                }),
                journal: OnceLock::new(),
                stopping: AtomicBool::new(false),
            }),
        }
    }

    /// Keeps every job admitted from now on in `journal` too; the first
    /// journal given stays.
    pub fn keep_in(&self, journal: Arc<dyn Journal<R, M>>) {
        let _ = self.shared.journal.set(journal);
    }

    /// The stored status of job `id`, which this registry does not hold
    /// (an earlier server's, or one retention evicted), from its journal.
    pub fn stored(&self, id: &str) -> Option<serde_json::Value> {
        self.shared.journal.get()?.find(id)
    }

    /// Tells the journal of each admitted job, of its handoff if it is
    /// handed off, and of its end when it comes (in that order: one task
    /// per job tells all but the first).
    fn journal_admitted(&self, admitted: &[Admitted<R, M>]) {
        let Some(journal) = self.shared.journal.get() else {
            return;
        };
        for (snapshot, completion) in admitted {
            journal.admitted(snapshot);
            let handed_off = journal.handed_off(snapshot);
            let journal = journal.clone();
            let registry = self.clone();
            let id = snapshot.id.clone();
            let done = Completion {
                done: completion.done.clone(),
            };
            tokio::spawn(async move {
                let mut finished = std::pin::pin!(done.finished());
                let last = match handed_off {
                    None => finished.await,
                    Some(handed_off) => tokio::select! {
                        last = &mut finished => last,
                        () = handed_off => {
                            if let Some(now) = registry.get(&id).filter(|now| !now.state.is_terminal()) {
                                let journal = journal.clone();
                                let _ = tokio::task::spawn_blocking(move || journal.admitted(&now)).await;
                            }
                            finished.await
                        }
                    },
                };
                let Some(last) = last else {
                    return;
                };
                // The whole token's cancellation counts too: it comes
                // before the registry's own shutdown is called.
                let stopping = registry.shared.stopping.load(Ordering::Relaxed)
                    || registry.shared.shutdown.is_cancelled();
                let by_shutdown =
                    stopping && matches!(last.state, JobState::Cancelled | JobState::Failed);
                if !by_shutdown {
                    let _ = tokio::task::spawn_blocking(move || journal.ended(last)).await;
                }
            });
        }
    }

    /// Takes in job `id`, which an earlier server admitted and whose work
    /// goes on outside any server (a Slurm job whose server was killed):
    /// it runs at once under the id, times and meta it had, whatever the
    /// bounds say (its work runs already; a slot it takes delays new jobs
    /// until it ends). Its journal is told at once, before this returns.
    /// `None` when the registry holds `id` already.
    pub fn adopt(
        &self,
        id: &str,
        meta: M,
        submitted_at: SystemTime,
        started_at: SystemTime,
        start: Start<R>,
    ) -> Option<JobSnapshot<R, M>> {
        let (admitted, token) = {
            let mut inner = self.lock();
            if inner.jobs.contains_key(id) {
                return None;
            }
            let (done, completion) = watch::channel(None);
            let ran = SystemTime::now()
                .duration_since(started_at)
                .unwrap_or_default();
            let token = self.shared.shutdown.child_token();
            let entry = Entry {
                meta: Arc::new(meta),
                state: JobState::Running,
                submitted_at,
                started_at: Some(started_at),
                started: Some(Instant::now().checked_sub(ran).unwrap_or_else(Instant::now)),
                finished_at: None,
                ran_ms: 0,
                result: None,
                message: None,
                token: token.clone(),
                start: None,
                done,
            };
            let snapshot = snapshot(id, &entry);
            inner.jobs.insert(id.to_owned(), entry);
            inner.order.push(id.to_owned());
            inner.running += 1;
            ((snapshot, Completion { done: completion }), token)
        };
        let snapshot = admitted.0.clone();
        self.journal_admitted(&[admitted]);
        // It only follows work that runs elsewhere: no caps to carry.
        self.spawn(
            id.to_owned(),
            token,
            under_caps(LimitCaps::default(), start),
        );
        Some(snapshot)
    }

    fn lock(&self) -> MutexGuard<'_, Inner<R, M>> {
        // A panic while holding the lock cannot leave the maps half-updated
        // in a way later calls could not live with; keep serving.
        self.shared
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bounds the registry was built with.
    pub fn bounds(&self) -> JobBounds {
        self.shared.bounds
    }

    /// What the registry holds, as messages name it ("solve job").
    pub fn what(&self) -> &'static str {
        self.shared.what
    }

    /// Admits one job.
    pub fn submit(&self, meta: M, start: Start<R>) -> Result<JobSnapshot<R, M>, RegistryFull> {
        let mut admitted = self.submit_all(vec![(meta, start)])?;
        admitted.pop().ok_or(RegistryFull {
            what: self.shared.what,
            asked: 1,
            running: 0,
            max_running: self.shared.bounds.max_running,
            queued: 0,
            max_queued: self.shared.bounds.max_queued,
        })
    }

    /// How many more jobs fit now (free running plus free queued slots).
    pub fn free_capacity(&self) -> usize {
        let bounds = self.shared.bounds;
        let inner = self.lock();
        free_slots(bounds, &inner)
    }

    /// Checks that `asked` more jobs would fit now, without admitting any.
    pub fn check_room(&self, asked: usize) -> Result<(), RegistryFull> {
        let inner = self.lock();
        self.room_for(&inner, asked)
    }

    fn room_for(&self, inner: &Inner<R, M>, asked: usize) -> Result<(), RegistryFull> {
        let bounds = self.shared.bounds;
        if asked <= free_slots(bounds, inner) {
            return Ok(());
        }
        Err(RegistryFull {
            what: self.shared.what,
            asked,
            running: inner.running,
            max_running: bounds.max_running,
            queued: inner.queue.len(),
            max_queued: bounds.max_queued,
        })
    }

    /// Admits every job or none: all fit in the free running and queued
    /// slots, or the whole batch is refused.
    pub fn submit_all(
        &self,
        starts: Vec<(M, Start<R>)>,
    ) -> Result<Vec<JobSnapshot<R, M>>, RegistryFull> {
        Ok(self
            .submit_all_watched(starts)?
            .into_iter()
            .map(|(snapshot, _)| snapshot)
            .collect())
    }

    /// [`submit_all`](Self::submit_all), also returning each job's
    /// completion, subscribed before any of the jobs could finish.
    pub fn submit_all_watched(
        &self,
        starts: Vec<(M, Start<R>)>,
    ) -> Result<Vec<Admitted<R, M>>, RegistryFull> {
        let mut to_start = Vec::new();
        let caps = current_caps();
        let admitted = {
            let mut inner = self.lock();
            self.room_for(&inner, starts.len())?;
            let mut admitted = Vec::new();
            for (meta, start) in starts {
                let id = uuid::Uuid::new_v4().simple().to_string();
                let (done, completion) = watch::channel(None);
                inner.jobs.insert(
                    id.clone(),
                    Entry {
                        meta: Arc::new(meta),
                        state: JobState::Queued,
                        submitted_at: SystemTime::now(),
                        started_at: None,
                        started: None,
                        finished_at: None,
                        ran_ms: 0,
                        result: None,
                        message: None,
                        token: self.shared.shutdown.child_token(),
                        start: Some(under_caps(caps, start)),
                        done,
                    },
                );
                inner.order.push(id.clone());
                inner.queue.push_back(id.clone());
                admitted.push((id, Completion { done: completion }));
            }
            to_start.extend(self.take_startable(&mut inner));
            // Nothing admitted can have finished: none is spawned yet.
            admitted
                .into_iter()
                .filter_map(|(id, completion)| {
                    let entry = inner.jobs.get(&id)?;
                    Some((snapshot(&id, entry), completion))
                })
                .collect::<Vec<_>>()
        };
        self.journal_admitted(&admitted);
        for (id, token, start) in to_start {
            self.spawn(id, token, start);
        }
        Ok(admitted)
    }

    /// Moves queued jobs into free running slots; returns what to spawn.
    fn take_startable(
        &self,
        inner: &mut Inner<R, M>,
    ) -> Vec<(String, CancellationToken, Start<R>)> {
        let mut startable = Vec::new();
        while inner.running < self.shared.bounds.max_running {
            let Some(id) = inner.queue.pop_front() else {
                break;
            };
            let Some(entry) = inner.jobs.get_mut(&id) else {
                continue;
            };
            let Some(start) = entry.start.take() else {
                continue;
            };
            entry.state = JobState::Running;
            entry.started_at = Some(SystemTime::now());
            entry.started = Some(Instant::now());
            inner.running += 1;
            startable.push((id, entry.token.clone(), start));
        }
        startable
    }

    /// Runs a job's work in a task of its own, so a panic in it ends the
    /// job as `failed` instead of leaving it running with its slot held.
    fn spawn(&self, id: String, token: CancellationToken, start: Start<R>) {
        let finisher = Finisher {
            registry: self.clone(),
            id,
            finished: false,
        };
        tokio::spawn(async move {
            let work = tokio::spawn(async move { start(token).await });
            let outcome = match work.await {
                Ok(outcome) => outcome,
                Err(error) if error.is_panic() => Outcome::Failed(format!(
                    "the job's work panicked ({}); this is a solvergate bug — please report it",
                    panic_text(error.into_panic().as_ref())
                )),
                Err(_) => Outcome::Failed("the job's work was stopped by the runtime".to_owned()),
            };
            finisher.finish(outcome);
        });
    }

    /// Records how a running job ended and starts the next queued ones.
    fn finish(&self, id: &str, outcome: Outcome<R>) {
        let to_start = {
            let mut inner = self.lock();
            self.record(&mut inner, id, outcome);
            self.take_startable(&mut inner)
        };
        for (id, token, start) in to_start {
            self.spawn(id, token, start);
        }
    }

    /// Marks a running job terminal, frees its slot, publishes its final
    /// snapshot and retires it.
    fn record(&self, inner: &mut Inner<R, M>, id: &str, outcome: Outcome<R>) {
        // A running job is never evicted, so a missing or terminal entry
        // means this job was recorded already.
        let Some(entry) = inner.jobs.get_mut(id) else {
            return;
        };
        if entry.state.is_terminal() {
            return;
        }
        inner.running = inner.running.saturating_sub(1);
        let (state, result, message) = match outcome {
            Outcome::Succeeded(result) => (JobState::Succeeded, Some(Arc::new(result)), None),
            Outcome::TimedOut(result) => (JobState::Timeout, Some(Arc::new(result)), None),
            Outcome::Failed(message) => (JobState::Failed, None, Some(message)),
            Outcome::Cancelled => (
                JobState::Cancelled,
                None,
                Some("cancelled; its processes were stopped".to_owned()),
            ),
        };
        entry.state = state;
        entry.result = result;
        entry.message = message;
        entry.finished_at = Some(SystemTime::now());
        entry.ran_ms = entry.started.map_or(0, elapsed_ms);
        entry.done.send_replace(Some(snapshot(id, entry)));
        self.retire(inner, id);
    }

    /// Keeps at most `max_retained_terminal` finished jobs.
    fn retire(&self, inner: &mut Inner<R, M>, id: &str) {
        inner.terminal.push_back(id.to_owned());
        while inner.terminal.len() > self.shared.bounds.max_retained_terminal {
            if let Some(old) = inner.terminal.pop_front() {
                inner.jobs.remove(&old);
                inner.order.retain(|kept| *kept != old);
            }
        }
    }

    /// The job `id`'s snapshot; `None` if it is unknown or retention evicted
    /// it.
    pub fn get(&self, id: &str) -> Option<JobSnapshot<R, M>> {
        let inner = self.lock();
        inner.jobs.get(id).map(|entry| snapshot(id, entry))
    }

    /// Every retained job, in submission order.
    pub fn list(&self) -> Vec<JobSnapshot<R, M>> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.jobs.get(id).map(|entry| snapshot(id, entry)))
            .collect()
    }

    /// Cancels a job without waiting: a queued one is dropped at once, a
    /// running one has its token cancelled. Unknown ids return false.
    pub fn request_cancel(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let Some(entry) = inner.jobs.get_mut(id) else {
            return false;
        };
        match entry.state {
            JobState::Queued => {
                entry.state = JobState::Cancelled;
                entry.start = None;
                entry.finished_at = Some(SystemTime::now());
                entry.message = Some("cancelled before it started".to_owned());
                entry.token.cancel();
                entry.done.send_replace(Some(snapshot(id, entry)));
                inner.queue.retain(|queued| queued != id);
                self.retire(&mut inner, id);
            }
            JobState::Running => entry.token.cancel(),
            _ => {}
        }
        true
    }

    /// Cancels a job and waits until it is terminal (its processes gone).
    /// Idempotent; `None` for an unknown id.
    pub async fn cancel(&self, id: &str) -> Option<JobSnapshot<R, M>> {
        if !self.request_cancel(id) {
            return None;
        }
        self.wait(id).await
    }

    /// Waits until a job is terminal; `None` for an unknown id.
    pub async fn wait(&self, id: &str) -> Option<JobSnapshot<R, M>> {
        self.completion(id)?.finished().await
    }

    /// The job's completion, to await without holding the registry.
    pub fn completion(&self, id: &str) -> Option<Completion<R, M>> {
        let inner = self.lock();
        Some(Completion {
            done: inner.jobs.get(id)?.done.subscribe(),
        })
    }

    /// Cancels every job and waits until none runs, or until `deadline`
    /// passes; returns how many jobs had not ended by then.
    pub async fn shutdown(&self, deadline: Duration) -> usize {
        self.shared.stopping.store(true, Ordering::Relaxed);
        let ids: Vec<String> = self.lock().order.clone();
        for id in &ids {
            self.request_cancel(id);
        }
        let completions: Vec<_> = ids.iter().filter_map(|id| self.completion(id)).collect();
        let all = futures_util::future::join_all(completions.into_iter().map(Completion::finished));
        match tokio::time::timeout(deadline, all).await {
            Ok(_) => 0,
            Err(_) => self
                .list()
                .iter()
                .filter(|job| !job.state.is_terminal())
                .count(),
        }
    }
}

/// Finishes its job exactly once: with the work's outcome, or as `failed`
/// if the task running it is dropped first (a runtime shutting down).
struct Finisher<R: Send + Sync + 'static, M: Send + Sync + 'static> {
    registry: JobRegistry<R, M>,
    id: String,
    finished: bool,
}

impl<R: Send + Sync + 'static, M: Send + Sync + 'static> Finisher<R, M> {
    fn finish(mut self, outcome: Outcome<R>) {
        self.finished = true;
        self.registry.finish(&self.id, outcome);
    }
}

impl<R: Send + Sync + 'static, M: Send + Sync + 'static> Drop for Finisher<R, M> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Record the end without starting queued work: the runtime is going
        // away, and a job started now would be dropped at once.
        let mut inner = self.registry.lock();
        self.registry.record(
            &mut inner,
            &self.id,
            Outcome::Failed(
                "the job was stopped before it could finish (the server is shutting down)"
                    .to_owned(),
            ),
        );
    }
}

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn free_slots<R, M>(bounds: JobBounds, inner: &Inner<R, M>) -> usize {
    bounds
        .max_running
        .saturating_sub(inner.running)
        .saturating_add(bounds.max_queued.saturating_sub(inner.queue.len()))
}

fn snapshot<R, M>(id: &str, entry: &Entry<R, M>) -> JobSnapshot<R, M> {
    let elapsed_ms = match entry.state {
        JobState::Running => entry.started.map_or(0, elapsed_ms),
        JobState::Queued => 0,
        _ => entry.ran_ms,
    };
    JobSnapshot {
        id: id.to_owned(),
        meta: entry.meta.clone(),
        state: entry.state,
        submitted_at: entry.submitted_at,
        started_at: entry.started_at,
        finished_at: entry.finished_at,
        elapsed_ms,
        result: entry.result.clone(),
        message: entry.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn bounds(max_running: usize, max_queued: usize, max_retained_terminal: usize) -> JobBounds {
        JobBounds {
            max_running,
            max_queued,
            max_retained_terminal,
        }
    }

    /// Work that finishes with `value` after `millis`, or on cancellation.
    fn sleeper(millis: u64, value: u32) -> Start<u32> {
        Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(millis)) => Outcome::Succeeded(value),
                    () = token.cancelled() => Outcome::Cancelled,
                }
            })
        })
    }

    #[tokio::test]
    async fn admits_running_plus_queued_and_refuses_the_rest() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(2, 1, 10), CancellationToken::new());
        let first = registry.submit((), sleeper(200, 1)).unwrap();
        let second = registry.submit((), sleeper(200, 2)).unwrap();
        let third = registry.submit((), sleeper(10, 3)).unwrap();
        assert_eq!(first.state, JobState::Running);
        assert_eq!(second.state, JobState::Running);
        assert_eq!(third.state, JobState::Queued);
        let refused = registry.submit((), sleeper(10, 4)).unwrap_err();
        assert!(refused.to_string().contains("retry"), "{refused}");

        // The queued job starts when a slot frees and finishes in turn.
        let done = registry.wait(&third.id).await.unwrap();
        assert_eq!(done.state, JobState::Succeeded);
        assert_eq!(done.result.as_deref(), Some(&3));
        assert!(done.started_at.unwrap() >= first.submitted_at);
    }

    /// Work that reports the memory cap it runs under, after `millis`.
    fn cap_reader(millis: u64) -> Start<u32> {
        Box::new(move |_token: CancellationToken| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                let memory = current_caps().memory_mb.unwrap_or(0);
                Outcome::Succeeded(u32::try_from(memory).unwrap())
            })
        })
    }

    /// The caps of the submitting call reach the job's own task, also for a
    /// queued job, which starts from the task of the job that freed its
    /// slot (under that job's caps).
    #[tokio::test]
    async fn a_job_keeps_the_caps_it_was_admitted_under() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 1, 10), CancellationToken::new());
        let caps = |memory_mb| LimitCaps {
            memory_mb: Some(memory_mb),
            ..LimitCaps::default()
        };
        let first = with_caps(caps(300), async { registry.submit((), cap_reader(50)) })
            .await
            .unwrap();
        let queued = with_caps(caps(200), async { registry.submit((), cap_reader(0)) })
            .await
            .unwrap();
        let first = registry.wait(&first.id).await.unwrap();
        assert_eq!(first.result.as_deref(), Some(&300));
        let queued = registry.wait(&queued.id).await.unwrap();
        assert_eq!(queued.result.as_deref(), Some(&200));
        let uncapped = registry.submit((), cap_reader(0)).unwrap();
        let uncapped = registry.wait(&uncapped.id).await.unwrap();
        assert_eq!(uncapped.result.as_deref(), Some(&0));
    }

    #[tokio::test]
    async fn a_batch_is_all_or_nothing() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 1, 10), CancellationToken::new());
        let refused = registry.submit_all(vec![
            ((), sleeper(10, 1)),
            ((), sleeper(10, 2)),
            ((), sleeper(10, 3)),
        ]);
        assert!(refused.is_err());
        assert!(
            registry.list().is_empty(),
            "nothing of a refused batch is kept"
        );
        assert_eq!(
            registry
                .submit_all(vec![((), sleeper(10, 1)), ((), sleeper(10, 2))])
                .unwrap()
                .len(),
            2
        );
    }

    #[tokio::test]
    async fn cancel_drops_queued_and_stops_running() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 4, 10), CancellationToken::new());
        let running = registry.submit((), sleeper(60_000, 1)).unwrap();
        let queued = registry.submit((), sleeper(60_000, 2)).unwrap();
        let dropped = registry.cancel(&queued.id).await.unwrap();
        assert_eq!(dropped.state, JobState::Cancelled);
        assert_eq!(dropped.started_at, None, "a dropped job never starts");
        let stopped = registry.cancel(&running.id).await.unwrap();
        assert_eq!(stopped.state, JobState::Cancelled);
        assert!(stopped.result.is_none());
        // Idempotent.
        assert_eq!(
            registry.cancel(&running.id).await.unwrap().state,
            JobState::Cancelled
        );
        assert!(registry.cancel("no-such-job").await.is_none());
    }

    #[tokio::test]
    async fn evicts_the_oldest_finished_jobs() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(4, 4, 2), CancellationToken::new());
        let mut ids = Vec::new();
        for value in 0..4 {
            let job = registry.submit((), sleeper(1, value)).unwrap();
            registry.wait(&job.id).await;
            ids.push(job.id);
        }
        assert!(registry.get(&ids[0]).is_none());
        assert!(registry.get(&ids[1]).is_none());
        let kept: Vec<_> = registry.list().into_iter().map(|job| job.id).collect();
        assert_eq!(kept, ids[2..]);
    }

    #[tokio::test]
    async fn ids_are_opaque_and_distinct() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(4, 4, 8), CancellationToken::new());
        let a = registry.submit((), sleeper(1, 1)).unwrap().id;
        let b = registry.submit((), sleeper(1, 2)).unwrap().id;
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
    }

    #[tokio::test]
    async fn shutdown_stops_everything() {
        let shutdown = CancellationToken::new();
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(2, 2, 8), shutdown.clone());
        for value in 0..4 {
            registry.submit((), sleeper(60_000, value)).unwrap();
        }
        assert_eq!(registry.shutdown(Duration::from_secs(10)).await, 0);
        assert!(
            registry
                .list()
                .iter()
                .all(|job| job.state == JobState::Cancelled)
        );
    }

    /// Work that panics after `millis`.
    fn panicker(millis: u64) -> Start<u32> {
        Box::new(move |_token: CancellationToken| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                panic!("test panic in a job");
            })
        })
    }

    #[tokio::test]
    async fn a_panicking_job_fails_and_frees_its_slot() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 1, 10), CancellationToken::new());
        let bad = registry.submit((), panicker(10)).unwrap();
        let next = registry.submit((), sleeper(10, 7)).unwrap();
        assert_eq!(next.state, JobState::Queued);
        let failed = registry.wait(&bad.id).await.unwrap();
        assert_eq!(failed.state, JobState::Failed);
        let message = failed.message.unwrap();
        assert!(message.contains("test panic in a job"), "{message}");
        let done = registry.wait(&next.id).await.unwrap();
        assert_eq!(done.state, JobState::Succeeded);
        assert_eq!(done.result.as_deref(), Some(&7));
        assert_eq!(registry.shutdown(Duration::from_secs(10)).await, 0);
    }

    #[tokio::test]
    async fn a_completion_outlives_eviction() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(4, 4, 1), CancellationToken::new());
        let mut admitted = registry
            .submit_all_watched(vec![((), sleeper(5, 1)), ((), sleeper(50, 2))])
            .unwrap();
        let (second, second_done) = admitted.pop().unwrap();
        let (first, first_done) = admitted.pop().unwrap();
        let later = second_done.finished().await.unwrap();
        assert_eq!(later.result.as_deref(), Some(&2));
        assert!(
            registry.get(&first.id).is_none(),
            "retention 1 evicted the first job"
        );
        let earlier = first_done.finished().await.unwrap();
        assert_eq!(earlier.state, JobState::Succeeded);
        assert_eq!(earlier.result.as_deref(), Some(&1));
        assert_eq!(later.id, second.id);
    }

    #[tokio::test]
    async fn room_is_checked_without_admitting() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(2, 3, 10), CancellationToken::new());
        assert_eq!(registry.free_capacity(), 5);
        assert!(registry.check_room(5).is_ok());
        assert!(registry.check_room(usize::MAX).is_err());
        assert!(registry.list().is_empty());
    }

    #[test]
    fn a_dropped_runtime_still_finishes_its_jobs() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 0, 10), CancellationToken::new());
        let job = runtime.block_on(async { registry.submit((), sleeper(60_000, 1)).unwrap() });
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        drop(runtime);
        let after = registry.get(&job.id).unwrap();
        assert_eq!(after.state, JobState::Failed);
        assert!(registry.check_room(1).is_ok(), "the slot is free again");
    }

    /// A journal that remembers what it was told.
    #[derive(Default)]
    struct Recorder {
        told: Mutex<Vec<(String, JobState)>>,
    }

    impl Journal<u32, ()> for Recorder {
        fn admitted(&self, job: &JobSnapshot<u32, ()>) {
            self.told.lock().unwrap().push((job.id.clone(), job.state));
        }
        fn ended(&self, job: JobSnapshot<u32, ()>) {
            self.told.lock().unwrap().push((job.id, job.state));
        }
        fn find(&self, _id: &str) -> Option<serde_json::Value> {
            None
        }
    }

    /// An adopted job keeps its id and times, runs at once even in a full
    /// registry, is told to the journal before `adopt` returns, and ends
    /// like any other; its id cannot be adopted twice.
    #[tokio::test]
    async fn an_adopted_job_runs_under_its_own_id_and_times() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 0, 8), CancellationToken::new());
        let journal = Arc::new(Recorder::default());
        registry.keep_in(journal.clone());
        let busy = registry.submit((), sleeper(60_000, 1)).unwrap();
        assert!(registry.check_room(1).is_err(), "the registry is full");
        let id = "0123456789abcdef0123456789abcdef";
        let submitted = SystemTime::now() - Duration::from_secs(30);
        let started = submitted + Duration::from_secs(5);
        let adopted = registry
            .adopt(id, (), submitted, started, sleeper(20, 7))
            .unwrap();
        assert_eq!(adopted.id, id);
        assert_eq!(adopted.state, JobState::Running);
        assert_eq!(
            (adopted.submitted_at, adopted.started_at),
            (submitted, Some(started))
        );
        assert!(adopted.elapsed_ms >= 25_000, "{}", adopted.elapsed_ms);
        assert_eq!(
            journal.told.lock().unwrap().last().cloned(),
            Some((id.to_owned(), JobState::Running))
        );
        assert!(
            registry
                .adopt(id, (), submitted, started, sleeper(1, 8))
                .is_none()
        );
        let done = registry.wait(id).await.unwrap();
        assert_eq!(done.state, JobState::Succeeded);
        assert_eq!(done.result.as_deref(), Some(&7));
        assert!(
            registry.check_room(1).is_err(),
            "its slot is freed, the other is held"
        );
        registry.cancel(&busy.id).await.unwrap();
        assert!(registry.check_room(1).is_ok());
    }

    #[tokio::test]
    async fn a_journal_hears_of_admission_and_end_but_not_of_an_end_by_shutdown() {
        let registry: JobRegistry<u32> =
            JobRegistry::new("test job", bounds(1, 1, 8), CancellationToken::new());
        let journal = Arc::new(Recorder::default());
        registry.keep_in(journal.clone());
        let quick = registry.submit((), sleeper(5, 1)).unwrap();
        let queued = registry.submit((), sleeper(5, 2)).unwrap();
        registry.wait(&quick.id).await.unwrap();
        registry.wait(&queued.id).await.unwrap();
        let slow = registry.submit((), sleeper(60_000, 3)).unwrap();
        assert_eq!(registry.shutdown(Duration::from_secs(10)).await, 0);
        // The end writes run on the blocking pool: give them a moment.
        for _ in 0..100 {
            if journal.told.lock().unwrap().len() >= 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut told = journal.told.lock().unwrap().clone();
        // Admissions are told at once, ends when they come (on the
        // blocking pool): compare what was told, not the order.
        let mut expected = vec![
            (quick.id.clone(), JobState::Running),
            (queued.id.clone(), JobState::Queued),
            (quick.id.clone(), JobState::Succeeded),
            (queued.id.clone(), JobState::Succeeded),
            (slow.id.clone(), JobState::Running),
        ];
        told.sort_by_key(|(id, state)| (id.clone(), state.as_str()));
        expected.sort_by_key(|(id, state)| (id.clone(), state.as_str()));
        assert_eq!(told, expected, "the slow job's end by shutdown is not told");
    }
}
