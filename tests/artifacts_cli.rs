//! `solvergate replay` and `solvergate artifacts ls` as a person sees them:
//! artifacts saved through the library on the real runtimes, then the whole
//! terminal transcript (stdout, stderr, exit code) pinned as a snapshot with
//! paths, times and versions filtered out.

use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;

use solvergate::artifacts::{Artifacts, SaveModelRequest, SavePythonRequest, SaveStatus};
use solvergate::budget::Budget;
use solvergate::cpsat::Cpsat;
use solvergate::minizinc::{MiniZinc, SolveControls};
use solvergate::planner::{Planner, ResultStore};
use solvergate::progress::Progress;
use solvergate::runtime::cpsat::CpsatRuntime;
use solvergate::runtime::{LocationSource, Runtime, RuntimeLocation};
use tokio_util::sync::CancellationToken;

mod common;
use common::{Adopt, Home, REPLAY_VERSIONS, test_python, test_runtime, transcript};

const MODEL: &str = "int: n;\nvar 1..n: x;\nsolve maximize x;\n";
const DATA: &str = "n = 60;\n";
const CHECKER: &str = "int: n;\nint: x;\nconstraint x <= n;\noutput [\"CORRECT\\n\"];\n";
const SCRIPT: &str = "import json, os\nseed = int(os.environ.get('SOLVERGATE_CPSAT_SEED', '0'))\nprint(json.dumps({'status': 'feasible', 'objective': seed, 'solution': {'seed': seed}}))\n";
/// A script whose incumbent is different on every run.
const RESTLESS: &str = "import json, random\nvalue = random.SystemRandom().randint(10**11, 10**12 - 1)\nprint(json.dumps({'status': 'feasible', 'objective': value, 'solution': {'value': value}}))\n";

/// A home with both runtimes adopted.
fn adopted() -> Home {
    let home = Home::new();
    home.adopt(Adopt::Both);
    home
}

/// A service on the test runtimes, and saves made through it.
impl Home {
    fn service(&self) -> Artifacts {
        let minizinc = Arc::new(Runtime::new(RuntimeLocation {
            dir: test_runtime(),
            source: LocationSource::Flag,
        }));
        let cpsat = Arc::new(CpsatRuntime::at(test_python(), LocationSource::Flag, None));
        let minizinc = MiniZinc::new(minizinc);
        let planner = Planner::new(
            minizinc.clone(),
            ResultStore::new(self.path().join("planner"), 16),
        );
        Artifacts::new(
            minizinc,
            Cpsat::new(cpsat),
            planner,
            self.path().join("journal"),
        )
    }

    fn saves(&self) -> PathBuf {
        let saves = self.path().join("saves");
        std::fs::create_dir_all(&saves).unwrap();
        saves
    }

    /// Saves the MiniZinc fixture at `saves/<name>`.
    fn save_model(&self, name: &str) -> PathBuf {
        let target = self.saves().join(name);
        let request = SaveModelRequest {
            model: MODEL.to_owned(),
            data: Some(DATA.to_owned()),
            checker: Some(CHECKER.to_owned()),
            problem: None,
            solver: Some("gecode".to_owned()),
            timeout_ms: Budget::from_millis(20_000).unwrap(),
            controls: SolveControls::default(),
            target_dir: target.to_string_lossy().into_owned(),
            overwrite: false,
            portfolio_result: None,
        };
        let saved = block_on(self.service().save_minizinc(
            &request,
            &Progress::none(),
            &CancellationToken::new(),
        ))
        .unwrap();
        assert_eq!(saved.status, SaveStatus::Saved, "{saved:?}");
        target
    }

    /// Saves a CP-SAT script, seeded with 41, at `saves/<name>`.
    fn save_script(&self, name: &str, source: &str) -> PathBuf {
        let target = self.saves().join(name);
        let request = SavePythonRequest {
            source: source.to_owned(),
            target_dir: Some(target.to_string_lossy().into_owned()),
            script_timeout_ms: Budget::from_millis(20_000).unwrap(),
            problem: None,
            expectation: None,
            checker: None,
            checker_timeout_ms: None,
            overwrite: false,
            verify_only: false,
            seed: Some(41),
            config: None,
            experiment_result: None,
        };
        let saved = block_on(self.service().save_cpsat(
            &request,
            &Progress::none(),
            &CancellationToken::new(),
        ))
        .unwrap();
        assert!(saved.saved, "{saved:?}");
        target
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Runtime::new().unwrap().block_on(future)
}

/// Snapshots `output` with the home's path, times and versions filtered.
fn snapshot(name: &str, home: &Home, output: &Output) {
    snapshot_with(name, home, output, &[]);
}

/// [`snapshot`] with more filters.
fn snapshot_with(name: &str, home: &Home, output: &Output, extra: &[(&str, &str)]) {
    let mut settings = home.snapshot_settings();
    let (versions, replacement) = REPLAY_VERSIONS;
    settings.add_filter(versions, replacement);
    settings.add_filter(r"[0-9a-f]{64}", "[SHA256]");
    for (regex, replacement) in extra {
        settings.add_filter(regex, *replacement);
    }
    settings.bind(|| insta::assert_snapshot!(name, transcript(output)));
}

#[test]
fn replay_of_a_saved_model_reproduces() {
    let home = adopted();
    let target = home.save_model("n-model");
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot("replay_reproduced", &home, &output);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn replay_of_a_seeded_script_reproduces() {
    let home = adopted();
    let target = home.save_script("seeded", SCRIPT);
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot("replay_script_reproduced", &home, &output);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn replay_refuses_a_changed_model() {
    let home = adopted();
    let target = home.save_model("n-model");
    std::fs::write(
        target.join("model.mzn"),
        MODEL.replace("maximize", "minimize"),
    )
    .unwrap();
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot("replay_tampered", &home, &output);
    assert_eq!(output.status.code(), Some(4));
}

/// Editing a recorded control (the budget, a legacy manifest without a seal)
/// breaks the manifest's seal: replay refuses, naming the manifest.
#[test]
fn replay_refuses_an_edited_manifest() {
    let home = adopted();
    let target = home.save_model("n-model");
    let path = target.join(".solvergate-artifact.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut edited = original.clone();
    edited["minizinc"]["timeout_ms"] = 1000.into();
    std::fs::write(&path, edited.to_string()).unwrap();
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot("replay_edited_manifest", &home, &output);
    assert_eq!(output.status.code(), Some(4));

    let mut legacy = original;
    legacy["format_version"] = 1.into();
    legacy.as_object_mut().unwrap().remove("manifest_sha256");
    std::fs::write(&path, legacy.to_string()).unwrap();
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot("replay_unsealed_manifest", &home, &output);
    assert_eq!(output.status.code(), Some(4));
}

#[test]
fn replay_that_does_not_reproduce_says_why() {
    let home = adopted();
    let target = home.save_script("restless", RESTLESS);
    let output = home.run(&["replay", target.to_str().unwrap()]);
    snapshot_with(
        "replay_not_reproduced",
        &home,
        &output,
        &[
            (r"objective \d+", "objective [N]"),
            (r"\d+ came back", "[N] came back"),
            (
                r"(recorded|replayed)  feasible  \d+ *",
                "$1  feasible  [N]        ",
            ),
        ],
    );
    assert_eq!(output.status.code(), Some(5));
}

#[test]
fn replay_of_a_directory_that_is_not_an_artifact() {
    let home = adopted();
    let output = home.run(&["replay", home.saves().to_str().unwrap()]);
    snapshot("replay_not_an_artifact", &home, &output);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn artifacts_ls_lists_what_was_saved() {
    let home = adopted();
    home.save_model("n-model");
    home.save_script("seeded", SCRIPT);
    std::fs::create_dir_all(home.saves().join("not-an-artifact")).unwrap();
    let saves = home.saves();
    let output = home.run(&["artifacts", "ls", saves.to_str().unwrap()]);
    snapshot("artifacts_ls", &home, &output);
    assert_eq!(output.status.code(), Some(0));

    let missing = home.path().join("nowhere");
    let output = home.run(&["artifacts", "ls", missing.to_str().unwrap()]);
    snapshot("artifacts_ls_missing", &home, &output);
    assert_eq!(output.status.code(), Some(1));
}
