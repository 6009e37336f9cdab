//! Fitting an agent's input to its provider's context window. A provider whose
//! capabilities give a window (the embedded model) counts the tokens of the agent's
//! first prompt; when that prompt and the room kept for the answer do not fit, the
//! run's output policy cuts the findings the agent was given, in its own order, until
//! they do. The agent is told what was cut, and an `input_fitted` event records it
//! (with the window and the prompt's size before and after) for the report.
//!
//! The rule is in one place for every interface: the provider knows its window and
//! its tokenizer, the policy knows what a finding is, and this module only measures.

use conclave_core::{AgentRequest, Message, ProviderError};
use conclave_shared::{EventKind, InputFit};
use std::sync::Arc;

use crate::agent::{AgentContext, shared_prefix};
use crate::input::AgentInput;
use crate::node_error::NodeError;
use crate::plan::AgentPlan;
use crate::policy_call;

/// Tokens kept beside the cut input for the note that tells the agent what was cut.
pub const NOTE_ROOM: u32 = 64;

/// The room kept for an agent's answer in a window of `window` tokens: its
/// `max_tokens`, but never more than a quarter of the window. An answer constrained
/// to a findings schema on the embedded model (at most 5 findings of 200-character
/// strings) takes far less; a larger `max_tokens` would leave a small window no room
/// for the findings the agent is to merge.
pub fn answer_room(window: u32, max_tokens: u32) -> u32 {
    max_tokens.min(window / 4)
}

/// `input` fitted to the window of `plan`'s provider, when it states one and the
/// agent was given something to cut; unchanged otherwise. `findings` names the
/// findings-shaped upstream outputs and the property holding their findings.
pub(crate) async fn fit_input(
    plan: &AgentPlan,
    ctx: &AgentContext,
    node_id: &str,
    input: AgentInput,
    findings: Vec<(String, String)>,
) -> Result<AgentInput, NodeError> {
    let (Some(window), Some(policy)) = (plan.provider.capabilities().context_window, ctx.policy.clone()) else {
        return Ok(input);
    };
    if input.upstream.is_empty() && input.comparison.is_none() {
        return Ok(input);
    }
    let measure = Measure {
        template: first_request(plan, ctx, node_id, &input),
        provider: plan.provider.clone(),
        window,
        answer_room: answer_room(window, plan.config.tokens()),
    };
    let fitted = policy_call::off_thread("cut_to_fit", move || measure.fit(&*policy, input, &findings)).await?;
    let (input, fit) = fitted?;
    if let Some(fit) = fit {
        if !fit.fits() {
            tracing::warn!(node = node_id, "the agent's input does not fit its provider's window, even cut: {fit}");
        }
        ctx.bus.emit(EventKind::InputFitted { node_id: node_id.to_string(), fit }).await;
    }
    Ok(input)
}

/// The request of an agent's first call, for counting its prompt: the shared prefix,
/// the instructions, the first message (which holds the upstream outputs) and the
/// schema, as [`crate::agent::run_agent`] sends them to a provider with no dialects.
fn first_request(plan: &AgentPlan, ctx: &AgentContext, node_id: &str, input: &AgentInput) -> AgentRequest {
    AgentRequest {
        run_id: ctx.bus.run_id().to_string(),
        node_id: node_id.to_string(),
        model: plan.config.model.clone(),
        shared_prefix: shared_prefix(&plan.shared_prompt, input),
        system_prompt: plan.system_prompt.clone(),
        input: input.to_value(),
        messages: vec![Message::User(input.first_message())],
        tools: plan.tools.clone(),
        tool_calls_allowed: plan.has_tools(),
        output_schema: plan.native_schema.clone(),
        max_tokens: plan.config.tokens(),
        agent: plan.config.clone(),
        dialect: None,
        attempt: 1,
        max_turns: plan.config.turns(),
        workdir: ctx.workdir.clone(),
    }
}

/// What fitting one agent's input needs, off the async threads.
struct Measure {
    template: AgentRequest,
    provider: Arc<dyn conclave_core::Provider>,
    window: u32,
    answer_room: u32,
}

impl Measure {
    /// The tokens of the prompt `input` makes; 0 when the provider cannot count. The
    /// shared prefix (the run input) is the template's: nothing in it is cut.
    fn count(&self, input: &AgentInput) -> Result<u32, ProviderError> {
        let mut request = self.template.clone();
        request.input = input.to_value();
        request.messages = vec![Message::User(input.first_message())];
        let counted = self.provider.count_prompt_tokens(&request).unwrap_or(Ok(0))?;
        Ok(u32::try_from(counted).unwrap_or(u32::MAX))
    }

    /// `input`, cut by `policy` when it does not fit, and what was done (`None` when
    /// it fit as it was).
    fn fit(
        self,
        policy: &dyn crate::policy::OutputPolicy,
        mut input: AgentInput,
        findings: &[(String, String)],
    ) -> Result<(AgentInput, Option<InputFit>), ProviderError> {
        let before = self.count(&input)?;
        if before.saturating_add(self.answer_room) <= self.window {
            return Ok((input, None));
        }
        let limit = self.window.saturating_sub(self.answer_room + NOTE_ROOM);
        let mut failed = None;
        let cuts = policy.cut_to_fit(&mut input, findings, &mut |candidate| match self.count(candidate) {
            Ok(tokens) => tokens <= limit,
            Err(e) => {
                // Stop cutting: the error is the answer.
                failed.get_or_insert(e);
                true
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let mut fit = InputFit {
            window: self.window,
            answer_room: self.answer_room,
            tokens_before: before,
            tokens_after: before,
            cuts,
        };
        input.fitted = Some(fit.clone());
        fit.tokens_after = self.count(&input)?;
        input.fitted = Some(fit.clone());
        Ok((input, Some(fit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_keeps_its_max_tokens_up_to_a_quarter_of_the_window() {
        assert_eq!(answer_room(8192, 4096), 2048);
        assert_eq!(answer_room(8192, 600), 600);
        assert_eq!(answer_room(32_768, 4096), 4096);
    }
}
