//! The expression parser of the equation tools: text such as
//! `quantity * rate_per_pc + 0.5` into an [`Expr`] tree, or a
//! [`ParseError`] that says where (1-based character column) and what.
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

/// Where and why an expression does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based character column of the offending text (one past the end
    /// when the expression ended too early).
    pub column: usize,
    /// The offending text, or `end of expression`.
    pub found: String,
    /// What is wrong, in words.
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

const END: &str = "end of expression";

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

/// Parses one expression.
pub fn parse(source: &str) -> Result<Expr, ParseError> {
    let length = source.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(ParseError {
            column: MAX_EXPRESSION_CHARS + 1,
            found: source.chars().skip(MAX_EXPRESSION_CHARS).take(10).collect(),
            message: format!(
                "the expression is {length} characters long; at most {MAX_EXPRESSION_CHARS} are accepted"
            ),
        });
    }
    let tokens = tokenize(source)?;
    if matches!(tokens.first().map(|t| &t.kind), Some(Kind::End)) {
        return Err(ParseError {
            column: 1,
            found: END.to_owned(),
            message: "the expression is empty; write a number, a name or an arithmetic expression"
                .to_owned(),
        });
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
        operators: 0,
        source,
    };
    let expr = parser.sum()?;
    let next = parser.peek();
    match next.kind {
        Kind::End => Ok(expr),
        Kind::Close => Err(parser.error_at(next, "this ')' has no matching '('")),
        _ => Err(parser.error_at(
            next,
            "expected an operator (+ - * / % **) between two terms",
        )),
    }
}

fn tokenize(source: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
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
                return Err(ParseError {
                    column,
                    found: "//".to_owned(),
                    message: "floor division '//' is not supported; use '/'".to_owned(),
                });
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
                let (token, end) = number(&chars, i)?;
                i = end;
                tokens.push(token);
                continue;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let end = (i..chars.len())
                    .find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '_'))
                    .unwrap_or(chars.len());
                let name: String = chars[i..end].iter().collect();
                tokens.push(Token {
                    kind: Kind::Name(name.clone()),
                    column,
                    text: name,
                });
                i = end;
                continue;
            }
            other => return Err(unexpected_character(other, column)),
        };
        i += token.text.chars().count();
        tokens.push(token);
    }
    tokens.push(Token {
        kind: Kind::End,
        column: chars.len() + 1,
        text: END.to_owned(),
    });
    Ok(tokens)
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
        column,
        found: c.to_string(),
        message,
    }
}

/// A decimal literal: digits, an optional fraction, an optional exponent.
fn number(chars: &[char], start: usize) -> Result<(Token, usize), ParseError> {
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
    let bad = |message: String| ParseError {
        column: start + 1,
        found: text.clone(),
        message,
    };
    if digits.is_empty() || !exponent_ok {
        return Err(bad(format!("'{text}' is not a number")));
    }
    if i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == '_' || chars[i] == '.') {
        let mut end = i;
        while end < chars.len()
            && (chars[end].is_ascii_alphanumeric() || chars[end] == '_' || chars[end] == '.')
        {
            end += 1;
        }
        let whole: String = chars[start..end].iter().collect();
        return Err(ParseError {
            column: start + 1,
            found: whole.clone(),
            message: format!(
                "'{whole}' is neither a number nor a name (a name cannot start with a digit)"
            ),
        });
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
    if significant.is_empty() {
        let token = Token {
            kind: Kind::Number(Decimal {
                digits: 0,
                scale: 0,
            }),
            column: start + 1,
            text,
        };
        return Ok((token, i));
    }
    if significant.len() > MAX_DIGITS || scale < 0 {
        return Err(bad(format!(
            "the number '{text}' is too large (at most {MAX_DIGITS} digits)"
        )));
    }
    if scale > MAX_DIGITS as i64 {
        return Err(bad(format!(
            "the number '{text}' has too many decimals (at most {MAX_DIGITS})"
        )));
    }
    let value: u128 = significant
        .parse()
        .map_err(|_| bad(format!("'{text}' is not a number")))?;
    let token = Token {
        kind: Kind::Number(Decimal {
            digits: value,
            scale: scale as u32,
        }),
        column: start + 1,
        text,
    };
    Ok((token, i))
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
    operators: usize,
    source: &'a str,
}

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

    fn error_at(&self, token: Token, message: impl Into<String>) -> ParseError {
        ParseError {
            column: token.column,
            found: token.text,
            message: message.into(),
        }
    }

    fn enter(&mut self, token: &Token) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_at(
                token.clone(),
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    /// Counts a binary operator against [`MAX_OPERATORS`].
    fn operator(&mut self) -> Result<(), ParseError> {
        let token = self.advance();
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(self.error_at(
                token,
                format!(
                    "the expression has more than {MAX_OPERATORS} operators; split it into several equations"
                ),
            ));
        }
        Ok(())
    }

    fn sum(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek().kind {
                Kind::Plus => Op::Add,
                Kind::Minus => Op::Sub,
                _ => return Ok(left),
            };
            self.operator()?;
            let right = self.product()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn product(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.power()?;
        loop {
            let op = match self.peek().kind {
                Kind::Star => Op::Mul,
                Kind::Slash => Op::Div,
                Kind::Percent => Op::Mod,
                _ => return Ok(left),
            };
            self.operator()?;
            let right = self.power()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn power(&mut self) -> Result<Expr, ParseError> {
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
                Err(ParseError {
                    column,
                    found: found.trim_end().to_owned(),
                    message: format!(
                        "the exponent of '**' must be a constant whole number from 1 to {MAX_EXPONENT}, such as x ** 2"
                    ),
                })
            }
        }
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let token = self.advance();
        match token.kind {
            Kind::Number(value) => Ok(Expr::Number(value)),
            Kind::Name(ref name) => Ok(Expr::Name(name.clone())),
            Kind::Open => {
                self.enter(&token)?;
                let inner = self.sum()?;
                self.depth -= 1;
                let close = self.advance();
                if close.kind == Kind::Close {
                    Ok(inner)
                } else {
                    Err(self.error_at(
                        close,
                        format!("expected ')' to close the '(' at column {}", token.column),
                    ))
                }
            }
            Kind::Minus | Kind::Plus => {
                let sign = token.text.clone();
                Err(self.error_at(
                    token,
                    format!("unary '{sign}' is not supported; rewrite '{sign}x' as '(0 {sign} x)'"),
                ))
            }
            Kind::End => Err(self.error_at(
                token,
                "the expression ends where a number, a name or '(' was expected",
            )),
            Kind::Close => {
                Err(self.error_at(token, "expected a number, a name or '(' before this ')'"))
            }
            _ => Err(self.error_at(
                token,
                "expected a number, a name or '(' here, not an operator",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(source: &str) -> ParseError {
        parse(source).expect_err(source)
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
            if let Err(error) = parse(&source) {
                let chars = source.chars().count();
                assert!(
                    (1..=chars + 1).contains(&error.column),
                    "{source:?}: column {} of {chars}",
                    error.column
                );
                assert!(!error.found.is_empty() && !error.message.is_empty());
            }
        }
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
            if let Err(error) = parse(&text) {
                prop_assert!(error.column >= 1 && error.column <= text.chars().count() + 1, "{error}");
                prop_assert!(!error.message.is_empty());
            }
        }

        /// A tree printed with every operation parenthesised parses back to
        /// itself.
        #[test]
        fn printed_trees_parse_back(tree in expr()) {
            let text = shown(&tree);
            prop_assert_eq!(parse(&text).map_err(|e| e.to_string()), Ok(tree), "{}", text);
        }
    }
}
