//! A minimal JSON-RPC client for the benches: talks to the built
//! `solvergate stdio` over pipes, so figures include the real transport.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The server binary the benches start: this build's, or another one
/// named by `SOLVERGATE_BENCH_BIN` (an older build, to compare on the same
/// machine in the same hour).
pub fn binary() -> PathBuf {
    std::env::var_os("SOLVERGATE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_solvergate")))
}

/// A minimal JSON-RPC client over the server's stdio.
pub struct Client {
    pub child_pid: u32,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    pub fn start(runtime: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> Client {
        let mut command = Command::new(binary());
        command
            .args(["--runtime-dir"])
            .arg(runtime)
            .arg("stdio")
            .args(extra_args)
            .envs(env.iter().copied());
        Client::spawn(command)
    }

    /// Any stdio MCP server (the reference, for a side-by-side run).
    pub fn spawn(mut command: Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start solvergate");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Client {
            child_pid: child.id(),
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("json");
            if message["id"] == id {
                return message;
            }
        }
    }

    pub fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The server's peak RSS so far.
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Client {
    /// Sends a request without waiting; read the answer with `read_response`.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next response, skipping notifications.
    pub fn read_response(&mut self) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("json");
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `min / median / max` of `samples`, in milliseconds.
pub fn spread(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let (min, max) = (samples[0], samples[samples.len() - 1]);
    let median = samples[samples.len() / 2];
    format!(
        "min {:8.2}  median {:8.2}  max {:8.2} ms  (n={})",
        ms(min),
        ms(median),
        ms(max),
        samples.len()
    )
}

/// The MiniZinc runtime root the benches measure: `SOLVERGATE_BENCH_RUNTIME`,
/// default `/usr`.
pub fn runtime_root() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_BENCH_RUNTIME").unwrap_or_else(|_| "/usr".into()))
}

/// [`runtime_root`] when it holds `bin/minizinc`; otherwise says so on
/// stderr and gives `None` (the bench then prints nothing else).
pub fn runtime_with_minizinc() -> Option<PathBuf> {
    let runtime = runtime_root();
    let minizinc = runtime.join("bin/minizinc");
    if minizinc.exists() {
        return Some(runtime);
    }
    eprintln!(
        "no MiniZinc at {}; set SOLVERGATE_BENCH_RUNTIME",
        minizinc.display()
    );
    None
}
