//! The unsat-core service: which constraints of an unsatisfiable MiniZinc
//! model conflict.
//!
//! Two methods, one result ([`UnsatCoreResult`]):
//! - `findmus`: when the runtime's catalog has findMUS
//!   (`org.minizinc.findmus`) and no solver is named, findMUS runs once
//!   through the managed `minizinc`; its raw output is the authoritative
//!   answer and `core` is read from its traces (entry-model spans only).
//! - `deletion`: otherwise, solvergate's own deletion-based search over the
//!   model's top-level `constraint` items (found by [`scan`]). The whole
//!   model is checked first (compile error, satisfiable, no verdict end the
//!   call there); then each item in turn is left out of a candidate model
//!   and the rest solved: still unsatisfiable, it stays out; satisfiable, it
//!   belongs to the core; no verdict, it stays in and the core is no longer
//!   known to be minimal. Candidates blank the removed items (positions of
//!   the rest unchanged) and replace the solve item with `solve satisfy;`,
//!   since an objective never changes satisfiability and a satisfaction
//!   check stops at the first solution. Everything outside the entry
//!   model's constraint items — declarations and their domains, the data,
//!   included files — is background: always present, never blamed.
//!
//! One budget covers the whole call; each check gets what is left of it.
//! Checks run through [`MiniZinc::solve`], under the call's cancellation.

mod findmus;
mod results;
pub mod scan;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use results::{UnsatCoreConstraint, UnsatCoreResult, UnsatStatus};

use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::{
    MiniZinc, Prepared, SolveControls, SolveRequest, SolveResult, SolveStatus, Sources,
};
use crate::progress::{Progress, Stage};
use crate::userfiles::off_thread;
use scan::{Item, ItemKind};

/// findMUS's id in a runtime's solver catalog.
pub const FINDMUS_ID: &str = "org.minizinc.findmus";

/// Below this much budget left, no further check is started: MiniZinc
/// alone takes about that long to start.
const MIN_CHECK: Duration = Duration::from_millis(100);

/// A request for an unsat core.
#[derive(Debug, Clone)]
pub struct UnsatCoreRequest {
    /// The model and optional data (inline or paths); no checker.
    pub sources: Sources,
    /// The solver for the deletion checks; `None`: findMUS when the runtime
    /// has it, else the solve tools' default.
    pub solver: Option<String>,
    /// The whole call's budget, checked where the request was made.
    pub timeout_ms: Budget,
}

/// What one satisfiability check said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Sat,
    Unsat,
    /// Unsatisfiable or unbounded (a MIP solver on an objective).
    UnsatOrUnbounded,
    Unknown,
    Error,
}

fn verdict(result: &SolveResult) -> Verdict {
    match result.status {
        SolveStatus::Satisfied | SolveStatus::Optimal | SolveStatus::Unbounded => Verdict::Sat,
        SolveStatus::Unsatisfiable => Verdict::Unsat,
        SolveStatus::UnsatOrUnbounded => Verdict::UnsatOrUnbounded,
        SolveStatus::Error => Verdict::Error,
        SolveStatus::Timeout | SolveStatus::Unknown => Verdict::Unknown,
    }
}

/// Finds unsat cores on one runtime.
#[derive(Debug, Clone)]
pub struct UnsatCores {
    minizinc: MiniZinc,
}

/// The search's running state, turned into the result at the end.
struct Search {
    started: Instant,
    deadline: Instant,
    solver: String,
    calls: u32,
    log: String,
}

impl UnsatCores {
    /// A searcher that runs findMUS or the deletion search on `minizinc`'s
    /// runtime.
    pub fn new(minizinc: MiniZinc) -> Self {
        UnsatCores { minizinc }
    }

    /// Finds a core of the request's model, or says why there is none.
    pub async fn find(
        &self,
        request: &UnsatCoreRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<UnsatCoreResult, ToolError> {
        progress.report(Stage::Validating, "validating the model and arguments");
        let budget = request.timeout_ms;
        let timeout_ms = budget.as_millis();
        request.sources.validate()?;
        let started = Instant::now();
        let catalog = self.minizinc.runtime().catalog(cancel).await?;
        let has_findmus = catalog.solvers.iter().any(|solver| solver.id == FINDMUS_ID);
        let solver = if request.solver.is_none() && has_findmus {
            FINDMUS_ID.to_owned()
        } else {
            self.minizinc
                .select_solver(request.solver.as_deref(), cancel)
                .await?
                .id
                .clone()
        };
        let prepared = request.sources.prepare_async().await?;
        let model_path = prepared.model.clone();
        let text = off_thread(move || {
            std::fs::read_to_string(&model_path).map_err(|error| {
                ToolError::invalid(format!(
                    "could not read the model {}: {error}",
                    model_path.display()
                ))
            })
        })
        .await?;
        let search = Search {
            started,
            deadline: started + budget.duration(),
            solver,
            calls: 0,
            log: String::new(),
        };
        let result = if search.solver == FINDMUS_ID {
            self.findmus(search, &prepared, &text, budget, progress, cancel)
                .await?
        } else {
            let include_dir =
                matches!(request.sources, Sources::Files { .. }).then(|| prepared.cwd.clone());
            self.deletion(
                search,
                &prepared,
                include_dir,
                &text,
                timeout_ms,
                progress,
                cancel,
            )
            .await?
        };
        progress.report(
            Stage::Complete,
            format!("unsat core search finished: {}", result.status),
        );
        Ok(result)
    }

    async fn findmus(
        &self,
        mut search: Search,
        prepared: &Prepared,
        text: &str,
        budget: Budget,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<UnsatCoreResult, ToolError> {
        progress.report(Stage::Running, "running findMUS");
        let run = self
            .minizinc
            .run_findmus(prepared, FINDMUS_ID, budget, cancel)
            .await?;
        search.calls = 1;
        progress.report(Stage::Parsing, "reading findMUS's output");
        let items = scan::scan(text).unwrap_or_default();
        let reading = findmus::read(&run.stdout, &prepared.model, &items);
        // findMUS's MUS is minimal; our `core` is only when it lists all of it.
        let minimal = reading.complete() && !run.truncated;
        let (status, message, category) = if run.timed_out() {
            (
                UnsatStatus::Timeout,
                format!("findMUS did not finish within {budget}"),
                Some(Category::TimeoutNoIncumbent),
            )
        } else if reading.muses > 0 {
            let located = if minimal {
                format!(
                    "findMUS reported a minimal unsatisfiable subset: {} constraint item(s) of the model",
                    reading.core.len()
                )
            } else {
                format!(
                    "findMUS reported a minimal unsatisfiable subset; {} of its {} member(s) lie outside the model's constraint items (a declaration, an included file or the library), so `core` is partial — stdout is authoritative",
                    reading.unplaced, reading.traces
                )
            };
            (UnsatStatus::MusFound, located, Some(Category::Infeasible))
        } else if run.return_code != Some(0) {
            (
                UnsatStatus::Error,
                "findMUS failed; see stderr".to_owned(),
                Some(Category::SyntaxOrCompileError),
            )
        } else if run.stderr.contains("Model is Satisfiable") {
            (
                UnsatStatus::NoCore,
                "findMUS found the model satisfiable: there is no conflict to explain".to_owned(),
                None,
            )
        } else {
            (
                UnsatStatus::NoCore,
                "findMUS finished without reporting a MUS (not a proof of satisfiability); its stderr says why"
                    .to_owned(),
                Some(Category::Unknown),
            )
        };
        let mut diagnostic = category.map(|category| Diagnostic::new(category, message.clone()));
        if run.truncated {
            diagnostic = Some(Diagnostic::new(
                Category::OutputTruncated,
                "findMUS's output went over the 1 MiB cap; MUS lines past the cut are lost",
            ));
        }
        Ok(UnsatCoreResult {
            status,
            method: "findmus".to_owned(),
            minimal: status == UnsatStatus::MusFound && minimal,
            core: reading.core,
            solver_calls: search.calls,
            solver: search.solver,
            message,
            truncated: run.truncated,
            stdout: run.stdout,
            stderr: run.stderr,
            elapsed_ms: elapsed_ms(search.started),
            diagnostic,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn deletion(
        &self,
        mut search: Search,
        prepared: &Prepared,
        include_dir: Option<PathBuf>,
        text: &str,
        timeout_ms: u64,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<UnsatCoreResult, ToolError> {
        progress.report(
            Stage::Running,
            format!("checking the whole model with {}", search.solver),
        );
        let left = search.left();
        let whole = self
            .check(
                &mut search,
                Sources::Written(prepared.clone()),
                left,
                cancel,
            )
            .await?;
        search.note("whole model", &whole);
        let stderr = whole.stderr.clone();
        let truncated = whole.truncated;
        let ending = |search: Search, status: UnsatStatus, message: String, diagnostic| {
            finish(
                search,
                status,
                message,
                Vec::new(),
                false,
                truncated,
                stderr.clone(),
                diagnostic,
            )
        };
        let items = match verdict(&whole) {
            Verdict::Error => {
                let diagnostic = whole.diagnostic.clone().unwrap_or_else(|| {
                    Diagnostic::new(Category::SyntaxOrCompileError, "the model did not compile")
                });
                let message = format!("the model does not run: {}", diagnostic.message);
                return Ok(ending(
                    search,
                    UnsatStatus::Error,
                    message,
                    Some(diagnostic),
                ));
            }
            Verdict::Sat => {
                let message = format!(
                    "the model is satisfiable ({} found a solution): there is no unsat core",
                    search.solver
                );
                return Ok(ending(search, UnsatStatus::NoCore, message, None));
            }
            Verdict::Unknown => {
                return Ok(no_verdict(
                    search,
                    &whole,
                    timeout_ms,
                    truncated,
                    stderr.clone(),
                ));
            }
            Verdict::Unsat | Verdict::UnsatOrUnbounded => match scan::scan(text) {
                Ok(items) => items,
                Err(error) => {
                    let message = format!(
                        "the model is unsatisfiable, but solvergate could not split it into items ({error}); no core"
                    );
                    let diagnostic = Diagnostic::new(Category::SyntaxOrCompileError, &message);
                    return Ok(ending(
                        search,
                        UnsatStatus::Error,
                        message,
                        Some(diagnostic),
                    ));
                }
            },
        };
        let scratch = crate::exec::scratch_dir("solvergate-unsat-")?;
        let scratch = Arc::new(scratch);
        let candidate_path = scratch.path().join("candidate.mzn");
        let candidate = |removed: &[usize]| {
            let written = Prepared::written(
                scratch.clone(),
                candidate_path.clone(),
                prepared.data.clone(),
                prepared.cwd.clone(),
                include_dir.clone(),
            );
            (written, scan::candidate(text, &items, removed, true))
        };
        if verdict(&whole) == Verdict::UnsatOrUnbounded {
            // The objective may be what is unbounded: decide on the
            // satisfaction version of the whole model.
            let (written, body) = candidate(&[]);
            write(&written, body).await?;
            let left = search.left();
            let check = self
                .check(&mut search, Sources::Written(written), left, cancel)
                .await?;
            search.note("whole model, objective dropped", &check);
            match verdict(&check) {
                Verdict::Unsat | Verdict::UnsatOrUnbounded => {}
                Verdict::Sat => {
                    let message = "the model has solutions (its objective is unbounded): there is no unsat core".to_owned();
                    return Ok(ending(search, UnsatStatus::NoCore, message, None));
                }
                Verdict::Unknown | Verdict::Error => {
                    return Ok(no_verdict(
                        search,
                        &check,
                        timeout_ms,
                        truncated,
                        stderr.clone(),
                    ));
                }
            }
        }

        let candidates: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.kind == ItemKind::Constraint)
            .map(|(index, _)| index)
            .collect();
        let total = u32::try_from(candidates.len()).unwrap_or(u32::MAX);
        let mut removed: Vec<usize> = Vec::new();
        let mut minimal = true;
        let mut out_of_time = false;
        for (position, &index) in candidates.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            let left = search.left();
            if Duration::from_millis(left) < MIN_CHECK {
                out_of_time = true;
                minimal = false;
                break;
            }
            let item = &items[index];
            let step = u32::try_from(position + 1).unwrap_or(u32::MAX);
            progress.report_step(
                Stage::Running,
                step,
                total,
                format!(
                    "checking candidate {step} of {total} (the constraint at line {})",
                    item.line
                ),
            );
            let mut trial = removed.clone();
            trial.push(index);
            let (written, body) = candidate(&trial);
            write(&written, body).await?;
            let check = self
                .check(&mut search, Sources::Written(written), left, cancel)
                .await?;
            let label = format!("without line {}", item.line);
            search.note(&label, &check);
            match verdict(&check) {
                Verdict::Unsat | Verdict::UnsatOrUnbounded => removed = trial,
                Verdict::Sat => {}
                Verdict::Error => {
                    // The model compiled whole but not without this item (a
                    // solve item in an included file, a constraint that a
                    // later item names): the search cannot split it, and a
                    // "core" of everything would be no answer.
                    let reason = check
                        .stderr
                        .lines()
                        .find(|line| !line.trim().is_empty())
                        .unwrap_or("no message");
                    let message = format!(
                        "the model does not compile without the constraint at line {}, so this search cannot split it: {reason}",
                        item.line
                    );
                    let diagnostic = Diagnostic::new(Category::SyntaxOrCompileError, &message)
                        .with_detail("solver_calls", search.calls);
                    return Ok(ending(
                        search,
                        UnsatStatus::Error,
                        message,
                        Some(diagnostic),
                    ));
                }
                Verdict::Unknown => {
                    minimal = false;
                    if Duration::from_millis(search.left()) < MIN_CHECK {
                        out_of_time = true;
                        break;
                    }
                }
            }
        }
        progress.report(Stage::Parsing, "assembling the core");
        let core: Vec<UnsatCoreConstraint> = candidates
            .iter()
            .filter(|index| !removed.contains(index))
            .map(|&index| core_entry(&items[index]))
            .collect();
        let lines = core_lines(&core);
        let calls = search.calls;
        let (status, message, diagnostic) = if out_of_time {
            let message = format!(
                "the {timeout_ms} ms budget ran out after {calls} solver call(s); these {} constraint(s) are unsatisfiable together but the set is NOT minimal (lines {lines}) — raise timeout_ms for a minimal core",
                core.len()
            );
            let diagnostic = Diagnostic::new(
                Category::TimeoutNoIncumbent,
                "the budget ran out during the shrink; the core is unsatisfiable but not minimal",
            )
            .with_detail("solver_calls", calls)
            .with_detail("minimal", false);
            (UnsatStatus::Timeout, message, diagnostic)
        } else if core.is_empty() {
            let message = "the model stays unsatisfiable without any of its top-level constraint items: the conflict lies in declarations, domains, the data or included files, which this search does not split".to_owned();
            let diagnostic =
                Diagnostic::new(Category::Infeasible, &message).with_detail("solver_calls", calls);
            (UnsatStatus::NoCore, message, diagnostic)
        } else {
            let note = if minimal {
                "removing any one of them makes the rest satisfiable"
            } else {
                "some check ended without a verdict, so the set may not be minimal"
            };
            let message = format!(
                "the model is unsatisfiable; {} constraint item(s) conflict (lines {lines}): {note}. Constraints in the data or included files are background and never listed",
                core.len()
            );
            let diagnostic = Diagnostic::new(
                Category::Infeasible,
                "the model is unsatisfiable; relax or fix a constraint of the core",
            )
            .with_detail("solver_calls", calls)
            .with_detail("minimal", minimal);
            (UnsatStatus::MusFound, message, diagnostic)
        };
        let minimal = minimal && !out_of_time && status == UnsatStatus::MusFound;
        Ok(finish(
            search,
            status,
            message,
            core,
            minimal,
            truncated,
            stderr.clone(),
            Some(diagnostic),
        ))
    }

    /// One satisfiability check through the MiniZinc service.
    async fn check(
        &self,
        search: &mut Search,
        sources: Sources,
        left_ms: u64,
        cancel: &CancellationToken,
    ) -> Result<SolveResult, ToolError> {
        let request = SolveRequest {
            sources,
            solver: Some(search.solver.clone()),
            // What is left of the checked budget: never above it.
            timeout_ms: Budget::saturating(left_ms),
            controls: SolveControls::default(),
        };
        search.calls += 1;
        self.minizinc
            .solve(&request, &Progress::none(), cancel)
            .await
    }
}

impl Search {
    /// Milliseconds of budget left.
    fn left(&self) -> u64 {
        let left = self.deadline.saturating_duration_since(Instant::now());
        u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
    }

    /// One line of the transcript.
    fn note(&mut self, what: &str, check: &SolveResult) {
        let answer = match verdict(check) {
            Verdict::Sat => "satisfiable",
            Verdict::Unsat => "unsatisfiable",
            Verdict::UnsatOrUnbounded => "unsatisfiable or unbounded",
            Verdict::Unknown => "no verdict",
            Verdict::Error => "error",
        };
        self.log.push_str(&format!(
            "check {}: {what}: {answer} (status {}, {} ms)\n",
            self.calls, check.status, check.elapsed_ms
        ));
    }
}

/// The result when the whole-model check ended without a verdict.
fn no_verdict(
    search: Search,
    check: &SolveResult,
    timeout_ms: u64,
    truncated: bool,
    stderr: String,
) -> UnsatCoreResult {
    let (status, message, category) = if Duration::from_millis(search.left()) < MIN_CHECK {
        (
            UnsatStatus::Timeout,
            format!(
                "{} found neither a solution nor a proof of unsatisfiability within the {timeout_ms} ms budget",
                search.solver
            ),
            Category::TimeoutNoIncumbent,
        )
    } else if check.status == SolveStatus::Error {
        let message = check
            .diagnostic
            .as_ref()
            .map(|d| d.message.clone())
            .unwrap_or_else(|| "the run failed".to_owned());
        (UnsatStatus::Error, message, Category::Unknown)
    } else {
        (
            UnsatStatus::Error,
            format!(
                "{} ended without a verdict on the whole model (status {}); try another solver",
                search.solver, check.status
            ),
            Category::Unknown,
        )
    };
    let diagnostic = Diagnostic::new(category, &message);
    finish(
        search,
        status,
        message,
        Vec::new(),
        false,
        truncated,
        stderr,
        Some(diagnostic),
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    search: Search,
    status: UnsatStatus,
    message: String,
    core: Vec<UnsatCoreConstraint>,
    minimal: bool,
    truncated: bool,
    stderr: String,
    diagnostic: Option<Diagnostic>,
) -> UnsatCoreResult {
    let diagnostic = if truncated {
        Some(Diagnostic::new(
            Category::OutputTruncated,
            "the whole-model check's output went over the 1 MiB cap and was cut; its verdict may be incomplete",
        ))
    } else {
        diagnostic
    };
    UnsatCoreResult {
        status,
        method: "deletion".to_owned(),
        core,
        minimal,
        solver_calls: search.calls,
        solver: search.solver,
        message,
        truncated,
        stdout: search.log,
        stderr,
        elapsed_ms: elapsed_ms(search.started),
        diagnostic,
    }
}

fn core_entry(item: &Item) -> UnsatCoreConstraint {
    UnsatCoreConstraint {
        line: item.line,
        column: item.column,
        end_line: item.end_line,
        end_column: item.end_column,
        source: item.source.clone(),
    }
}

fn core_lines(core: &[UnsatCoreConstraint]) -> String {
    core.iter()
        .map(|entry| entry.line.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn cancelled() -> ToolError {
    ToolError::new(
        Category::Cancelled,
        "the request was cancelled; the unsat-core search was stopped",
    )
}

/// Writes a candidate's text to its file on the blocking pool.
async fn write(prepared: &Prepared, body: String) -> Result<(), ToolError> {
    let path = prepared.model.clone();
    off_thread(move || {
        std::fs::write(&path, body).map_err(|error| {
            ToolError::invalid(format!(
                "could not write the candidate model {}: {error}",
                path.display()
            ))
        })
    })
    .await
}
