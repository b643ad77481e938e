//! What every command does the same way at the terminal: write to stdout
//! (a closed pipe is a quiet exit), refuse with a problem (an error with
//! its causes) on stderr and exit code 1, and notice Ctrl-C, SIGTERM and
//! SIGHUP.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use super::render;
use crate::diagnostics::ToolError;

/// Writes to stdout; a reader that went away (`| head`) ends the process
/// quietly instead of a panic.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            crate::exec::kill_all_sessions();
            std::process::exit(0);
        }
        eprintln!("solvergate: could not write to stdout: {error}");
    }
}

/// Prints a problem on stderr (headline, then `help:`) and returns exit
/// code 1.
pub(crate) fn refuse(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{}", render::problem(&message.to_string()));
    ExitCode::from(1)
}

/// Prints `error` on stderr as [`render::failure`] lays it out (its
/// message, then a `Caused by:` line per cause) and returns exit code 1.
pub(crate) fn refuse_error(error: &dyn std::error::Error) -> ExitCode {
    eprintln!("{}", render::failure(&error.to_string(), error));
    ExitCode::from(1)
}

/// A service's refusal: its message, without the MCP diagnostic prefix.
pub(crate) fn fail(error: &ToolError) -> ExitCode {
    refuse(&error.0.message)
}

/// Says a command was interrupted and returns exit code 130.
pub(crate) fn interrupted() -> ExitCode {
    eprintln!("solvergate: interrupted; every process it started was stopped");
    ExitCode::from(130)
}

/// A token cancelled by the first Ctrl-C, SIGTERM or SIGHUP, for commands
/// that have nothing worth keeping from a cut-short run.
pub(crate) fn cancel_on_interrupt() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        interrupt_signal().await;
        on_interrupt.cancel();
    });
    cancel
}

/// Resolves on SIGINT, SIGTERM or SIGHUP.
pub(crate) async fn interrupt_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}

/// Resolves on SIGTERM or SIGINT.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
