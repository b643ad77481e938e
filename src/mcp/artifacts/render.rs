//! The text parts of the verified-save tools and `replay_artifact`.

use std::fmt::Write;

use crate::artifacts::{ReplayResult, SaveVerifiedModelResult, SaveVerifiedPythonResult};
use crate::mcp::cpsat::render::checker_error;
use crate::mcp::minizinc::render::solve;
use crate::mcp::render::{block, diagnostic_line, saved_files, stderr_block};

pub fn saved_model(result: &SaveVerifiedModelResult) -> String {
    let mut text = format!("Save: {} — {}\n", result.status, result.message);
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    let _ = writeln!(text, "Target: {}", result.target_dir);
    saved_files(&mut text, &result.files);
    let _ = writeln!(text, "Check: {}", result.check.status);
    if let Some(solve) = &result.solve {
        text.push_str("Verifying solve:\n");
        text.push_str(&self::solve(solve));
    } else {
        block(
            &mut text,
            "Check stderr",
            &result.check.stderr,
            "check.stderr",
        );
    }
    text
}

pub fn saved_python(result: &SaveVerifiedPythonResult) -> String {
    let verdict = match &result.reason {
        None if result.saved => "saved".to_owned(),
        None => "every gate passed (verify only, nothing written)".to_owned(),
        Some(reason) => format!("not verified — {reason}"),
    };
    let mut text = format!(
        "Save: {verdict}\nVerification level: {}\n",
        result.verification_level.as_str()
    );
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if let Some(target) = &result.target_dir {
        let _ = writeln!(text, "Target: {target}");
    }
    saved_files(&mut text, &result.files);
    let _ = writeln!(text, "Run: {} in {} ms", result.status, result.duration_ms);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "Objective: {objective}");
    }
    if let Some(passed) = result.expectation_passed {
        let _ = writeln!(
            text,
            "Expectation: {}",
            if passed { "met" } else { "not met" }
        );
    }
    if let Some(checker) = &result.checker {
        let _ = writeln!(
            text,
            "Checker: {} ({} error(s))",
            checker.status,
            checker.errors.len()
        );
        checker_error(&mut text, checker);
    }
    stderr_block(&mut text, &result.stderr);
    text
}

pub fn replay(result: &ReplayResult) -> String {
    let mut text = format!(
        "Replay of {} ({}): {}\n",
        result.target_dir,
        result.backend.as_str(),
        if result.reproduced {
            "reproduced"
        } else {
            "not reproduced"
        }
    );
    if let Some(reason) = &result.reason {
        let _ = writeln!(text, "Reason: {reason}");
    }
    let objective =
        |o: &Option<serde_json::Number>| o.as_ref().map_or("-".to_owned(), ToString::to_string);
    text.push_str("| | status | objective | checker | level |\n| --- | --- | --- | --- | --- |\n");
    for (label, outcome) in [
        ("recorded", &result.recorded),
        ("replayed", &result.replayed),
    ] {
        let _ = writeln!(
            text,
            "| {label} | {} | {} | {} | {} |",
            outcome.status,
            objective(&outcome.objective),
            outcome.checker_status.as_deref().unwrap_or("-"),
            outcome.level
        );
    }
    if let Some(checker) = &result.checker {
        checker_error(&mut text, checker);
    }
    let _ = writeln!(
        text,
        "Saved {} on {}; replayed on {}",
        result.saved_at,
        result
            .recorded_runtime_version
            .as_deref()
            .unwrap_or("an unknown runtime"),
        result
            .runtime_version
            .as_deref()
            .unwrap_or("an unknown runtime")
    );
    text
}
