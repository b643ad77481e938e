//! `save_verified_minizinc_model`: re-verify an inline model on the runtime
//! and save it only if every gate passes.
//!
//! Gates, in order, each short-circuiting: the compile check is `ok`; the
//! solve ends proven — `optimal`, or `satisfied` on a satisfaction model —
//! with exit code 0, whole output and no time limit of ours or MiniZinc's
//! ([`solve_gate`]); with a checker, its verdict is an acceptance
//! ([`checker_gate`]). Anything else is `not_verified` with the gating
//! results, and nothing is written.
//! Everything that can be refused without running a solver — the target,
//! the arguments, the portfolio provenance — is refused first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Artifacts;
use super::includes::{self, Closure};
use super::manifest::{
    ArtifactManifest, Backend, MinizincRecord, SaveStatus, SavedFile, VerificationRecord,
};
use super::target::{FileSet, StagedFile, Target, check_target, commit, pretty};
use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::jobs::PortfolioSolveResult;
use crate::minizinc::{
    CheckResult, CheckerReport, PreflightRequest, PreflightStatus, SolveControls, SolveRequest,
    SolveResult, SolveStatus, Sources,
};
use crate::progress::{Progress, Stage};
use crate::sha256_hex;
use crate::userfiles::off_thread;
use crate::verdict::RaceStatus;

/// A save as requested.
#[derive(Debug, Clone)]
pub struct SaveModelRequest {
    /// The complete inline model, saved as `model.mzn`.
    pub model: String,
    /// Inline `.dzn` data, saved as `data.dzn`.
    pub data: Option<String>,
    /// Inline MiniZinc checker, saved as `checker.mzc.mzn`; with one, the
    /// save passes only on its acceptance.
    pub checker: Option<String>,
    /// The user's problem statement, saved verbatim as `problem.md`.
    pub problem: Option<String>,
    /// Solver id, short name or tag; `None` for the runtime's default. The
    /// manifest records the canonical id it resolved to.
    pub solver: Option<String>,
    /// The budget of the verifying check and solve (each), checked where
    /// the request was made.
    pub timeout_ms: Budget,
    /// Search controls of the verifying solve, recorded for replay.
    pub controls: SolveControls,
    /// Absolute path of the directory to create (its parent must exist),
    /// or of a previous save to replace with `overwrite`.
    pub target_dir: String,
    /// Allows replacing a previous solvergate save in `target_dir`.
    pub overwrite: bool,
    /// Provenance only: the race the model won.
    pub portfolio_result: Option<PortfolioSolveResult>,
}

/// What a MiniZinc save did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SaveVerifiedModelResult {
    /// `saved` or `not_verified`.
    pub status: SaveStatus,
    /// One sentence: what was verified and where it was saved, or which
    /// gate failed and that nothing was written.
    pub message: String,
    /// The resolved target; on `not_verified` the directory that was not
    /// written.
    pub target_dir: String,
    /// What was written (empty unless `saved`).
    pub files: Vec<SavedFile>,
    /// The compile check (always run).
    pub check: CheckResult,
    /// The verifying solve; `null` when the check already failed.
    pub solve: Option<SolveResult>,
    /// `not_verified` with the failed gate, or `null` when saved.
    pub diagnostic: Option<Diagnostic>,
}

impl Artifacts {
    /// Verifies and saves a MiniZinc model.
    pub async fn save_minizinc(
        &self,
        request: &SaveModelRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SaveVerifiedModelResult, ToolError> {
        progress.report(Stage::Validating, "checking the target and the arguments");
        request.controls.validate()?;
        let sources = Sources::Inline {
            model: request.model.clone(),
            data: request.data.clone(),
            checker: request.checker.clone(),
        };
        sources.validate()?;
        let target = {
            let (dir, overwrite) = (request.target_dir.clone(), request.overwrite);
            off_thread(move || check_target(&dir, overwrite)).await?
        };
        let solver = self
            .minizinc
            .select_solver(request.solver.as_deref(), cancel)
            .await?
            .clone();
        request.controls.gate(&solver)?;
        if let Some(race) = &request.portfolio_result {
            check_portfolio(race, request, &solver.id)?;
        }

        progress.report(Stage::Running, "gate 1: compile check");
        let check = self
            .minizinc
            .check(
                &PreflightRequest {
                    sources: sources.clone(),
                    solver: Some(solver.id.clone()),
                    timeout_ms: request.timeout_ms,
                },
                &Progress::none(),
                cancel,
            )
            .await?;
        match check.status {
            PreflightStatus::Ok => {}
            PreflightStatus::Error | PreflightStatus::Timeout => {
                return Ok(not_verified(
                    &target,
                    format!(
                        "the compile check ended {}; fix the model and call again",
                        check.status
                    ),
                    check,
                    None,
                ));
            }
        }
        progress.report(Stage::Running, "closing the artifact over its includes");
        let closed = match self
            .close_over_includes(request, &solver.id, cancel)
            .await?
        {
            Ok(closed) => closed,
            Err(why) => return Ok(not_verified(&target, why.to_string(), check, None)),
        };
        let sources = closed.sources.clone().unwrap_or(sources);
        progress.report(Stage::Running, "gate 2: verifying solve");
        let solve = self
            .minizinc
            .solve(
                &SolveRequest {
                    sources,
                    solver: Some(solver.id.clone()),
                    timeout_ms: request.timeout_ms,
                    controls: request.controls.clone(),
                },
                &Progress::none(),
                cancel,
            )
            .await?;
        if let Some(why) = solve_gate(&solve) {
            return Ok(not_verified(&target, why, check, Some(solve)));
        }
        progress.report(Stage::Parsing, "writing the artifact");
        let runtime_version = self.minizinc.runtime().version(cancel).await.ok();
        let record = MinizincRecord {
            solver: solver.id.clone(),
            solver_version: solver.version.clone(),
            timeout_ms: request.timeout_ms.as_i64(),
            solve_controls: request.controls.clone(),
        };
        let (staged, files) =
            minizinc_files(request, &closed.closure, &solve, record, runtime_version)?;
        let journal = self.journal.clone();
        let pause = self.pause_before_swap;
        let overwrite = request.overwrite;
        let written = target.clone();
        off_thread(move || commit(&written, &staged, overwrite, &journal, pause)).await?;
        progress.report(Stage::Complete, "saved");
        Ok(SaveVerifiedModelResult {
            status: SaveStatus::Saved,
            message: format!(
                "verified ({} with {}) and saved {} file(s) to {}",
                solve.status,
                solve.solver,
                files.len() + 1,
                target.dir.display()
            ),
            target_dir: target.dir.display().to_string(),
            files,
            check,
            solve: Some(solve),
            diagnostic: None,
        })
    }
}

/// Why a save cannot be closed over its includes: the refusal its result
/// names (`not_verified`).
#[derive(Debug, thiserror::Error)]
enum IncludesRefusal {
    #[error(transparent)]
    Unlisted(ListingError),
    #[error("the artifact cannot be closed over its includes: {0}")]
    Close(#[source] includes::CloseError),
    #[error("the artifact's closed copy: {0}")]
    ClosedCopyUnlisted(#[source] ListingError),
    #[error(
        "the artifact's closed copy does not include exactly its copied files (differs at {}); save the model with its includes inlined",
        .0.join(", ")
    )]
    Strays(Vec<String>),
}

/// MiniZinc could not list the files a model (or a checker) includes.
#[derive(Debug, thiserror::Error)]
#[error("MiniZinc could not list the {what}'s includes (its interface ended {status}{})",
    .diagnostic.as_ref().map(|message| format!(": {message}")).unwrap_or_default())]
struct ListingError {
    what: &'static str,
    status: PreflightStatus,
    /// The inspection's diagnostic message, if it had one.
    diagnostic: Option<String>,
}

/// A save's model and checker closed over their includes, and the sources
/// to verify: the closed copy in a private dir when anything was copied or
/// rewritten, else `None` (the inline text as given).
struct Closed {
    closure: Closure,
    sources: Option<Sources>,
    /// Holds the closed copy while the solve runs.
    _scratch: Option<tempfile::TempDir>,
}

impl Artifacts {
    /// Lists the local files the model and checker include (MiniZinc's
    /// `included_files`), copies them with [`includes::close`], and checks
    /// that the closed copy compiles and includes exactly its copies. The
    /// inner error is why the save is refused.
    async fn close_over_includes(
        &self,
        request: &SaveModelRequest,
        solver: &str,
        cancel: &CancellationToken,
    ) -> Result<Result<Closed, IncludesRefusal>, ToolError> {
        let as_given = Closed {
            closure: Closure {
                model: request.model.clone(),
                checker: request.checker.clone(),
                copies: Vec::new(),
            },
            sources: None,
            _scratch: None,
        };
        // An include item needs the word; most models never say it.
        let may_include = |text: &str| text.contains("include");
        let checker = request.checker.as_deref().filter(|text| may_include(text));
        if !may_include(&request.model) && checker.is_none() {
            return Ok(Ok(as_given));
        }
        let mut listed = BTreeSet::new();
        for (what, text) in [
            ("model", Some(request.model.as_str())),
            ("checker", checker),
        ] {
            let Some(text) = text else { continue };
            match self
                .included_files(what, inline(text), solver, request.timeout_ms, cancel)
                .await?
            {
                Ok(files) => listed.extend(files),
                Err(why) => return Ok(Err(IncludesRefusal::Unlisted(why))),
            }
        }
        let closure = {
            let (model, checker) = (request.model.clone(), request.checker.clone());
            let listed = listed.clone();
            off_thread(move || {
                Ok(includes::close(
                    &model,
                    checker.as_deref(),
                    &listed,
                    &includes::read_local,
                ))
            })
            .await?
        };
        let closure = match closure {
            Ok(closure) => closure,
            Err(why) => return Ok(Err(IncludesRefusal::Close(why))),
        };
        if closure.is_closed_as_given(&request.model, request.checker.as_deref()) {
            return Ok(Ok(as_given));
        }
        let (scratch, sources) = write_closed(&closure, request.data.as_deref())?;
        let expected: BTreeSet<PathBuf> = closure
            .copies
            .iter()
            .map(|copy| scratch.path().join(&copy.name))
            .collect();
        let mut found = BTreeSet::new();
        let Sources::Files {
            model_path,
            checker_path,
            ..
        } = &sources
        else {
            return Err(ToolError::invalid(
                "internal: the closed copy is not a set of files",
            ));
        };
        let closed_checker = checker_path.as_ref().filter(|_| checker.is_some());
        for (what, path) in [("model", Some(model_path)), ("checker", closed_checker)] {
            let Some(path) = path else { continue };
            let files = Sources::Files {
                model_path: path.clone(),
                data_path: None,
                checker_path: None,
            };
            match self
                .included_files(what, files, solver, request.timeout_ms, cancel)
                .await?
            {
                Ok(files) => found.extend(files),
                Err(why) => return Ok(Err(IncludesRefusal::ClosedCopyUnlisted(why))),
            }
        }
        if found != expected {
            let strays: Vec<String> = found
                .symmetric_difference(&expected)
                .map(|path| path.display().to_string())
                .collect();
            return Ok(Err(IncludesRefusal::Strays(strays)));
        }
        Ok(Ok(Closed {
            closure,
            sources: Some(sources),
            _scratch: Some(scratch),
        }))
    }

    /// The local files a model (or a checker read as one) includes, as
    /// MiniZinc lists them; the inner error when it cannot list them.
    async fn included_files(
        &self,
        what: &'static str,
        sources: Sources,
        solver: &str,
        timeout_ms: Budget,
        cancel: &CancellationToken,
    ) -> Result<Result<Vec<PathBuf>, ListingError>, ToolError> {
        let inspection = self
            .minizinc
            .inspect(
                &PreflightRequest {
                    sources,
                    solver: Some(solver.to_owned()),
                    timeout_ms,
                },
                &Progress::none(),
                cancel,
            )
            .await?;
        Ok(match (inspection.status, inspection.interface) {
            (PreflightStatus::Ok, Some(interface)) => Ok(interface
                .included_files
                .into_iter()
                .map(PathBuf::from)
                .collect()),
            (status, _) => Err(ListingError {
                what,
                status,
                diagnostic: inspection.diagnostic.map(|diagnostic| diagnostic.message),
            }),
        })
    }
}

fn inline(model: &str) -> Sources {
    Sources::Inline {
        model: model.to_owned(),
        data: None,
        checker: None,
    }
}

/// Writes the closed model, checker, data and copies into a private dir,
/// as the artifact will hold them.
fn write_closed(
    closure: &Closure,
    data: Option<&str>,
) -> Result<(tempfile::TempDir, Sources), ToolError> {
    let scratch = crate::exec::scratch_dir("solvergate-closed-")?;
    let write = |name: &str, text: &str| -> Result<String, ToolError> {
        let path = scratch.path().join(name);
        std::fs::write(&path, text).map_err(|error| {
            ToolError::invalid(format!("could not write {}: {error}", path.display()))
        })?;
        Ok(path.to_string_lossy().into_owned())
    };
    for copy in &closure.copies {
        write(&copy.name, &copy.text)?;
    }
    let sources = Sources::Files {
        model_path: write("model.mzn", &closure.model)?,
        data_path: data.map(|text| write("data.dzn", text)).transpose()?,
        checker_path: closure
            .checker
            .as_deref()
            .map(|text| write("checker.mzc.mzn", text))
            .transpose()?,
    };
    Ok((scratch, sources))
}

/// Why the verifying solve does not pass, or `None` when it does.
///
/// Only a proven answer passes, however the run stopped: our wall clock
/// (`timed_out`), MiniZinc's own `--time-limit` ending cleanly with an
/// incumbent (`timeout_with_incumbent`), a `satisfied` optimisation model
/// (an objective without a proof), a cut output, an unclean exit, and a
/// checker whose verdict is not an acceptance are each refused.
pub(crate) fn solve_gate(solve: &SolveResult) -> Option<String> {
    if solve.timed_out {
        return Some("the verifying solve hit the time limit; raise timeout_ms".to_owned());
    }
    match solve.status {
        SolveStatus::Satisfied | SolveStatus::Optimal => {}
        SolveStatus::Timeout
        | SolveStatus::Error
        | SolveStatus::Unsatisfiable
        | SolveStatus::Unbounded
        | SolveStatus::UnsatOrUnbounded
        | SolveStatus::Unknown => {
            return Some(format!(
                "the verifying solve ended {}, not satisfied or optimal",
                solve.status
            ));
        }
    }
    if solve
        .diagnostic
        .as_ref()
        .is_some_and(|diagnostic| diagnostic.category == Category::TimeoutWithIncumbent)
    {
        return Some(
            "the verifying solve stopped at MiniZinc's time limit with an unproven incumbent (timeout_with_incumbent); raise timeout_ms until it ends optimal".to_owned(),
        );
    }
    if solve.status == SolveStatus::Satisfied && solve.objective.is_some() {
        return Some(
            "the verifying solve ended satisfied on an optimisation model: an incumbent, not a proven optimum; raise timeout_ms until it ends optimal".to_owned(),
        );
    }
    if solve.truncated {
        return Some(
            "the verifying solve's output went over the cap and was cut, so its last answer is not known"
                .to_owned(),
        );
    }
    if solve.return_code != Some(0) {
        return Some(match solve.return_code {
            Some(code) => format!("the verifying solve exited with code {code}, not 0"),
            None => "the verifying solve was stopped before it exited".to_owned(),
        });
    }
    if let Some(checker) = &solve.checker {
        return checker_gate(checker);
    }
    None
}

/// Why the checker's report is not an acceptance, or `None` when it is:
/// the one place a save and a replay read the checker's verdict.
pub(crate) fn checker_gate(checker: &CheckerReport) -> Option<String> {
    (!checker.verdict.is_accepted()).then(|| {
        format!(
            "the checker's verdict is {}, not accepted: {}; see solve.checker",
            checker.verdict,
            checker.reason.as_deref().unwrap_or("no reason given")
        )
    })
}

fn not_verified(
    target: &Target,
    why: String,
    check: CheckResult,
    solve: Option<SolveResult>,
) -> SaveVerifiedModelResult {
    SaveVerifiedModelResult {
        status: SaveStatus::NotVerified,
        message: format!("{why}; nothing was written"),
        target_dir: target.dir.display().to_string(),
        files: Vec::new(),
        diagnostic: Some(Diagnostic::new(Category::NotVerified, why)),
        check,
        solve,
    }
}

/// The portfolio a save names must be the race this model won, run the way
/// this save will run it.
fn check_portfolio(
    race: &PortfolioSolveResult,
    request: &SaveModelRequest,
    solver: &str,
) -> Result<(), ToolError> {
    let refuse = |why: String| {
        ToolError::invalid(format!(
            "portfolio_result does not match this save: {why}; nothing was run"
        ))
    };
    match race.status {
        RaceStatus::Winner => {}
        RaceStatus::NoWinner => {
            return Err(refuse(format!(
                "its status is {:?}, and only a race with a winner is provenance",
                race.status.as_str()
            )));
        }
    }
    let attempt = race
        .winner_index
        .and_then(|index| race.attempts.get(index))
        .ok_or_else(|| refuse("its winner_index names no attempt".to_owned()))?;
    if attempt.solver != solver {
        return Err(refuse(format!(
            "the winner ran {} but this save solves with {solver}",
            attempt.solver
        )));
    }
    if attempt.seed != request.controls.random_seed {
        return Err(refuse(format!(
            "the winner's seed is {} but random_seed is {}",
            seed_words(attempt.seed),
            seed_words(request.controls.random_seed)
        )));
    }
    let model_sha = sha256_hex(request.model.as_bytes());
    if race.models_sha256.get(attempt.model_index) != Some(&model_sha) {
        return Err(refuse(format!(
            "model is not the winning formulation (models[{}])",
            attempt.model_index
        )));
    }
    let data_sha = request
        .data
        .as_deref()
        .map(|data| sha256_hex(data.as_bytes()));
    if race.data_sha256 != data_sha {
        return Err(refuse(
            "data differs from the data the race ran on".to_owned(),
        ));
    }
    let shared = &race.solve_controls;
    let controls = &request.controls;
    let mismatched: Vec<&str> = [
        ("free_search", shared.free_search == controls.free_search),
        ("parallel", shared.parallel == controls.parallel),
        (
            "all_solutions",
            shared.all_solutions == controls.all_solutions,
        ),
        (
            "num_solutions",
            shared.num_solutions == controls.num_solutions,
        ),
    ]
    .into_iter()
    .filter(|(_, same)| !same)
    .map(|(name, _)| name)
    .collect();
    if !mismatched.is_empty() {
        return Err(refuse(format!(
            "{} differ from the race's solve_controls",
            mismatched.join(", ")
        )));
    }
    Ok(())
}

fn seed_words(seed: Option<i64>) -> String {
    seed.map_or_else(|| "none (unseeded)".to_owned(), |seed| seed.to_string())
}

/// The race as saved in `experiment-log.json`, and its manifest summary.
fn portfolio_log(race: &PortfolioSolveResult) -> (Value, Value) {
    let winner = race.winner_index.and_then(|index| race.attempts.get(index));
    let log = json!({
        "source": "portfolio",
        "winner_index": race.winner_index,
        "winner": winner.map(|attempt| json!({
            "model_index": attempt.model_index,
            "solver": attempt.solver,
            "seed": attempt.seed,
        })),
        "winner_policy": race.winner_policy,
        "solve_controls": race.solve_controls,
        "models_sha256": race.models_sha256,
        "data_sha256": race.data_sha256,
        "checker_sha256": race.checker_sha256,
        "attempts": race.attempts,
    });
    let mut statuses: Vec<&str> = race
        .attempts
        .iter()
        .filter_map(|attempt| attempt.status.map(SolveStatus::as_str))
        .collect();
    statuses.sort_unstable();
    statuses.dedup();
    let mut states: Vec<&str> = race
        .attempts
        .iter()
        .map(|attempt| attempt.state.as_str())
        .collect();
    states.sort_unstable();
    states.dedup();
    let summary = json!({
        "source": "portfolio",
        "attempts": race.attempts.len(),
        "winner_index": race.winner_index,
        "statuses_seen": statuses,
        "attempt_states_seen": states,
    });
    (log, summary)
}

type Files = (Vec<StagedFile>, Vec<SavedFile>);

fn minizinc_files(
    request: &SaveModelRequest,
    closure: &Closure,
    solve: &SolveResult,
    record: MinizincRecord,
    runtime_version: Option<String>,
) -> Result<Files, ToolError> {
    let mut set = FileSet::default();
    set.add("model", "model.mzn", closure.model.clone().into_bytes());
    if let Some(data) = &request.data {
        set.add("data", "data.dzn", data.clone().into_bytes());
    }
    if let Some(checker) = &closure.checker {
        set.add("checker", "checker.mzc.mzn", checker.clone().into_bytes());
    }
    for copy in &closure.copies {
        set.add_copy(&copy.name, &copy.source, copy.text.clone().into_bytes());
    }
    if let Some(problem) = &request.problem {
        set.add("problem", "problem.md", problem.clone().into_bytes());
    }
    set.add("solve_result", "solve-result.json", pretty(solve)?);
    let experiment = match &request.portfolio_result {
        Some(race) => {
            let (log, summary) = portfolio_log(race);
            set.add("experiment_log", "experiment-log.json", pretty(&log)?);
            Some(summary)
        }
        None => None,
    };
    let verification = VerificationRecord {
        status: solve.status.into(),
        objective: solve.objective.clone(),
        checker_status: solve
            .checker
            .as_ref()
            .map(|checker| checker.status.to_string()),
        level: if solve.checker.is_some() {
            "checked"
        } else {
            "solved"
        }
        .to_owned(),
    };
    let files = set.files().to_vec();
    let mut manifest = ArtifactManifest::new(
        Backend::Minizinc,
        runtime_version,
        verification,
        files.clone(),
    );
    manifest.minizinc = Some(record);
    manifest.experiment = experiment;
    Ok((set.with_manifest(&manifest), files))
}
