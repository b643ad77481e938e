//! A MiniZinc-aware scanner of a model's top-level items, and the blanking
//! that builds the deletion method's candidate models.
//!
//! The scanner knows just enough of the lexical grammar to find where each
//! top-level item ends: `%` line comments, `/* */` block comments, string
//! literals with backslash escapes and `\( )` interpolations, `'quoted'`
//! identifiers, and nested `()`, `[]`, `{}`. An item ends at a `;` outside
//! all of these (the last item may omit it). Items are classified by their
//! first word, so a `constraint` inside a predicate body or a `let` is part
//! of its enclosing item, never an item of its own.
//!
//! Positions are 1-based lines and columns counted in characters; a span
//! runs from the item's first character to its terminating `;` inclusive
//! (`end_column` is inclusive). CRLF line ends count as one line end.

use std::fmt;

/// What kind of top-level item it is, as far as the deletion method cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A `constraint` item: a candidate for the core.
    Constraint,
    /// A `solve` item: blanked, with `solve satisfy;` appended, when a
    /// candidate only asks for satisfiability.
    Solve,
    /// Every other item (declarations, predicates, output, includes ...):
    /// always kept.
    Other,
}

/// One top-level item with its exact span in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What the item is, by its first word.
    pub kind: ItemKind,
    /// Char offsets into the source: `start..end` (end exclusive).
    pub start: usize,
    /// One past the item's last char (its `;`, when it has one).
    pub end: usize,
    /// 1-based line of the item's first character.
    pub line: u32,
    /// 1-based column of the item's first character, in characters.
    pub column: u32,
    /// 1-based line of the item's last character.
    pub end_line: u32,
    /// Column of the item's last character, inclusive.
    pub end_column: u32,
    /// The item's text exactly as written, comments inside it included.
    pub source: String,
}

/// Why a model could not be scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// 1-based line where the problem begins (for an unclosed literal or
    /// comment, where it opened).
    pub line: u32,
    /// 1-based column there, in characters.
    pub column: u32,
    /// What is wrong (`block comment /* is never closed`, ...).
    pub message: String,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Bracket(char),
    /// Inside `\( ... )` of a string literal: the closing `)` resumes it.
    Interpolation,
}

/// Splits `text` into its top-level items.
pub fn scan(text: &str) -> Result<Vec<Item>, ScanError> {
    let chars: Vec<char> = text.chars().collect();
    let mut positions = Vec::with_capacity(chars.len() + 1);
    let (mut line, mut column) = (1u32, 1u32);
    for &c in &chars {
        positions.push((line, column));
        if c == '\n' {
            line += 1;
            column = 1;
        } else if c != '\r' {
            column += 1;
        }
    }
    positions.push((line, column));
    let at = |index: usize| positions[index.min(positions.len() - 1)];
    let error = |index: usize, message: &str| {
        let (line, column) = at(index);
        ScanError {
            line,
            column,
            message: message.to_owned(),
        }
    };

    let mut items = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut item_start: Option<usize> = None;
    let mut last_significant = 0usize;
    let mut in_string: Option<usize> = None;
    let mut i = 0usize;
    while i < chars.len() {
        let c = chars[i];
        if let Some(opened) = in_string {
            match c {
                '\\' if chars.get(i + 1) == Some(&'(') => {
                    stack.push(Frame::Interpolation);
                    in_string = None;
                    i += 2;
                }
                '\\' => i += 2,
                '"' => {
                    in_string = None;
                    last_significant = i;
                    i += 1;
                }
                '\n' => return Err(error(opened, "string literal not closed on its line")),
                _ => i += 1,
            }
            continue;
        }
        if c == '%' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            let opened = i;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(error(opened, "block comment /* is never closed"));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if item_start.is_none() {
            item_start = Some(i);
        }
        last_significant = i;
        match c {
            '"' => in_string = Some(i),
            '\'' => {
                let opened = i;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    if chars[i] == '\n' {
                        return Err(error(opened, "quoted identifier not closed on its line"));
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(error(opened, "quoted identifier is never closed"));
                }
                last_significant = i;
            }
            '(' | '[' | '{' => stack.push(Frame::Bracket(c)),
            ')' | ']' | '}' => {
                let expected = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match stack.pop() {
                    Some(Frame::Bracket(open)) if open == expected => {}
                    Some(Frame::Interpolation) if c == ')' => in_string = Some(i),
                    _ => return Err(error(i, &format!("unbalanced {c:?}"))),
                }
            }
            ';' if stack.is_empty() => {
                if let Some(start) = item_start.take() {
                    items.push(make_item(&chars, start, i + 1, at(start), at(i)));
                }
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(opened) = in_string {
        return Err(error(opened, "string literal is never closed"));
    }
    if let Some(frame) = stack.last() {
        let message = match frame {
            Frame::Bracket(open) => format!("{open:?} is never closed"),
            Frame::Interpolation => "string interpolation \\( is never closed".to_owned(),
        };
        return Err(error(chars.len(), &message));
    }
    if let Some(start) = item_start {
        items.push(make_item(
            &chars,
            start,
            last_significant + 1,
            at(start),
            at(last_significant),
        ));
    }
    Ok(items)
}

fn make_item(
    chars: &[char],
    start: usize,
    end: usize,
    (line, column): (u32, u32),
    (end_line, end_column): (u32, u32),
) -> Item {
    let source: String = chars[start..end].iter().collect();
    Item {
        kind: classify(&source),
        start,
        end,
        line,
        column,
        end_line,
        end_column,
        source,
    }
}

fn classify(source: &str) -> ItemKind {
    let word: String = source
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    match word.as_str() {
        "constraint" => ItemKind::Constraint,
        "solve" => ItemKind::Solve,
        _ => ItemKind::Other,
    }
}

/// The model with `removed` items blanked (every character but line ends
/// becomes a space, so everything else keeps its line and column) and,
/// when `satisfy` is set, every solve item blanked too and `solve satisfy;`
/// appended on a line of its own after the end.
pub fn candidate(text: &str, items: &[Item], removed: &[usize], satisfy: bool) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let mut blank = |item: &Item| {
        for c in &mut chars[item.start..item.end] {
            if *c != '\n' && *c != '\r' {
                *c = ' ';
            }
        }
    };
    for &index in removed {
        if let Some(item) = items.get(index) {
            blank(item);
        }
    }
    if satisfy {
        for item in items.iter().filter(|item| item.kind == ItemKind::Solve) {
            blank(item);
        }
    }
    let mut out: String = chars.into_iter().collect();
    if satisfy {
        out.push_str("\nsolve satisfy;\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(ItemKind, String)> {
        scan(text)
            .unwrap()
            .into_iter()
            .map(|item| (item.kind, item.source))
            .collect()
    }

    #[test]
    fn plain_items_with_spans() {
        let text = "var 1..3: x;\nconstraint x > 1;\n  constraint x < 3;\nsolve satisfy;\n";
        let items = scan(text).unwrap();
        assert_eq!(items.len(), 4);
        let c = &items[2];
        assert_eq!(c.kind, ItemKind::Constraint);
        assert_eq!((c.line, c.column, c.end_line, c.end_column), (3, 3, 3, 19));
        assert_eq!(c.source, "constraint x < 3;");
        assert_eq!(items[3].kind, ItemKind::Solve);
    }

    #[test]
    fn semicolons_in_strings_and_comments_do_not_end_items() {
        let text = "constraint x > 0 % a; comment\n  /* b; c */ ;\n\
                    output [\"a;b\\\";c\", show(x)];\nconstraint x < 9;";
        let got = kinds(text);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, ItemKind::Constraint);
        assert_eq!(got[0].1, "constraint x > 0 % a; comment\n  /* b; c */ ;");
        assert_eq!(got[1].0, ItemKind::Other);
        assert_eq!(
            got[2],
            (ItemKind::Constraint, "constraint x < 9;".to_owned())
        );
    }

    #[test]
    fn string_interpolation_with_nested_strings() {
        let text = "output [\"v=\\(show(\"x;\" ++ \")\"));\"];\nconstraint true;";
        let got = kinds(text);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, ItemKind::Constraint);
    }

    #[test]
    fn constraint_inside_a_predicate_body_or_let_is_not_an_item() {
        let text = "predicate p(var int: x) = let { var int: y; constraint y = x; } in y > 0;\n\
                    var int: z = let { constraint z > 1; } in 3;\n\
                    constraint p(z);";
        let got = kinds(text);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, ItemKind::Other);
        assert_eq!(got[1].0, ItemKind::Other);
        assert_eq!(
            got[2],
            (ItemKind::Constraint, "constraint p(z);".to_owned())
        );
    }

    #[test]
    fn a_word_starting_with_constraint_is_not_the_keyword() {
        let got = kinds("int: constraints = 3;\nconstraint_x = 1;\nconstraint::\"n\" true;");
        assert_eq!(got[0].0, ItemKind::Other);
        assert_eq!(got[1].0, ItemKind::Other);
        assert_eq!(got[2].0, ItemKind::Constraint);
    }

    #[test]
    fn unterminated_comment_string_and_bracket_are_errors() {
        let error = scan("var int: x;\nconstraint x > 0; /* open\n").unwrap_err();
        assert_eq!((error.line, error.column), (2, 19));
        assert!(error.message.contains("never closed"));
        assert!(scan("output [\"abc];").is_err());
        assert!(scan("constraint (x > 0;").is_err());
        assert!(scan("constraint x > 0);").is_err());
    }

    #[test]
    fn crlf_counts_one_line_end_and_columns_ignore_cr() {
        let text = "var 1..3: x;\r\nconstraint\r\n  x > 1;\r\nsolve satisfy;\r\n";
        let items = scan(text).unwrap();
        let c = &items[1];
        assert_eq!((c.line, c.column, c.end_line, c.end_column), (2, 1, 3, 8));
        assert_eq!(c.source, "constraint\r\n  x > 1;");
        assert_eq!((items[2].line, items[2].column), (4, 1));
    }

    #[test]
    fn last_item_may_omit_its_semicolon() {
        let items = scan("var int: x;\nconstraint x > 0 % trailing\n").unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].source, "constraint x > 0");
        assert_eq!((items[1].end_line, items[1].end_column), (2, 16));
    }

    #[test]
    fn quoted_identifiers_hide_their_contents() {
        let got = kinds("var int: 'a;b';\nconstraint 'a;b' > 0;");
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, ItemKind::Constraint);
    }

    #[test]
    fn non_ascii_columns_count_characters() {
        let items = scan("% é\nint: é = 1; constraint é > 0;").unwrap();
        assert_eq!((items[1].line, items[1].column), (2, 13));
    }

    #[test]
    fn candidates_keep_positions_and_swap_the_objective() {
        let text = "var 1..3: x;\nconstraint x > 1;\nconstraint\r\n  x < 3;\nsolve minimize x;";
        let items = scan(text).unwrap();
        let out = candidate(text, &items, &[2], true);
        let expected = "var 1..3: x;\nconstraint x > 1;\n          \r\n        \n                 \nsolve satisfy;\n";
        assert_eq!(out, expected);
        let rescanned = scan(&out).unwrap();
        assert_eq!(rescanned[1], items[1]);
        assert_eq!(candidate(text, &items, &[], false), text);
    }
}
