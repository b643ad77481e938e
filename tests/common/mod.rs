//! What every integration test needs to reach the real runtimes, run the
//! binary in a home of its own and read what it printed: [`Home`], and the
//! one set of snapshot filters every transcript shares. Each test crate uses
//! only part of it.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The MiniZinc runtime the tests adopt (Debian's lives under /usr).
pub fn test_runtime() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_TEST_RUNTIME").unwrap_or_else(|_| "/usr".into()))
}

/// A Python that can import ortools (`scripts/test` sets it to the venv's).
pub fn test_python() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_TEST_PYTHON").unwrap_or_else(|_| "python3".into()))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What the binary printed on stderr.
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// The whole transcript a person sees: exit code, stdout, stderr.
pub fn transcript(output: &Output) -> String {
    format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        output
            .status
            .code()
            .map_or("signal".to_owned(), |code| code.to_string()),
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// "2.6.4", "2.9.2": the runtime's version, naming the snapshot set.
pub fn minizinc_version() -> String {
    let output = std::process::Command::new(test_runtime().join("bin/minizinc"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.split("version ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown")
        .to_owned()
}

/// Which runtimes [`Home::adopt`] saves in the home's config.
pub enum Adopt {
    /// The test MiniZinc runtime.
    Minizinc,
    /// The test MiniZinc runtime and the test Python.
    Both,
}

/// A private home for one test: the binary's config dir, data dir and
/// `HOME` under one temporary directory, and nothing the environment names
/// (a runtime dir, an interpreter) let in.
pub struct Home {
    dir: tempfile::TempDir,
    /// Arguments every command of this home starts with.
    leading: Vec<OsString>,
    /// Variables every command of this home gets.
    env: Vec<(OsString, OsString)>,
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
            leading: Vec::new(),
            env: Vec::new(),
        }
    }

    /// This home with every command run on the test MiniZinc runtime
    /// (`--runtime-dir`, ahead of the command's own arguments).
    pub fn on_test_runtime(mut self) -> Home {
        self.leading = vec!["--runtime-dir".into(), test_runtime().into()];
        self
    }

    /// This home with `key=value` in every command's environment.
    pub fn with_env(mut self, key: &str, value: impl AsRef<OsStr>) -> Home {
        self.env.push((key.into(), value.as_ref().to_owned()));
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `solvergate ARGS` in this home, stdin empty.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_solvergate"));
        command.args(&self.leading).args(args);
        self.enter(&mut command);
        command.stdin(Stdio::null());
        command
    }

    /// Runs `solvergate ARGS` in this home to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs `solvergate ARGS` in this home with `input` on its stdin.
    pub fn run_with_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    }

    /// `WRAPPER… solvergate ARGS` in this home: the binary started by
    /// another program (`unshare --net --`), stdin empty.
    pub fn under(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let (program, wrapper_args) = wrapper.split_first().unwrap();
        let mut command = Command::new(program);
        command
            .args(wrapper_args)
            .arg(env!("CARGO_BIN_EXE_solvergate"))
            .args(&self.leading)
            .args(args);
        self.enter(&mut command);
        command.stdin(Stdio::null());
        command
    }

    /// `solvergate ARGS` in this home on a pseudo-terminal (util-linux
    /// `script`): what the command draws arrives on the child's stdout.
    pub fn on_a_terminal(&self, args: &[&str]) -> Command {
        let mut line = String::from(env!("CARGO_BIN_EXE_solvergate"));
        let leading = self.leading.iter().map(|arg| arg.to_str().unwrap());
        for arg in leading.chain(args.iter().copied()) {
            line.push(' ');
            line.push_str(arg);
        }
        let mut command = Command::new("script");
        command.args(["-qec", &line, "/dev/null"]);
        self.enter(&mut command);
        command
    }

    /// Gives `command` this home's dirs and variables.
    fn enter(&self, command: &mut Command) {
        command
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("HOME", self.path())
            .env_remove("SOLVERGATE_RUNTIME_DIR")
            .env_remove("SOLVERGATE_CPSAT_PYTHON")
            .envs(self.env.iter().map(|(key, value)| (key, value)));
    }

    /// Writes `body` to `name` in the home and returns the file's path.
    pub fn write(&self, name: &str, body: &str) -> String {
        let path = self.path().join(name);
        std::fs::write(&path, body).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// Where `configure-runtime` and `install-runtime` save their choices.
    pub fn config_file(&self) -> PathBuf {
        self.path().join("config/solvergate/install.json")
    }

    /// Saves the test runtimes in the home's config with
    /// `configure-runtime`, as a person would.
    pub fn adopt(&self, runtimes: Adopt) {
        let runtime = test_runtime();
        let python = test_python();
        let mut args = vec![
            "configure-runtime",
            "--runtime-dir",
            runtime.to_str().unwrap(),
        ];
        if let Adopt::Both = runtimes {
            args.extend(["--python", python.to_str().unwrap()]);
        }
        let output = self.run(&args);
        assert!(output.status.success(), "{}", stderr(&output));
    }

    /// Snapshot settings: this home's path shown as `[HOME]`, then the
    /// filters of [`snapshot_settings`].
    pub fn snapshot_settings(&self) -> insta::Settings {
        self.snapshot_settings_as("[HOME]")
    }

    /// [`Home::snapshot_settings`] with the home's path shown as
    /// `placeholder`.
    pub fn snapshot_settings_as(&self, placeholder: &str) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(&regex_escape(&self.path().to_string_lossy()), placeholder);
        add_shared_filters(&mut settings);
        settings
    }
}

/// Snapshot settings with the filters every transcript shares: clock times,
/// elapsed milliseconds, the private scratch dirs runs work in and the
/// staging dirs installs build in.
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    add_shared_filters(&mut settings);
    settings
}

fn add_shared_filters(settings: &mut insta::Settings) {
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[TIME]");
    settings.add_filter(r"elapsed:   \d+ ms", "elapsed:   [N] ms");
    settings.add_filter(r"/\S*/solvergate-\S*?/", "[scratch]/");
    settings.add_filter(r"\.solvergate-staging-\w+", ".solvergate-staging-[ID]");
}

/// Names the snapshot set by the test runtime's version (`minizinc-2.6.4`):
/// for transcripts whose words the runtime decides.
pub fn per_runtime(settings: &mut insta::Settings) {
    settings.set_snapshot_suffix(format!("minizinc-{}", minizinc_version()));
}

/// A replayed artifact's runtime line, whose versions are the machine's.
pub const REPLAY_VERSIONS: (&str, &str) = (
    r"runtime: .* at the save, .* now",
    "runtime: [VERSION] at the save, [VERSION] now",
);

/// `text` as a regular expression that matches it literally.
/// The kernel exempts root from RLIMIT_NPROC: as root the process limit is
/// not enforced under rlimits, and a note says so. The same snapshot holds
/// for root and for an ordinary user.
#[allow(dead_code)]
pub fn limit_filters(settings: &mut insta::Settings) {
    settings.add_filter(
        r"processes (\d+) \((rlimit|none)\)",
        "processes $1 ([rlimit, none as root])",
    );
    settings.add_filter(r"(?m)^  note: processes are not bounded: .*\n", "");
}

/// A `--json` result that ended at the memory limit of `value` MiB.
#[allow(dead_code)]
pub fn assert_memory_breach(result: &serde_json::Value, value: u64) {
    assert_eq!(result["status"], "error", "{result}");
    let diagnostic = &result["diagnostic"];
    assert_eq!(diagnostic["category"], "resource_limit", "{result}");
    assert_eq!(diagnostic["details"]["limit"], "memory", "{result}");
    assert_eq!(diagnostic["details"]["value"], value, "{result}");
}

pub fn regex_escape(text: &str) -> String {
    let mut escaped = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
