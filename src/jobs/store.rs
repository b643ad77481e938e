//! Background jobs on disk, so a job id from one server process resolves
//! in a later one: MCP clients restart their stdio servers all the time.
//!
//! A registry with a journal ([`super::registry::Journal`]) hands it every
//! job at admission, again when its work was handed to Slurm, and with its
//! final snapshot. [`JobJournal`] writes each as the status a get tool
//! returns, one JSON file per job: `<kind>/running/<id>.json` while it
//! runs, then `<kind>/done/<id>.json` (written first, atomically, then the
//! running file removed). At most `max_terminal` done files are kept per
//! kind, oldest removed first.
//!
//! Each file names the server process that wrote it (pid, start time, boot,
//! host name) and the scope the job belongs to: this machine's stdio
//! servers share one, each HTTP session has its own (so its jobs are not
//! readable from another), and HTTP requests without a session share
//! another. A job handed to Slurm also names its Slurm job and its directory
//! ([`SlurmHandoff`]). A lookup of an id the registry does not hold
//! ([`JobJournal::find`]) returns the stored status of a job of the same
//! scope: a finished one exactly as it was written; one still running in
//! another live server as that server last wrote it; a running one whose
//! server is gone as `failed`, saying so (its processes died with that
//! server), and from then on stored as done — unless it was handed to
//! Slurm, where it runs on: a new server takes such an orphan over first
//! ([`JobJournal::claim`], see [`super::reattach`]), and only one it cannot
//! follow reads as `failed`. A job of an HTTP session whose server is gone
//! is read by nobody; one handed to Slurm is listed across scopes
//! ([`JobJournal::abandoned`]) so a starting server can end it.
//!
//! The one thing a maintainer must not break: deciding what becomes of a
//! running record whose writer is gone (taken over, or retired as failed)
//! happens under the kind's claim lock, reading the record again there, so
//! two servers never both follow one job.
//!
//! What is kept is any [`Kept`] kind: the background job kinds, and the
//! MCP face's tasks, which say for themselves what their stored status
//! looks like and how an interrupted one reads.

use std::fs;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::backend::{HandoffSlot, SlurmHandoff, handoff_of};
use super::registry::{HandedOff, JobSnapshot, Journal};
use super::status::{BackgroundJobs, JobKind};
use crate::diagnostics::{Category, Diagnostic};

/// Where a server's registries keep their jobs, and whose they are.
#[derive(Debug, Clone)]
pub struct JobStoreSetup {
    /// The folder of every kind's journal (the data dir's `jobs`).
    pub root: PathBuf,
    /// Who may read them.
    pub scope: JobScope,
}

/// Which clients may read a stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobScope {
    /// Every stdio server of this user on this machine: a client that
    /// restarts its server reads its earlier jobs.
    Stdio,
    /// One HTTP session: readable only from it.
    Session(String),
    /// HTTP requests without a session: by id alone.
    Sessionless,
}

impl JobScope {
    /// A new HTTP session's scope, unguessable.
    pub fn new_session() -> JobScope {
        JobScope::Session(uuid::Uuid::new_v4().simple().to_string())
    }

    /// Whether a stored scope key is an HTTP session's.
    fn is_session_key(key: &str) -> bool {
        key.starts_with("session:")
    }

    fn key(&self) -> String {
        match self {
            JobScope::Stdio => "stdio".to_owned(),
            JobScope::Session(id) => format!("session:{id}"),
            JobScope::Sessionless => "sessionless".to_owned(),
        }
    }
}

/// The server process that wrote a record: enough to tell whether it still
/// runs (a pid alone could have been reused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Writer {
    pid: u32,
    /// The process's start time, in clock ticks after boot.
    started: u64,
    /// The kernel's boot id.
    boot: String,
    /// The machine's host name; empty in records of earlier versions.
    #[serde(default)]
    host: String,
}

impl Writer {
    /// This process, read once (an HTTP server builds its journals anew
    /// for every request without a session).
    fn this_process() -> Writer {
        static THIS: std::sync::OnceLock<Writer> = std::sync::OnceLock::new();
        THIS.get_or_init(|| {
            let pid = std::process::id();
            Writer {
                pid,
                started: start_time(pid).unwrap_or(0),
                boot: boot_id(),
                host: host_name(),
            }
        })
        .clone()
    }

    fn is_alive(&self) -> bool {
        self.boot == boot_id() && start_time(self.pid) == Some(self.started)
    }

    /// Whether it surely no longer runs: gone from this boot of this
    /// machine, or it ran on this machine before it last booted. A writer
    /// of another boot on another machine sharing the data dir (or of an
    /// unknown one: a record of an earlier version) may well still run.
    /// Whether it may still run, here or on another machine sharing the
    /// data dir: what a reader must assume before it calls a job
    /// interrupted or takes it over.
    fn may_run(&self) -> bool {
        !self.is_surely_gone()
    }

    fn is_surely_gone(&self) -> bool {
        if self.boot == boot_id() {
            return !self.is_alive();
        }
        !self.host.is_empty() && self.host == host_name()
    }
}

/// Field 22 of `/proc/PID/stat`, after the command name (which may itself
/// hold spaces and parentheses).
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// This machine's host name (its UTS namespace's), as the kernel says.
fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// One job on disk.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    scope: String,
    writer: Writer,
    /// The job was handed to Slurm, where it may outlive its server.
    #[serde(default)]
    on_slurm: bool,
    /// Where on Slurm, once it was submitted: a later server follows the
    /// job from there when this record's writer is gone. Absent from
    /// records of jobs never submitted, and from those of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slurm: Option<SlurmHandoff>,
    /// The status the get tool returned when this was written.
    status: Value,
}

/// A job an earlier server handed to Slurm and left running when it
/// stopped: what a new server needs to follow it ([`JobJournal::claim`]).
#[derive(Debug, Clone)]
pub struct Orphan {
    /// The job's id, kept by the server that follows it.
    pub id: String,
    /// Its status as its server last wrote it.
    pub status: Value,
    /// Where it runs.
    pub handoff: SlurmHandoff,
}

/// A job of an HTTP session whose server is gone, handed to Slurm: its
/// session ended with its server, so nobody can read it any more, and no
/// server takes it over ([`JobJournal::abandoned`]).
#[derive(Debug, Clone)]
pub struct Abandoned {
    /// The job's id.
    pub id: String,
    /// Where it runs; `None` for a race (its attempts are solve jobs of
    /// the same session, each abandoned on its own).
    pub handoff: Option<SlurmHandoff>,
    /// The pid of the server it belonged to.
    pub pid: u32,
    /// Its session's scope key.
    scope: String,
}

/// What a journal keeps of one kind of work, and how it reads back.
pub trait Kept {
    /// What the work produces.
    type Result: Send + Sync + 'static;
    /// What its submitter attached.
    type Meta: Send + Sync + 'static;
    /// Its folder under the store's root.
    const DIR: &'static str;
    /// What one is called ("job").
    const NOUN: &'static str;
    /// What to do about one its server's end stopped.
    const AGAIN: &'static str;
    /// Whether the work itself is handed to the job backend (a solve job,
    /// a CP-SAT job), rather than run in the server over jobs that are (a
    /// race over its attempts) or in the server alone (a task).
    const HANDED_TO_BACKEND: bool = false;
    /// What a poll of `snapshot` returns, as it is stored.
    fn stored(snapshot: JobSnapshot<Self::Result, Self::Meta>) -> Option<Value>;
    /// Marks a stored status as still running elsewhere, `why`.
    fn elsewhere(status: &mut Value, why: String);
    /// Marks a stored status as ended by its server's end, `why`.
    fn interrupted(status: &mut Value, why: String);
    /// Where a job of this kind tells that its work was handed to Slurm;
    /// `None` (the default) for a kind that always runs in its server.
    fn handoff(_meta: &Self::Meta) -> Option<&HandoffSlot> {
        None
    }
}

impl<K: BackgroundJobs> Kept for K {
    type Result = K::Result;
    type Meta = K::Meta;
    const DIR: &'static str = match K::KIND {
        JobKind::Solve => "solve",
        JobKind::Portfolio => "portfolio",
        JobKind::CpsatPython => "cpsat_python",
    };
    const NOUN: &'static str = "job";
    const AGAIN: &'static str = "Submit it again";
    const HANDED_TO_BACKEND: bool = !matches!(K::KIND, JobKind::Portfolio);

    fn stored(snapshot: JobSnapshot<K::Result, K::Meta>) -> Option<Value> {
        serde_json::to_value(K::status(snapshot)).ok()
    }

    fn elsewhere(status: &mut Value, why: String) {
        set(status, "message", Value::from(why));
    }

    fn handoff(meta: &K::Meta) -> Option<&HandoffSlot> {
        K::handoff(meta)
    }

    fn interrupted(status: &mut Value, why: String) {
        set(status, "state", Value::from("failed"));
        let diagnostic = Diagnostic::new(Category::JobFailed, why.clone());
        set(status, "message", Value::from(why));
        set(
            status,
            "diagnostic",
            serde_json::to_value(diagnostic).unwrap_or(Value::Null),
        );
    }
}

/// The journal of one kind of work: where its files go and whose they are.
pub struct JobJournal<K> {
    running: PathBuf,
    done: PathBuf,
    max_terminal: usize,
    scope: String,
    writer: Writer,
    on_slurm: bool,
    kind: PhantomData<fn() -> K>,
}

impl<K: Kept> JobJournal<K> {
    /// The journal of `K`'s jobs of `scope` under `root`, keeping at most
    /// `max_terminal` finished ones (at least 1); `on_slurm` when the
    /// server hands its jobs to Slurm.
    pub fn new(root: &Path, scope: &JobScope, max_terminal: usize, on_slurm: bool) -> Self {
        JobJournal {
            running: root.join(K::DIR).join("running"),
            done: root.join(K::DIR).join("done"),
            max_terminal: max_terminal.max(1),
            scope: scope.key(),
            writer: Writer::this_process(),
            on_slurm,
            kind: PhantomData,
        }
    }

    /// The stored status of job `id` of this journal's scope, if any.
    pub fn find(&self, id: &str) -> Option<Value> {
        if !is_job_id(id) {
            return None;
        }
        let name = format!("{id}.json");
        if let Some(record) = self.read(&self.done.join(&name)) {
            return Some(record.status);
        }
        let record = self.read(&self.running.join(&name))?;
        if record.writer.may_run() {
            return Some(self.elsewhere(record));
        }
        // Its server is gone. Whether another server is taking the job
        // over is decided under the claim lock: read it again there.
        let _claims = self.claim_lock();
        if let Some(record) = self.read(&self.done.join(&name)) {
            return Some(record.status);
        }
        let record = self.read(&self.running.join(&name))?;
        if record.writer.may_run() {
            return Some(self.elsewhere(record));
        }
        let message = match (&record.slurm, record.on_slurm) {
            // A race over Slurm attempts: its coordinator died with its
            // server, its attempts did not.
            (_, true) if !K::HANDED_TO_BACKEND => format!(
                "the server that ran this race (pid {}) stopped before the race finished. Its attempts were handed to Slurm as solve jobs: each runs on to its own end, followed by a server on this data dir (get_solve_job), but none is chosen the winner. {}",
                record.writer.pid,
                K::AGAIN,
            ),
            (_, false) => format!(
                "the server that ran this {noun} (pid {}) stopped before the {noun} finished; its processes stopped with it. {}",
                record.writer.pid,
                K::AGAIN,
                noun = K::NOUN,
            ),
            (Some(handoff), true) => format!(
                "the server that ran this job (pid {}) stopped before the job finished. The job was handed to Slurm (job {}), where it may still run until its time limit, but no server follows it. Submit it again",
                record.writer.pid, handoff.job_id
            ),
            (None, true) => format!(
                "the server that ran this job (pid {}) stopped before it recorded a Slurm job for it; a job it had just submitted would run on with no server following it. Submit it again",
                record.writer.pid
            ),
        };
        Some(self.interrupt(id, record, message))
    }

    /// A record of a live server's job, as this one reads it.
    fn elsewhere(&self, record: Record) -> Value {
        let mut status = record.status;
        let server = if record.writer.boot == boot_id() {
            format!(
                "another solvergate server on this machine (pid {})",
                record.writer.pid
            )
        } else if record.writer.host.is_empty() {
            format!(
                "a solvergate server (pid {}) that may still run on another machine sharing this data dir",
                record.writer.pid
            )
        } else {
            format!(
                "a solvergate server on another machine sharing this data dir ({}, pid {})",
                record.writer.host, record.writer.pid
            )
        };
        K::elsewhere(
            &mut status,
            format!(
                "this {} runs in {server}; its state here is as that server last wrote it",
                K::NOUN
            ),
        );
        status
    }

    /// Retires a running `record` as ended by its server's end, `why`.
    fn interrupt(&self, id: &str, record: Record, why: String) -> Value {
        let mut status = record.status;
        K::interrupted(&mut status, why);
        let interrupted = Record { status, ..record };
        self.retire(id, &interrupted);
        interrupted.status
    }

    /// Offers job `id` to `adopt` if it is an orphan of this scope: a
    /// running record whose writer is gone, of a job handed to Slurm, not
    /// yet done. `adopt` takes it over (`Ok`) or says why it cannot
    /// (`Err`: the job is then retired as `failed`, saying so).
    ///
    /// Claims are made one at a time among every server on this data dir
    /// (an advisory lock on the kind's `running/.claims.lock`, which the
    /// kernel drops when its holder dies, however it dies), and `adopt`
    /// runs holding it: it must write the record anew with this process
    /// as its writer before returning (the registry's journal does, at
    /// adoption), so the next claimant, reading again under the lock,
    /// finds a live writer and leaves the job alone.
    pub fn claim<T>(&self, id: &str, adopt: impl FnOnce(Orphan) -> Result<T, String>) -> Option<T> {
        let (_claims, record) = self.running_under_lock(id)?;
        if record.scope != self.scope || record.writer.may_run() {
            return None;
        }
        let handoff = record.slurm.clone()?;
        let orphan = Orphan {
            id: id.to_owned(),
            status: record.status.clone(),
            handoff: handoff.clone(),
        };
        match adopt(orphan) {
            Ok(adopted) => Some(adopted),
            Err(why) => {
                let message = format!(
                    "the server that ran this job (pid {}) stopped before the job finished. The job was handed to Slurm (job {}), where it may still run until its time limit, but this server cannot follow it: {why}. Submit it again",
                    record.writer.pid, handoff.job_id
                );
                self.interrupt(id, record, message);
                None
            }
        }
    }

    /// This scope's running records whose writer is gone and that were
    /// handed to Slurm, as read now (without the claim lock): what a server
    /// starting up may offer to [`Self::claim`].
    pub fn orphans(&self) -> Vec<Orphan> {
        self.running_files()
            .into_iter()
            .filter_map(|(id, path)| {
                let record = self.read(&path)?;
                if record.writer.may_run() {
                    return None;
                }
                Some(Orphan {
                    id,
                    handoff: record.slurm?,
                    status: record.status,
                })
            })
            .collect()
    }

    /// The ids and paths of every running record, of any scope, by id.
    fn running_files(&self) -> Vec<(String, PathBuf)> {
        let Ok(entries) = fs::read_dir(&self.running) else {
            return Vec::new();
        };
        let mut files: Vec<(String, PathBuf)> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json").filter(|id| is_job_id(id))?;
                Some((id.to_owned(), entry.path()))
            })
            .collect();
        files.sort();
        files
    }

    /// Every HTTP session's running records (whatever this journal's own
    /// scope) whose writer surely no longer runs (gone from this machine;
    /// one of another machine sharing the data dir may still run, and is
    /// left alone) and whose work was handed to Slurm: a job with its
    /// Slurm handoff, a race over Slurm attempts. As read now
    /// (without the claim lock): what a starting server may offer to
    /// [`Self::claim_abandoned`]. A record without a handoff (its server
    /// died before `sbatch` returned) is not listed, nor one of a live
    /// server, nor any when this server does not hand work to Slurm.
    pub fn abandoned(&self) -> Vec<Abandoned> {
        if !self.on_slurm {
            return Vec::new();
        }
        self.running_files()
            .into_iter()
            .filter_map(|(id, path)| Self::abandoned_of(&id, &read_record(&path)?))
            .collect()
    }

    /// `record` as an abandoned job, if it is one.
    fn abandoned_of(id: &str, record: &Record) -> Option<Abandoned> {
        if !JobScope::is_session_key(&record.scope)
            || !record.on_slurm
            || !record.writer.is_surely_gone()
        {
            return None;
        }
        if K::HANDED_TO_BACKEND && record.slurm.is_none() {
            return None;
        }
        Some(Abandoned {
            id: id.to_owned(),
            handoff: record.slurm.clone(),
            pid: record.writer.pid,
            scope: record.scope.clone(),
        })
    }

    /// Claims abandoned job `id` to end it: under the claim lock, reads its
    /// record again; if it still is an abandoned one and `check` accepts
    /// it, writes it anew with this process as its writer (so no other
    /// server acts on it, nor a later one unless this one dies first) and
    /// returns it. The caller then ends its work and retires it
    /// ([`Self::retire_abandoned`]).
    pub fn claim_abandoned(
        &self,
        id: &str,
        check: impl FnOnce(&Abandoned) -> Result<(), String>,
    ) -> Option<Abandoned> {
        let (_claims, record) = self.running_under_lock(id)?;
        let abandoned = Self::abandoned_of(id, &record)?;
        check(&abandoned).ok()?;
        let claimed = Record {
            writer: self.writer.clone(),
            ..record
        };
        self.write(&self.running, id, &claimed);
        Some(abandoned)
    }

    /// Retires `job`, claimed by [`Self::claim_abandoned`], as `failed`,
    /// `why`: kept as done, under the same bound as every finished job.
    pub fn retire_abandoned(&self, job: &Abandoned, why: String) {
        let name = format!("{}.json", job.id);
        let Some(_claims) = self.claim_lock() else {
            return;
        };
        let Some(record) = read_record(&self.running.join(&name)) else {
            return;
        };
        if record.scope != job.scope || record.writer != self.writer {
            return;
        }
        self.interrupt(&job.id, record, why);
    }

    /// The claim lock, held until the guard drops; `None` when the lock
    /// file cannot be opened or locked (the data dir is read-only, or its
    /// file system has no locks): then nothing is claimed, and a lookup
    /// goes on without it (a server that cannot write its journal cannot
    /// mark a job as its own either).
    /// For a claim: the claim lock, held by the caller while it decides,
    /// and the running record of `id`, whichever server wrote it; `None`
    /// for what is not a job id, a job already done, or no readable record.
    fn running_under_lock(&self, id: &str) -> Option<(fs::File, Record)> {
        if !is_job_id(id) {
            return None;
        }
        let name = format!("{id}.json");
        let claims = self.claim_lock()?;
        if self.done.join(&name).exists() {
            return None;
        }
        let record = read_record(&self.running.join(&name))?;
        Some((claims, record))
    }

    fn claim_lock(&self) -> Option<fs::File> {
        fs::create_dir_all(&self.running).ok()?;
        let file = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.running.join(".claims.lock"))
            .ok()?;
        file.lock().ok()?;
        Some(file)
    }

    /// Moves job `id` to done as `record`: written there first, then its
    /// running file removed, then the oldest done files past the bound.
    fn retire(&self, id: &str, record: &Record) {
        self.write(&self.done, id, record);
        let _ = fs::remove_file(self.running.join(format!("{id}.json")));
        crate::kept::keep_newest(&self.done, self.max_terminal);
    }

    fn read(&self, path: &Path) -> Option<Record> {
        read_record(path).filter(|record| record.scope == self.scope)
    }

    /// Writes `record` as `dir/<id>.json`, whole or not at all. A journal
    /// that cannot write says so on stderr and the job goes on.
    fn write(&self, dir: &Path, id: &str, record: &Record) {
        let written = serde_json::to_vec(record)
            .map_err(std::io::Error::from)
            .and_then(|bytes| crate::kept::write_whole(dir, &format!("{id}.json"), &bytes));
        if let Err(error) = written {
            eprintln!(
                "solvergate: could not keep job {id} in {}: {error}",
                dir.display()
            );
        }
    }

    fn record(&self, job: JobSnapshot<K::Result, K::Meta>) -> Option<Record> {
        Some(Record {
            scope: self.scope.clone(),
            writer: self.writer.clone(),
            on_slurm: self.on_slurm,
            slurm: K::handoff(&job.meta).and_then(handoff_of),
            status: K::stored(job)?,
        })
    }
}

impl<K: Kept> Journal<K::Result, K::Meta> for JobJournal<K> {
    fn admitted(&self, job: &JobSnapshot<K::Result, K::Meta>) {
        if let Some(record) = self.record(job.clone()) {
            self.write(&self.running, &job.id, &record);
        }
    }

    fn ended(&self, job: JobSnapshot<K::Result, K::Meta>) {
        let id = job.id.clone();
        if let Some(record) = self.record(job) {
            self.retire(&id, &record);
        }
    }

    fn find(&self, id: &str) -> Option<Value> {
        JobJournal::find(self, id)
    }

    fn handed_off(&self, job: &JobSnapshot<K::Result, K::Meta>) -> Option<HandedOff> {
        let mut told = K::handoff(&job.meta)?.subscribe();
        Some(Box::pin(async move {
            let _ = told.wait_for(Option::is_some).await;
        }))
    }
}

/// The record at `path`, whatever its scope.
fn read_record(path: &Path) -> Option<Record> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// Whether `id` is one the registry could have made (a UUID in simple
/// form), so nothing else is ever turned into a path.
fn is_job_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Sets a top-level field of a status object.
pub(crate) fn set(status: &mut Value, field: &str, value: Value) {
    if let Some(fields) = status.as_object_mut() {
        fields.insert(field.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::SolveJobs;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn gone() -> Writer {
        Writer {
            pid: 999_999_999,
            started: 5,
            boot: boot_id(),
            host: host_name(),
        }
    }

    fn handoff() -> SlurmHandoff {
        SlurmHandoff {
            job_id: "41".to_owned(),
            dir: PathBuf::from("/shared/solvergate/job-00000000000000000000000000000000"),
        }
    }

    fn running_status() -> Value {
        serde_json::json!({"job_id": ID, "state": "running", "message": null, "diagnostic": null})
    }

    /// A journal of solve jobs under `root`, with `record` as job `ID`'s
    /// running file, written as the bytes `record` serialises to.
    fn journal_with(root: &Path, record: &Value) -> JobJournal<SolveJobs> {
        let journal = JobJournal::<SolveJobs>::new(root, &JobScope::Stdio, 8, true);
        crate::kept::write_whole(
            &journal.running,
            &format!("{ID}.json"),
            record.to_string().as_bytes(),
        )
        .unwrap();
        journal
    }

    #[test]
    fn a_handoff_is_kept_and_a_record_without_one_reads_as_before() {
        let record = Record {
            scope: "stdio".to_owned(),
            writer: gone(),
            on_slurm: true,
            slurm: Some(handoff()),
            status: running_status(),
        };
        let written = serde_json::to_value(&record).unwrap();
        assert_eq!(
            written["slurm"],
            serde_json::json!({"job_id": "41", "dir": "/shared/solvergate/job-00000000000000000000000000000000"})
        );
        let back: Record = serde_json::from_value(written).unwrap();
        assert_eq!(back.slurm, Some(handoff()));
        let without = serde_json::to_value(Record {
            slurm: None,
            ..back
        })
        .unwrap();
        assert!(
            without.get("slurm").is_none(),
            "absent, as before: {without}"
        );
    }

    /// A record an earlier version wrote (no `slurm`) of a job its dead
    /// server had handed to Slurm reads as failed, saying no server
    /// follows it, and is done from then on.
    #[test]
    fn an_old_slurm_record_whose_server_is_gone_reads_as_failed() {
        let root = tempfile::tempdir().unwrap();
        let old = serde_json::json!({
            "scope": "stdio",
            "writer": gone(),
            "on_slurm": true,
            "status": running_status(),
        });
        let journal = journal_with(root.path(), &old);
        assert!(journal.orphans().is_empty(), "nothing says where it runs");
        assert!(journal.claim(ID, |_| Ok(())).is_none());
        let status = journal.find(ID).unwrap();
        assert_eq!(status["state"], "failed");
        insta::assert_snapshot!(status["message"].as_str().unwrap(), @"the server that ran this job (pid 999999999) stopped before it recorded a Slurm job for it; a job it had just submitted would run on with no server following it. Submit it again");
        assert!(journal.done.join(format!("{ID}.json")).exists());
        assert!(!journal.running.join(format!("{ID}.json")).exists());
    }

    /// The first claimant takes the job and writes itself in as its
    /// writer; the next finds a live writer and leaves it alone.
    #[test]
    fn an_orphan_is_claimed_once() {
        let root = tempfile::tempdir().unwrap();
        let orphan = serde_json::json!({
            "scope": "stdio",
            "writer": gone(),
            "on_slurm": true,
            "slurm": handoff(),
            "status": running_status(),
        });
        let journal = journal_with(root.path(), &orphan);
        let found = journal.orphans();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].id.as_str(), &found[0].handoff), (ID, &handoff()));
        let claimed = journal.claim(ID, |orphan| {
            let record = Record {
                scope: "stdio".to_owned(),
                writer: Writer::this_process(),
                on_slurm: true,
                slurm: Some(orphan.handoff.clone()),
                status: orphan.status.clone(),
            };
            journal.write(&journal.running, &orphan.id, &record);
            Ok(orphan.handoff)
        });
        assert_eq!(claimed, Some(handoff()));
        assert!(journal.orphans().is_empty());
        assert!(
            journal
                .claim(ID, |_| -> Result<(), String> { panic!("claimed twice") })
                .is_none()
        );
        let seen = journal.find(ID).unwrap();
        assert_eq!(seen["state"], "running");
        let pid = std::process::id();
        assert_eq!(
            seen["message"].as_str().unwrap(),
            format!(
                "this job runs in another solvergate server on this machine (pid {pid}); its state here is as that server last wrote it"
            )
        );
    }

    /// A server that cannot follow the job says why, and the job is done.
    #[test]
    fn an_orphan_this_server_cannot_follow_is_failed_saying_why() {
        let root = tempfile::tempdir().unwrap();
        let orphan = serde_json::json!({
            "scope": "stdio",
            "writer": gone(),
            "on_slurm": true,
            "slurm": handoff(),
            "status": running_status(),
        });
        let journal = journal_with(root.path(), &orphan);
        let claimed: Option<()> = journal.claim(ID, |_| Err("it is elsewhere".to_owned()));
        assert!(claimed.is_none());
        let status = journal.find(ID).unwrap();
        assert_eq!(status["state"], "failed");
        assert_eq!(status["diagnostic"]["category"], "job_failed");
        insta::assert_snapshot!(status["message"].as_str().unwrap(), @"the server that ran this job (pid 999999999) stopped before the job finished. The job was handed to Slurm (job 41), where it may still run until its time limit, but this server cannot follow it: it is elsewhere. Submit it again");
        assert!(journal.orphans().is_empty());
    }

    /// Another scope's orphan is neither listed nor claimed.
    #[test]
    fn another_scopes_orphan_is_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let orphan = serde_json::json!({
            "scope": "session:abc",
            "writer": gone(),
            "on_slurm": true,
            "slurm": handoff(),
            "status": running_status(),
        });
        let journal = journal_with(root.path(), &orphan);
        assert!(journal.orphans().is_empty());
        assert!(journal.claim(ID, |_| Ok(())).is_none());
        assert!(journal.find(ID).is_none());
        assert!(journal.running.join(format!("{ID}.json")).exists());
    }

    /// A Slurm job of a server on another machine sharing the data dir
    /// (another login node of a cluster) may still be followed there: it
    /// is neither taken over nor read as failed, but read as that server
    /// last wrote it.
    #[test]
    fn another_machines_job_is_left_to_it() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = Writer {
            boot: "another-boot".to_owned(),
            host: "another-login-node".to_owned(),
            ..gone()
        };
        let mut record = session_record(elsewhere, Some(handoff()));
        set(&mut record, "scope", Value::from("stdio"));
        let journal = journal_with(root.path(), &record);
        assert!(journal.orphans().is_empty());
        assert!(journal.claim(ID, |_| Ok(())).is_none());
        let read = journal.find(ID).unwrap();
        assert_eq!(read["state"], "running");
        assert_eq!(
            read["message"],
            "this job runs in a solvergate server on another machine sharing this data dir (another-login-node, pid 999999999); its state here is as that server last wrote it"
        );
        assert!(journal.running.join(format!("{ID}.json")).exists());
        assert!(!journal.done.join(format!("{ID}.json")).exists());
    }

    /// A record of job `ID` of an HTTP session, written by `writer`.
    fn session_record(writer: Writer, slurm: Option<SlurmHandoff>) -> Value {
        let mut record = serde_json::json!({
            "scope": "session:abc",
            "writer": writer,
            "on_slurm": true,
            "status": running_status(),
        });
        if let Some(handoff) = slurm {
            set(&mut record, "slurm", serde_json::to_value(handoff).unwrap());
        }
        record
    }

    /// A dead server's session job on Slurm is listed by any scope's
    /// journal, claimed once (this process then its writer), and retired
    /// as failed, kept as done.
    #[test]
    fn a_dead_sessions_slurm_job_is_claimed_once_and_retired() {
        let root = tempfile::tempdir().unwrap();
        journal_with(root.path(), &session_record(gone(), Some(handoff())));
        let journal = JobJournal::<SolveJobs>::new(root.path(), &JobScope::Sessionless, 8, true);
        let found = journal.abandoned();
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].id.as_str(), &found[0].handoff, found[0].pid),
            (ID, &Some(handoff()), 999_999_999)
        );
        assert!(
            journal
                .claim_abandoned(ID, |_| Err("cannot reach it".to_owned()))
                .is_none()
        );
        let claimed = journal.claim_abandoned(ID, |_| Ok(())).unwrap();
        let record = read_record(&journal.running.join(format!("{ID}.json"))).unwrap();
        assert_eq!(record.writer, Writer::this_process());
        assert_eq!(record.scope, "session:abc");
        assert!(journal.abandoned().is_empty(), "its writer is alive now");
        assert!(journal.claim_abandoned(ID, |_| Ok(())).is_none());
        journal.retire_abandoned(&claimed, "it was cancelled".to_owned());
        assert!(!journal.running.join(format!("{ID}.json")).exists());
        let done = read_record(&journal.done.join(format!("{ID}.json"))).unwrap();
        assert_eq!(done.status["state"], "failed");
        assert_eq!(done.status["message"], "it was cancelled");
        assert_eq!(done.status["diagnostic"]["category"], "job_failed");
        assert!(journal.find(ID).is_none(), "still nobody else's to read");
    }

    /// Left alone: a live server's session job, a job whose server died
    /// before `sbatch` returned (no handoff), a stdio job, and everything
    /// when this server does not hand work to Slurm.
    #[test]
    fn only_a_dead_sessions_handed_off_jobs_are_abandoned() {
        let live = session_record(Writer::this_process(), Some(handoff()));
        let unsubmitted = session_record(gone(), None);
        let mut stdio = session_record(gone(), Some(handoff()));
        set(&mut stdio, "scope", Value::from("stdio"));
        let elsewhere = Writer {
            boot: "another-boot".to_owned(),
            host: "another-login-node".to_owned(),
            ..gone()
        };
        let other_machine = session_record(elsewhere, Some(handoff()));
        for record in [live, unsubmitted, stdio, other_machine] {
            let root = tempfile::tempdir().unwrap();
            journal_with(root.path(), &record);
            let journal =
                JobJournal::<SolveJobs>::new(root.path(), &JobScope::Sessionless, 8, true);
            assert!(journal.abandoned().is_empty(), "{record}");
            assert!(
                journal.claim_abandoned(ID, |_| Ok(())).is_none(),
                "{record}"
            );
            let kept = read_record(&journal.running.join(format!("{ID}.json"))).unwrap();
            assert_eq!(
                kept.writer,
                serde_json::from_value(record["writer"].clone()).unwrap()
            );
        }
        let root = tempfile::tempdir().unwrap();
        journal_with(root.path(), &session_record(gone(), Some(handoff())));
        let local = JobJournal::<SolveJobs>::new(root.path(), &JobScope::Stdio, 8, false);
        assert!(local.abandoned().is_empty());
    }

    /// A dead session's race over Slurm attempts has no handoff of its
    /// own, and is abandoned all the same.
    #[test]
    fn a_dead_sessions_race_is_abandoned_without_a_handoff() {
        let root = tempfile::tempdir().unwrap();
        let races = JobJournal::<crate::jobs::Portfolios>::new(
            root.path(),
            &JobScope::Sessionless,
            8,
            true,
        );
        let record = session_record(gone(), None);
        crate::kept::write_whole(
            &races.running,
            &format!("{ID}.json"),
            record.to_string().as_bytes(),
        )
        .unwrap();
        let found = races.abandoned();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].handoff, None);
    }

    #[test]
    fn only_registry_ids_become_paths() {
        assert!(is_job_id("0123456789abcdef0123456789abcdef"));
        assert!(!is_job_id("../../../../etc/passwd"));
        assert!(!is_job_id("0123456789ABCDEF0123456789abcdef"));
        assert!(!is_job_id(""));
    }

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not() {
        let me = Writer::this_process();
        assert!(me.started > 0);
        assert!(me.is_alive());
        let gone = Writer {
            started: me.started + 1,
            ..me.clone()
        };
        assert!(!gone.is_alive());
        assert!(!me.is_surely_gone());
        assert!(gone.is_surely_gone());
        let other_boot = Writer {
            boot: "not-this-boot".to_owned(),
            ..me.clone()
        };
        assert!(!other_boot.is_alive());
        assert!(other_boot.is_surely_gone(), "this machine rebooted since");
        let other_machine = Writer {
            host: "another-login-node".to_owned(),
            ..other_boot.clone()
        };
        assert!(!other_machine.is_surely_gone(), "it may still run there");
        let unknown = Writer {
            host: String::new(),
            ..other_boot
        };
        assert!(!unknown.is_surely_gone());
    }
}
