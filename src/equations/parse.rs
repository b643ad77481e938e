//! The expression parser of the equation tools: text such as
//! `quantity * rate_per_pc + 0.5` into an [`Expr`] tree, or every problem
//! in it ([`ParseErrors`]), each saying where (1-based character column),
//! what kind ([`ProblemKind`], also the first words of its message) and
//! what. After a problem the parser recovers and reads on, so `-a ** b`
//! gives both the unary minus and the exponent; at most
//! [`MAX_LISTED_ERRORS`] are listed, the rest counted.
//!
//! A hand-written recursive descent over a small tokenizer. The grammar is
//! the arithmetic subset of Python the equation tools accept:
//!
//! ```text
//! sum     := product (("+" | "-") product)*
//! product := power (("*" | "/" | "%") power)*
//! power   := atom ("**" power)?          exponent: a positive integer literal
//! atom    := number | name | "(" sum ")"
//! ```
//!
//! Unary `-x` and `+x` are refused with the rewrite `(0 - x)`; `**` takes
//! only a constant positive integer exponent (at most [`MAX_EXPONENT`]).
//! Nesting is bounded ([`MAX_DEPTH`]) so hostile input cannot exhaust the
//! stack, and so is the length of an expression ([`MAX_EXPRESSION_CHARS`]).
//! Pure: no I/O, nothing evaluated here.

use std::collections::BTreeSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Deepest nesting of parentheses and powers accepted.
pub const MAX_DEPTH: usize = 64;
/// Most binary operators in one expression. Operator chains build the tree
/// without recursion here, but compiling, evaluating and dropping it
/// recurse, so the tree's depth (operators plus nesting) stays small.
pub const MAX_OPERATORS: usize = 200;
/// Largest exponent of `**`.
pub const MAX_EXPONENT: u32 = 16;
/// Longest expression accepted, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 10_000;
/// Most significant digits a number literal may carry.
const MAX_DIGITS: usize = 30;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Addition, `+`.
    Add,
    /// Subtraction, `-`.
    Sub,
    /// Multiplication, `*`.
    Mul,
    /// Division, `/` (exact in a compiled model).
    Div,
    /// `%`: the remainder, with the sign of the dividend.
    Mod,
}

impl Op {
    /// The operator as written in an expression.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Mod => "%",
        }
    }
}

/// A decimal literal kept exactly: its value is `digits / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    /// The literal's digits as one integer, without the decimal point.
    pub digits: u128,
    /// How many of those digits are after the decimal point.
    pub scale: u32,
}

impl Decimal {
    /// The nearest `f64`, for evaluation (compilation keeps the exact digits).
    pub fn to_f64(self) -> f64 {
        self.digits as f64 / 10f64.powi(self.scale as i32)
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number literal.
    Number(Decimal),
    /// A variable, by the name the user gave it.
    Name(String),
    /// `left op right`.
    Binary {
        /// The operator.
        op: Op,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
    },
    /// `base ** exponent`, the exponent a literal of at most [`MAX_EXPONENT`].
    Power {
        /// What is raised.
        base: Box<Expr>,
        /// The power it is raised to.
        exponent: u32,
    },
}

impl Expr {
    /// Every variable name the expression mentions, sorted.
    pub fn names(&self) -> BTreeSet<&str> {
        let mut names = BTreeSet::new();
        let mut stack = vec![self];
        while let Some(expr) = stack.pop() {
            match expr {
                Expr::Number(_) => {}
                Expr::Name(name) => {
                    names.insert(name.as_str());
                }
                Expr::Binary { left, right, .. } => {
                    stack.push(left);
                    stack.push(right);
                }
                Expr::Power { base, .. } => stack.push(base),
            }
        }
        names
    }
}

/// What kind of problem a [`ParseError`] is; its message starts with the
/// same words, so a client can find the kind in the text too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Not arithmetic the grammar reads (`syntax error: …`).
    SyntaxError,
    /// A unary `-` or `+` (`unary '-' is not supported …`).
    UnaryOperator,
    /// An exponent of `**` that is not a whole number from 1 to
    /// [`MAX_EXPONENT`] (`exponent must be a constant positive integer …`).
    Exponent,
    /// A bound on size (`limit exceeded: …`): length, nesting, operators,
    /// digits of a number.
    LimitExceeded,
}

/// Where and why an expression does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What kind of problem it is.
    pub kind: ProblemKind,
    /// 1-based character column of the offending text (one past the end
    /// when the expression ended too early).
    pub column: usize,
    /// The offending text, or `end of expression`.
    pub found: String,
    /// What is wrong, in words, starting with the kind of problem.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.found == END {
            write!(f, "column {}, at the end: {}", self.column, self.message)
        } else {
            write!(
                f,
                "column {}, at '{}': {}",
                self.column, self.found, self.message
            )
        }
    }
}

/// Every problem found in one expression: the first [`MAX_LISTED_ERRORS`]
/// in order, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseErrors {
    /// The problems listed, in order of column (never empty).
    pub errors: Vec<ParseError>,
    /// Problems found beyond those listed.
    pub unlisted: usize,
}

impl ParseErrors {
    /// The first problem.
    pub fn first(&self) -> Option<&ParseError> {
        self.errors.first()
    }
}

/// Most problems listed per expression; the rest are counted.
pub const MAX_LISTED_ERRORS: usize = 10;

const END: &str = "end of expression";

fn syntax(message: impl fmt::Display) -> String {
    format!("syntax error: {message}")
}

fn limit(message: impl fmt::Display) -> String {
    format!("limit exceeded: {message}")
}

/// Collects the problems of one expression.
#[derive(Debug, Default)]
struct Sink {
    errors: Vec<ParseError>,
    unlisted: usize,
    last: Option<(ProblemKind, usize)>,
}

impl Sink {
    fn push(&mut self, error: ParseError) {
        // One syntax error per place: recovering from one must not report
        // it again in other words.
        let key = (error.kind, error.column);
        if error.kind == ProblemKind::SyntaxError && self.last == Some(key) {
            return;
        }
        self.last = Some(key);
        if self.errors.len() < MAX_LISTED_ERRORS {
            self.errors.push(error);
        } else {
            self.unlisted += 1;
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Number(Decimal),
    Name(String),
    Plus,
    Minus,
    Star,
    Power,
    Slash,
    Percent,
    Open,
    Close,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    column: usize,
    text: String,
}

/// A problem that ends the parse: nothing after it is read.
struct Stop;

/// Parses one expression, or finds every problem in it: after each one the
/// parser recovers (a unary sign is read as `(0 - x)`, a bad exponent as
/// 1, a missing operand as 0, a stray token is skipped) and goes on, so
/// independent problems are all reported. Too long an expression or too
/// deep a nesting stops the parse where it is found.
pub fn parse(source: &str) -> Result<Expr, ParseErrors> {
    let mut sink = Sink::default();
    let expr = parse_into(source, &mut sink);
    match expr {
        Some(expr) if sink.errors.is_empty() => Ok(expr),
        _ => Err(ParseErrors {
            errors: sink.errors,
            unlisted: sink.unlisted,
        }),
    }
}

fn parse_into(source: &str, sink: &mut Sink) -> Option<Expr> {
    let length = source.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        sink.push(ParseError {
            kind: ProblemKind::LimitExceeded,
            column: MAX_EXPRESSION_CHARS + 1,
            found: source.chars().skip(MAX_EXPRESSION_CHARS).take(10).collect(),
            message: limit(format!(
                "the expression is {length} characters long; at most {MAX_EXPRESSION_CHARS} are accepted"
            )),
        });
        return None;
    }
    let tokens = tokenize(source, sink);
    if matches!(tokens.first().map(|t| &t.kind), Some(Kind::End)) {
        sink.push(ParseError {
            kind: ProblemKind::SyntaxError,
            column: 1,
            found: END.to_owned(),
            message: syntax(
                "the expression is empty; write a number, a name or an arithmetic expression",
            ),
        });
        return None;
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
        operators: 0,
        source,
        sink,
    };
    let expr = parser.sum().ok()?;
    parser.rest().ok()?;
    Some(expr)
}

fn is_operator(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Plus | Kind::Minus | Kind::Star | Kind::Power | Kind::Slash | Kind::Percent
    )
}

fn ends_operand(kind: Option<&Kind>) -> bool {
    matches!(kind, Some(Kind::Number(_) | Kind::Name(_) | Kind::Close))
}

fn tokenize(source: &str, sink: &mut Sink) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let single = |kind: Kind| Token {
            kind,
            column,
            text: c.to_string(),
        };
        let token = match c {
            '+' => single(Kind::Plus),
            '-' => single(Kind::Minus),
            '/' if chars.get(i + 1) == Some(&'/') => {
                sink.push(ParseError {
                    kind: ProblemKind::SyntaxError,
                    column,
                    found: "//".to_owned(),
                    message: syntax("floor division '//' is not supported; use '/'"),
                });
                Token {
                    kind: Kind::Slash,
                    column,
                    text: "//".to_owned(),
                }
            }
            '/' => single(Kind::Slash),
            '%' => single(Kind::Percent),
            '(' => single(Kind::Open),
            ')' => single(Kind::Close),
            '*' if chars.get(i + 1) == Some(&'*') => Token {
                kind: Kind::Power,
                column,
                text: "**".to_owned(),
            },
            '*' => single(Kind::Star),
            '0'..='9' | '.' => {
                let (token, end) = number(&chars, i, sink);
                i = end;
                tokens.push(token);
                continue;
            }
            c if c.is_alphabetic() || c == '_' => {
                let end = (i..chars.len())
                    .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_'))
                    .unwrap_or(chars.len());
                // A name with a letter beyond ASCII is one problem, and
                // still one operand.
                if let Some(bad) = (i..end).find(|&j| !chars[j].is_ascii()) {
                    sink.push(unexpected_character(chars[bad], bad + 1));
                }
                let name: String = chars[i..end].iter().collect();
                tokens.push(Token {
                    kind: Kind::Name(name.clone()),
                    column,
                    text: name,
                });
                i = end;
                continue;
            }
            '=' | '<' | '>' | '!' => {
                // A relation inside an expression: one problem, read as an
                // operator so the two sides still parse.
                let end = (i..chars.len())
                    .find(|&j| !matches!(chars[j], '=' | '<' | '>' | '!'))
                    .unwrap_or(chars.len());
                sink.push(unexpected_character(c, column));
                Token {
                    kind: Kind::Minus,
                    column,
                    text: chars[i..end].iter().collect(),
                }
            }
            other => {
                sink.push(unexpected_character(other, column));
                // Between two operands a stray character stands for an
                // operator (`a × b`, `1,5`); elsewhere it is skipped.
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                let starts_operand =
                    next.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '('));
                if other == '^' {
                    single(Kind::Power)
                } else if ends_operand(tokens.last().map(|t| &t.kind)) && starts_operand {
                    single(Kind::Star)
                } else {
                    i += 1;
                    continue;
                }
            }
        };
        i += token.text.chars().count();
        tokens.push(token);
    }
    tokens.push(Token {
        kind: Kind::End,
        column: chars.len() + 1,
        text: END.to_owned(),
    });
    tokens
}

fn unexpected_character(c: char, column: usize) -> ParseError {
    let message = match c {
        '^' => "'^' is not a power here; write x ** 2".to_owned(),
        '=' | '<' | '>' | '!' => {
            "relations are not part of an expression; put ==, <= or >= in the equation's relation field".to_owned()
        }
        ',' => "a comma is not a decimal point here; write 1.5, without thousands separators".to_owned(),
        c if c.is_alphabetic() => format!(
            "names are ASCII letters, digits and '_' (starting with a letter or '_'); '{c}' is not one of them"
        ),
        c => format!("'{}' is not part of the expression syntax (numbers, names, + - * / % **, parentheses)", c.escape_default()),
    };
    ParseError {
        kind: ProblemKind::SyntaxError,
        column,
        found: c.to_string(),
        message: syntax(message),
    }
}

/// A decimal literal: digits, an optional fraction, an optional exponent.
/// A malformed one is reported and read as 0.
fn number(chars: &[char], start: usize, sink: &mut Sink) -> (Token, usize) {
    let (result, end) = read_number(chars, start);
    match result {
        Ok(token) => (token, end),
        Err(error) => {
            let token = Token {
                kind: Kind::Number(Decimal {
                    digits: 0,
                    scale: 0,
                }),
                column: start + 1,
                text: error.found.clone(),
            };
            sink.push(error);
            (token, end)
        }
    }
}

fn read_number(chars: &[char], start: usize) -> (Result<Token, ParseError>, usize) {
    let mut i = start;
    let mut digits = String::new();
    let mut scale: i64 = 0;
    while i < chars.len() && chars[i].is_ascii_digit() {
        digits.push(chars[i]);
        i += 1;
    }
    if i < chars.len() && chars[i] == '.' {
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            digits.push(chars[i]);
            scale += 1;
            i += 1;
        }
    }
    let mut exponent_ok = true;
    if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
        let mut j = i + 1;
        let negative = chars.get(j) == Some(&'-');
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        let from = j;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        if j == from {
            exponent_ok = false;
        } else {
            let text: String = chars[from..j].iter().collect();
            let value: i64 = text.parse().unwrap_or(i64::MAX);
            let value = value.min(1_000);
            scale = if negative {
                scale + value
            } else {
                scale - value
            };
        }
        i = j;
    }
    let text: String = chars[start..i].iter().collect();
    let bad = |kind: ProblemKind, message: String| ParseError {
        kind,
        column: start + 1,
        found: text.clone(),
        message,
    };
    if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
        let mut end = i;
        while end < chars.len()
            && (chars[end].is_alphanumeric() || chars[end] == '_' || chars[end] == '.')
        {
            end += 1;
        }
        let whole: String = chars[start..end].iter().collect();
        let error = ParseError {
            kind: ProblemKind::SyntaxError,
            column: start + 1,
            found: whole.clone(),
            message: syntax(format!(
                "'{whole}' is neither a number nor a name (a name cannot start with a digit)"
            )),
        };
        return (Err(error), end);
    }
    if digits.is_empty() || !exponent_ok {
        let message = syntax(format!("'{text}' is not a number"));
        return (Err(bad(ProblemKind::SyntaxError, message)), i);
    }
    let trimmed = digits.trim_start_matches('0');
    // Trailing zeros of the fraction carry no value.
    let mut significant = trimmed.to_owned();
    while scale > 0 && significant.ends_with('0') {
        significant.pop();
        scale -= 1;
    }
    while scale < 0 && !significant.is_empty() {
        significant.push('0');
        scale += 1;
        if significant.len() > MAX_DIGITS {
            break;
        }
    }
    let token = |digits: u128, scale: u32| Token {
        kind: Kind::Number(Decimal { digits, scale }),
        column: start + 1,
        text: text.clone(),
    };
    if significant.is_empty() {
        return (Ok(token(0, 0)), i);
    }
    if significant.len() > MAX_DIGITS || scale < 0 {
        let message = limit(format!(
            "the number '{text}' is too large (at most {MAX_DIGITS} digits)"
        ));
        return (Err(bad(ProblemKind::LimitExceeded, message)), i);
    }
    if scale > MAX_DIGITS as i64 {
        let message = limit(format!(
            "the number '{text}' has too many decimals (at most {MAX_DIGITS})"
        ));
        return (Err(bad(ProblemKind::LimitExceeded, message)), i);
    }
    match significant.parse::<u128>() {
        Ok(value) => (Ok(token(value, scale as u32)), i),
        Err(_) => {
            let message = syntax(format!("'{text}' is not a number"));
            (Err(bad(ProblemKind::SyntaxError, message)), i)
        }
    }
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
    operators: usize,
    source: &'a str,
    sink: &'a mut Sink,
}

const ZERO: Expr = Expr::Number(Decimal {
    digits: 0,
    scale: 0,
});

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.tokens[self.at.min(self.tokens.len() - 1)].clone()
    }

    fn advance(&mut self) -> Token {
        let token = self.peek();
        if self.at < self.tokens.len() - 1 {
            self.at += 1;
        }
        token
    }

    fn report(&mut self, kind: ProblemKind, token: &Token, message: String) {
        self.sink.push(ParseError {
            kind,
            column: token.column,
            found: token.text.clone(),
            message,
        });
    }

    fn enter(&mut self, token: &Token) -> Result<(), Stop> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.report(
                ProblemKind::LimitExceeded,
                token,
                limit(format!(
                    "the expression nests deeper than {MAX_DEPTH} levels"
                )),
            );
            return Err(Stop);
        }
        Ok(())
    }

    /// Counts a binary operator against [`MAX_OPERATORS`]; false once past
    /// it (reported once), when the tree stops growing.
    fn operator(&mut self) -> bool {
        let token = self.advance();
        self.operators += 1;
        if self.operators == MAX_OPERATORS + 1 {
            self.report(
                ProblemKind::LimitExceeded,
                &token,
                limit(format!(
                    "the expression has more than {MAX_OPERATORS} operators; split it into several equations"
                )),
            );
        }
        self.operators <= MAX_OPERATORS
    }

    /// After the expression: anything left is a problem; what follows is
    /// still read for its own problems.
    fn rest(&mut self) -> Result<(), Stop> {
        loop {
            let next = self.peek();
            match next.kind {
                Kind::End => return Ok(()),
                Kind::Close => {
                    self.report(
                        ProblemKind::SyntaxError,
                        &next,
                        syntax("this ')' has no matching '('"),
                    );
                    self.advance();
                }
                ref kind if is_operator(kind) => {
                    // After a skipped ')': the operator continues the text.
                    self.advance();
                    self.sum()?;
                }
                _ => {
                    self.report(
                        ProblemKind::SyntaxError,
                        &next,
                        syntax("expected an operator (+ - * / % **) between two terms"),
                    );
                    self.sum()?;
                }
            }
        }
    }

    fn sum(&mut self) -> Result<Expr, Stop> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek().kind {
                Kind::Plus => Op::Add,
                Kind::Minus => Op::Sub,
                _ => return Ok(left),
            };
            let grows = self.operator();
            let right = self.product()?;
            if grows {
                left = Expr::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                };
            }
        }
    }

    fn product(&mut self) -> Result<Expr, Stop> {
        let mut left = self.power()?;
        loop {
            let op = match self.peek().kind {
                Kind::Star => Op::Mul,
                Kind::Slash => Op::Div,
                Kind::Percent => Op::Mod,
                _ => return Ok(left),
            };
            let grows = self.operator();
            let right = self.power()?;
            if grows {
                left = Expr::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                };
            }
        }
    }

    fn power(&mut self) -> Result<Expr, Stop> {
        let base = self.atom()?;
        if self.peek().kind != Kind::Power {
            return Ok(base);
        }
        let operator = self.advance();
        self.enter(&operator)?;
        let exponent_token = self.peek();
        let exponent = self.power()?;
        self.depth -= 1;
        match exponent {
            Expr::Number(Decimal { digits, scale: 0 })
                if (1..=u128::from(MAX_EXPONENT)).contains(&digits) =>
            {
                Ok(Expr::Power {
                    base: Box::new(base),
                    exponent: digits as u32,
                })
            }
            _ => {
                let column = exponent_token.column;
                let found: String = self
                    .source
                    .chars()
                    .skip(column - 1)
                    .take(self.peek().column.saturating_sub(column))
                    .collect();
                let found = found.trim_end();
                if found.is_empty() {
                    // No exponent at all: the syntax error said so.
                    return Ok(base);
                }
                self.sink.push(ParseError {
                    kind: ProblemKind::Exponent,
                    column,
                    found: found.to_owned(),
                    message: format!(
                        "exponent must be a constant positive integer from 1 to {MAX_EXPONENT}, such as x ** 2"
                    ),
                });
                Ok(base)
            }
        }
    }

    fn atom(&mut self) -> Result<Expr, Stop> {
        let token = self.advance();
        match token.kind {
            Kind::Number(value) => Ok(Expr::Number(value)),
            Kind::Name(ref name) => Ok(Expr::Name(name.clone())),
            Kind::Open => {
                self.enter(&token)?;
                let inner = self.sum()?;
                self.depth -= 1;
                let close = self.peek();
                if close.kind == Kind::Close {
                    self.advance();
                } else {
                    self.report(
                        ProblemKind::SyntaxError,
                        &close,
                        syntax(format!(
                            "expected ')' to close the '(' at column {}",
                            token.column
                        )),
                    );
                }
                Ok(inner)
            }
            Kind::Minus | Kind::Plus => {
                let sign = token.text.clone();
                self.report(
                    ProblemKind::UnaryOperator,
                    &token,
                    format!("unary '{sign}' is not supported; rewrite '{sign}x' as '(0 {sign} x)'"),
                );
                // Read on as (0 - operand), so what follows is checked too.
                self.enter(&token)?;
                let operand = self.power()?;
                self.depth -= 1;
                Ok(Expr::Binary {
                    op: Op::Sub,
                    left: Box::new(ZERO),
                    right: Box::new(operand),
                })
            }
            Kind::End => {
                self.report(
                    ProblemKind::SyntaxError,
                    &token,
                    syntax("the expression ends where a number, a name or '(' was expected"),
                );
                Ok(ZERO)
            }
            Kind::Close => {
                self.report(
                    ProblemKind::SyntaxError,
                    &token,
                    syntax("expected a number, a name or '(' before this ')'"),
                );
                // Left for the '(' it closes.
                self.at -= 1;
                Ok(ZERO)
            }
            _ => {
                self.report(
                    ProblemKind::SyntaxError,
                    &token,
                    syntax("expected a number, a name or '(' here, not an operator"),
                );
                // Skip the run of stray operators, then read the operand.
                while matches!(
                    self.peek().kind,
                    Kind::Star | Kind::Slash | Kind::Percent | Kind::Power
                ) {
                    self.advance();
                }
                self.atom()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first problem of `source`.
    fn err(source: &str) -> ParseError {
        errs(source).errors[0].clone()
    }

    fn errs(source: &str) -> ParseErrors {
        let errors = parse(source).expect_err(source);
        assert!(!errors.errors.is_empty(), "{source}");
        errors
    }

    fn name(n: &str) -> Box<Expr> {
        Box::new(Expr::Name(n.to_owned()))
    }

    #[test]
    fn precedence_and_associativity_follow_python() {
        // a - b - c is (a - b) - c; a + b * c ** 2 is a + (b * (c ** 2)).
        assert_eq!(
            parse("a - b - c").unwrap(),
            Expr::Binary {
                op: Op::Sub,
                left: Box::new(Expr::Binary {
                    op: Op::Sub,
                    left: name("a"),
                    right: name("b"),
                }),
                right: name("c"),
            }
        );
        assert_eq!(
            parse("a + b * c ** 2").unwrap(),
            Expr::Binary {
                op: Op::Add,
                left: name("a"),
                right: Box::new(Expr::Binary {
                    op: Op::Mul,
                    left: name("b"),
                    right: Box::new(Expr::Power {
                        base: name("c"),
                        exponent: 2
                    }),
                }),
            }
        );
        assert_eq!(
            parse("(a + b) % c").unwrap(),
            Expr::Binary {
                op: Op::Mod,
                left: Box::new(Expr::Binary {
                    op: Op::Add,
                    left: name("a"),
                    right: name("b"),
                }),
                right: name("c"),
            }
        );
    }

    #[test]
    fn numbers_are_kept_exactly() {
        let number = |s: &str| match parse(s).unwrap() {
            Expr::Number(d) => (d.digits, d.scale),
            other => panic!("{other:?}"),
        };
        assert_eq!(number("52"), (52, 0));
        assert_eq!(number("0.10"), (1, 1));
        assert_eq!(number(".5"), (5, 1));
        assert_eq!(number("5."), (5, 0));
        assert_eq!(number("1e3"), (1000, 0));
        assert_eq!(number("2.5E-2"), (25, 3));
        assert_eq!(number("000"), (0, 0));
        assert_eq!(number("0.0e999999999999"), (0, 0));
    }

    #[test]
    fn names_are_collected() {
        let expr = parse("total - (net * rate_1 + net) / _x").unwrap();
        let names: Vec<_> = expr.names().into_iter().collect();
        assert_eq!(names, ["_x", "net", "rate_1", "total"]);
    }

    #[test]
    fn unary_minus_and_plus_are_refused_with_the_rewrite() {
        let e = err("-base * 0.1");
        assert_eq!((e.column, e.found.as_str()), (1, "-"));
        assert!(e.message.contains("(0 - x)"), "{}", e.message);
        let e = err("a * +b");
        assert_eq!((e.column, e.found.as_str()), (5, "+"));
        assert!(e.message.contains("(0 + x)"), "{}", e.message);
        let e = err("a - -b");
        assert_eq!(e.column, 5);
    }

    #[test]
    fn exponents_must_be_constant_positive_integers() {
        for (source, column, found) in [
            ("x ** y", 6, "y"),
            ("x ** 0", 6, "0"),
            ("x ** 2.5", 6, "2.5"),
            ("x ** (0 - 2)", 6, "(0 - 2)"),
            ("x ** 17", 6, "17"),
            ("x ** 2 ** 2", 6, "2 ** 2"),
        ] {
            let e = err(source);
            assert_eq!((e.column, e.found.as_str()), (column, found), "{source}");
            assert!(e.message.contains("exponent"), "{}", e.message);
        }
        let e = err("x ** -2");
        assert_eq!((e.column, e.found.as_str()), (6, "-"));
        assert!(parse("x ** (3)").is_ok());
        assert!(parse("x ** 16").is_ok());
    }

    #[test]
    fn syntax_errors_say_where() {
        let cases = [
            ("a +", 4, END),
            ("(a + b", 7, END),
            ("a + b)", 6, ")"),
            ("a b", 3, "b"),
            ("a ^ 2", 3, "^"),
            ("a // b", 3, "//"),
            ("a == b", 3, "="),
            ("1,5", 2, ","),
            ("2x", 1, "2x"),
            ("1e", 1, "1e"),
            ("()", 2, ")"),
            ("a * * b", 5, "*"),
            ("", 1, END),
            ("   ", 1, END),
            ("1.2.3", 1, "1.2.3"),
        ];
        for (source, column, found) in cases {
            let e = err(source);
            assert_eq!(
                (e.column, e.found.as_str()),
                (column, found),
                "{source}: {e}"
            );
        }
    }

    #[test]
    fn unicode_is_refused_at_the_right_character_column() {
        let e = err("prix × quantité");
        assert_eq!((e.column, e.found.as_str()), (6, "×"));
        let e = err("quantité");
        assert_eq!((e.column, e.found.as_str()), (8, "é"));
        assert!(e.message.contains("ASCII"));
        let e = err("a +\u{200b}b");
        assert_eq!(e.column, 4);
    }

    #[test]
    fn long_operator_chains_are_bounded_and_what_passes_is_shallow_enough() {
        let chain = |count: usize| format!("{}a", "a+".repeat(count));
        let e = err(&chain(4_999));
        assert!(e.message.contains("operators"), "{e}");
        assert_eq!(e.column, 2 * MAX_OPERATORS + 2);
        let longest = parse(&chain(MAX_OPERATORS)).unwrap();
        // Evaluating and dropping the longest accepted tree recurse through
        // it: on a small stack that must still be fine.
        let worker = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || {
                let total = crate::equations::evaluate::value(&longest, &|_| Some(1.0));
                drop(longest);
                total
            })
            .unwrap();
        assert_eq!(worker.join().unwrap(), Ok(201.0));
    }

    #[test]
    fn deep_nesting_is_bounded_not_a_stack_overflow() {
        let deep = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        // Over the length bound first.
        assert!(err(&deep).message.contains("characters"));
        let deep = format!("{}a{}", "(".repeat(4_000), ")".repeat(4_000));
        let e = err(&deep);
        assert_eq!(e.column, MAX_DEPTH + 1);
        assert!(e.message.contains("deeper"), "{}", e.message);
        let powers = format!("a{}", " ** 2".repeat(1_000));
        assert!(err(&powers).message.contains("deeper"));
        let ok = format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        // A long flat chain is a loop here, but it is bounded too (see
        // long_operator_chains_are_bounded_and_what_passes_is_shallow_enough).
        let flat = vec!["a"; MAX_OPERATORS + 1].join(" + ");
        assert!(parse(&flat).is_ok());
    }

    #[test]
    fn huge_numbers_are_refused_not_wrapped() {
        let e = err("1234567890123456789012345678901234567890");
        assert!(e.message.contains("too large"), "{}", e.message);
        assert!(err("1e400").message.contains("too large"));
        assert!(err("1e-400").message.contains("decimals"));
        assert!(err("9e999999999999999999999").message.contains("too large"));
        assert!(parse("123456789012345678901234567890").is_ok());
    }

    #[test]
    fn random_input_never_panics_and_errors_point_inside_it() {
        // A fixed-seed generator over the characters that matter (and a few
        // that do not belong), so failures reproduce.
        const ALPHABET: &[char] = &[
            'a', 'b', '_', '0', '1', '9', '.', 'e', 'E', '+', '-', '*', '/', '%', '(', ')', ' ',
            '\t', '\n', '^', '=', ',', 'é', '×', '\u{0}', '\u{200b}',
        ];
        let mut state: u64 = 0x5eed_1234_abcd_0001;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        for _ in 0..20_000 {
            let length = next() % 40;
            let source: String = (0..length)
                .map(|_| ALPHABET[next() % ALPHABET.len()])
                .collect();
            if let Err(errors) = parse(&source) {
                let chars = source.chars().count();
                assert!(!errors.errors.is_empty(), "{source:?}");
                assert!(errors.errors.len() <= MAX_LISTED_ERRORS);
                for error in &errors.errors {
                    assert!(
                        (1..=chars + 1).contains(&error.column),
                        "{source:?}: column {} of {chars}",
                        error.column
                    );
                    assert!(!error.found.is_empty() && !error.message.is_empty());
                }
            }
        }
    }

    /// (kind, column, found) of every listed problem.
    fn problems(source: &str) -> Vec<(ProblemKind, usize, String)> {
        errs(source)
            .errors
            .into_iter()
            .map(|e| (e.kind, e.column, e.found))
            .collect()
    }

    #[test]
    fn independent_problems_are_all_reported_each_starting_with_its_kind() {
        use ProblemKind::*;
        let errors = errs("-a ** b");
        let kinds: Vec<_> = errors.errors.iter().map(|e| (e.kind, e.column)).collect();
        assert_eq!(kinds, [(UnaryOperator, 1), (Exponent, 7)]);
        assert_eq!(errors.unlisted, 0);
        assert!(
            errors.errors[0]
                .message
                .starts_with("unary '-' is not supported")
        );
        assert!(errors.errors[0].message.contains("(0 - x)"));
        assert!(
            errors.errors[1]
                .message
                .starts_with("exponent must be a constant positive integer")
        );
        assert_eq!(
            problems("a // b + c ** d - -e + (f"),
            [
                (SyntaxError, 3, "//".to_owned()),
                (Exponent, 15, "d".to_owned()),
                (UnaryOperator, 19, "-".to_owned()),
                (SyntaxError, 26, END.to_owned()),
            ]
        );
        // Each kind's message starts with its words.
        for (source, start) in [
            ("a +", "syntax error: "),
            ("a ^ 2", "syntax error: "),
            ("+a", "unary '+' is not supported"),
            ("x ** 0", "exponent must be a constant positive integer"),
            ("1e400", "limit exceeded: "),
        ] {
            let e = err(source);
            assert!(e.message.starts_with(start), "{source}: {}", e.message);
        }
    }

    #[test]
    fn recovering_from_a_problem_does_not_invent_others() {
        use ProblemKind::*;
        let one = |source: &str, column: usize| {
            let found = problems(source);
            assert_eq!(found.len(), 1, "{source}: {found:?}");
            assert_eq!(found[0].1, column, "{source}: {found:?}");
        };
        one("a +* b", 4);
        one("(a b", 4);
        one("a == b", 3);
        one("()", 2);
        one("a +\u{200b}b", 4);
        one("2x + 1", 1);
        one("quantité * 2", 8);
        one("a * * * b", 5);
        one("(a + b", 7);
        assert_eq!(
            problems("a + b)) * c"),
            [
                (SyntaxError, 6, ")".to_owned()),
                (SyntaxError, 7, ")".to_owned())
            ]
        );
        assert_eq!(
            problems("prix × quantité ^ 2"),
            [
                (SyntaxError, 6, "×".to_owned()),
                (SyntaxError, 15, "é".to_owned()),
                (SyntaxError, 17, "^".to_owned())
            ]
        );
        assert_eq!(
            problems("1,5 + 2x + 1e"),
            [
                (SyntaxError, 2, ",".to_owned()),
                (SyntaxError, 7, "2x".to_owned()),
                (SyntaxError, 12, "1e".to_owned())
            ]
        );
        // A negative exponent is two problems: the sign, and the exponent
        // it would still be after the rewrite (0 - 2).
        assert_eq!(
            problems("x ** -2"),
            [
                (UnaryOperator, 6, "-".to_owned()),
                (Exponent, 6, "-2".to_owned())
            ]
        );
        assert_eq!(problems("--a").len(), 2);
    }

    #[test]
    fn hundreds_of_problems_are_counted_not_listed() {
        let many = vec!["-a"; 150].join(" + ");
        let errors = errs(&many);
        assert_eq!(errors.errors.len(), MAX_LISTED_ERRORS);
        assert_eq!(errors.unlisted, 150 - MAX_LISTED_ERRORS);
        assert_eq!(errors.errors[9].column, 9 * 5 + 1);
        // Past the operator bound the problem is reported once, and the
        // tree stops growing.
        let chain = format!("{}a", "a+".repeat(4_999));
        let errors = errs(&chain);
        assert_eq!(errors.errors.len(), 1);
        assert_eq!(errors.unlisted, 0);
        assert_eq!(errors.errors[0].kind, ProblemKind::LimitExceeded);
        // Thousands of unary signs nest: the parse stops at the depth bound.
        let signs = format!("{}a", "-".repeat(5_000));
        let errors = errs(&signs);
        assert_eq!(errors.errors.len() + errors.unlisted, MAX_DEPTH + 2);
        // The longest expression full of problems still gives a short list.
        let longest = "-a+".repeat(MAX_EXPRESSION_CHARS / 3);
        let errors = errs(&longest);
        let text: usize = errors.errors.iter().map(|e| e.to_string().len()).sum();
        assert!(text < 2_000, "{text}");
        assert!(errors.unlisted > 1_000, "{}", errors.unlisted);
    }

    #[test]
    fn errors_render_with_column_and_text() {
        assert_eq!(
            err("-x").to_string(),
            "column 1, at '-': unary '-' is not supported; rewrite '-x' as '(0 - x)'"
        );
        assert!(err("a +").to_string().starts_with("column 4, at the end:"));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A normalised decimal (no trailing zero after the point), as the
    /// parser keeps one.
    fn decimal() -> impl Strategy<Value = Decimal> {
        (0u128..1_000_000_000_000, 0u32..6).prop_map(|(digits, scale)| {
            if scale > 0 && digits % 10 == 0 {
                Decimal { digits, scale: 0 }
            } else {
                Decimal { digits, scale }
            }
        })
    }

    fn expr() -> impl Strategy<Value = Expr> {
        let op = prop::sample::select(vec![Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Mod]);
        let leaf = prop_oneof![
            decimal().prop_map(Expr::Number),
            "[a-z_][a-z0-9_]{0,5}".prop_map(Expr::Name),
        ];
        leaf.prop_recursive(6, 40, 2, move |inner| {
            prop_oneof![
                (op.clone(), inner.clone(), inner.clone()).prop_map(|(op, left, right)| {
                    Expr::Binary {
                        op,
                        left: Box::new(left),
                        right: Box::new(right),
                    }
                }),
                (inner, 1..=MAX_EXPONENT).prop_map(|(base, exponent)| Expr::Power {
                    base: Box::new(base),
                    exponent,
                }),
            ]
        })
    }

    /// The tree as text, every operation in parentheses.
    fn shown(expr: &Expr) -> String {
        match expr {
            Expr::Number(Decimal { digits, scale: 0 }) => digits.to_string(),
            Expr::Number(Decimal { digits, scale }) => {
                let text = format!("{digits:0>width$}", width = *scale as usize + 1);
                let (whole, fraction) = text.split_at(text.len() - *scale as usize);
                format!("{whole}.{fraction}")
            }
            Expr::Name(name) => name.clone(),
            Expr::Binary { op, left, right } => {
                format!("({} {} {})", shown(left), op.symbol(), shown(right))
            }
            Expr::Power { base, exponent } => format!("({} ** {exponent})", shown(base)),
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// Any text parses or says where it fails: a column within the
        /// text, or one past its end.
        #[test]
        fn any_text_parses_or_says_where(
            text in prop_oneof![any::<String>(), "[a-z0-9_ .eE+*/%()-]{0,40}"],
        ) {
            if let Err(errors) = parse(&text) {
                prop_assert!(!errors.errors.is_empty());
                for error in &errors.errors {
                    prop_assert!(error.column >= 1 && error.column <= text.chars().count() + 1, "{error}");
                    prop_assert!(!error.message.is_empty());
                }
            }
        }

        /// A tree printed with every operation parenthesised parses back to
        /// itself.
        #[test]
        fn printed_trees_parse_back(tree in expr()) {
            let text = shown(&tree);
            prop_assert_eq!(parse(&text).map_err(|e| format!("{:?}", e.errors)), Ok(tree), "{}", text);
        }
    }
}
