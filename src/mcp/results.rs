//! Every answer kept as an MCP resource: a solve's, a script run's, a
//! race's, a job's, a core's, a save's, a plan's, a correction's or a
//! sheet read's structured result is written whole to the data dir and
//! read back by URI, so a client whose model sees only the text part (a
//! summary) can still read every value.
//!
//! - `solvergate://results/{id}` is the whole result, as JSON (up to
//!   [`READ_LIMIT`]; past it, where its values are and how long each is);
//! - `solvergate://results/{id}/solution/{name}{?offset,limit}` is one
//!   value of its solution, or a slice of a list, on its own.
//!
//! Results are kept per scope as jobs are (`jobs::store::JobScope`): every
//! stdio server of the user shares one scope, so a restarted server reads
//! what the last one kept; an HTTP session reads only its own; requests
//! without a session share theirs, by id. An id is the tool and a hash of
//! the result, so the same result keeps one id and a job polled until it
//! ends is kept once, with its result. The folder
//! is bounded by count and by bytes over every scope, the oldest removed
//! first, and each file is written whole or not at all (`kept`).

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rmcp::model::{CallToolResult, ContentBlock, ProtocolVersion, Resource, ResourceTemplate};
use serde_json::{Map, Value};

use crate::jobs::store::JobScope;
use crate::mcp::{bounded, render};

/// The URI prefix of a kept result.
pub const PREFIX: &str = "solvergate://results/";

/// The template of one value of a kept result's solution.
pub const VALUE_TEMPLATE: &str = "solvergate://results/{id}/solution/{name}{?offset,limit}";

/// The most of a result `resources/read` returns whole, in bytes.
pub const READ_LIMIT: u64 = 8 * 1024 * 1024;

/// The data dir's folder of kept results.
pub const DIR: &str = "results";

/// The most results kept, over every scope.
pub const MAX_COUNT: usize = 256;

/// The most bytes of results kept, over every scope.
pub const MAX_BYTES: u64 = 512 * 1024 * 1024;

/// The most results `resources/list` shows, newest first.
const LISTED: usize = 50;

/// The tools whose results are kept: answers, not listings or receipts.
pub const KEPT_TOOLS: &[&str] = &[
    "solve_minizinc_model",
    "solve_minizinc_files",
    "run_cpsat_python",
    "run_cpsat_python_file",
    "run_cpsat_python_file_checked",
    "run_cpsat_python_experiment",
    "get_solve_job",
    "get_portfolio_job",
    "get_cpsat_python_job",
    "find_unsat_core",
    "find_unsat_core_files",
    "save_verified_minizinc_model",
    "save_verified_cpsat_python",
    "save_load_plan",
    "replay_artifact",
    "plan_load",
    "correct_values",
    "optimize_expression",
    "load_tabular_data",
];

/// Where one scope's results are, and the bounds of the whole folder.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The folder of every scope (the data dir's `results`).
    root: PathBuf,
    /// This scope's folder under it.
    dir: PathBuf,
    max_count: usize,
    max_bytes: u64,
    /// The most a tool result's content takes in its response (see
    /// `bounded`); the kept file is always whole.
    response_limit: usize,
}

/// A result just kept.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: String,
    pub uri: String,
    pub path: PathBuf,
    pub bytes: u64,
}

/// A kept result, as `resources/list` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub tool: String,
    pub bytes: u64,
    modified: SystemTime,
}

/// Why a URI could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(
        "not a kept result's URI: {0:?} (solvergate://results/{{id}} or solvergate://results/{{id}}/solution/{{name}}?offset=&limit=)"
    )]
    NotOurs(String),
    #[error(
        "no kept result {0:?} here: results are kept per session and the oldest are removed past the bound"
    )]
    Unknown(String),
    #[error("result {id} has no solution value {name:?}; its values: {names}")]
    NoValue {
        id: String,
        name: String,
        names: String,
    },
    #[error("could not read result {0}: {1}")]
    Io(String, std::io::Error),
    #[error("result {0} is not valid JSON: {1}")]
    Corrupt(String, serde_json::Error),
}

impl Kept {
    /// `root`'s folder for `scope`, bounded to `max_count` results and
    /// `max_bytes` over every scope.
    pub fn new(root: PathBuf, scope: &JobScope, max_count: usize, max_bytes: u64) -> Kept {
        let dir = root.join(match scope {
            JobScope::Stdio => "stdio".to_owned(),
            JobScope::Session(id) => format!("session-{id}"),
            JobScope::Sessionless => "sessionless".to_owned(),
        });
        Kept {
            root,
            dir,
            max_count,
            max_bytes,
            response_limit: bounded::DEFAULT_RESPONSE_LIMIT,
        }
    }

    /// The same, with responses bounded to `limit` bytes.
    pub fn with_response_limit(self, limit: usize) -> Kept {
        Kept {
            response_limit: limit,
            ..self
        }
    }

    /// The same bounds and root, for requests without a session.
    pub fn sessionless(&self) -> Kept {
        Kept::new(
            self.root.clone(),
            &JobScope::Sessionless,
            self.max_count,
            self.max_bytes,
        )
        .with_response_limit(self.response_limit)
    }

    /// Writes `result` of `tool` whole under a new id, then removes the
    /// oldest results past the bounds (in one go, for the tests).
    #[cfg(test)]
    fn keep(&self, tool: &str, result: &Value) -> std::io::Result<Stored> {
        let stored = self.write(tool, result)?;
        self.evict(&stored.path);
        Ok(stored)
    }

    /// [`Kept::keep`] off the async threads: the write is awaited (a read
    /// right after the answer finds the file), the eviction is not (it
    /// scans the folder, and nothing waits for it).
    pub async fn keep_in_background(&self, tool: &str, result: Value) -> std::io::Result<Stored> {
        let kept = self.clone();
        let tool = tool.to_owned();
        let stored = tokio::task::spawn_blocking(move || kept.write(&tool, &result))
            .await
            .map_err(std::io::Error::other)??;
        let kept = self.clone();
        let newest = stored.path.clone();
        drop(tokio::task::spawn_blocking(move || kept.evict(&newest)));
        Ok(stored)
    }

    /// Writes `result` of `tool` whole under its id: the tool and the
    /// first 128 bits of the result's SHA-256, so the same result (a
    /// finished job read twice, or from a restarted server) keeps one id.
    fn write(&self, tool: &str, result: &Value) -> std::io::Result<Stored> {
        use sha2::Digest;
        let bytes = serde_json::to_vec(result).map_err(std::io::Error::other)?;
        let digest = sha2::Sha256::digest(&bytes);
        let id = format!("{tool}-{}", hex::encode(&digest[..16]));
        crate::kept::write_whole(&self.dir, &format!("{id}.json"), &bytes)?;
        let path = self.dir.join(format!("{id}.json"));
        Ok(Stored {
            uri: format!("{PREFIX}{id}"),
            path,
            bytes: bytes.len() as u64,
            id,
        })
    }

    /// This scope's results, newest first, at most `limit`.
    pub fn latest(&self, limit: usize) -> Vec<Listed> {
        let mut listed = listing(&self.dir);
        listed.sort_by_key(|listed| std::cmp::Reverse(listed.modified));
        listed.truncate(limit);
        listed
    }

    /// What `uri` names: the whole result, or one value of its solution
    /// (a slice of it with `offset` or `limit`), as JSON text.
    pub fn read(&self, uri: &str) -> Result<String, ReadError> {
        let wanted = Wanted::parse(uri)?;
        let path = self.path_of(&wanted.id)?;
        let bytes = std::fs::metadata(&path)
            .map_err(|error| ReadError::Io(wanted.id.clone(), error))?
            .len();
        if wanted.name.is_none() && bytes <= READ_LIMIT {
            return std::fs::read_to_string(&path)
                .map_err(|error| ReadError::Io(wanted.id.clone(), error));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|error| ReadError::Io(wanted.id.clone(), error))?;
        let result: Value = serde_json::from_str(&text)
            .map_err(|error| ReadError::Corrupt(wanted.id.clone(), error))?;
        let Some(name) = &wanted.name else {
            return Ok(too_large(&wanted.id, bytes, &result).to_string());
        };
        let solution = solution_of(&result);
        let value = solution
            .and_then(|solution| solution.get(name))
            .ok_or_else(|| ReadError::NoValue {
                id: wanted.id.clone(),
                name: name.clone(),
                names: solution.map_or_else(
                    || "none".to_owned(),
                    |solution| solution.keys().cloned().collect::<Vec<_>>().join(", "),
                ),
            })?;
        Ok(match (value, wanted.offset, wanted.limit) {
            (Value::Array(items), offset, limit) if offset.is_some() || limit.is_some() => {
                let start = offset.unwrap_or(0).min(items.len());
                let end = limit.map_or(items.len(), |limit| {
                    start.saturating_add(limit).min(items.len())
                });
                Value::Array(items[start..end].to_vec()).to_string()
            }
            (value, ..) => value.to_string(),
        })
    }

    /// The file of `id` in this scope; an id that is not one of ours never
    /// reaches the file system.
    fn path_of(&self, id: &str) -> Result<PathBuf, ReadError> {
        let valid = id.rsplit_once('-').is_some_and(|(tool, hex)| {
            !tool.is_empty()
                && tool.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                && hex.len() == 32
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
        let path = self.dir.join(format!("{id}.json"));
        if !valid || !path.is_file() {
            return Err(ReadError::Unknown(id.to_owned()));
        }
        Ok(path)
    }

    /// Removes the oldest results of every scope past the count and byte
    /// bounds; `newest`, just written, always stays.
    fn evict(&self, newest: &Path) {
        let Ok(scopes) = std::fs::read_dir(&self.root) else {
            return;
        };
        let mut all: Vec<(SystemTime, u64, PathBuf)> = scopes
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .flat_map(|scope| {
                listing(&scope.path())
                    .into_iter()
                    .map(move |listed| (listed, scope.path()))
            })
            .map(|(listed, dir)| {
                (
                    listed.modified,
                    listed.bytes,
                    dir.join(format!("{}.json", listed.id)),
                )
            })
            .collect();
        // Newest first, the one just written ahead of any of the same time.
        all.sort_by_key(|(modified, _, path)| std::cmp::Reverse((path == newest, *modified)));
        let mut count = 0;
        let mut bytes = 0;
        for (_, size, path) in all {
            count += 1;
            bytes += size;
            if count > 1 && (count > self.max_count || bytes > self.max_bytes) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// `result` of `tool` kept, when it is an answer: its text part ends by
/// naming the resource and the file, and — for clients of MCP 2025-06-18
/// and later, which know the content type — a `resource_link` follows it.
/// A result that cannot be kept is returned as it came (and says nothing
/// of a resource).
pub async fn link(
    kept: &Kept,
    tool: &str,
    mut result: CallToolResult,
    version: Option<&ProtocolVersion>,
) -> CallToolResult {
    if !KEPT_TOOLS.contains(&tool) || result.is_error == Some(true) {
        return result;
    }
    let Some(structured) = &result.structured_content else {
        return result;
    };
    // A job is kept once it has its result, not at every poll.
    if tool.starts_with("get_") && structured.get("result").is_none_or(Value::is_null) {
        return result;
    }
    let has_solution = solution_of(structured).is_some();
    let stored = match kept.keep_in_background(tool, structured.clone()).await {
        Ok(stored) => stored,
        Err(error) => {
            eprintln!("solvergate: could not keep the {tool} result: {error}");
            return result;
        }
    };
    let mut line = format!(
        "Whole result: {} ({} bytes; file {})",
        stored.uri,
        stored.bytes,
        stored.path.display(),
    );
    if has_solution {
        let _ = write!(
            line,
            "; one value of its solution, or a slice of a list: {}/solution/{{name}}?offset=&limit=",
            stored.uri
        );
    }
    line.push('\n');
    let text_bytes: usize = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.len()),
            _ => None,
        })
        .sum();
    if let Some(structured) = result.structured_content.as_mut() {
        // Room for the last line and the resource link too.
        let room = text_bytes + line.len() + 1024;
        bounded::envelopes_read(structured, &stored.uri);
        let value_uri = |name: &str| format!("{}/solution/{name}", stored.uri);
        let cuts = bounded::bound(
            structured,
            room,
            kept.response_limit,
            &stored.uri,
            &value_uri,
        );
        if !cuts.is_empty() {
            line.push_str(&bounded::in_words(&cuts, kept.response_limit));
            line.push('\n');
        }
    }
    match result.content.iter_mut().find_map(|block| match block {
        ContentBlock::Text(text) => Some(text),
        _ => None,
    }) {
        Some(text) => text.text = render::with_last_line(std::mem::take(&mut text.text), &line),
        None => result.content.insert(0, ContentBlock::text(line)),
    }
    // Before 2025-06-18 a client has no `resource_link`; the text names it.
    let knows_links = version.is_none_or(|version| version.as_str() >= "2025-06-18");
    if knows_links {
        result.content.push(ContentBlock::resource_link(
            Resource::new(stored.uri, stored.id)
                .with_description(format!("the whole {tool} result"))
                .with_mime_type("application/json")
                .with_size(stored.bytes),
        ));
    }
    result
}

/// The caller's latest results, as `resources/list` gives them.
pub fn listed(kept: &Kept) -> Vec<Resource> {
    kept.latest(LISTED)
        .into_iter()
        .map(|listed| {
            Resource::new(format!("{PREFIX}{}", listed.id), listed.id.clone())
                .with_description(format!("the whole {} result", listed.tool))
                .with_mime_type("application/json")
                .with_size(listed.bytes)
        })
        .collect()
}

/// The one template: a value of a kept result's solution.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(VALUE_TEMPLATE, "solution_value")
            .with_description(
                "One value of a kept result's solution as JSON; with offset and limit, that slice of a list",
            )
            .with_mime_type("application/json"),
    ]
}

/// The results in `dir`, unordered.
fn listing(dir: &Path) -> Vec<Listed> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?.to_owned();
            if id.starts_with('.') {
                return None;
            }
            let metadata = entry.metadata().ok()?;
            let tool = id.rsplit_once('-')?.0.to_owned();
            Some(Listed {
                tool,
                bytes: metadata.len(),
                modified: metadata.modified().ok()?,
                id,
            })
        })
        .collect()
}

/// The solution inside a result: its own `solution`, or that of the object
/// it wraps (a checked run's `run`, a job's `result`).
fn solution_of(result: &Value) -> Option<&Map<String, Value>> {
    let object = result.as_object()?;
    if let Some(Value::Object(solution)) = object.get("solution") {
        return Some(solution);
    }
    object
        .values()
        .find_map(|inner| match inner.get("solution") {
            Some(Value::Object(solution)) => Some(solution),
            _ => None,
        })
}

/// In place of a result too large to read whole: its size, and each
/// solution value's kind and length with the URI that reads it.
fn too_large(id: &str, bytes: u64, result: &Value) -> Value {
    let values: Map<String, Value> = solution_of(result)
        .map(|solution| {
            solution
                .iter()
                .map(|(name, value)| {
                    let length = match value {
                        Value::Array(items) => Some(items.len()),
                        _ => None,
                    };
                    (
                        name.clone(),
                        serde_json::json!({
                            "length": length,
                            "uri": format!("{PREFIX}{id}/solution/{name}"),
                        }),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "id": id,
        "bytes": bytes,
        "whole": false,
        "note": format!("the result is {bytes} bytes, over the {READ_LIMIT}-byte read limit; read each value (or a slice: ?offset=&limit=) by its uri"),
        "solution": values,
    })
}

/// A parsed URI of ours.
#[derive(Debug, PartialEq)]
struct Wanted {
    id: String,
    name: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Wanted {
    fn parse(uri: &str) -> Result<Wanted, ReadError> {
        let not_ours = || ReadError::NotOurs(uri.to_owned());
        let url = url::Url::parse(uri).map_err(|_| not_ours())?;
        if url.scheme() != "solvergate" || url.host_str() != Some("results") {
            return Err(not_ours());
        }
        let segments: Vec<String> = url
            .path_segments()
            .ok_or_else(not_ours)?
            .map(|segment| {
                percent_encoding::percent_decode_str(segment)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let (id, name) = match segments.as_slice() {
            [id] => (id.clone(), None),
            [id, solution, name] if solution == "solution" => (id.clone(), Some(name.clone())),
            _ => return Err(not_ours()),
        };
        let mut offset = None;
        let mut limit = None;
        for (key, value) in url.query_pairs() {
            let number = value.parse::<usize>().map_err(|_| not_ours())?;
            match key.as_ref() {
                "offset" => offset = Some(number),
                "limit" => limit = Some(number),
                _ => return Err(not_ours()),
            }
        }
        if name.is_none() && (offset.is_some() || limit.is_some()) {
            return Err(not_ours());
        }
        Ok(Wanted {
            id,
            name,
            offset,
            limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kept(root: &Path, max_count: usize, max_bytes: u64) -> Kept {
        Kept::new(root.to_owned(), &JobScope::Stdio, max_count, max_bytes)
    }

    #[test]
    fn a_result_reads_back_whole_and_by_value() {
        let root = tempfile::tempdir().unwrap();
        let kept = kept(root.path(), 10, 1 << 20);
        let result = json!({"status": "optimal", "solution": {"x": (0..100).collect::<Vec<_>>(), "cost": 7}});
        let stored = kept.keep("run_cpsat_python", &result).unwrap();
        assert!(
            stored
                .uri
                .starts_with("solvergate://results/run_cpsat_python-")
        );
        let whole: Value = serde_json::from_str(&kept.read(&stored.uri).unwrap()).unwrap();
        assert_eq!(whole, result);
        let slice = kept
            .read(&format!("{}/solution/x?offset=30&limit=5", stored.uri))
            .unwrap();
        assert_eq!(slice, "[30,31,32,33,34]");
        assert_eq!(
            kept.read(&format!("{}/solution/cost", stored.uri)).unwrap(),
            "7"
        );
        // A slice past the end is empty, not an error.
        assert_eq!(
            kept.read(&format!("{}/solution/x?offset=500", stored.uri))
                .unwrap(),
            "[]"
        );
        // A checked run's solution is inside its `run`.
        let checked = kept
            .keep(
                "run_cpsat_python_file_checked",
                &json!({"run": {"solution": {"y": [1, 2]}}}),
            )
            .unwrap();
        assert_eq!(
            kept.read(&format!("{}/solution/y?limit=1", checked.uri))
                .unwrap(),
            "[1]"
        );
    }

    #[test]
    fn hostile_and_unknown_uris_are_refused_by_name() {
        let root = tempfile::tempdir().unwrap();
        let kept = kept(root.path(), 10, 1 << 20);
        let stored = kept
            .keep("plan_load", &json!({"solution": {"a": 1}}))
            .unwrap();
        for uri in [
            "file:///etc/passwd",
            "solvergate://results/../../etc/passwd",
            "solvergate://results/plan_load-..%2F..%2Fx",
            "solvergate://other/plan_load-0123",
            &format!("{}?offset=1", stored.uri),
            &format!("{}/solution/a?offset=x", stored.uri),
            &format!("{}/solution/a?sneaky=1", stored.uri),
        ] {
            assert!(
                matches!(
                    kept.read(uri),
                    Err(ReadError::NotOurs(_) | ReadError::Unknown(_))
                ),
                "{uri}: {:?}",
                kept.read(uri)
            );
        }
        let missing = kept
            .read(&format!("{}/solution/b", stored.uri))
            .unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!(
                "result {} has no solution value \"b\"; its values: a",
                stored.id
            )
        );
        // Another session does not see this one's results.
        let other = Kept::new(
            root.path().to_owned(),
            &JobScope::new_session(),
            10,
            1 << 20,
        );
        assert!(matches!(
            other.read(&stored.uri),
            Err(ReadError::Unknown(_))
        ));
        assert!(other.latest(10).is_empty());
        assert_eq!(kept.latest(10).len(), 1);
    }

    #[test]
    fn the_folder_stays_within_its_bounds_under_a_flood() {
        let root = tempfile::tempdir().unwrap();
        let by_count = kept(root.path(), 5, 1 << 30);
        let mut last = None;
        for i in 0..40 {
            last = Some(
                by_count
                    .keep("solve_minizinc_model", &json!({"solution": {"i": i}}))
                    .unwrap(),
            );
        }
        assert_eq!(by_count.latest(100).len(), 5);
        let newest = last.unwrap();
        assert_eq!(
            by_count
                .read(&format!("{}/solution/i", newest.uri))
                .unwrap(),
            "39"
        );
        // By bytes: each result is about 10 KB, the bound 35 KB.
        let by_bytes = Kept::new(root.path().join("b"), &JobScope::Stdio, 1000, 35_000);
        let big = |i: i32| json!({"solution": {"s": "x".repeat(10_000), "i": i}});
        for i in 0..20 {
            by_bytes.keep("plan_load", &big(i)).unwrap();
        }
        // The same result again keeps its id and adds nothing.
        let again = by_bytes.keep("plan_load", &big(19)).unwrap();
        assert_eq!(by_bytes.latest(1)[0].id, again.id);
        let total: u64 = by_bytes.latest(100).iter().map(|listed| listed.bytes).sum();
        assert!(
            total <= 35_000 && by_bytes.latest(100).len() == 3,
            "{total}"
        );
        // No staging file is left behind.
        let names: Vec<String> = std::fs::read_dir(root.path().join("b/stdio"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|name| !name.starts_with('.')), "{names:?}");
    }

    #[test]
    fn a_result_over_the_read_limit_says_where_its_values_are() {
        let big = json!({"solution": {"x": [1, 2, 3], "n": 3}});
        let summary = too_large("run_cpsat_python-00", READ_LIMIT + 1, &big);
        assert_eq!(summary["whole"], false);
        assert_eq!(summary["solution"]["x"]["length"], 3);
        assert_eq!(
            summary["solution"]["x"]["uri"],
            "solvergate://results/run_cpsat_python-00/solution/x"
        );
        assert_eq!(summary["solution"]["n"]["length"], Value::Null);
    }
}
