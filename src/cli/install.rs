//! `solvergate install-runtime`: the prompts, the progress bar and the
//! words around [`crate::runtime::install`], which does the work.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::args::{InstallArgs, RuntimeKind};
use super::render;
use super::terminal::{refuse, shutdown_signal};
use crate::runtime::cpsat;
use crate::runtime::install::cpsat::CpsatInstallRequest;
use crate::runtime::install::{self, ArchiveSource, InstallEvent, InstallRequest, TargetState};
use crate::runtime::manifest::{self, Manifest};
use crate::runtime::{self, UserDirs};
use crate::settings::Settings;

/// The options of `install-runtime`, as parsed.
pub struct InstallOptions {
    pub runtime_dir: Option<PathBuf>,
    pub yes: bool,
    pub from_archive: Option<PathBuf>,
    pub manifest: Option<PathBuf>,
    pub only: Option<RuntimeKind>,
    pub python: Option<PathBuf>,
}

/// Runs `install-runtime` as parsed, into `--runtime-dir` when given.
pub async fn run(
    args: InstallArgs,
    runtime_dir: Option<PathBuf>,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    let InstallArgs {
        only,
        python,
        yes,
        from_archive,
        manifest,
    } = args;
    let options = InstallOptions {
        runtime_dir,
        yes,
        from_archive,
        manifest,
        only,
        python,
    };
    install_runtime(options, settings, dirs).await
}

/// Installs what was asked for (both runtimes by default); exit 1 when any
/// part failed, each failure explained.
pub async fn install_runtime(
    options: InstallOptions,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    if options.from_archive.is_some() && options.only == Some(RuntimeKind::Cpsat) {
        return refuse("--from-archive is a MiniZinc bundle; it does not apply to --only cpsat");
    }
    let manifest = match load_manifest(options.manifest.as_deref()) {
        Ok(manifest) => manifest,
        Err(message) => return refuse(message),
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        on_signal.cancel();
    });
    let interactive = std::io::stdin().is_terminal();
    let reporter = Reporter::new();
    // What happened to each part, for the closing summary.
    let mut summary: Vec<(&str, Result<(), String>)> = Vec::new();
    if options.only != Some(RuntimeKind::Cpsat) {
        let outcome = install_minizinc(
            &options,
            &manifest,
            settings,
            dirs,
            interactive,
            &reporter,
            &cancel,
        )
        .await;
        reporter.finish();
        if let Err(message) = &outcome {
            eprintln!("{}", render::problem(&format!("MiniZinc: {message}")));
        }
        summary.push(("MiniZinc", outcome));
    }
    if options.only != Some(RuntimeKind::Minizinc) && !cancel.is_cancelled() {
        let outcome = install_cpsat(
            &options,
            &manifest,
            settings,
            dirs,
            interactive,
            &reporter,
            &cancel,
        )
        .await;
        reporter.finish();
        if let Err(message) = &outcome {
            eprintln!("{}", render::problem(&format!("CP-SAT: {message}")));
        }
        summary.push(("CP-SAT", outcome));
    }
    let failures = summary
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .count();
    if summary.len() > 1 {
        let parts: Vec<String> = summary
            .iter()
            .map(|(name, outcome)| match outcome {
                Ok(()) => format!("{name} installed"),
                Err(_) => format!("{name} failed (see above)"),
            })
            .collect();
        eprintln!("Summary: {}.", parts.join("; "));
    }
    if cancel.is_cancelled() {
        return ExitCode::from(130);
    }
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn load_manifest(path: Option<&Path>) -> Result<Manifest, String> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                format!("could not read the manifest {}: {error}", path.display())
            })?;
            Manifest::parse(&text)
                .map_err(|error| format!("{} is not a valid manifest: {error}", path.display()))
        }
        None => {
            Manifest::builtin().map_err(|error| format!("the built-in manifest is broken: {error}"))
        }
    }
}

/// Whether replacing what is at `target` is allowed: never for a
/// directory that is not ours, after --yes or a "y" for ours.
async fn confirm_replace(
    target: &Path,
    yes: bool,
    interactive: bool,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    match install::target_state(target) {
        TargetState::Unmanaged => Err(install::InstallError::Unmanaged {
            path: target.to_path_buf(),
        }
        .to_string()),
        TargetState::Managed(_) if yes => Ok(true),
        TargetState::Managed(marker) => {
            if !interactive {
                return Err(format!(
                    "{} holds a solvergate runtime ({}); pass --yes to replace it",
                    target.display(),
                    marker.version
                ));
            }
            let question = format!(
                "Replace the solvergate runtime at {} ({}, installed {})? [y/N] ",
                target.display(),
                marker.version,
                marker.installed_at
            );
            match ask(&question, cancel).await {
                Answer::Line(answer) if matches!(answer.trim(), "y" | "Y" | "yes") => Ok(true),
                Answer::Interrupted => Err(INTERRUPTED.to_owned()),
                _ => Err("nothing was changed".to_owned()),
            }
        }
        TargetState::Missing | TargetState::Empty => Ok(false),
    }
}

async fn install_minizinc(
    options: &InstallOptions,
    manifest: &Manifest,
    settings: &Settings,
    dirs: &UserDirs,
    interactive: bool,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let platform = manifest::current_platform();
    let bundle = manifest.bundle_for(&platform).cloned().ok_or_else(|| {
        format!(
            "there is no pinned MiniZinc bundle for {platform}; install MiniZinc yourself and adopt it with `solvergate configure-runtime --runtime-dir <dir>` (the directory holding bin/minizinc)"
        )
    })?;
    let version = manifest.minizinc.version.clone();
    let target = choose_target(options, settings, dirs, interactive, &version, cancel).await?;
    let replace_confirmed = confirm_replace(&target, options.yes, interactive, cancel).await?;
    let request = InstallRequest {
        bundle,
        version,
        target,
        source: match &options.from_archive {
            Some(path) => ArchiveSource::Local(path.clone()),
            None => ArchiveSource::Download,
        },
        replace_confirmed,
        config_dir: dirs.config_dir.clone(),
    };
    let outcome = install::install_minizinc(&request, &|event| reporter.event(event), cancel)
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "Installed MiniZinc {} into {} ({}; {} solver{}).",
        outcome.marker.version,
        outcome.target.display(),
        outcome.minizinc_version,
        outcome.solver_count,
        if outcome.solver_count == 1 { "" } else { "s" }
    );
    println!(
        "SHA256 {} verified; location saved in {}.",
        outcome.marker.sha256,
        outcome.config_path.display()
    );
    Ok(())
}

async fn install_cpsat(
    options: &InstallOptions,
    manifest: &Manifest,
    settings: &Settings,
    dirs: &UserDirs,
    interactive: bool,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let pins = manifest
        .cpsat
        .clone()
        .ok_or("the manifest pins no CP-SAT packages")?;
    let target = cpsat::default_venv(dirs);
    let replace_confirmed = confirm_replace(&target, options.yes, interactive, cancel).await?;
    if !options.yes && !interactive {
        return Err("stdin is not a terminal, so nothing can be confirmed: pass --yes".to_owned());
    }
    let request = CpsatInstallRequest {
        pins,
        base_python: options.python.clone(),
        target,
        replace_confirmed,
        config_dir: dirs.config_dir.clone(),
        search_path: settings.search_path.clone(),
    };
    let outcome = install::cpsat::install_cpsat(&request, &|event| reporter.event(event), cancel)
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "Installed OR-Tools {} into {} (built with {}).",
        outcome.ortools_version,
        outcome.target.display(),
        outcome.base_python.display()
    );
    println!(
        "Every package was hash-checked; interpreter saved in {}.",
        outcome.config_path.display()
    );
    Ok(())
}

/// `--runtime-dir`, or the prompt on a terminal, or (with `--yes`) the
/// usual resolution: env, saved config, default.
async fn choose_target(
    options: &InstallOptions,
    settings: &Settings,
    dirs: &UserDirs,
    interactive: bool,
    version: &str,
    cancel: &CancellationToken,
) -> Result<PathBuf, String> {
    if let Some(dir) = &options.runtime_dir {
        if !options.yes && !interactive {
            return Err(
                "stdin is not a terminal, so nothing can be confirmed: pass --yes".to_owned(),
            );
        }
        return absolute(dir);
    }
    let (location, warning) = runtime::resolve_location(None, settings, dirs);
    if let Some(warning) = warning {
        eprintln!("{}", render::problem(&format!("warning: {warning}")));
    }
    if options.yes {
        return Ok(location.dir);
    }
    if !interactive {
        return Err(format!(
            "stdin is not a terminal, so there is no prompt: pass --yes to install into {} or --runtime-dir PATH --yes to choose",
            location.dir.display()
        ));
    }
    let answer = match ask(
        &format!(
            "Install MiniZinc {version} into [{}]: ",
            location.dir.display()
        ),
        cancel,
    )
    .await
    {
        Answer::Line(answer) => answer,
        Answer::Nothing => return Err("no answer; nothing was changed".to_owned()),
        Answer::Interrupted => return Err(INTERRUPTED.to_owned()),
    };
    let answer = answer.trim();
    if answer.is_empty() {
        Ok(location.dir)
    } else {
        absolute(&expand_home(answer))
    }
}

/// `~` and `~/…` in a typed answer mean the home directory, as in a shell.
fn expand_home(answer: &str) -> PathBuf {
    let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    match (answer.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home,
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
        _ => PathBuf::from(answer),
    }
}

fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::path::absolute(dir).map_err(|error| format!("cannot resolve {}: {error}", dir.display()))
}

/// What a prompt got.
enum Answer {
    Line(String),
    /// End of input: nothing to go on.
    Nothing,
    /// Ctrl-C (or SIGTERM) while waiting.
    Interrupted,
}

/// Asks on stderr and reads a line, giving up at once when `cancel` fires
/// (a Ctrl-C at the prompt must not be swallowed by a blocked read).
async fn ask(question: &str, cancel: &CancellationToken) -> Answer {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let read = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    });
    tokio::select! {
        () = cancel.cancelled() => {
            eprintln!();
            Answer::Interrupted
        }
        read = read => match read {
            Ok(Some(line)) => Answer::Line(line),
            _ => Answer::Nothing,
        },
    }
}

/// The message for an interrupted prompt.
const INTERRUPTED: &str = "interrupted — nothing was changed";

/// A progress bar with bytes, rate and ETA on a terminal; a plain line per
/// 10% otherwise.
struct Reporter {
    bar: Option<ProgressBar>,
    last_decile: Mutex<Option<u64>>,
}

impl Reporter {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Reporter {
            bar,
            last_decile: Mutex::new(None),
        }
    }

    fn event(&self, event: InstallEvent) {
        match event {
            InstallEvent::Downloading { url } => eprintln!("Downloading {url}"),
            InstallEvent::Progress { done, total } => self.progress(done, total),
            InstallEvent::Verifying => eprintln!("Verifying the archive's SHA256"),
            InstallEvent::Extracting => {
                if let Some(bar) = &self.bar {
                    bar.finish_and_clear();
                }
                eprintln!("Extracting");
            }
            InstallEvent::CreatingVenv { python } => eprintln!("Creating a venv with {python}"),
            InstallEvent::InstallingPackages { count } => {
                eprintln!("Installing {count} hash-pinned packages with pip")
            }
            InstallEvent::SmokeCheck => eprintln!("Checking the installed runtime"),
            // pip's lines, on a terminal only: a log file needs no chatter.
            InstallEvent::Tool { line } => {
                if std::io::stderr().is_terminal() {
                    eprintln!("  {line}");
                }
            }
        }
    }

    fn progress(&self, done: u64, total: Option<u64>) {
        if let Some(bar) = &self.bar {
            if let Some(total) = total {
                bar.set_length(total);
            }
            bar.set_position(done);
            return;
        }
        let Some(total) = total.filter(|total| *total > 0) else {
            return;
        };
        let decile = done * 10 / total;
        let Ok(mut last) = self.last_decile.lock() else {
            return;
        };
        if *last != Some(decile) {
            *last = Some(decile);
            eprintln!("downloaded {}% ({done} of {total} bytes)", decile * 10);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
