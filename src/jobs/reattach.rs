//! Taking over Slurm jobs whose server is gone.
//!
//! A job handed to Slurm runs on when its server is killed (a server that
//! stops cleanly cancels its Slurm jobs first). Its journal record says
//! where: the Slurm job id and its directory in the shared work directory
//! ([`SlurmHandoff`], written the moment `sbatch` returned). A new server on
//! the same data dir takes such a job over under its old id
//! ([`JobRegistry::adopt`](super::registry::JobRegistry::adopt)), with the
//! meta, submission and start times its status kept, and follows it from
//! "already submitted" with the same poll, cancel and end mapping as a job
//! it submitted itself: the job ends with the result its first server would
//! have given, is kept as done, and its directory is removed.
//!
//! When: at start-up, for every orphan of the server's own scope
//! ([`reattach_orphans`]: a stdio server's, and an HTTP server's
//! sessionless jobs), and again whenever a get or cancel names an id the
//! server does not hold ([`reattach`]: a server that died after this one
//! started). At start-up rather than only on demand because that is what a
//! client whose server restarted expects: its jobs are listed, a get right
//! away says `running` and where it runs, and a job nobody asks about
//! still ends — kept, its directory removed — instead of idling on the
//! cluster with nobody to clean up after it. A session's jobs are never
//! taken over: their session ended with their server, and no later
//! session may read them.
//!
//! So at start-up, too, a server ends the jobs of dead servers' HTTP
//! sessions ([`cancel_abandoned`]), whatever its own scope: every
//! session's record whose writer is dead and that names a Slurm job in
//! this server's work directory ([`JobJournal::abandoned`]). Each is
//! claimed under the same lock ([`JobJournal::claim_abandoned`]: its
//! record then names this server, so no other acts on it), and then, in
//! the background so start-up does not wait on Slurm, cancelled through
//! a resumed job's cancel path (`scancel`, a wait until Slurm says it
//! ended, its directory removed), and retired as `failed`, saying so —
//! kept as done, within the same bound as every finished job. A record of
//! a live server (another HTTP server on the same data dir) is never
//! touched, nor one of a server on another machine sharing the data dir
//! (it may still run there), nor one whose server died before `sbatch` returned (no
//! handoff: it stays as it is, as such a record always has). A server
//! killed before it finished leaves the record naming a dead writer
//! again, for the next. Only at start-up: a server that dies after this
//! one started has its sessions' jobs ended by the next one to start.
//!
//! Not taken over: a portfolio race, whose coordinator ran in its server
//! (it reads as `failed`); its attempts are solve jobs, each followed to
//! its own end, with no winner left to cancel the others. A dead
//! session's race is retired as `failed` at start-up
//! ([`retire_abandoned_races`]); its attempts are that session's solve
//! jobs, cancelled as above.
//!
//! What a maintainer must not break: exactly one server follows a job.
//! Claims go through [`JobJournal::claim`], one at a time across
//! processes, and an adopted job's record names its new server before the
//! claim lock is let go.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::backend::{
    JobBackend, SlurmHandoff, SlurmPlacement, SlurmState, detached_context, placement_of,
};
use super::registry::Start;
use super::status::BackgroundJobs;
use super::store::{Abandoned, JobJournal, Kept, Orphan};

/// A kind of job whose work may be handed to Slurm, and so outlive its
/// server.
pub trait Reattach: BackgroundJobs + Sized {
    /// This kind's journal, once the server keeps one.
    fn journal(&self) -> Option<&Arc<JobJournal<Self>>>;

    /// The backend this kind's jobs run on.
    fn job_backend(&self) -> &Arc<dyn JobBackend>;

    /// The meta of the job `status` (as stored) describes, handed off as
    /// `handoff` and last seen at `placement`; `None` when the status does
    /// not read as this kind's.
    fn stored_meta(
        status: &Value,
        handoff: SlurmHandoff,
        placement: SlurmPlacement,
    ) -> Option<Self::Meta>;

    /// The work that follows a handed-off job of this kind to its end.
    fn resume(
        backend: Arc<dyn JobBackend>,
        handoff: SlurmHandoff,
        meta: &Self::Meta,
    ) -> Start<Self::Result>;
}

/// Takes over job `id` if it is an orphan of this server's scope that its
/// backend can follow; whether the registry holds it now.
pub(crate) fn reattach<K: Reattach>(jobs: &K, id: &str) -> bool {
    let Some(journal) = jobs.journal() else {
        return false;
    };
    if jobs.registry().get(id).is_some() {
        return true;
    }
    journal.claim(id, |orphan| adopt(jobs, orphan)).is_some()
}

/// Takes over every orphan of this server's scope its backend can follow;
/// how many. One it cannot follow is left as it is, for a server that can
/// (a get then says why this one cannot).
pub(crate) fn reattach_orphans<K: Reattach>(jobs: &K) -> usize {
    let Some(journal) = jobs.journal() else {
        return 0;
    };
    journal
        .orphans()
        .iter()
        .filter(|orphan| jobs.job_backend().resumable(&orphan.handoff).is_ok())
        .filter(|orphan| reattach(jobs, &orphan.id))
        .count()
}

/// Ends every job of a dead server's HTTP session that this server's
/// backend can reach: claims each ([`JobJournal::claim_abandoned`]), then,
/// in the background, cancels its Slurm job, removes its directory and
/// keeps it as `failed`; how many it claimed. Nobody can read such a job
/// (its session ended with its server), so nothing would ever end it but
/// its time limit.
pub(crate) fn cancel_abandoned<K: Reattach + 'static>(jobs: &K) -> usize {
    let Some(journal) = jobs.journal() else {
        return 0;
    };
    let backend = jobs.job_backend();
    let reachable = |job: &Abandoned| match &job.handoff {
        Some(handoff) => backend.resumable(handoff),
        None => Err("no Slurm job".to_owned()),
    };
    let claimed: Vec<Abandoned> = journal
        .abandoned()
        .into_iter()
        .filter(|job| reachable(job).is_ok())
        .filter_map(|job| journal.claim_abandoned(&job.id, reachable))
        .collect();
    for job in &claimed {
        tokio::spawn(end_abandoned(backend.clone(), journal.clone(), job.clone()));
    }
    claimed.len()
}

/// Cancels the Slurm job of `job`, claimed, removes its directory, and
/// retires it as `failed`.
async fn end_abandoned<K: Kept + 'static>(
    backend: Arc<dyn JobBackend>,
    journal: Arc<JobJournal<K>>,
    job: Abandoned,
) {
    let Some(handoff) = job.handoff.clone() else {
        return;
    };
    let slurm_id = handoff.job_id.clone();
    // A resumed job's cancel path, whatever the job's kind (the Slurm job
    // and its directory are all it touches): `resumable` checked again,
    // `scancel`, a wait until Slurm says the job ended, its directory
    // removed.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let run = detached_context(cancelled);
    let placement = run.placement.clone();
    let _ = backend.resume_solve(handoff, run).await;
    let last = placement_of(&placement).map(|placement| placement.state);
    let why = abandoned_job_ended(job.pid, std::process::id(), &slurm_id, last.as_ref());
    let _ = tokio::task::spawn_blocking(move || journal.retire_abandoned(&job, why)).await;
}

/// Retires every race of a dead server's HTTP session over Slurm attempts
/// as `failed` (its attempts are solve jobs of the same session: see
/// [`cancel_abandoned`]); how many.
pub(crate) fn retire_abandoned_races<K: Kept>(journal: &JobJournal<K>) -> usize {
    journal
        .abandoned()
        .into_iter()
        .filter_map(|race| journal.claim_abandoned(&race.id, |_| Ok(())))
        .map(|race| {
            let why = abandoned_race_ended(race.pid, std::process::id());
            journal.retire_abandoned(&race, why);
        })
        .count()
}

/// What an abandoned job's record says once it was ended, Slurm having
/// last said `last` of its job.
fn abandoned_job_ended(dead: u32, this: u32, slurm_id: &str, last: Option<&SlurmState>) -> String {
    let done = match last {
        Some(state) if !state.is_ended() => format!(
            "asked Slurm to cancel its Slurm job (job {slurm_id}), which was still {state} when it stopped waiting,"
        ),
        Some(state) if *state != SlurmState::Cancelled => {
            format!("found its Slurm job (job {slurm_id}) already ended {state}")
        }
        _ => format!("cancelled its Slurm job (job {slurm_id})"),
    };
    format!(
        "the server that ran this job (pid {dead}) stopped before the job finished, and the HTTP session the job belonged to ended with it: no one can read the job any more, so the next server on this data dir (pid {this}) {done} and removed its directory"
    )
}

/// What an abandoned race's record says.
fn abandoned_race_ended(dead: u32, this: u32) -> String {
    format!(
        "the server that ran this race (pid {dead}) stopped before the race finished, and the HTTP session the race belonged to ended with it: no one can read the race any more, so the next server on this data dir (pid {this}) kept it as failed and cancels the Slurm jobs of its attempts"
    )
}

/// Registers `orphan` under its id, its work following its Slurm job.
fn adopt<K: Reattach>(jobs: &K, orphan: Orphan) -> Result<(), String> {
    let backend = jobs.job_backend();
    backend.resumable(&orphan.handoff)?;
    let unreadable = || "its record could not be read by this version".to_owned();
    let submitted = time(&orphan.status["submitted_at"]).ok_or_else(unreadable)?;
    let started = time(&orphan.status["started_at"]).unwrap_or(submitted);
    let placement =
        serde_json::from_value(orphan.status["slurm"].clone()).unwrap_or_else(|_| SlurmPlacement {
            job_id: orphan.handoff.job_id.clone(),
            node: None,
            state: SlurmState::Pending,
            reason: None,
        });
    let meta =
        K::stored_meta(&orphan.status, orphan.handoff.clone(), placement).ok_or_else(unreadable)?;
    let start = K::resume(backend.clone(), orphan.handoff, &meta);
    // `None`: this registry holds the id already, which is as good.
    let _ = jobs
        .registry()
        .adopt(&orphan.id, meta, submitted, started, start);
    Ok(())
}

/// An RFC 3339 time of a stored status.
fn time(value: &Value) -> Option<SystemTime> {
    humantime::parse_rfc3339(value.as_str()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abandoned_job_says_what_became_of_it() {
        let ended = |last: Option<SlurmState>| abandoned_job_ended(41, 42, "7", last.as_ref());
        insta::assert_snapshot!(ended(Some(SlurmState::Cancelled)), @"the server that ran this job (pid 41) stopped before the job finished, and the HTTP session the job belonged to ended with it: no one can read the job any more, so the next server on this data dir (pid 42) cancelled its Slurm job (job 7) and removed its directory");
        assert_eq!(ended(None), ended(Some(SlurmState::Cancelled)));
        insta::assert_snapshot!(ended(Some(SlurmState::Completed)), @"the server that ran this job (pid 41) stopped before the job finished, and the HTTP session the job belonged to ended with it: no one can read the job any more, so the next server on this data dir (pid 42) found its Slurm job (job 7) already ended COMPLETED and removed its directory");
        insta::assert_snapshot!(ended(Some(SlurmState::Running)), @"the server that ran this job (pid 41) stopped before the job finished, and the HTTP session the job belonged to ended with it: no one can read the job any more, so the next server on this data dir (pid 42) asked Slurm to cancel its Slurm job (job 7), which was still RUNNING when it stopped waiting, and removed its directory");
        insta::assert_snapshot!(abandoned_race_ended(41, 42), @"the server that ran this race (pid 41) stopped before the race finished, and the HTTP session the race belonged to ended with it: no one can read the race any more, so the next server on this data dir (pid 42) kept it as failed and cancels the Slurm jobs of its attempts");
    }

    #[test]
    fn stored_times_read_back() {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_250);
        assert_eq!(time(&Value::from("1970-01-01T00:00:01.250Z")), Some(at));
        assert_eq!(time(&Value::Null), None);
        assert_eq!(time(&Value::from("yesterday")), None);
    }
}
