//! The planner's narration guard (`planner::explain`). The input is a
//! narration, then a NUL byte, then a stored result as JSON. It must never
//! panic; every ASCII digit of the narration belongs to exactly one numeric
//! token, in order (commas in a token only as thousands separators); the
//! guard's verdict is consistent with its findings;
//! and whatever the stored result holds, the fixed template's own words
//! pass the guard.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solvergate::planner::LoadPlan;
use solvergate::planner::explain::{narrate, tokens, verify};

fuzz_target!(|data: &[u8]| {
    let (narration, plan) = match data.iter().position(|&byte| byte == 0) {
        Some(at) => (&data[..at], Some(&data[at + 1..])),
        None => (data, None),
    };
    let narration = String::from_utf8_lossy(narration);
    let found = tokens(&narration);
    let digits = narration.chars().filter(char::is_ascii_digit).count();
    let token_digits: usize = found
        .iter()
        .map(|token| token.chars().filter(char::is_ascii_digit).count())
        .sum();
    assert_eq!(digits, token_digits, "{found:?}");
    let mut rest: &str = &narration;
    for token in &found {
        assert!(token.starts_with(|c: char| c.is_ascii_digit()), "{token}");
        assert!(token.ends_with(|c: char| c.is_ascii_digit()), "{token}");
        // Commas only as thousands separators, before any fraction.
        assert!(
            token.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ','),
            "{token}"
        );
        let whole = token.split('.').next().unwrap_or_default();
        let groups: Vec<&str> = whole.split(',').collect();
        assert!(
            groups.len() == 1
                || ((1..=3).contains(&groups[0].len())
                    && groups[1..].iter().all(|group| group.len() == 3)),
            "{token}"
        );
        assert!(!token.split('.').nth(1).is_some_and(|f| f.contains(',')), "{token}");
        assert!(token.matches('.').count() <= 1, "{token}");
        let at = rest.find(token.as_str()).expect("tokens appear in order");
        rest = &rest[at + token.len()..];
    }
    let Some(Ok(plan)) = plan.map(serde_json::from_slice::<LoadPlan>) else {
        return;
    };
    let check = verify(&narration, &plan);
    assert_eq!(check.tokens_checked, found.len());
    assert_eq!(check.ok, check.offending.is_empty());
    assert!(check.offending.iter().all(|token| found.contains(token)));
    let own = narrate(&plan);
    let own_check = verify(&own, &plan);
    assert!(own_check.ok, "{:?}\n{own}", own_check.offending);
});
