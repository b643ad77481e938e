//! `solvergate install-runtime`: the prompts, the progress bar and the
//! words around [`crate::runtime::install`], which does the work.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

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
}

fn refuse(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("solvergate: {message}");
    ExitCode::from(1)
}

pub async fn install_runtime(
    options: InstallOptions,
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    let manifest = match &options.manifest {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|error| format!("could not read the manifest {}: {error}", path.display()))
            .and_then(|text| {
                Manifest::parse(&text)
                    .map_err(|error| format!("{} is not a valid manifest: {error}", path.display()))
            }),
        None => {
            Manifest::builtin().map_err(|error| format!("the built-in manifest is broken: {error}"))
        }
    };
    let manifest = match manifest {
        Ok(manifest) => manifest,
        Err(message) => return refuse(message),
    };
    let platform = manifest::current_platform();
    let Some(bundle) = manifest.bundle_for(&platform).cloned() else {
        return refuse(format!(
            "there is no pinned MiniZinc bundle for {platform}; install MiniZinc yourself and adopt it with `solvergate configure-runtime --runtime-dir <dir>` (the directory holding bin/minizinc)"
        ));
    };
    let version = manifest.minizinc.version.clone();

    let interactive = std::io::stdin().is_terminal();
    let target = match choose_target(&options, settings, dirs, interactive, &version) {
        Ok(target) => target,
        Err(message) => return refuse(message),
    };
    let replace_confirmed = match install::target_state(&target) {
        TargetState::Unmanaged => {
            return refuse(install::InstallError::Unmanaged { path: target });
        }
        TargetState::Managed(marker) if !options.yes => {
            if !interactive {
                return refuse(format!(
                    "{} holds a solvergate runtime (MiniZinc {}); pass --yes to replace it",
                    target.display(),
                    marker.version
                ));
            }
            let question = format!(
                "Replace the solvergate runtime at {} (MiniZinc {}, installed {})? [y/N] ",
                target.display(),
                marker.version,
                marker.installed_at
            );
            match ask(&question) {
                Some(answer) if matches!(answer.trim(), "y" | "Y" | "yes") => true,
                _ => return refuse("nothing was changed"),
            }
        }
        TargetState::Managed(_) => true,
        TargetState::Missing | TargetState::Empty => false,
    };

    let source = match options.from_archive {
        Some(path) => ArchiveSource::Local(path),
        None => ArchiveSource::Download,
    };
    let request = InstallRequest {
        bundle,
        version: version.clone(),
        target,
        source,
        replace_confirmed,
        config_dir: dirs.config_dir.clone(),
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::shutdown_signal().await;
        on_signal.cancel();
    });
    let reporter = Reporter::new();
    let outcome =
        install::install_minizinc(&request, &|event| reporter.event(event), &cancel).await;
    reporter.finish();
    match outcome {
        Ok(outcome) => {
            println!(
                "Installed MiniZinc {} into {} ({}; {} solvers).",
                outcome.marker.version,
                outcome.target.display(),
                outcome.minizinc_version,
                outcome.solver_count
            );
            println!(
                "SHA256 {} verified; location saved in {}.",
                outcome.marker.sha256,
                outcome.config_path.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => refuse(error),
    }
}

/// `--runtime-dir`, or the prompt on a terminal, or (with `--yes`) the
/// usual resolution: env, saved config, default.
fn choose_target(
    options: &InstallOptions,
    settings: &Settings,
    dirs: &UserDirs,
    interactive: bool,
    version: &str,
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
        eprintln!("solvergate: warning: {warning}");
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
    let answer = ask(&format!(
        "Install MiniZinc {version} into [{}]: ",
        location.dir.display()
    ))
    .ok_or("no answer; nothing was changed")?;
    let answer = answer.trim();
    if answer.is_empty() {
        Ok(location.dir)
    } else {
        absolute(Path::new(answer))
    }
}

fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::path::absolute(dir).map_err(|error| format!("cannot resolve {}: {error}", dir.display()))
}

fn ask(question: &str) -> Option<String> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
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
            InstallEvent::SmokeCheck => eprintln!("Checking the installed minizinc"),
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
