//! Only `install-runtime` may reach out over the network, and only
//! `serve --http` may listen on it.
//!
//! Two proofs: the sources name an HTTP client or an outgoing socket in
//! exactly one file and a listening socket or HTTP server in exactly one
//! other, and the other commands do their whole job inside a network
//! namespace with no interface up (`unshare --map-root-user --net`: a user
//! namespace makes it work without root where the kernel allows
//! unprivileged namespaces).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::Home;

/// A user and network namespace with no interface up, for the binary.
const NO_NETWORK: &[&str] = &["unshare", "--map-root-user", "--net", "--"];

const NETWORK_FILE: &str = "src/runtime/install/download.rs";
const SERVER_FILE: &str = "src/cli/serve_command.rs";

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The source files (relative to the crate) that name any of `needles`.
fn files_naming(needles: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut users = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if needles.iter().any(|needle| text.contains(needle)) {
            users.push(
                file.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    users
}

#[test]
fn only_the_downloader_names_an_http_client() {
    assert_eq!(
        files_naming(&["reqwest", "TcpStream", "UdpSocket"]),
        [NETWORK_FILE],
        "outgoing network code outside the installer"
    );
}

#[test]
fn only_serve_http_listens() {
    assert_eq!(
        files_naming(&["TcpListener", "hyper::", "axum::", "StreamableHttpService"]),
        [SERVER_FILE],
        "a listening socket or HTTP server outside serve --http"
    );
}

/// Whether this machine lets us make a network namespace as a user
/// namespace's root; the reason when not, so the tests can say why they
/// did not run instead of failing.
fn namespaces_unavailable() -> Option<String> {
    match Command::new("unshare")
        .args(["--map-root-user", "--net", "true"])
        .output()
    {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(format!(
            "`unshare --map-root-user --net` is refused here ({}); run as root or allow unprivileged user namespaces",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Some(format!("unshare (util-linux) cannot run: {error}")),
    }
}

#[test]
fn commands_work_without_a_network() {
    if let Some(reason) = namespaces_unavailable() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new().on_test_runtime();
    let model = home.write("m.mzn", "var 1..5: x; solve maximize x;\n");
    let commands: [&[&str]; 3] = [
        &["check-runtime", "--only", "minizinc"],
        &["list-solvers"],
        &["solve", &model, "--json"],
    ];
    for args in commands {
        let output = home
            .under(NO_NETWORK, args)
            .output()
            .expect("unshare (util-linux) must be installed");
        assert!(
            output.status.success(),
            "{args:?} failed without a network: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn an_mcp_session_solves_without_a_network() {
    use std::io::{BufRead, BufReader, Write};
    if let Some(reason) = namespaces_unavailable() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new().on_test_runtime();
    let mut child = home
        .under(NO_NETWORK, &["stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("unshare (util-linux) must be installed");
    let mut stdin = child.stdin.take().unwrap();
    let messages = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"solve_minizinc_model","arguments":{"model":"var 1..5: x; solve maximize x;"}}}"#,
    ];
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let answer = loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the server closed stdout"
        );
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message;
        }
    };
    drop(stdin);
    let _ = child.wait();
    assert_eq!(answer["result"]["structuredContent"]["status"], "optimal");
    assert_eq!(answer["result"]["structuredContent"]["objective"], 5);
}
