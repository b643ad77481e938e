//! `solvergate install-runtime`: the prompts, the progress bar and the
//! words around [`crate::runtime::install`], which does the work.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::args::{InstallArgs, RuntimeKind};
use super::paths::{Unresolvable, absolute};
use super::render;
use super::terminal::{refuse, refuse_error, shutdown_signal};
use crate::runtime::cpsat;
use crate::runtime::install::cpsat::CpsatInstallRequest;
use crate::runtime::install::{
    self, ArchiveSource, InstallError, InstallEvent, InstallRequest, TargetState,
};
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

/// Why one part of `install-runtime` installed nothing, or why it did not
/// start; the installer's own [`InstallError`] is kept whole as the cause.
#[derive(Debug, thiserror::Error)]
pub enum InstallFailure {
    #[error("could not read the manifest {}", .path.display())]
    ReadManifest {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid manifest", .path.display())]
    InvalidManifest {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("the built-in manifest is broken")]
    BrokenManifest(#[source] toml::de::Error),
    #[error(
        "there is no pinned MiniZinc bundle for {platform}; install MiniZinc yourself and adopt it with `solvergate configure-runtime --runtime-dir <dir>` (the directory holding bin/minizinc)"
    )]
    NoBundle { platform: String },
    #[error("the manifest pins no CP-SAT packages")]
    NoCpsatPins,
    #[error("{} holds a solvergate runtime ({version}); pass --yes to replace it", .path.display())]
    ReplaceNeedsYes { path: PathBuf, version: String },
    #[error("stdin is not a terminal, so nothing can be confirmed: pass --yes")]
    NothingToConfirmWith,
    #[error(
        "stdin is not a terminal, so there is no prompt: pass --yes to install into {} or --runtime-dir PATH --yes to choose",
        .default.display()
    )]
    NoPrompt { default: PathBuf },
    #[error("no answer; nothing was changed")]
    NoAnswer,
    #[error("nothing was changed")]
    Declined,
    #[error("interrupted — nothing was changed")]
    Interrupted,
    #[error(transparent)]
    Unresolvable(#[from] Unresolvable),
    #[error(transparent)]
    Install(#[from] InstallError),
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
        Err(failure) => return refuse_error(&failure),
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        on_signal.cancel();
    });
    let installer = Installer {
        options: &options,
        manifest: &manifest,
        settings,
        dirs,
        interactive: std::io::stdin().is_terminal(),
        reporter: Reporter::new(),
        cancel: &cancel,
    };
    // What happened to each part, for the closing summary.
    let mut summary: Vec<(&str, Result<(), InstallFailure>)> = Vec::new();
    for kind in [RuntimeKind::Minizinc, RuntimeKind::Cpsat] {
        if options.only.is_some_and(|only| only != kind) {
            continue;
        }
        // A part after an interrupted one is not started.
        if !summary.is_empty() && cancel.is_cancelled() {
            break;
        }
        let (name, outcome) = match kind {
            RuntimeKind::Minizinc => ("MiniZinc", installer.minizinc().await),
            RuntimeKind::Cpsat => ("CP-SAT", installer.cpsat().await),
        };
        installer.reporter.finish();
        if let Err(failure) = &outcome {
            eprintln!(
                "{}",
                render::failure(&format!("{name}: {failure}"), failure)
            );
        }
        summary.push((name, outcome));
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

fn load_manifest(path: Option<&Path>) -> Result<Manifest, InstallFailure> {
    match path {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| InstallFailure::ReadManifest {
                    path: path.to_path_buf(),
                    source,
                })?;
            Manifest::parse(&text).map_err(|source| InstallFailure::InvalidManifest {
                path: path.to_path_buf(),
                source,
            })
        }
        None => Manifest::builtin().map_err(InstallFailure::BrokenManifest),
    }
}

/// What both parts of an install share: the options, the manifest, where
/// things go, whether anyone can be asked, the progress and the Ctrl-C.
struct Installer<'a> {
    options: &'a InstallOptions,
    manifest: &'a Manifest,
    settings: &'a Settings,
    dirs: &'a UserDirs,
    interactive: bool,
    reporter: Reporter,
    cancel: &'a CancellationToken,
}

impl Installer<'_> {
    /// Whether replacing what is at `target` is allowed: never for a
    /// directory that is not ours, after --yes or a "y" for ours.
    async fn confirm_replace(&self, target: &Path) -> Result<bool, InstallFailure> {
        match install::target_state(target) {
            TargetState::Unmanaged => Err(InstallError::Unmanaged {
                path: target.to_path_buf(),
            }
            .into()),
            TargetState::Managed(_) if self.options.yes => Ok(true),
            TargetState::Managed(marker) => {
                if !self.interactive {
                    return Err(InstallFailure::ReplaceNeedsYes {
                        path: target.to_path_buf(),
                        version: marker.version,
                    });
                }
                let question = format!(
                    "Replace the solvergate runtime at {} ({}, installed {})? [y/N] ",
                    target.display(),
                    marker.version,
                    marker.installed_at
                );
                match ask(&question, self.cancel).await {
                    Answer::Line(answer) if matches!(answer.trim(), "y" | "Y" | "yes") => Ok(true),
                    Answer::Interrupted => Err(InstallFailure::Interrupted),
                    _ => Err(InstallFailure::Declined),
                }
            }
            TargetState::Missing | TargetState::Empty => Ok(false),
        }
    }

    async fn minizinc(&self) -> Result<(), InstallFailure> {
        let platform = manifest::current_platform();
        let bundle = self
            .manifest
            .bundle_for(&platform)
            .cloned()
            .ok_or(InstallFailure::NoBundle { platform })?;
        let version = self.manifest.minizinc.version.clone();
        let target = self.choose_target(&version).await?;
        let replace_confirmed = self.confirm_replace(&target).await?;
        let request = InstallRequest {
            bundle,
            version,
            target,
            source: match &self.options.from_archive {
                Some(path) => ArchiveSource::Local(path.clone()),
                None => ArchiveSource::Download,
            },
            replace_confirmed,
            config_dir: self.dirs.config_dir.clone(),
        };
        let outcome =
            install::install_minizinc(&request, &|event| self.reporter.event(event), self.cancel)
                .await?;
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

    async fn cpsat(&self) -> Result<(), InstallFailure> {
        let pins = self
            .manifest
            .cpsat
            .clone()
            .ok_or(InstallFailure::NoCpsatPins)?;
        let target = cpsat::default_venv(self.dirs);
        let replace_confirmed = self.confirm_replace(&target).await?;
        if !self.options.yes && !self.interactive {
            return Err(InstallFailure::NothingToConfirmWith);
        }
        let request = CpsatInstallRequest {
            pins,
            base_python: self.options.python.clone(),
            target,
            replace_confirmed,
            config_dir: self.dirs.config_dir.clone(),
            search_path: self.settings.search_path.clone(),
        };
        let outcome = install::cpsat::install_cpsat(
            &request,
            &|event| self.reporter.event(event),
            self.cancel,
        )
        .await?;
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
    async fn choose_target(&self, version: &str) -> Result<PathBuf, InstallFailure> {
        let options = self.options;
        if let Some(dir) = &options.runtime_dir {
            if !options.yes && !self.interactive {
                return Err(InstallFailure::NothingToConfirmWith);
            }
            return Ok(absolute(dir)?);
        }
        let (location, warning) = runtime::resolve_location(None, self.settings, self.dirs);
        if let Some(warning) = warning {
            eprintln!("{}", render::problem(&format!("warning: {warning}")));
        }
        if options.yes {
            return Ok(location.dir);
        }
        if !self.interactive {
            return Err(InstallFailure::NoPrompt {
                default: location.dir,
            });
        }
        let question = format!(
            "Install MiniZinc {version} into [{}]: ",
            location.dir.display()
        );
        let answer = match ask(&question, self.cancel).await {
            Answer::Line(answer) => answer,
            Answer::Nothing => return Err(InstallFailure::NoAnswer),
            Answer::Interrupted => return Err(InstallFailure::Interrupted),
        };
        let answer = answer.trim();
        if answer.is_empty() {
            Ok(location.dir)
        } else {
            Ok(absolute(&expand_home(answer))?)
        }
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
