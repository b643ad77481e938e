//! `solvergate equations …` as a person at a terminal meets it, on the real
//! runtime: the reference's value correction, a misread invoice, an
//! optimisation, contradictory constraints, malformed expressions, a run
//! out of time, validation, evaluation and bad files — each whole
//! transcript (stdout, stderr, exit code) pinned as a snapshot.

use std::process::Output;

mod common;
use common::{Home, transcript};

/// Requests written into the home and the `equations` command run on them.
impl Home {
    fn write_json(&self, name: &str, body: &serde_json::Value) -> String {
        self.write(name, &serde_json::to_string_pretty(body).unwrap())
    }

    /// `solvergate equations ARGS` on the test runtime.
    fn equations(&self, args: &[&str]) -> Output {
        let mut all = vec!["equations"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// Runs a request written under `name` and pins the transcript.
    fn snapshot(&self, name: &str, command: &str, body: &serde_json::Value) -> Output {
        let file = self.write_json(&format!("{name}.json"), body);
        let output = self.equations(&[command, &file]);
        self.snapshot_settings_as("[DIR]")
            .bind(|| insta::assert_snapshot!(name, transcript(&output)));
        output
    }

    fn json(&self, command: &str, body: &serde_json::Value) -> serde_json::Value {
        let file = self.write_json("request.json", body);
        let output = self.equations(&[command, &file, "--json"]);
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

fn seed() -> serde_json::Value {
    serde_json::json!({
        "variables": {
            "gross_amount": {"obs": 500, "confidence": 0.3, "mult_factor": 100, "min": 0, "max": 100000, "fixed": false},
            "quantity": {"obs": 10, "mult_factor": 1, "fixed": true},
            "rate_per_pc": {"obs": 52, "mult_factor": 100, "fixed": true}
        },
        "equations": [
            {"lhs": "gross_amount", "rhs": "quantity * rate_per_pc", "relation": "==", "weight": 1000, "tolerance": 0}
        ],
        "timeout_seconds": 5,
        "num_workers": 2
    })
}

#[test]
fn correct_gives_the_reference_gross_amount() {
    let home = Home::new().on_test_runtime();
    let output = home.snapshot("correct_seed", "correct", &seed());
    assert_eq!(output.status.code(), Some(0));
    let result = home.json("correct", &seed());
    assert_eq!(result["status"], "OPTIMAL");
    assert_eq!(
        result["corrected"],
        serde_json::json!({"gross_amount": 520.0})
    );
}

#[test]
fn correct_fixes_two_misread_invoice_fields() {
    // net (564.00 for 546.00) and gross (694.74 for 649.74) were misread;
    // the line item and the tax rate pin the rest.
    let invoice = serde_json::json!({
        "variables": {
            "quantity": {"obs": 12, "fixed": true},
            "unit_price": {"obs": 45.5, "mult_factor": 100, "fixed": true},
            "tax_rate": {"obs": 0.19, "mult_factor": 100, "fixed": true},
            "net": {"obs": 564.0, "confidence": 0.4, "mult_factor": 100, "max": 100000},
            "tax": {"obs": 103.74, "confidence": 0.8, "mult_factor": 100, "max": 100000},
            "gross": {"obs": 694.74, "confidence": 0.4, "mult_factor": 100, "max": 100000}
        },
        "equations": [
            {"lhs": "net", "rhs": "quantity * unit_price"},
            {"lhs": "tax", "rhs": "net * tax_rate"},
            {"lhs": "gross", "rhs": "net + tax"}
        ]
    });
    let home = Home::new().on_test_runtime();
    let output = home.snapshot("correct_invoice", "correct", &invoice);
    assert_eq!(output.status.code(), Some(0));
    let result = home.json("correct", &invoice);
    assert_eq!(
        result["corrected"],
        serde_json::json!({"net": 546.0, "tax": 103.74, "gross": 649.74})
    );
}

#[test]
fn correct_reports_malformed_expressions_with_positions() {
    let bad = serde_json::json!({
        "variables": {"base": {"obs": 10}, "discount": {"obs": 1, "confidence": 0.5}},
        "equations": [
            {"lhs": "discount", "rhs": "-base * 0.1"},
            {"lhs": "discount ** base", "rhs": "(base"}
        ]
    });
    let output = Home::new()
        .on_test_runtime()
        .snapshot("correct_invalid", "correct", &bad);
    assert_eq!(output.status.code(), Some(4));
}

#[test]
fn correct_without_time_to_answer_is_unknown() {
    let mut request = seed();
    request["timeout_seconds"] = serde_json::json!(0.001);
    let output = Home::new()
        .on_test_runtime()
        .snapshot("correct_unknown", "correct", &request);
    assert_eq!(output.status.code(), Some(5));
}

#[test]
fn correct_says_which_equations_stay_violated() {
    // Every value is pinned and the line total disagrees with quantity ×
    // price by 2.00: nothing can move, so the equation stays violated.
    let pinned = serde_json::json!({
        "variables": {
            "quantity": {"obs": 3, "fixed": true},
            "price": {"obs": 9.5, "mult_factor": 100, "fixed": true},
            "total": {"obs": 30.5, "mult_factor": 100, "fixed": true},
            "discount": {"mult_factor": 100, "max": 100}
        },
        "equations": [
            {"lhs": "total", "rhs": "quantity * price", "weight": 10},
            {"lhs": "discount", "rhs": "total - quantity * price", "relation": "<="}
        ]
    });
    let home = Home::new().on_test_runtime();
    let output = home.snapshot("correct_violated", "correct", &pinned);
    assert_eq!(output.status.code(), Some(0));
    let result = home.json("correct", &pinned);
    assert_eq!(result["penalty"], 2000);
    assert_eq!(result["violations"][0]["place"], "equations[0]");
    assert_eq!(result["violations"][0]["residual"], 200.0);
}

#[test]
fn a_fixed_variable_needs_its_obs() {
    let mut request = seed();
    request["variables"]["quantity"] = serde_json::json!({"fixed": true});
    let output =
        Home::new()
            .on_test_runtime()
            .snapshot("equations_fixed_without_obs", "correct", &request);
    assert_eq!(output.status.code(), Some(1));
}

fn optimisation() -> serde_json::Value {
    // max units × price with units + price <= 120 and a soft price cap of
    // 50 (500 per cent above it): units 70, price 50, 3500.
    serde_json::json!({
        "variables": {
            "units": {"min": 0, "max": 1000, "mult_factor": 1},
            "price": {"min": 0, "max": 500, "mult_factor": 100}
        },
        "objective": {"expr": "units * price", "direction": "maximize"},
        "hard_constraints": [{"lhs": "units + price", "rhs": "120", "relation": "<="}],
        "soft_constraints": [{"lhs": "price", "rhs": "50", "relation": "<=", "weight": 500, "tolerance": 0}],
        "timeout_seconds": 10
    })
}

#[test]
fn optimize_finds_the_best_product() {
    let home = Home::new().on_test_runtime();
    let output = home.snapshot("optimize_product", "optimize", &optimisation());
    assert_eq!(output.status.code(), Some(0));
    let result = home.json("optimize", &optimisation());
    assert_eq!(
        result["values"],
        serde_json::json!({"units": 70.0, "price": 50.0})
    );
    assert_eq!(result["objective_value"], 3500.0);
}

#[test]
fn optimize_with_contradictory_constraints_is_infeasible() {
    let request = serde_json::json!({
        "variables": {"x": {"max": 100}, "y": {"max": 100}},
        "objective": {"expr": "x + y", "direction": "minimize"},
        "hard_constraints": [
            {"lhs": "x + y", "rhs": "10", "relation": "<="},
            {"lhs": "x + y", "rhs": "20", "relation": ">="}
        ]
    });
    let output =
        Home::new()
            .on_test_runtime()
            .snapshot("optimize_infeasible", "optimize", &request);
    assert_eq!(output.status.code(), Some(3));
}

#[test]
fn validate_lists_each_problem() {
    let request = serde_json::json!({
        "equations": [
            {"lhs": "total", "rhs": "taxable + tax"},
            {"lhs": "discount", "rhs": "-base * 0.1"},
            {"lhs": "area", "rhs": "side ** n"},
            {"lhs": "prix", "rhs": "quantité * 2"},
            {"lhs": "total", "rhs": "-a ** b + (c"}
        ]
    });
    let home = Home::new().on_test_runtime();
    let output = home.snapshot("validate_mixed", "validate", &request);
    assert_eq!(output.status.code(), Some(4));
    let valid = serde_json::json!({"equations": [{"lhs": "a", "rhs": "(b + c) % 7"}]});
    let output = home.snapshot("validate_valid", "validate", &valid);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn evaluate_judges_each_equation() {
    let home = Home::new().on_test_runtime();
    let holds = serde_json::json!({
        "equations": [{"lhs": "gross_amount", "rhs": "quantity * rate_per_pc", "relation": "==", "tolerance": 0.5}],
        "values": {"gross_amount": 520, "quantity": 10, "rate_per_pc": 52}
    });
    let output = home.snapshot("evaluate_passed", "evaluate", &holds);
    assert_eq!(output.status.code(), Some(0));
    let breaks = serde_json::json!({
        "equations": [
            {"lhs": "gross_amount", "rhs": "quantity * rate_per_pc"},
            {"lhs": "net + tax", "rhs": "gross", "relation": "<="},
            {"lhs": "gross", "rhs": "net + vat"}
        ],
        "values": {"gross_amount": 500, "quantity": 10, "rate_per_pc": 52, "net": 546, "tax": 103.74, "gross": 649.74}
    });
    let output = home.snapshot("evaluate_failed", "evaluate", &breaks);
    assert_eq!(output.status.code(), Some(6));
}

#[test]
fn bad_files_are_refused_before_solving() {
    let home = Home::new().on_test_runtime();
    let missing = home.path().join("nope.json");
    let output = home.equations(&["correct", &missing.to_string_lossy()]);
    home.snapshot_settings_as("[DIR]")
        .bind(|| insta::assert_snapshot!("equations_missing_file", transcript(&output)));
    assert_eq!(output.status.code(), Some(1));

    let mut misspelt = seed();
    misspelt["timeout"] = serde_json::json!(5);
    let output = home.snapshot("equations_unknown_field", "correct", &misspelt);
    assert_eq!(output.status.code(), Some(1));

    let mut untrusting = seed();
    untrusting["variables"]["gross_amount"]["confidence"] = serde_json::json!(2);
    let output = home.snapshot("equations_confidence_out_of_range", "correct", &untrusting);
    assert_eq!(output.status.code(), Some(1));
}
