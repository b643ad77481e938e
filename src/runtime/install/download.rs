//! The only network code in solvergate: stream one pinned archive to disk,
//! hashing while it streams.
//!
//! Nothing else in the crate may build an HTTP client; a test scans the
//! sources to keep it that way. TLS is rustls with the ring provider.

use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::InstallError;

/// Streams `url` into `destination` and returns the SHA256 of what arrived.
/// `progress` gets (bytes so far, total if the server said).
pub async fn fetch(
    url: &str,
    destination: &Path,
    progress: &(dyn Fn(u64, Option<u64>) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<String, InstallError> {
    // Several installs in one process would each try; only the first counts.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|error| InstallError::Network(format!("could not set up HTTPS: {error}")))?;
    let network = |error: reqwest::Error| InstallError::Network(describe(url, &error));
    let mut response = tokio::select! {
        response = client.get(url).send() => response.map_err(network)?,
        () = cancel.cancelled() => return Err(InstallError::Cancelled),
    };
    let status = response.status();
    if !status.is_success() {
        return Err(InstallError::HttpStatus {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let total = response.content_length();
    let mut file = tokio::fs::File::create(destination)
        .await
        .map_err(|source| InstallError::io("create", destination, source))?;
    let mut hasher = Sha256::new();
    let mut received: u64 = 0;
    progress(0, total);
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk.map_err(network)?,
            () = cancel.cancelled() => return Err(InstallError::Cancelled),
        };
        let Some(chunk) = chunk else { break };
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|source| InstallError::io("write", destination, source))?;
        received += chunk.len() as u64;
        progress(received, total);
    }
    file.flush()
        .await
        .map_err(|source| InstallError::io("write", destination, source))?;
    if let Some(total) = total
        && received != total
    {
        return Err(InstallError::Network(format!(
            "{url}: the download stopped after {received} of {total} bytes"
        )));
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The SHA256 of a local file, read in blocks.
pub fn hash_file(path: &Path) -> Result<String, InstallError> {
    let mut file =
        std::fs::File::open(path).map_err(|source| InstallError::io("open", path, source))?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        let read = std::io::Read::read(&mut file, &mut block)
            .map_err(|source| InstallError::io("read", path, source))?;
        if read == 0 {
            break;
        }
        hasher.update(&block[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// A download error as a person can act on it: what failed (the URL once),
/// every cause in the chain, and what to do instead.
fn describe(url: &str, error: &reqwest::Error) -> String {
    let headline = if error.is_connect() {
        "could not connect"
    } else if error.is_timeout() {
        "timed out"
    } else if error.is_body() || error.is_decode() {
        "the transfer broke off"
    } else if error.is_redirect() {
        "too many redirects"
    } else {
        "the request failed"
    };
    let mut text = format!("{url}: {headline}");
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        text.push_str(&format!("\n  Caused by: {inner}"));
        cause = inner.source();
    }
    text.push_str(
        "\n  help: on a machine without access, download the archive elsewhere and pass --from-archive FILE,\n        or adopt a MiniZinc you already have: solvergate configure-runtime --runtime-dir /usr",
    );
    text
}
