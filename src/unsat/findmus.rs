//! Reading findMUS's text output into core entries.
//!
//! findMUS prints, per MUS, a `MUS:` line, a `Brief:` block and a
//! `Traces:` block: one line per FlatZinc constraint of the MUS, each a
//! `;`-separated stack of frames `path|start_line|start_col|end_line|end_col|…`.
//! Only the first MUS is read. For each trace line the outermost frame that
//! lies in the entry model is placed in the top-level `constraint` item that
//! contains its start position (line and column), so `source` is the whole
//! constraint as written.
//!
//! The reading says how complete it is: a trace that never enters the entry
//! model (a constraint of an included file or of the library alone) or that
//! lands outside every constraint item (a variable's domain, a predicate
//! body) is counted as unplaced. The caller claims `minimal` only when every
//! trace was placed; otherwise the raw output, which stays authoritative,
//! holds members the core does not list.

use std::path::Path;

use super::results::UnsatCoreConstraint;
use super::scan::{Item, ItemKind};

/// What the first MUS in findMUS's output says about the entry model.
#[derive(Debug, Default, PartialEq)]
pub struct Reading {
    /// How many `MUS:` lines the output holds.
    pub muses: usize,
    /// The entry-model constraint items of the first MUS, in the model's
    /// order, each once.
    pub core: Vec<UnsatCoreConstraint>,
    /// Trace lines of the first MUS.
    pub traces: usize,
    /// Of those, the ones no entry-model constraint item could take.
    pub unplaced: usize,
}

impl Reading {
    /// Whether `core` is known to be the whole MUS: one was reported, it
    /// had traces, and every trace landed on a listed item.
    pub fn complete(&self) -> bool {
        self.muses > 0 && self.traces > 0 && self.unplaced == 0 && !self.core.is_empty()
    }
}

/// One stack frame of a trace: the file and the start position.
struct Frame<'a> {
    file: &'a str,
    line: u32,
    column: u32,
}

fn frame(text: &str) -> Option<Frame<'_>> {
    let mut fields = text.split('|');
    let file = fields.next()?;
    let line = fields.next()?.trim().parse().ok()?;
    let column = fields.next()?.trim().parse().ok()?;
    Some(Frame { file, line, column })
}

/// Whether a trace's file is the entry model: the same path when findMUS
/// printed it whole, else the same file name (as the reference matches).
fn is_entry(file: &str, model: &Path) -> bool {
    let file = Path::new(file);
    if file == model {
        return true;
    }
    if let (Ok(a), Ok(b)) = (file.canonicalize(), model.canonicalize()) {
        return a == b;
    }
    file.file_name().is_some() && file.file_name() == model.file_name()
}

/// The constraint item whose span holds the position. findMUS counts
/// columns as MiniZinc does; when a position falls outside every span (a
/// column counted in bytes past wide characters), a line that only one
/// constraint item covers still places it.
fn place(items: &[Item], line: u32, column: u32) -> Option<&Item> {
    let constraints = || {
        items
            .iter()
            .filter(|item| item.kind == ItemKind::Constraint)
    };
    constraints()
        .find(|item| {
            (item.line, item.column) <= (line, column)
                && (line, column) <= (item.end_line, item.end_column)
        })
        .or_else(|| {
            let mut on_line =
                constraints().filter(|item| item.line <= line && line <= item.end_line);
            match (on_line.next(), on_line.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        })
}

/// Reads the first MUS of findMUS's output against the entry model's items.
pub fn read(stdout: &str, model: &Path, items: &[Item]) -> Reading {
    let mut reading = Reading::default();
    let mut in_traces = false;
    for line in stdout.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("MUS:") {
            reading.muses += 1;
            in_traces = false;
            continue;
        }
        if trimmed.starts_with("Traces:") {
            in_traces = reading.muses == 1;
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with("Total Time") {
            in_traces = false;
            continue;
        }
        if !in_traces {
            continue;
        }
        reading.traces += 1;
        let placed = trimmed
            .split(';')
            .filter_map(frame)
            .find(|frame| is_entry(frame.file, model))
            .and_then(|frame| place(items, frame.line, frame.column));
        let Some(item) = placed else {
            reading.unplaced += 1;
            continue;
        };
        let entry = UnsatCoreConstraint {
            line: item.line,
            column: item.column,
            end_line: item.end_line,
            end_column: item.end_column,
            source: item.source.clone(),
        };
        if !reading.core.contains(&entry) {
            reading.core.push(entry);
        }
    }
    // In the model's order, as the deletion search lists its core.
    reading.core.sort_by_key(|entry| (entry.line, entry.column));
    reading
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unsat::scan::scan;

    const MODEL: &str = "var 1..3: x;\nconstraint x > 2;\nconstraint x < 2;\nsolve satisfy;\n";

    fn output(traces: &str) -> String {
        format!(
            "FznSubProblem:\thard cons: 0\tsoft cons: 2\n\
             MUS: 0 1\nBrief: int_le;:nil;\nint_le;:nil;\n\nTraces:\n{traces}\n\
             Total Time: 0.1\tnmuses: 1\n"
        )
    }

    #[test]
    fn traces_map_to_entry_model_items() {
        let items = scan(MODEL).unwrap();
        let out = output(
            "/tmp/a/model.mzn|2|12|2|16|ca|int_lt;/usr/share/minizinc/std/x.mzn|1|1|1|5|ca|f\n\
             /usr/lib/inc.mzn|4|1|4|5|ca|g;/tmp/a/model.mzn|3|12|3|16|ca|int_lt",
        );
        let reading = read(&out, Path::new("/work/x/model.mzn"), &items);
        assert_eq!(reading.muses, 1);
        assert_eq!(reading.traces, 2);
        assert_eq!(reading.unplaced, 0);
        assert!(reading.complete());
        let sources: Vec<_> = reading.core.iter().map(|c| c.source.as_str()).collect();
        assert_eq!(sources, ["constraint x > 2;", "constraint x < 2;"]);
    }

    #[test]
    fn a_member_outside_the_constraint_items_makes_the_core_incomplete() {
        let items = scan(MODEL).unwrap();
        for outside in [
            // A constraint of another file.
            "/tmp/other/helpers.mzn|9|1|9|9|ca|h",
            // The domain 1..3 of `x`: line 1 is a variable declaration.
            "/tmp/a/model.mzn|1|5|1|8|ca|int_le",
        ] {
            let out = output(&format!("/tmp/a/model.mzn|2|12|2|16|ca|int_lt\n{outside}"));
            let reading = read(&out, Path::new("/work/x/model.mzn"), &items);
            assert_eq!(
                (reading.traces, reading.unplaced, reading.core.len()),
                (2, 1, 1)
            );
            assert!(!reading.complete(), "{outside}");
        }
    }

    #[test]
    fn two_constraints_on_one_line_are_told_apart_by_column() {
        let model = "var 1..3: x;\nconstraint x > 2; constraint x < 2;\nsolve satisfy;\n";
        let items = scan(model).unwrap();
        let out = output("m.mzn|2|31|2|35|ca|int_lt\nm.mzn|2|12|2|16|ca|int_lt");
        let reading = read(&out, Path::new("/w/m.mzn"), &items);
        assert!(reading.complete());
        // Listed in the model's order, whatever order the traces came in.
        let placed: Vec<_> = reading
            .core
            .iter()
            .map(|c| (c.column, c.source.as_str()))
            .collect();
        assert_eq!(
            placed,
            [(1, "constraint x > 2;"), (19, "constraint x < 2;")]
        );
    }

    #[test]
    fn only_the_first_mus_is_read() {
        let items = scan(MODEL).unwrap();
        let first = output("m.mzn|2|12|2|16|ca|int_lt");
        let out = format!("{first}MUS: 1\nBrief: x\n\nTraces:\nm.mzn|3|12|3|16|ca|int_lt\n\n");
        let reading = read(&out, Path::new("/w/m.mzn"), &items);
        assert_eq!(reading.muses, 2);
        assert_eq!(reading.core.len(), 1);
        assert_eq!(reading.core[0].source, "constraint x > 2;");
    }

    #[test]
    fn no_mus_and_no_traces_claim_nothing() {
        let items = scan(MODEL).unwrap();
        let none = read(
            "Total Time: 0.1\tnmuses: 0\n",
            Path::new("/w/m.mzn"),
            &items,
        );
        assert_eq!(none, Reading::default());
        assert!(!none.complete());
        let bare = read(
            "MUS: 0 1\nBrief: x\n\nTotal Time: 0.1\n",
            Path::new("/w/m.mzn"),
            &items,
        );
        assert_eq!(bare.muses, 1);
        assert!(
            !bare.complete(),
            "a MUS whose traces are missing cannot be placed"
        );
    }

    #[test]
    fn hostile_output_does_not_panic() {
        let items = scan(MODEL).unwrap();
        for junk in [
            "MUS:\nTraces:\n|||\n;;;\nm.mzn|x|y\nm.mzn|99999999999|1\n",
            "Traces:\nm.mzn|2|12\n",
            "MUS: 0\nTraces:\n\u{0}|\u{ffff}|2\n",
        ] {
            let reading = read(junk, Path::new("/w/m.mzn"), &items);
            assert!(!reading.complete(), "{junk:?}");
        }
    }
}
