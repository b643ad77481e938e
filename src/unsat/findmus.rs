//! Reading findMUS's text output into core entries.
//!
//! findMUS prints, per MUS, a `MUS:` line, a `Brief:` block and a
//! `Traces:` block: one line per FlatZinc constraint of the MUS, each a
//! `;`-separated path whose elements start `file|line|col|end_line|end_col|`.
//! The core keeps, per trace line, the outermost element that lies in the
//! entry model (matched on the file's base name, as the reference does), and
//! widens it to the top-level item it falls in so `source` is the whole
//! constraint as written. Elements in other files are left out of `core`;
//! the raw output stays authoritative.

use std::path::Path;

use super::results::UnsatCoreConstraint;
use super::scan::Item;

/// Whether findMUS reported at least one MUS.
pub fn found_mus(stdout: &str) -> bool {
    stdout
        .lines()
        .any(|line| line.trim_start().starts_with("MUS:"))
}

/// The entry-model constraints named by the traces, in order, deduplicated.
pub fn core(stdout: &str, model: &Path, items: &[Item]) -> Vec<UnsatCoreConstraint> {
    let entry = model
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    let mut core: Vec<UnsatCoreConstraint> = Vec::new();
    let mut in_traces = false;
    for line in stdout.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Traces:") {
            in_traces = true;
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with("MUS:") || trimmed.starts_with("Total Time") {
            in_traces = false;
            continue;
        }
        if !in_traces {
            continue;
        }
        let Some(line_no) = trimmed.split(';').find_map(|element| {
            let mut fields = element.split('|');
            let file = fields.next()?;
            let name = Path::new(file).file_name()?.to_string_lossy().into_owned();
            if Some(&name) != entry.as_ref() {
                return None;
            }
            fields.next()?.trim().parse::<u32>().ok()
        }) else {
            continue;
        };
        let Some(item) = items
            .iter()
            .find(|item| item.line <= line_no && line_no <= item.end_line)
        else {
            continue;
        };
        let entry = UnsatCoreConstraint {
            line: item.line,
            column: item.column,
            end_line: item.end_line,
            end_column: item.end_column,
            source: item.source.clone(),
        };
        if !core.contains(&entry) {
            core.push(entry);
        }
    }
    core
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unsat::scan::scan;

    #[test]
    fn traces_map_to_entry_model_items() {
        let model = "var 1..3: x;\nconstraint x > 2;\nconstraint x < 2;\nsolve satisfy;\n";
        let items = scan(model).unwrap();
        let out = "FznSubProblem:\thard cons: 0\tsoft cons: 2\n\
                   MUS: 0 1\nBrief: int_le;:nil;\nint_le;:nil;\n\nTraces:\n\
                   /tmp/a/model.mzn|2|12|2|16|ca|int_lt;/usr/share/minizinc/std/x.mzn|1|1|1|5|ca|f\n\
                   /usr/lib/inc.mzn|4|1|4|5|ca|g;/tmp/a/model.mzn|3|12|3|16|ca|int_lt\n\
                   /tmp/other/helpers.mzn|9|1|9|9|ca|h\n\n\
                   Total Time: 0.1\tnmuses: 1\n";
        assert!(found_mus(out));
        let core = core(out, Path::new("/work/x/model.mzn"), &items);
        assert_eq!(core.len(), 2);
        assert_eq!(core[0].source, "constraint x > 2;");
        assert_eq!(core[1].source, "constraint x < 2;");
        assert!(!found_mus("Total Time: 0.1\tnmuses: 0\n"));
    }
}
