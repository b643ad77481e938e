//! The `rust-version` we declare must be one every dependency in the lock
//! file accepts: no package may declare a newer one. (The toolchain itself is
//! not fetched here; this checks what the packages say about themselves.)

use std::process::Command;

/// `1.89` and `1.89.0` alike, as three numbers.
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text
        .split('.')
        .filter_map(|part| part.parse().ok())
        .collect();
    parts.resize(3, 0);
    parts
}

#[test]
fn no_dependency_needs_a_newer_rust_than_we_declare() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let ours = version(env!("CARGO_PKG_RUST_VERSION"));
    assert!(ours[0] > 0, "Cargo.toml declares no rust-version");
    let newer: Vec<String> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|package| {
            let declared = package["rust_version"].as_str()?;
            (version(declared) > ours).then(|| format!("{} {declared}", package["name"]))
        })
        .collect();
    assert!(
        newer.is_empty(),
        "rust-version {} is older than these dependencies need: {newer:?}",
        env!("CARGO_PKG_RUST_VERSION")
    );
}
