//! The trampoline every confined child starts through: this binary,
//! re-executed as `solvergate __confine [OPTIONS] -- PROGRAM ARGS…`.
//!
//! It is a fresh single-threaded process, so it can do what the async
//! server must not do between fork and exec, in this order, then exec the
//! program, which inherits all of it:
//!
//! 1. join the run's cgroups (`--cgroup FILE`: a v1 `tasks` or v2
//!    `cgroup.procs` to write `0`, ourselves, to), so nothing of the tree
//!    runs outside them; on v2 it clones itself into the group instead and
//!    waits outside as the clone's supervisor ([`super::clone_into`]);
//! 2. set rlimits, soft and hard (`--rlimit fsize=BYTES`, `data=BYTES`,
//!    `nproc=N`), so the program cannot raise them again;
//! 3. with `--userns`, move into a user namespace of its own, mapped to our
//!    own ids, where `RLIMIT_NPROC` counts only this run's processes (when
//!    the namespace cannot be made, `nproc` is not set at all rather than
//!    counted against every process of the user);
//! 4. with `--sandbox`, confine itself ([`super::sandbox`]): no network,
//!    writes only beneath each `--write DIR`;
//! 5. write what it enforced to `--report FILE` (opened before Landlock
//!    forbids it, closed at exec).
//!
//! A step that must hold (joining a cgroup, an rlimit) and fails stops the
//! run with exit code 127 and a line on stderr: a child never runs with
//! less confinement than it was given without saying so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nix::sys::resource::{Resource, setrlimit};

use super::clone_into::{self, Side};
use super::sandbox::{self, SandboxReport};

/// The hidden argument that makes the binary a trampoline.
pub const CONFINE_ARG: &str = "__confine";

/// The binary confined children start through: this executable, read at
/// each start (`/proc/self/exe` when its file is gone, a rebuild having
/// replaced it).
pub fn trampoline() -> PathBuf {
    std::env::current_exe()
        .ok()
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("/proc/self/exe"))
}

/// The sandbox's start-up probe: confines `/bin/true` through `trampoline`
/// and reads what it reports; turns the sandbox on unless neither part
/// could be enforced. Returns the
/// report (`unsupported` twice when the probe itself could not run).
pub fn probe_sandbox(trampoline: &Path) -> SandboxReport {
    let unsupported = SandboxReport {
        landlock: "unsupported".into(),
        network: "unsupported".into(),
    };
    let found = probe(trampoline, |dir| Confinement {
        sandbox: true,
        write: vec![dir.to_path_buf()],
        ..Confinement::default()
    })
    .and_then(|report| sandbox::parse_report(&report))
    .unwrap_or(unsupported);
    sandbox::record_support(found.clone());
    found
}

/// Whether a child gets a user namespace of its own, in which
/// `RLIMIT_NPROC` counts only its run's processes: the start-up probe asks
/// the trampoline for one (and an `nproc` of `processes`) and reads what
/// it enforced. Some kernels refuse unprivileged user namespaces (Ubuntu's
/// AppArmor restriction, `user.max_user_namespaces` at 0).
pub fn probe_user_namespace(trampoline: &Path, processes: u64) -> bool {
    probe(trampoline, |_| Confinement {
        rlimits: vec![("nproc".into(), processes)],
        userns: true,
        ..Confinement::default()
    })
    .is_some_and(|report| sandbox::report_field(&report, "processes") == Some("rlimit"))
}

/// Runs `/bin/true` through `trampoline` under `confinement` (given a
/// fresh dir of its own) and returns what it reported; `None` when the
/// probe could not run or the trampoline refused.
fn probe(trampoline: &Path, confinement: impl FnOnce(&Path) -> Confinement) -> Option<String> {
    let dir = tempfile::tempdir().ok()?;
    let report = dir.path().join("report");
    let confinement = Confinement {
        report: Some(report.clone()),
        ..confinement(dir.path())
    };
    let status = std::process::Command::new(trampoline)
        .args(confinement.command_line(Path::new("/bin/true"), &[]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    status
        .success()
        .then(|| std::fs::read_to_string(&report).ok())?
}

/// What the trampoline is asked to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Confinement {
    /// Files to join the run's cgroups through (see `cgroup::join_file`).
    pub cgroups: Vec<PathBuf>,
    /// rlimits to set: `fsize`, `data`, `nproc`.
    pub rlimits: Vec<(String, u64)>,
    /// A user namespace of the run's own (for `nproc`).
    pub userns: bool,
    /// Landlock and a network namespace.
    pub sandbox: bool,
    /// Where a sandboxed child may write.
    pub write: Vec<PathBuf>,
    /// Where the trampoline reports.
    pub report: Option<PathBuf>,
}

impl Confinement {
    /// The trampoline's command line for `program args`.
    pub fn command_line(&self, program: &Path, args: &[OsString]) -> Vec<OsString> {
        let mut line: Vec<OsString> = vec![CONFINE_ARG.into()];
        for file in &self.cgroups {
            line.extend(["--cgroup".into(), file.into()]);
        }
        for (name, value) in &self.rlimits {
            line.extend(["--rlimit".into(), format!("{name}={value}").into()]);
        }
        if self.userns {
            line.push("--userns".into());
        }
        if self.sandbox {
            line.push("--sandbox".into());
        }
        for dir in &self.write {
            line.extend(["--write".into(), dir.into()]);
        }
        if let Some(report) = &self.report {
            line.extend(["--report".into(), report.into()]);
        }
        line.push("--".into());
        line.push(program.into());
        line.extend(args.iter().cloned());
        line
    }

    /// The same, as the warm forker's child reads it (`forker.py`).
    pub fn to_json(&self) -> serde_json::Value {
        let text = |path: &PathBuf| path.to_string_lossy().into_owned();
        let rlimits: serde_json::Map<String, serde_json::Value> = self
            .rlimits
            .iter()
            .map(|(name, value)| (name.clone(), serde_json::Value::from(*value)))
            .collect();
        serde_json::json!({
            "cgroups": self.cgroups.iter().map(text).collect::<Vec<_>>(),
            "rlimits": rlimits,
            "userns": self.userns,
            "sandbox": self.sandbox,
            "write": self.write.iter().map(text).collect::<Vec<_>>(),
            "report": self.report.as_ref().map(text),
        })
    }

    /// Reads the options back; the rest (`PROGRAM ARGS…`) stays in `args`.
    fn parse(args: &mut impl Iterator<Item = OsString>) -> Result<Confinement, BadArguments> {
        let mut confinement = Confinement::default();
        while let Some(arg) = args.next() {
            let mut value = |name: &'static str| args.next().ok_or(BadArguments::NoValue(name));
            match arg.to_str() {
                Some("--cgroup") => confinement.cgroups.push(value("--cgroup")?.into()),
                Some("--write") => confinement.write.push(value("--write")?.into()),
                Some("--report") => confinement.report = Some(value("--report")?.into()),
                Some("--rlimit") => {
                    let text = value("--rlimit")?;
                    let parsed = text.to_str().and_then(|text| {
                        let (name, number) = text.split_once('=')?;
                        Some((name.to_owned(), number.parse::<u64>().ok()?))
                    });
                    let Some(rlimit) = parsed else {
                        return Err(BadArguments::Rlimit(text));
                    };
                    confinement.rlimits.push(rlimit);
                }
                Some("--userns") => confinement.userns = true,
                Some("--sandbox") => confinement.sandbox = true,
                Some("--") => return Ok(confinement),
                _ => return Err(BadArguments::Unexpected(arg)),
            }
        }
        Err(BadArguments::NoProgram)
    }
}

/// A trampoline command line the executor would never write.
#[derive(Debug, thiserror::Error)]
enum BadArguments {
    /// An option without its value.
    #[error("{0} needs a value")]
    NoValue(&'static str),
    /// An `--rlimit` that is not `NAME=NUMBER`.
    #[error("--rlimit wants NAME=NUMBER, got {0:?}")]
    Rlimit(OsString),
    /// Something that is not an option.
    #[error("unexpected argument {0:?}")]
    Unexpected(OsString),
    /// No `--` (and no program after it).
    #[error("no `--` before the program")]
    NoProgram,
}

/// The trampoline: confine this process, report, exec the program.
pub fn serve(args: impl Iterator<Item = OsString>) -> ExitCode {
    let mut args = args;
    let confinement = match Confinement::parse(&mut args) {
        Ok(confinement) => confinement,
        Err(problem) => return refuse(&problem.to_string()),
    };
    let Some(program) = args.next() else {
        return refuse("no program to run");
    };
    // Opened before Landlock forbids writing it; closed at exec.
    let report = confinement
        .report
        .as_ref()
        .map(|path| (std::fs::File::create(path), path));
    // On v2, the rest happens in a clone made inside the group, this
    // process waiting for it outside ([`clone_into`]).
    let cloned = match v2_group(&confinement.cgroups).map(clone_into::clone_into) {
        Some(Ok(Side::Supervisor(clone))) => return clone_into::supervise(clone),
        Some(Ok(Side::Clone)) => true,
        Some(Err(_)) | None => false,
    };
    if !cloned {
        for file in &confinement.cgroups {
            // `0` is the writer itself: on v1's `tasks` the one thread we
            // are, which the kernel moves without its global lock.
            if let Err(error) = std::fs::write(file, "0") {
                return refuse(&format!(
                    "could not join the run's cgroup {}: {error}",
                    file.display()
                ));
            }
        }
    }
    let mut processes = "none";
    let userns = confinement.userns && own_user_namespace();
    for (name, value) in &confinement.rlimits {
        let resource = match name.as_str() {
            "fsize" => Resource::RLIMIT_FSIZE,
            "data" => Resource::RLIMIT_DATA,
            // Counted against every process of the user without a
            // namespace of our own: better unset than wrong.
            "nproc" if !userns => continue,
            "nproc" => Resource::RLIMIT_NPROC,
            other => return refuse(&format!("unknown rlimit {other}")),
        };
        if let Err(error) = setrlimit(resource, *value, *value) {
            return refuse(&format!("could not set {name} to {value}: {error}"));
        }
        if name == "nproc" {
            processes = "rlimit";
        }
    }
    let mut text = format!("processes={processes}\n");
    if confinement.sandbox {
        let network = sandbox::isolate_network();
        let landlock = sandbox::restrict_writes(&confinement.write);
        text.push_str(&format!("landlock={landlock}\nnetwork={network}\n"));
    }
    // Kept open (it closes on a successful exec) to say why an exec failed.
    let mut report = report.and_then(|(file, path)| {
        let mut file = file.ok();
        let written = file
            .as_mut()
            .map(|file| std::io::Write::write_all(file, text.as_bytes()));
        if !matches!(written, Some(Ok(()))) {
            eprintln!(
                "solvergate: could not write the confinement report {}",
                path.display()
            );
        }
        file
    });
    let error = exec(&program, args);
    // The executor turns this into the spawn error a direct start gives.
    if let (Some(file), Some(errno)) = (report.as_mut(), error.raw_os_error()) {
        let _ = std::io::Write::write_all(file, format!("{EXEC_ERRNO}={errno}\n").as_bytes());
    }
    refuse(&format!(
        "could not run {}: {error}",
        Path::new(&program).display()
    ))
}

/// The group a run joins through a single v2 `cgroup.procs`, if that is
/// what it was given.
fn v2_group(files: &[PathBuf]) -> Option<&Path> {
    match files {
        [file] if file.file_name().is_some_and(|name| name == "cgroup.procs") => file.parent(),
        _ => None,
    }
}

/// Replaces this process with `program args` (`execv`: no `PATH` search,
/// and no retry through `/bin/sh` of a file the kernel cannot run, so a
/// broken program fails here as it would have failed to spawn). Returns
/// only on failure.
fn exec(program: &OsString, args: impl Iterator<Item = OsString>) -> std::io::Error {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStringExt;
    let text = |value: OsString| {
        CString::new(value.into_vec())
            .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EINVAL))
    };
    let argv = std::iter::once(program.clone())
        .chain(args)
        .map(text)
        .collect::<Result<Vec<CString>, _>>();
    match argv {
        Ok(argv) => match nix::unistd::execv(&argv[0], &argv) {
            Err(errno) => std::io::Error::from(errno),
        },
        Err(error) => error,
    }
}

/// The report line of an exec that failed: `exec_errno=N`.
pub(super) const EXEC_ERRNO: &str = "exec_errno";

/// Why the trampoline could not exec the program, from its report.
pub(super) fn exec_error(report: &Path) -> Option<std::io::Error> {
    let text = std::fs::read_to_string(report).ok()?;
    let errno = sandbox::report_field(&text, EXEC_ERRNO)?
        .parse::<i32>()
        .ok()?;
    Some(std::io::Error::from_raw_os_error(errno))
}

fn refuse(problem: &str) -> ExitCode {
    eprintln!("solvergate confine: {problem}");
    ExitCode::from(127)
}

/// A user namespace of our own that maps our ids to themselves; false when
/// the kernel or its policy refuses one.
fn own_user_namespace() -> bool {
    use nix::sched::{CloneFlags, unshare};
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    if unshare(CloneFlags::CLONE_NEWUSER).is_err() {
        return false;
    }
    std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_reads_back() {
        let confinement = Confinement {
            cgroups: vec!["/sys/fs/cgroup/x/cgroup.procs".into()],
            rlimits: vec![("fsize".into(), 1024), ("data".into(), 4096)],
            userns: true,
            sandbox: true,
            write: vec!["/tmp/run".into()],
            report: Some("/tmp/report".into()),
        };
        let line = confinement.command_line(Path::new("/usr/bin/minizinc"), &["--version".into()]);
        assert_eq!(line[0], CONFINE_ARG);
        let mut rest = line.into_iter().skip(1);
        assert_eq!(Confinement::parse(&mut rest).unwrap(), confinement);
        let rest: Vec<OsString> = rest.collect();
        assert_eq!(rest, ["/usr/bin/minizinc", "--version"]);
    }

    #[test]
    fn bad_options_are_refused() {
        let mut args = ["--rlimit".into(), "fsize".into()].into_iter();
        assert!(Confinement::parse(&mut args).is_err());
        let mut args = ["--bogus".into()].into_iter();
        assert!(Confinement::parse(&mut args).is_err());
        let mut args = std::iter::empty();
        assert!(Confinement::parse(&mut args).is_err());
    }
}
