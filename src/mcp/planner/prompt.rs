//! The load planner's prompt, `plan_shipping_loads`: the workflow from a
//! user's shipping facts to a plan in words, with a complete `plan_load`
//! input a client's model can copy and change. That input is the
//! planner's own example (`solvergate plan --example`), offered as it is:
//! it must keep planning as it is (a test plans it through the client).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};

use crate::mcp::SolvergateServer;
use crate::mcp::prompts::ProblemArgs;
use crate::planner::problem::EXAMPLE;

/// The prompts of this module: the full toolset's only, as `plan_load` is.
pub(in crate::mcp) const PROMPTS: &[&str] = &["plan_shipping_loads"];

const WORKFLOW: &str = "\
Plan the shipping below with the solvergate load planner: it chooses air, sea consolidation (LCL) or full containers (FCL) for each order, prices four plans on a bundled model with its checker, and recommends one. You build its input and put its answer into words only through its tools.
1. Build plan_load's `problem` from the user's facts. This complete input plans as it is; keep its shape and change the values:
```json
{example}
```
- orders: each order ships whole, by one mode; `id`, `deadline_days` (days from now by which it must arrive) and `pallets` (dimensions in cm, `weight_kg`, `count`, `stackable`).
- rates, all in one currency: air per kg of chargeable weight (max of kg and cm³ / volumetric_divisor) with a minimum charge; LCL per cubic metre with a minimum volume; FCL container types with their inside, payload and price. Each mode's `transit_days`.
- optional: `delays` per mode as {\"day\": probability} summing to 1 (documented seeds are used where absent), and `policy.max_miss_probability` (default 0.1), the most chance of any missed deadline the recommended plan may carry.
Ask the user for a rate, dimension or deadline you do not know; never invent one.
2. Call plan_load with {\"problem\": ...}. A refused input names the field, and a missing field's error shows its shape.
3. Call explain_load_plan with the result_id and give the user its narration as it is: which orders go by which mode and why, and every plan's figures.
4. Check anything you write about the plan in your own words with verify_narration first: a figure you round, convert or add up is refused.
5. Only when the user asks: save_load_plan into an absolute directory the user names; replay_artifact plans it again.";

#[prompt_router(router = "planner_prompt_router", vis = "pub(in crate::mcp)")]
#[expect(
    missing_docs,
    reason = "rmcp's #[prompt] generates an undocumented `pub fn <name>_prompt_attr` for each prompt"
)]
impl SolvergateServer {
    #[prompt(
        name = "plan_shipping_loads",
        description = "Plan shipping loads with plan_load (air, sea consolidation or full containers per order, four priced plans with a risk read): a complete input to copy and change, then the plan in words through explain_load_plan."
    )]
    async fn plan_shipping_loads(
        &self,
        Parameters(args): Parameters<ProblemArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, workflow(&args.problem))]
    }
}

/// The workflow, its example in place, then the user's facts.
fn workflow(problem: &str) -> String {
    format!(
        "{}\n\nShipping:\n{}",
        WORKFLOW.replace("{example}", EXAMPLE.trim()),
        problem.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::LoadProblem;

    #[test]
    fn the_offered_input_is_the_example_and_valid() {
        let text = workflow("Ship 4 orders from Hamburg.");
        let offered = text
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("\n```").next())
            .unwrap_or_default();
        assert_eq!(offered, EXAMPLE.trim());
        LoadProblem::parse(offered).unwrap();
        assert!(text.ends_with("Shipping:\nShip 4 orders from Hamburg."));
    }
}
