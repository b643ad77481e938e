//! Closing a MiniZinc save over its includes: every file outside the
//! runtime's libraries that the model or the checker includes is copied
//! into the artifact, next to `model.mzn`, and any include item that named
//! it by another path is rewritten to the copy's bare name.
//!
//! Which files are local is MiniZinc's own word: `--model-interface-only`
//! lists `included_files` without the standard library and the solvers'
//! libraries (2.6.4 and 2.9.2 alike, absolute and with `..` resolved). This
//! module then accounts for every listed file by reading the include items
//! itself — an absolute path, or a path relative to an included file — and
//! refuses, naming the include, what it cannot copy faithfully: a file
//! reached through a symbolic link, a relative include of the inline model
//! itself (it would resolve against a private temp dir), two files with
//! one name, a name a library include would then resolve to, a file that
//! is not UTF-8 text or over 16 MiB. Data files cannot include (MiniZinc
//! says "include item not allowed in data file"), so only the model and
//! the checker are read.
//!
//! What a maintainer must not break: a listed file this module cannot
//! account for is a refusal, never a silent omission.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::userfiles::MAX_USER_FILE_BYTES;

/// Names a copy may not take: the files a MiniZinc save writes itself.
pub(crate) const RESERVED: &[&str] = &[
    "model.mzn",
    "data.dzn",
    "checker.mzc.mzn",
    "problem.md",
    "solve-result.json",
    "experiment-log.json",
];

/// One `include "…";` item: where its path literal sits, and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IncludeItem {
    /// Byte range of the text between the quotes.
    pub start: usize,
    pub end: usize,
    pub path: String,
}

/// One included file copied into the artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IncludedCopy {
    /// Its bare name in the artifact.
    pub name: String,
    /// Where it was read from.
    pub source: PathBuf,
    /// Its text, with include items rewritten where they must be.
    pub text: String,
}

/// The model and checker as saved, and the copies they include.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closure {
    pub model: String,
    pub checker: Option<String>,
    pub copies: Vec<IncludedCopy>,
}

impl Closure {
    /// Whether anything was copied or rewritten.
    pub fn is_closed_as_given(&self, model: &str, checker: Option<&str>) -> bool {
        self.copies.is_empty() && self.model == model && self.checker.as_deref() == checker
    }
}

/// The include items of MiniZinc source, skipping comments and strings.
pub(crate) fn include_items(text: &str) -> Vec<IncludeItem> {
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => at = skip_line(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => at = skip_block(bytes, at + 2),
            b'"' => at = string_end(bytes, at + 1).map_or(bytes.len(), |end| end + 1),
            b'i' if text[at..].starts_with("include")
                && (at == 0 || !is_ident(bytes[at - 1]))
                && !bytes.get(at + 7).copied().is_some_and(is_ident) =>
            {
                let mut next = skip_space(bytes, at + 7);
                if bytes.get(next) == Some(&b'"') {
                    let start = next + 1;
                    let end = string_end(bytes, start).unwrap_or(bytes.len());
                    items.push(IncludeItem {
                        start,
                        end,
                        path: text[start..end].to_owned(),
                    });
                    next = end + 1;
                }
                at = next;
            }
            _ => at += 1,
        }
    }
    items
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn skip_line(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |offset| at + offset + 1)
}

fn skip_block(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .windows(2)
        .position(|pair| pair == b"*/")
        .map_or(bytes.len(), |offset| at + offset + 2)
}

/// Spaces and comments between `include` and its literal.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(b) if b.is_ascii_whitespace() => at += 1,
            Some(b'%') => at = skip_line(bytes, at),
            Some(b'/') if bytes.get(at + 1) == Some(&b'*') => at = skip_block(bytes, at + 2),
            _ => return at,
        }
    }
}

/// The index of the quote that closes a string literal opened before `at`.
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// `path` with `.` and `..` resolved without the filesystem, as MiniZinc
/// lists included files.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Why the closure cannot copy the files a save includes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CloseError {
    /// A listed file could not be read as a copy.
    #[error("include {written:?}: {source}")]
    Unreadable {
        written: String,
        #[source]
        source: LocalFileError,
    },
    #[error(
        "two included files are both named {name} ({} and {}); an artifact keeps its includes side by side, so rename one",
        .first.display(),
        .second.display()
    )]
    SameName {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "include {0:?}: its file name is not plain (letters, digits, '.', '_', '-', not hidden), so it cannot be copied under it; rename it"
    )]
    NotPlain(String),
    #[error("include {written:?}: {name} is a name the artifact gives its own files; rename it")]
    Reserved { written: String, name: String },
    #[error(
        "the model includes {} by a path relative to itself, and an inline model runs in a private temp dir; include it by its absolute path",
        .0.display()
    )]
    RelativeToInline(PathBuf),
    #[error(
        "{owner} includes {written:?} from a library, but a file of that name sits in the artifact and would be included instead; rename the local file"
    )]
    ShadowsLibrary { owner: String, written: String },
}

/// Why [`read_local`] will not copy a file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocalFileError {
    #[error("{} cannot be read: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} resolves through a symbolic link (to {}); a copy could resolve its own includes differently, so include the real path",
        .path.display(),
        .real.display()
    )]
    ThroughSymlink { path: PathBuf, real: PathBuf },
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} is {bytes} bytes, over the {MAX_USER_FILE_BYTES}-byte limit", .path.display())]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("{} is not UTF-8 text", .path.display())]
    NotUtf8 {
        path: PathBuf,
        source: std::string::FromUtf8Error,
    },
}

/// A file the closure reads: its source (for copies) and text.
struct Owner {
    /// `None` for the inline model and checker.
    dir: Option<PathBuf>,
    /// How refusals name it.
    label: String,
}

/// Closes `model` (and `checker`) over the local files MiniZinc listed;
/// `read` returns a file's text or why it cannot be copied.
pub(crate) fn close(
    model: &str,
    checker: Option<&str>,
    listed: &BTreeSet<PathBuf>,
    read: &dyn Fn(&Path) -> Result<String, LocalFileError>,
) -> Result<Closure, CloseError> {
    let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut copies: Vec<IncludedCopy> = Vec::new();
    let mut library: Vec<(String, String)> = Vec::new();
    let mut pending: Vec<(PathBuf, String)> = Vec::new();

    let mut visit = |owner: &Owner,
                     text: &str,
                     pending: &mut Vec<(PathBuf, String)>,
                     names: &mut BTreeMap<String, PathBuf>|
     -> Result<String, CloseError> {
        let mut rewritten = text.to_owned();
        for item in include_items(text).into_iter().rev() {
            let written = Path::new(&item.path);
            let resolved = match (&owner.dir, written.is_absolute()) {
                (_, true) => lexical(written),
                (Some(dir), false) => lexical(&dir.join(written)),
                (None, false) => {
                    library.push((owner.label.clone(), item.path.clone()));
                    continue;
                }
            };
            if !listed.contains(&resolved) {
                if !written.is_absolute() {
                    library.push((owner.label.clone(), item.path.clone()));
                }
                continue;
            }
            let name = copy_name(&resolved, &item.path)?;
            match names.get(&name) {
                Some(source) if *source != resolved => {
                    return Err(CloseError::SameName {
                        name,
                        first: source.clone(),
                        second: resolved,
                    });
                }
                Some(_) => {}
                None => {
                    names.insert(name.clone(), resolved.clone());
                    pending.push((resolved.clone(), item.path.clone()));
                }
            }
            let stays = owner.dir.is_some() && item.path == name;
            if !stays {
                rewritten.replace_range(item.start..item.end, &name);
            }
        }
        Ok(rewritten)
    };

    let inline = |label: &str| Owner {
        dir: None,
        label: label.to_owned(),
    };
    let model = visit(&inline("model"), model, &mut pending, &mut names)?;
    let checker = checker
        .map(|text| visit(&inline("checker"), text, &mut pending, &mut names))
        .transpose()?;
    while let Some((source, written)) = pending.pop() {
        let text = read(&source).map_err(|source| CloseError::Unreadable { written, source })?;
        let owner = Owner {
            dir: source.parent().map(Path::to_path_buf),
            label: source.display().to_string(),
        };
        let text = visit(&owner, &text, &mut pending, &mut names)?;
        let name = names
            .iter()
            .find(|(_, path)| **path == source)
            .map(|(name, _)| name.clone())
            .unwrap_or_default();
        copies.push(IncludedCopy { name, source, text });
    }
    for path in listed {
        if !names.values().any(|source| source == path) {
            return Err(CloseError::RelativeToInline(path.clone()));
        }
    }
    for (owner, written) in &library {
        let first = Path::new(written)
            .components()
            .next()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if names.contains_key(&first) || RESERVED.contains(&first.as_str()) {
            return Err(CloseError::ShadowsLibrary {
                owner: owner.clone(),
                written: written.clone(),
            });
        }
    }
    copies.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Closure {
        model,
        checker,
        copies,
    })
}

/// The bare name a listed file takes in the artifact.
fn copy_name(resolved: &Path, written: &str) -> Result<String, CloseError> {
    let name = resolved
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !plain {
        return Err(CloseError::NotPlain(written.to_owned()));
    }
    if RESERVED.contains(&name.as_str()) {
        return Err(CloseError::Reserved {
            written: written.to_owned(),
            name,
        });
    }
    Ok(name)
}

/// Reads a file to copy: a regular file, not reached through a symbolic
/// link, at most 16 MiB, UTF-8.
pub(crate) fn read_local(path: &Path) -> Result<String, LocalFileError> {
    let unreadable = |source| LocalFileError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let real = std::fs::canonicalize(path).map_err(unreadable)?;
    if real != path {
        return Err(LocalFileError::ThroughSymlink {
            path: path.to_path_buf(),
            real,
        });
    }
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(LocalFileError::NotAFile(path.to_path_buf()));
    }
    if meta.len() > MAX_USER_FILE_BYTES {
        return Err(LocalFileError::TooLarge {
            path: path.to_path_buf(),
            bytes: meta.len(),
        });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    String::from_utf8(bytes).map_err(|source| LocalFileError::NotUtf8 {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_items_skip_comments_and_strings() {
        let text = "% include \"a.mzn\";\n/* include \"b.mzn\"; */\noutput [\"include \\\"c.mzn\\\"\"];\ninclude \"d.mzn\";\nmyinclude = 1;\ninclude /* x */ \"/abs/e.mzn\";";
        let paths: Vec<String> = include_items(text).into_iter().map(|i| i.path).collect();
        assert_eq!(paths, ["d.mzn", "/abs/e.mzn"]);
    }

    fn files(entries: &[(&str, &str)]) -> (BTreeSet<PathBuf>, BTreeMap<PathBuf, String>) {
        let map: BTreeMap<PathBuf, String> = entries
            .iter()
            .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
            .collect();
        (map.keys().cloned().collect(), map)
    }

    fn closed(model: &str, entries: &[(&str, &str)]) -> Result<Closure, CloseError> {
        let (listed, map) = files(entries);
        close(model, None, &listed, &|path| {
            map.get(path)
                .cloned()
                .ok_or_else(|| LocalFileError::NotAFile(path.to_path_buf()))
        })
    }

    #[test]
    fn absolute_and_nested_includes_are_copied_and_only_what_must_be_is_rewritten() {
        let model = "include \"globals.mzn\";\ninclude \"/p/lib/helper.mzn\";\nsolve satisfy;\n";
        let closure = closed(
            model,
            &[
                (
                    "/p/lib/helper.mzn",
                    "include \"nested.mzn\";\ninclude \"../q/deep.mzn\";\n",
                ),
                ("/p/lib/nested.mzn", "int: a = 1;\n"),
                ("/p/q/deep.mzn", "include \"alldifferent.mzn\";\n"),
            ],
        )
        .unwrap();
        assert_eq!(
            closure.model,
            "include \"globals.mzn\";\ninclude \"helper.mzn\";\nsolve satisfy;\n"
        );
        let names: Vec<&str> = closure.copies.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["deep.mzn", "helper.mzn", "nested.mzn"]);
        let helper = &closure.copies[1];
        assert_eq!(
            helper.text,
            "include \"nested.mzn\";\ninclude \"deep.mzn\";\n"
        );
        assert_eq!(
            closure.copies[2].text, "int: a = 1;\n",
            "a bare name stays as written"
        );
    }

    #[test]
    fn what_cannot_be_copied_faithfully_is_refused_naming_it() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 4] = [
            // Relative to the inline model's private temp dir.
            ("include \"../x/h.mzn\";", &[("/x/h.mzn", "")], "/x/h.mzn"),
            (
                "include \"/a/h.mzn\";\ninclude \"/b/h.mzn\";",
                &[("/a/h.mzn", ""), ("/b/h.mzn", "")],
                "both named h.mzn",
            ),
            (
                "include \"/a/model.mzn\";",
                &[("/a/model.mzn", "")],
                "model.mzn",
            ),
            (
                "include \"/a/globals.mzn\";\ninclude \"globals.mzn\";",
                &[("/a/globals.mzn", "")],
                "\"globals.mzn\" from a library",
            ),
        ];
        for (model, entries, words) in cases {
            let problem = closed(model, entries).unwrap_err().to_string();
            assert!(problem.contains(words), "{model}: {problem}");
        }
    }

    #[test]
    fn a_symlinked_include_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real.mzn");
        std::fs::write(&real, "int: a = 1;").unwrap();
        let link = root.path().join("link.mzn");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let root_real = std::fs::canonicalize(root.path()).unwrap();
        assert!(read_local(&root_real.join("real.mzn")).is_ok());
        let problem = read_local(&root_real.join("link.mzn"))
            .unwrap_err()
            .to_string();
        assert!(problem.contains("symbolic link"), "{problem}");
    }
}
