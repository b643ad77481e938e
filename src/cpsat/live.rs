//! A running script's live figures, read from the envelopes it prints as
//! it goes (`solvergate.report_intermediate`, or the same JSON by hand):
//! how many solutions so far, the latest objective and the bound reported
//! with it. They feed progress messages, a task's status and a job's
//! `live` field, as a MiniZinc solve's incumbents do.
//!
//! It reads; it decides nothing. The answer is still the last envelope,
//! read by [`super::envelope`] once the script has ended.

use std::sync::Mutex;

use serde_json::Value;

use crate::progress::{LiveFigures, Progress};

/// Counts a script's envelope lines as they arrive and reports the figures
/// of each: a solution envelope already costs a parse, and the listeners
/// keep only the latest (a job's slot) or send at most one a second (the
/// MCP forwarder, which sends held figures once that second has passed),
/// so the last improvement is never lost to a throttle here.
pub(super) struct EnvelopeWatch<'a> {
    progress: &'a Progress,
    figures: Mutex<LiveFigures>,
}

impl<'a> EnvelopeWatch<'a> {
    pub(super) fn new(progress: &'a Progress) -> Self {
        EnvelopeWatch {
            progress,
            figures: Mutex::new(LiveFigures::default()),
        }
    }

    /// Reads one stdout line; a solution envelope updates the figures.
    pub(super) fn line(&self, line: &str) {
        let Some((objective, bound)) = solution_envelope(line) else {
            return;
        };
        let Ok(mut figures) = self.figures.lock() else {
            return;
        };
        figures.solutions += 1;
        if objective.is_some() {
            figures.objective = objective;
        }
        if bound.is_some() {
            figures.bound = bound;
        }
        let text = figures.text();
        self.progress.report_live(figures.clone(), text);
    }
}

/// The objective and bound of a line that is an envelope with a solution
/// (`feasible` or `optimal`); `None` for any other line. A search log line
/// costs a byte test, not a parse.
fn solution_envelope(line: &str) -> Option<(Option<Value>, Option<Value>)> {
    let line = line.trim();
    if !line.starts_with('{') || !line.contains("\"status\"") {
        return None;
    }
    let Value::Object(envelope) = serde_json::from_str::<Value>(line).ok()? else {
        return None;
    };
    let status = envelope.get("status").and_then(Value::as_str)?;
    if !matches!(status, "feasible" | "optimal") || !envelope.get("solution")?.is_object() {
        return None;
    }
    let number = |key: &str| envelope.get(key).filter(|value| value.is_number()).cloned();
    Some((number("objective"), number("best_objective_bound")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_solution_envelopes_count() {
        assert_eq!(
            solution_envelope(r#"{"status": "feasible", "objective": 7, "solution": {"x": 1}}"#),
            Some((Some(7.into()), None))
        );
        assert_eq!(
            solution_envelope(
                r#"  {"status": "optimal", "objective": 9.5, "best_objective_bound": 9.5, "solution": {}}"#
            ),
            Some((Some(9.5.into()), Some(9.5.into())))
        );
        // No objective (a satisfaction model), a text objective.
        assert_eq!(
            solution_envelope(r#"{"status": "feasible", "objective": "7", "solution": {}}"#),
            Some((None, None))
        );
        for line in [
            r#"{"status": "infeasible", "objective": null, "solution": {}}"#,
            r#"{"status": "feasible", "objective": 3}"#,
            r#"{"status": "feasible", "solution": [1]}"#,
            r#"{"status": 1, "solution": {}}"#,
            r#"#1 0.01s best:7 next:[8,20] fixed_bools:0/12 "status""#,
            "{not json \"status\"",
            "",
        ] {
            assert_eq!(solution_envelope(line), None, "{line}");
        }
    }

    #[test]
    fn figures_count_every_solution_and_keep_the_latest_values() {
        let (progress, mut updates) = Progress::channel();
        let watch = EnvelopeWatch::new(&progress);
        watch.line(
            r#"{"status": "feasible", "objective": 3, "best_objective_bound": 10, "solution": {}}"#,
        );
        watch.line("a log line");
        watch.line(r#"{"status": "feasible", "objective": 5, "solution": {}}"#);
        let messages: Vec<String> = std::iter::from_fn(|| updates.try_recv().ok())
            .map(|update| update.message)
            .collect();
        assert_eq!(
            messages,
            [
                "1 solution(s), best objective 3, bound 10",
                "2 solution(s), best objective 5, bound 10"
            ]
        );
    }
}
