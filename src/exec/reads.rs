//! The read boundary of a sandboxed run: what it may read besides its
//! scratch dir. The system's programs, libraries and the few files of
//! `/etc` a program needs to start ([`SYSTEM`]); the runtimes' own trees,
//! registered by the runtime layer when it resolves them ([`allow`]); the
//! directories the operator names (`SOLVERGATE_READ_ROOTS`,
//! `--allow-read`); and what the call names, which its command carries
//! ([`super::ChildCommand::reads_beside`]). Nothing else: not the user's
//! home, not `/etc/shadow`, not another run's scratch dir, and of `/proc`
//! only the machine-wide files and the child's own entry (which the child
//! adds to its ruleset itself): never another process's `environ`, where
//! the server's HTTP token and every variable of its user's other
//! processes are.
//!
//! Every root is opened once (`O_PATH`) and its descriptor kept, so a run's
//! ruleset costs one `landlock_add_rule` a root and no path walk.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, RwLock};

use landlock::{
    ABI, AccessFs, BitFlags, PathBeneath, PathFd, RulesetCreated, RulesetCreatedAttr, RulesetError,
};

/// What every sandboxed run may read and execute, where it exists: the
/// system's programs and libraries, the parts of `/etc` the dynamic
/// linker, the C library's name and locale lookups and Debian's Python
/// read, the machine-wide files of `/proc` (never another process's
/// entry: the child adds its own, see `confine`), the CPU list
/// (`os.cpu_count`) and the harmless devices.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/os-release",
    "/etc/alternatives",
    "/etc/mime.types",
    // OpenSSL's configuration (Python's hashlib loads it) and the public
    // certificates; never /etc/ssl/private.
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
    // Debian's MiniZinc (2.9) keeps its generated preferences here.
    "/var/lib/minizinc",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// A root kept open.
struct Root {
    path: PathBuf,
    fd: PathFd,
    dir: bool,
}

impl Root {
    fn open(path: &Path) -> Option<Root> {
        let dir = std::fs::metadata(path).ok()?.is_dir();
        let fd = PathFd::new(path).ok()?;
        Some(Root {
            path: path.to_path_buf(),
            fd,
            dir,
        })
    }
}

/// Every root but the call's own: the system's, then each runtime's and
/// the operator's in the order they were allowed.
static ROOTS: RwLock<Vec<Root>> = RwLock::new(Vec::new());

fn roots() -> &'static RwLock<Vec<Root>> {
    static SYSTEM_OPENED: OnceLock<()> = OnceLock::new();
    SYSTEM_OPENED.get_or_init(|| {
        let mut roots = ROOTS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut system: Vec<Root> = SYSTEM
            .iter()
            .filter_map(|path| Root::open(Path::new(path)))
            .collect();
        // Debian's Python reads its `sitecustomize` from /etc/python3.N.
        if let Ok(entries) = std::fs::read_dir("/etc") {
            let mut pythons: Vec<PathBuf> = entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.starts_with("python"))
                })
                .collect();
            pythons.sort();
            system.extend(pythons.iter().filter_map(|path| Root::open(path)));
        }
        system.append(&mut roots);
        *roots = system;
    });
    &ROOTS
}

/// Lets every sandboxed run read (and execute) beneath each of `paths`
/// from now on: a runtime's tree, the operator's roots. A path already
/// allowed, or that cannot be opened, is skipped.
pub fn allow<I, P>(paths: I)
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    let roots = roots();
    let paths: Vec<PathBuf> = {
        let known = roots
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        paths
            .into_iter()
            .map(|path| path.as_ref().to_path_buf())
            .filter(|path| path.is_absolute() && !known.iter().any(|root| root.path == *path))
            .collect()
    };
    if paths.is_empty() {
        return;
    }
    let opened: Vec<Root> = paths.iter().filter_map(|path| Root::open(path)).collect();
    let mut known = roots
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for root in opened {
        if !known.iter().any(|known| known.path == root.path) {
            known.push(root);
        }
    }
}

/// What reading `file` takes: its dir, or the file alone where the dir is
/// too broad to grant whole ([`may_read_whole`]); a symlink's target the
/// same way.
pub fn beside(file: &Path) -> Vec<PathBuf> {
    let resolved = file.canonicalize().ok().filter(|real| real != file);
    std::iter::once(file)
        .chain(resolved.as_deref())
        .map(|file| match file.parent() {
            Some(dir) if may_read_whole(dir) => dir.to_path_buf(),
            _ => file.to_path_buf(),
        })
        .collect()
}

/// The operator's roots (`SOLVERGATE_READ_ROOTS`, `--allow-read`), set once
/// at start-up.
static OPERATOR: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Lets every sandboxed run read beneath the operator's `dirs` too.
pub fn allow_operator(dirs: Vec<PathBuf>) {
    allow(&dirs);
    let _ = OPERATOR.set(dirs);
}

/// The operator's roots, for `check_runtime` and the banner.
pub fn operator_roots() -> &'static [PathBuf] {
    OPERATOR.get().map_or(&[], Vec::as_slice)
}

/// Every root a sandboxed run may read beneath, besides its scratch dir and
/// what its call names (for `check_runtime`).
pub fn allowed() -> Vec<PathBuf> {
    roots()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .map(|root| root.path.clone())
        .collect()
}

/// Set by `benches/reads.rs` alone: rulesets leave reads unhandled, as they
/// did before the boundary, so the bench can pair the two.
static UNBOUNDED_FOR_BENCH: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// For `benches/reads.rs`: `true` builds rulesets without the read
/// boundary (reads unhandled) from now on. Not a setting: no server calls it.
#[doc(hidden)]
pub fn bench_without_boundary(without: bool) {
    UNBOUNDED_FOR_BENCH.store(without, std::sync::atomic::Ordering::Relaxed);
}

/// Whether rulesets handle reads (always, but in the bench's unbounded
/// half).
pub(super) fn bounded() -> bool {
    !UNBOUNDED_FOR_BENCH.load(std::sync::atomic::Ordering::Relaxed)
}

/// The access a read root grants: read and execute, as a file allows it.
fn read_access(dir: bool) -> BitFlags<AccessFs> {
    let read = AccessFs::from_read(ABI::V3);
    if dir {
        read
    } else {
        read & AccessFs::from_file(ABI::V3)
    }
}

/// Adds the read rules to a run's ruleset: every allowed root, then
/// `named` (what the call named; skipped where it cannot be opened).
pub(super) fn add_rules(
    ruleset: RulesetCreated,
    named: &[PathBuf],
) -> Result<RulesetCreated, RulesetError> {
    let roots = roots()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let ruleset = ruleset.add_rules(roots.iter().map(|root| {
        Ok::<_, RulesetError>(PathBeneath::new(root.fd.as_fd(), read_access(root.dir)))
    }))?;
    drop(roots);
    ruleset.add_rules(named.iter().filter_map(|path| {
        let root = Root::open(path)?;
        Some(Ok::<_, RulesetError>(PathBeneath::new(
            root.fd,
            read_access(root.dir),
        )))
    }))
}

/// Whether a call that names a file in `dir` may read all of `dir`: not
/// when `dir` is the file system's root, the user's home or above it, or
/// the temp dir (where every run's scratch dir lives) or above it. Then
/// only the named file is read.
pub fn may_read_whole(dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    dir.parent().is_some() && !broad().iter().any(|inner| inner.starts_with(&dir))
}

/// The directories no call's directory may contain (canonical, found once):
/// the user's home, the temp dir and this process's scratch root.
fn broad() -> &'static [PathBuf] {
    static BROAD: OnceLock<Vec<PathBuf>> = OnceLock::new();
    BROAD.get_or_init(|| {
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
        [
            home,
            Some(std::env::temp_dir()),
            super::watchdog::scratch_root(),
        ]
        .into_iter()
        .flatten()
        .filter_map(|dir| dir.canonicalize().ok())
        .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broad_directories_are_never_read_whole() {
        assert!(!may_read_whole(Path::new("/")));
        assert!(!may_read_whole(&std::env::temp_dir()));
        if let Some(dirs) = directories::BaseDirs::new() {
            assert!(!may_read_whole(dirs.home_dir()));
            if let Some(parent) = dirs.home_dir().parent() {
                assert!(!may_read_whole(parent));
            }
        }
        let inner = tempfile::tempdir().unwrap();
        assert!(may_read_whole(inner.path()));
        assert!(!may_read_whole(&inner.path().join("missing")));
    }

    #[test]
    fn allowed_roots_are_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        allow([dir.path(), dir.path()]);
        allow([dir.path().join("missing")]);
        let allowed = allowed();
        assert_eq!(allowed.iter().filter(|path| *path == dir.path()).count(), 1);
        assert!(!allowed.contains(&dir.path().join("missing")));
        assert!(allowed.contains(&PathBuf::from("/usr")));
    }
}
