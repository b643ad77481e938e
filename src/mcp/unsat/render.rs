//! The text part of the unsat-core tools.

use std::fmt::Write;

use crate::mcp::render::{block, diagnostic_line};
use crate::unsat::{UnsatCoreResult, UnsatStatus};

pub fn unsat_core(result: &UnsatCoreResult) -> String {
    let mut text = format!(
        "Unsat core: {} (method {}, solver {}, {} solver call(s), {} ms)\n{}\n",
        result.status,
        result.method,
        result.solver,
        result.solver_calls,
        result.elapsed_ms,
        result.message
    );
    if !result.core.is_empty() {
        let minimal = if result.minimal {
            "minimal"
        } else {
            "NOT minimal"
        };
        let _ = writeln!(text, "Core ({minimal}):");
        for entry in &result.core {
            let _ = writeln!(
                text,
                "- line {}:{}-{}:{}: {}",
                entry.line,
                entry.column,
                entry.end_line,
                entry.end_column,
                entry
                    .source
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if result.method == "findmus" {
        block(
            &mut text,
            "findMUS output (authoritative)",
            &result.stdout,
            "stdout",
        );
    }
    if result.status == UnsatStatus::Error {
        block(&mut text, "stderr", &result.stderr, "stderr");
    }
    text
}
