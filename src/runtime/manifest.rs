//! The runtime manifest: pinned download URLs and SHA256 hashes per
//! platform, compiled into the binary from `runtime-manifest.toml`.
//!
//! A pin changes only together with its hash; the installer refuses any
//! archive whose hash differs.

use serde::Deserialize;

/// The manifest shipped with this build.
pub const BUILTIN: &str = include_str!("../../runtime-manifest.toml");

#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub minizinc: MinizincPins,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MinizincPins {
    pub version: String,
    #[serde(rename = "bundle")]
    pub bundles: Vec<Bundle>,
}

/// One platform's pinned archive.
#[derive(Debug, Clone, Deserialize)]
pub struct Bundle {
    /// `<os>-<arch>`, e.g. `linux-x86_64`.
    pub platform: String,
    pub url: String,
    pub sha256: String,
    /// Archive format, e.g. `tar.gz`.
    pub archive: String,
    /// Top-level directory inside the archive that becomes the runtime root.
    #[serde(default)]
    pub strip_prefix: Option<String>,
}

impl Manifest {
    /// Parses a manifest text.
    pub fn parse(text: &str) -> Result<Manifest, toml::de::Error> {
        toml::from_str(text)
    }

    /// The manifest compiled into this binary.
    pub fn builtin() -> Result<Manifest, toml::de::Error> {
        Manifest::parse(BUILTIN)
    }

    /// The pinned bundle for `platform`, if there is one.
    pub fn bundle_for(&self, platform: &str) -> Option<&Bundle> {
        self.minizinc
            .bundles
            .iter()
            .find(|bundle| bundle.platform == platform)
    }
}

/// This machine's platform key, e.g. `linux-x86_64`.
pub fn current_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_manifest_pins_linux_x86_64() {
        let manifest = Manifest::builtin().unwrap();
        assert_eq!(manifest.schema, 1);
        assert_eq!(manifest.minizinc.version, "2.9.7");
        let bundle = manifest.bundle_for("linux-x86_64").unwrap();
        assert!(
            bundle
                .url
                .ends_with("MiniZincIDE-2.9.7-bundle-linux-x86_64.tgz")
        );
        assert_eq!(
            bundle.sha256,
            "7e78d3a1d6feec2f5b6a43628632decb6995755ade92ff4e51a2188c54ca6399"
        );
        assert!(manifest.bundle_for("plan9-mips").is_none());
    }
}
