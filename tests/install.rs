//! `solvergate install-runtime` against a loopback HTTP server started by
//! the test: good installs, re-installs, refusals, broken downloads, hostile
//! archives and interruptions. After every failure nothing may be left: no
//! target, no staging dir, no config.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

mod common;
use common::{Home, stderr, transcript};

const PREFIX: &str = "FakeMiniZinc-bundle";

/// How the loopback server answers every request.
#[derive(Clone)]
enum Serve {
    Ok(Vec<u8>),
    Status(u16),
    /// Announces the full length, sends half, closes.
    Truncated(Vec<u8>),
    /// Chunked: one chunk, then the connection drops.
    Dropped(Vec<u8>),
    /// The full body, 4 KiB every 100 ms.
    Slow(Vec<u8>),
}

/// Starts a server on 127.0.0.1 and returns the URL of `/bundle.tgz`.
fn serve(mode: Serve) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => request.push(byte[0]),
                    _ => break,
                }
            }
            let _ = respond(&mut stream, &mode);
        }
    });
    format!("http://127.0.0.1:{port}/bundle.tgz")
}

fn respond(stream: &mut std::net::TcpStream, mode: &Serve) -> std::io::Result<()> {
    let head = |length: usize| {
        format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n")
    };
    match mode {
        Serve::Ok(body) => {
            stream.write_all(head(body.len()).as_bytes())?;
            stream.write_all(body)
        }
        Serve::Status(code) => write!(
            stream,
            "HTTP/1.1 {code} Nope\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Serve::Truncated(body) => {
            stream.write_all(head(body.len()).as_bytes())?;
            stream.write_all(&body[..body.len() / 2])
        }
        Serve::Dropped(body) => {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            )?;
            let half = &body[..body.len() / 2];
            write!(stream, "{:x}\r\n", half.len())?;
            stream.write_all(half)?;
            stream.write_all(b"\r\n")
        }
        Serve::Slow(body) => {
            stream.write_all(head(body.len()).as_bytes())?;
            for chunk in body.chunks(4096) {
                stream.write_all(chunk)?;
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
    }
}

/// One archive entry; raw names so hostile paths survive the tar builder.
#[derive(Clone, Copy)]
enum Entry<'a> {
    Dir(&'a str),
    File(&'a str, &'a [u8], u32),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Fifo(&'a str),
    CharDevice(&'a str),
}

fn tar_gz(entries: &[Entry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        let (name, kind, body, mode, link): (&str, tar::EntryType, &[u8], u32, Option<&str>) =
            match entry {
                Entry::Dir(name) => (name, tar::EntryType::Directory, b"", 0o755, None),
                Entry::File(name, body, mode) => (name, tar::EntryType::Regular, body, *mode, None),
                Entry::Symlink(name, target) => {
                    (name, tar::EntryType::Symlink, b"", 0o777, Some(target))
                }
                Entry::Hardlink(name, target) => {
                    (name, tar::EntryType::Link, b"", 0o644, Some(target))
                }
                Entry::Fifo(name) => (name, tar::EntryType::Fifo, b"", 0o644, None),
                Entry::CharDevice(name) => (name, tar::EntryType::Char, b"", 0o644, None),
            };
        header.set_entry_type(kind);
        header.set_size(body.len() as u64);
        header.set_mode(mode);
        let raw = header.as_old_mut();
        raw.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_cksum();
        builder.append(&header, body).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

const FAKE_MINIZINC: &[u8] = b"#!/bin/sh\n\
case \"$1\" in\n\
  --version) echo 'MiniZinc to FlatZinc converter, version 2.9.7 (fake)';;\n\
  --solvers-json) echo '[{\"id\": \"org.gecode.gecode\", \"name\": \"Gecode\", \"version\": \"6.3.0\", \"stdFlags\": [\"-a\"], \"tags\": [\"cp\"], \"extraInfo\": {\"isDefault\": true}}]';;\n\
  *) exit 2;;\n\
esac\n";

fn good_bundle() -> Vec<u8> {
    tar_gz(&[
        Entry::Dir("FakeMiniZinc-bundle/"),
        Entry::Dir("FakeMiniZinc-bundle/bin/"),
        Entry::File("FakeMiniZinc-bundle/bin/minizinc", FAKE_MINIZINC, 0o755),
        Entry::Dir("FakeMiniZinc-bundle/lib/"),
        Entry::File(
            "FakeMiniZinc-bundle/lib/libmzn.so.1",
            b"not really a library",
            0o644,
        ),
        Entry::Symlink("FakeMiniZinc-bundle/lib/libmzn.so", "libmzn.so.1"),
        Entry::Hardlink(
            "FakeMiniZinc-bundle/lib/libmzn.so.copy",
            "FakeMiniZinc-bundle/lib/libmzn.so.1",
        ),
    ])
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Manifests, installs and what they leave, in a private home.
impl Home {
    fn manifest(&self, url: &str, sha256: &str, platform: &str) -> PathBuf {
        let path = self.path().join("manifest.toml");
        std::fs::write(
            &path,
            format!(
                "schema = 1\n[minizinc]\nversion = \"2.9.7\"\n[[minizinc.bundle]]\nplatform = \"{platform}\"\nurl = \"{url}\"\nsha256 = \"{sha256}\"\narchive = \"tar.gz\"\nstrip_prefix = \"{PREFIX}\"\n"
            ),
        )
        .unwrap();
        path
    }

    fn install(&self, manifest: &Path, target: &Path, extra: &[&str]) -> Output {
        let mut args = vec![
            "install-runtime",
            "--only",
            "minizinc",
            "--manifest",
            manifest.to_str().unwrap(),
            "--runtime-dir",
            target.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn runtimes(&self) -> PathBuf {
        let dir = self.path().join("runtimes");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Everything the install left in the runtimes dir besides `keep`.
    fn leftovers(&self, keep: &[&str]) -> Vec<String> {
        std::fs::read_dir(self.runtimes())
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !keep.contains(&name.as_str()))
            .collect()
    }

    /// Asserts a failed install (exit 1) left nothing: no target, no
    /// config, nothing in the runtimes dir.
    fn assert_left_nothing(&self, name: &str, output: &Output, target: &Path) {
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stderr(output));
        assert!(!target.exists(), "{name}: target created");
        assert!(!self.config_file().exists(), "{name}: config written");
        assert!(
            self.leftovers(&[]).is_empty(),
            "{name}: left {:?}",
            self.leftovers(&[])
        );
    }
}

/// Installs what `mode` serves, pinned to `sha256`, in a new home: it must
/// fail saying `expected` and leave nothing behind.
fn refused_leaving_nothing(name: &str, mode: Serve, sha256: &str, expected: &str) {
    let home = Home::new();
    let manifest = home.manifest(&serve(mode), sha256, &platform());
    let target = home.runtimes().join("minizinc");
    let output = home.install(&manifest, &target, &["--yes"]);
    assert!(
        stderr(&output).contains(expected),
        "{name}: {}",
        stderr(&output)
    );
    home.assert_left_nothing(name, &output, &target);
}

#[test]
fn installs_verifies_and_remembers_the_runtime() {
    let home = Home::new();
    let bundle = good_bundle();
    let manifest = home.manifest(
        &serve(Serve::Ok(bundle.clone())),
        &sha256(&bundle),
        &platform(),
    );
    let target = home.runtimes().join("minizinc");
    let output = home.install(&manifest, &target, &["--yes"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Installed MiniZinc 2.9.7"));
    assert!(
        stderr(&output).contains("downloaded 100%"),
        "{}",
        stderr(&output)
    );

    assert!(target.join("bin/minizinc").is_file());
    assert_eq!(
        std::fs::read_link(target.join("lib/libmzn.so")).unwrap(),
        PathBuf::from("libmzn.so.1")
    );
    assert!(target.join("lib/libmzn.so.copy").is_file());
    let marker: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(target.join(".solvergate-runtime.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker["version"], "2.9.7");
    assert_eq!(marker["sha256"], sha256(&bundle));
    assert!(
        marker["source_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert!(marker["installed_at"].as_str().unwrap().ends_with('Z'));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.config_file()).unwrap()).unwrap();
    assert_eq!(config["runtime_dir"], target.to_str().unwrap());
    assert!(
        home.leftovers(&["minizinc"]).is_empty(),
        "{:?}",
        home.leftovers(&["minizinc"])
    );

    // The saved location is what later commands use.
    let check = home
        .command(&["check-runtime", "--only", "minizinc", "--json"])
        .output()
        .unwrap();
    assert!(check.status.success());
    let status: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(status["source"], "config");
    assert!(
        status["minizinc_version"]
            .as_str()
            .unwrap()
            .contains("2.9.7")
    );

    // Re-install over our own install: needs --yes when nobody can be asked.
    let again = home.install(&manifest, &target, &[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--yes"), "{}", stderr(&again));
    std::fs::write(target.join("stale-file"), "from the old install").unwrap();
    let replaced = home.install(&manifest, &target, &["--yes"]);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert!(
        !target.join("stale-file").exists(),
        "the old tree is replaced wholesale"
    );
    assert!(home.leftovers(&["minizinc"]).is_empty());
}

#[test]
fn installs_from_a_local_archive_with_the_same_check() {
    let home = Home::new();
    let bundle = good_bundle();
    let archive = home.path().join("bundle.tgz");
    std::fs::write(&archive, &bundle).unwrap();
    // The URL is never used: nothing listens there.
    let manifest = home.manifest(
        "http://127.0.0.1:9/unused.tgz",
        &sha256(&bundle),
        &platform(),
    );
    let target = home.runtimes().join("minizinc");
    let output = home.install(
        &manifest,
        &target,
        &["--yes", "--from-archive", archive.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(target.join("bin/minizinc").is_file());
    let marker: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(target.join(".solvergate-runtime.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        marker["source_archive"].as_str(),
        Some(archive.to_str().unwrap()),
        "the marker names the archive it came from: {marker}"
    );

    let tampered = home.path().join("tampered.tgz");
    let mut bytes = bundle.clone();
    bytes.extend_from_slice(b"extra");
    std::fs::write(&tampered, &bytes).unwrap();
    let other = home.runtimes().join("other");
    let refused = home.install(
        &manifest,
        &other,
        &["--yes", "--from-archive", tampered.to_str().unwrap()],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("SHA256 mismatch"));
    assert!(!other.exists());
}

#[test]
fn refuses_an_unmanaged_directory_whatever_the_flags() {
    let home = Home::new();
    let bundle = good_bundle();
    let manifest = home.manifest(
        &serve(Serve::Ok(bundle.clone())),
        &sha256(&bundle),
        &platform(),
    );
    let target = home.runtimes().join("checkout");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious.txt"), "keep me").unwrap();
    let output = home.install(&manifest, &target, &["--yes"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("not installed by solvergate"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(target.join("precious.txt")).unwrap(),
        "keep me"
    );
    assert!(!home.config_file().exists());
    assert!(home.leftovers(&["checkout"]).is_empty());
}

#[test]
fn a_non_terminal_without_yes_is_told_what_to_pass() {
    let home = Home::new();
    let bundle = good_bundle();
    let manifest = home.manifest(
        &serve(Serve::Ok(bundle.clone())),
        &sha256(&bundle),
        &platform(),
    );
    let output = home
        .command(&[
            "install-runtime",
            "--only",
            "minizinc",
            "--manifest",
            manifest.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("pass --yes"),
        "{}",
        stderr(&output)
    );
    assert!(!home.config_file().exists());
}

#[test]
fn a_platform_without_a_bundle_points_at_configure_runtime() {
    let home = Home::new();
    let manifest = home.manifest("http://127.0.0.1:9/x.tgz", &"0".repeat(64), "plan9-mips");
    let target = home.runtimes().join("minizinc");
    let output = home.install(&manifest, &target, &["--yes"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("configure-runtime"),
        "{}",
        stderr(&output)
    );
}

/// Every broken download fails cleanly: message, no target, no staging, no config.
#[test]
fn broken_downloads_leave_nothing_behind() {
    let bundle = good_bundle();
    let cases: Vec<(&str, Serve, String, &str)> = vec![
        (
            "wrong hash",
            Serve::Ok(bundle.clone()),
            "0".repeat(64),
            "SHA256 mismatch",
        ),
        ("404", Serve::Status(404), sha256(&bundle), "HTTP 404"),
        ("500", Serve::Status(500), sha256(&bundle), "HTTP 500"),
        (
            "truncated body",
            Serve::Truncated(bundle.clone()),
            sha256(&bundle),
            "download failed",
        ),
        (
            "dropped connection",
            Serve::Dropped(bundle.clone()),
            sha256(&bundle),
            "download failed",
        ),
    ];
    for (name, mode, hash, expected) in cases {
        refused_leaving_nothing(name, mode, &hash, expected);
    }
}

#[test]
fn hostile_archives_are_refused() {
    // A bundle with its minizinc, and `extra` after it.
    let bin = |extra: &[Entry<'static>]| {
        let mut entries = vec![
            Entry::Dir("FakeMiniZinc-bundle/"),
            Entry::File("FakeMiniZinc-bundle/bin/minizinc", FAKE_MINIZINC, 0o755),
        ];
        entries.extend_from_slice(extra);
        entries
    };
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        (
            "absolute path",
            bin(&[Entry::File("/tmp/solvergate-evil", b"x", 0o644)]),
            "absolute path",
        ),
        (
            "dot-dot",
            bin(&[Entry::File("FakeMiniZinc-bundle/../../evil", b"x", 0o644)]),
            "`..`",
        ),
        (
            "absolute symlink",
            bin(&[Entry::Symlink("FakeMiniZinc-bundle/etc", "/etc")]),
            "absolute",
        ),
        (
            "escaping symlink",
            bin(&[Entry::Symlink(
                "FakeMiniZinc-bundle/lib/up",
                "../../../outside",
            )]),
            "leaves the root",
        ),
        (
            "write through a symlinked parent",
            vec![
                Entry::Dir("FakeMiniZinc-bundle/"),
                Entry::Dir("FakeMiniZinc-bundle/real/"),
                Entry::Symlink("FakeMiniZinc-bundle/alias", "real"),
                Entry::File("FakeMiniZinc-bundle/alias/file", b"x", 0o644),
            ],
            "is a symlink",
        ),
        (
            "hardlink out of the root",
            bin(&[Entry::Hardlink("FakeMiniZinc-bundle/passwd", "/etc/passwd")]),
            "refusing",
        ),
        (
            "hardlink with dot-dot",
            bin(&[Entry::Hardlink(
                "FakeMiniZinc-bundle/x",
                "FakeMiniZinc-bundle/../../secret",
            )]),
            "refusing",
        ),
        (
            "symlink chain out of the root",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/a", "."),
                Entry::Symlink("FakeMiniZinc-bundle/b", "a/a/../.."),
            ]),
            "leaves the root",
        ),
        (
            "link through a link that climbs",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/bin/up", ".."),
                Entry::Symlink("FakeMiniZinc-bundle/esc", "bin/up/.."),
            ]),
            "leaves the root",
        ),
        (
            "a later link turns an earlier one outwards",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/b", "x/x/../.."),
                Entry::Symlink("FakeMiniZinc-bundle/x", "."),
            ]),
            "once the whole archive is extracted",
        ),
        (
            "dot-dot at the root",
            bin(&[Entry::Symlink("FakeMiniZinc-bundle/up", "..")]),
            "leaves the root",
        ),
        (
            "symlink loop",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/a", "b"),
                Entry::Symlink("FakeMiniZinc-bundle/b", "a"),
            ]),
            "more than 40 links",
        ),
        (
            "write through a link made after a file",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/alias", "bin"),
                Entry::File("FakeMiniZinc-bundle/alias/minizinc", b"x", 0o755),
            ]),
            "is a symlink",
        ),
        (
            "hardlink to a symlink",
            bin(&[
                Entry::Symlink("FakeMiniZinc-bundle/l", "bin/minizinc"),
                Entry::Hardlink("FakeMiniZinc-bundle/h", "FakeMiniZinc-bundle/l"),
            ]),
            "not a regular file",
        ),
        (
            "fifo",
            bin(&[Entry::Fifo("FakeMiniZinc-bundle/pipe")]),
            "FIFO",
        ),
        (
            "device",
            bin(&[Entry::CharDevice("FakeMiniZinc-bundle/tty")]),
            "device",
        ),
        (
            "wrong layout",
            bin(&[Entry::File("Other/bin/minizinc", b"x", 0o755)]),
            "top-level directory",
        ),
    ];
    for (name, entries, expected) in cases {
        let archive = tar_gz(&entries);
        let hash = sha256(&archive);
        refused_leaving_nothing(name, Serve::Ok(archive), &hash, expected);
    }
    assert!(!Path::new("/tmp/solvergate-evil").exists());
}

/// A local bundle that fails after its hash matched says why cause by
/// cause: an archive that is not gzip, a `minizinc` that cannot be started
/// (the cause says its own cause, printed once), one whose solver list is
/// not JSON (two causes deep); and an archive that is not there at all.
#[test]
fn a_broken_bundle_says_why_cause_by_cause() {
    const NO_CATALOG: &[u8] = b"#!/bin/sh\n\
case \"$1\" in\n\
  --version) echo 'MiniZinc to FlatZinc converter, version 2.9.7 (fake)';;\n\
  *) echo 'no solvers here';;\n\
esac\n";
    let bundle = |minizinc: &'static [u8]| {
        tar_gz(&[
            Entry::Dir("FakeMiniZinc-bundle/"),
            Entry::Dir("FakeMiniZinc-bundle/bin/"),
            Entry::File("FakeMiniZinc-bundle/bin/minizinc", minizinc, 0o755),
        ])
    };
    let cases: [(&str, Option<Vec<u8>>); 4] = [
        (
            "install_archive_not_gzip",
            Some(b"not a gzip stream".to_vec()),
        ),
        (
            "install_minizinc_does_not_start",
            Some(bundle(b"#!/nonexistent/interpreter\n")),
        ),
        ("install_catalog_not_json", Some(bundle(NO_CATALOG))),
        ("install_archive_missing", None),
    ];
    for (name, archive) in cases {
        let home = Home::new();
        let path = home.path().join("bundle.tgz");
        let hash = match &archive {
            Some(bytes) => {
                std::fs::write(&path, bytes).unwrap();
                sha256(bytes)
            }
            None => "0".repeat(64),
        };
        let manifest = home.manifest("http://127.0.0.1:9/unused.tgz", &hash, &platform());
        let target = home.runtimes().join("minizinc");
        let output = home.install(
            &manifest,
            &target,
            &["--yes", "--from-archive", path.to_str().unwrap()],
        );
        let transcript = transcript(&output);
        home.snapshot_settings()
            .bind(|| insta::assert_snapshot!(name, transcript));
        home.assert_left_nothing(name, &output, &target);
    }
}

#[test]
fn an_interrupted_download_leaves_nothing_behind() {
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        let home = Home::new();
        // ~40 KiB at 4 KiB per 100 ms: about a second of download.
        let mut bundle = good_bundle();
        bundle.extend(std::iter::repeat_n(0u8, 40_000));
        let manifest = home.manifest(
            &serve(Serve::Slow(bundle.clone())),
            &sha256(&bundle),
            &platform(),
        );
        let target = home.runtimes().join("minizinc");
        let child = home
            .command(&[
                "install-runtime",
                "--only",
                "minizinc",
                "--manifest",
                manifest.to_str().unwrap(),
                "--runtime-dir",
                target.to_str().unwrap(),
                "--yes",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the download has started writing, then interrupt.
        let started = Instant::now();
        while home.leftovers(&[]).is_empty() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let output = child.wait_with_output().unwrap();
        // An interrupted install exits 130, as after Ctrl-C at a prompt.
        assert_eq!(
            output.status.code(),
            Some(130),
            "{signal}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("cancelled"),
            "{signal}: {}",
            stderr(&output)
        );
        assert!(!target.exists(), "{signal}: target created");
        assert!(!home.config_file().exists(), "{signal}: config written");
        assert!(
            home.leftovers(&[]).is_empty(),
            "{signal}: left {:?}",
            home.leftovers(&[])
        );
    }
}

/// A command on a pseudo-terminal (util-linux `script`), driven as a person
/// would: wait until a prompt is on the screen, then type.
struct Terminal {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    fn start(home: &Home, args: &[&str]) -> Terminal {
        let mut child = home
            .on_a_terminal(args)
            .env("COLUMNS", "100")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux script must be installed");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = seen.clone();
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = stdout.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Terminal {
            stdin: child.stdin.take(),
            child,
            seen,
            reader: Some(reader),
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits until `text` is on the screen. The minute is a guard against a
    /// hang, not a measurement.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.screen().contains(text) {
            assert!(
                Instant::now() < deadline,
                "never saw {text:?}; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_in(&mut self, input: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the command to end: its exit code and what the screen
    /// shows, one line per line, each as last drawn.
    fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        drop(self.stdin.take());
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), as_drawn(&self.screen()))
    }
}

/// A terminal's bytes as the lines it finally shows: `\r\n` ends a line, a
/// bare `\r` (with or without an erase-line sequence) starts it over.
fn as_drawn(raw: &str) -> String {
    let mut text = String::new();
    for line in raw.split("\r\n") {
        let shown = line
            .split('\r')
            .map(|part| part.replace("\u{1b}[2K", ""))
            .rfind(|part| !part.trim().is_empty())
            .unwrap_or_default();
        text.push_str(&shown);
        text.push('\n');
    }
    text
}

/// Snapshots a terminal session with the paths and run-specific values
/// filtered.
fn snapshot_terminal(name: &str, home: &Home, code: Option<i32>, screen: &str) {
    let transcript = format!("exit code: {code:?}\n--- terminal\n{screen}");
    let mut settings = home.snapshot_settings();
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    settings.bind(|| insta::assert_snapshot!(name, transcript));
}

#[test]
fn a_terminal_is_asked_where_and_whether_to_replace() {
    let home = Home::new();
    let manifest = served_manifest(&home);
    let default_target = home.path().join("data/solvergate/minizinc");

    // Enter accepts the default location.
    let mut terminal = at_the_location_prompt(&home, &manifest);
    terminal.type_in("\n");
    let (code, screen) = terminal.finish();
    snapshot_terminal("prompt_accepts_the_default", &home, code, &screen);
    assert_eq!(code, Some(0), "{screen}");
    assert!(default_target.join("bin/minizinc").is_file());

    // Over our own install, the terminal is asked to confirm; "n" keeps it.
    std::fs::write(default_target.join("keep-me"), "old install").unwrap();
    let mut terminal = at_the_location_prompt(&home, &manifest);
    terminal.type_in("\n");
    terminal.wait_for("[y/N] ");
    terminal.type_in("n\n");
    let (code, screen) = terminal.finish();
    snapshot_terminal("prompt_keeps_the_old_install_on_no", &home, code, &screen);
    assert_eq!(code, Some(1), "{screen}");
    assert!(
        default_target.join("keep-me").exists(),
        "a refused replace keeps the old tree"
    );

    // "y" replaces it.
    let mut terminal = at_the_location_prompt(&home, &manifest);
    terminal.type_in("\n");
    terminal.wait_for("[y/N] ");
    terminal.type_in("y\n");
    let (code, screen) = terminal.finish();
    snapshot_terminal("prompt_replaces_on_yes", &home, code, &screen);
    assert_eq!(code, Some(0), "{screen}");
    assert!(!default_target.join("keep-me").exists());
}

#[test]
fn ctrl_c_at_the_prompt_aborts_at_once_and_changes_nothing() {
    let home = Home::new();
    let manifest = served_manifest(&home);
    let mut terminal = at_the_location_prompt(&home, &manifest);
    terminal.type_in("\u{3}");
    let (code, screen) = terminal.finish();
    snapshot_terminal("prompt_ctrl_c", &home, code, &screen);
    assert_eq!(code, Some(130), "{screen}");
    assert!(!home.path().join("data/solvergate/minizinc").exists());
    assert!(
        !home.path().join("data").exists(),
        "{:?}",
        home.leftovers(&[])
    );
    assert!(home.leftovers(&[]).is_empty());
}

#[test]
fn a_tilde_in_the_prompt_answer_is_the_home_directory() {
    let home = Home::new();
    let manifest = served_manifest(&home);
    let mut terminal = at_the_location_prompt(&home, &manifest);
    terminal.type_in("~/runtimes/mzn\n");
    let (code, screen) = terminal.finish();
    snapshot_terminal("prompt_tilde_answer", &home, code, &screen);
    assert_eq!(code, Some(0), "{screen}");
    assert!(
        home.path().join("runtimes/mzn/bin/minizinc").is_file(),
        "{screen}"
    );
    assert!(
        !home.path().join("~").exists(),
        "a literal ~ directory was made"
    );
}

/// `install-runtime --only minizinc --manifest MANIFEST` on a terminal,
/// once it asks where to install.
fn at_the_location_prompt(home: &Home, manifest: &str) -> Terminal {
    let args = [
        "install-runtime",
        "--only",
        "minizinc",
        "--manifest",
        manifest,
    ];
    let terminal = Terminal::start(home, &args);
    terminal.wait_for("]: ");
    terminal
}

/// A manifest whose bundle a loopback server serves intact.
fn served_manifest(home: &Home) -> String {
    let bundle = good_bundle();
    let manifest = home.manifest(
        &serve(Serve::Ok(bundle.clone())),
        &sha256(&bundle),
        &platform(),
    );
    manifest.to_str().unwrap().to_owned()
}

#[test]
fn a_failed_download_says_why_once_and_what_to_do() {
    let home = Home::new();
    // Nothing listens on the discard port.
    let manifest = home.manifest(
        "http://127.0.0.1:9/bundle.tgz",
        &"0".repeat(64),
        &platform(),
    );
    let target = home.runtimes().join("deeper/still/minizinc");
    let output = home.install(&manifest, &target, &["--yes"]);
    let transcript = transcript(&output);
    home.snapshot_settings()
        .bind(|| insta::assert_snapshot!("install_download_refused", transcript));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).matches("127.0.0.1:9").count(),
        2,
        "the URL once, plus the Downloading line"
    );
    assert!(!target.exists(), "a failed install leaves no directory");
    assert!(
        home.leftovers(&[]).is_empty(),
        "the parents it created are gone too: {:?}",
        home.leftovers(&[])
    );
}
