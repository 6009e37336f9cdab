//! What a "length" stop from a model server means. It is read as "the answer hit
//! `max_tokens`" only when that is what happened: a stop before the model wrote
//! anything, or below the agent's budget, means the prompt and the answer filled the
//! model's context window, where raising `max_tokens` cannot help.

use conclave_core::ProviderError;

/// A stream that ended with its server's "length" reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthStop {
    /// The reason as the server sent it, for messages (``finish_reason `length` ``).
    pub reason: &'static str,
    /// Whether the model wrote any text or tool call before it stopped.
    pub wrote: bool,
    /// Prompt and answer tokens, when the server reported its usage.
    pub usage: Option<(u64, u64)>,
    /// The agent's `max_tokens`.
    pub max_tokens: u32,
    /// How to give this server a larger context.
    pub larger_context: &'static str,
}

impl LengthStop {
    /// The error a user can act on.
    pub fn error(&self) -> ProviderError {
        let (reason, advice) = (self.reason, self.larger_context);
        let send_less = "send less (a smaller change, fewer or shorter upstream outputs)";
        if !self.wrote {
            let prompt = match self.usage {
                Some((prompt, _)) => format!("the prompt ({prompt} tokens)"),
                None => "the prompt".to_string(),
            };
            return ProviderError::Truncated(format!(
                "{reason} before the model wrote anything: {prompt} filled the model's context window, so raising \
                 `max_tokens` will not help; {send_less} or {advice}"
            ));
        }
        match self.usage {
            Some((prompt, answer)) if answer < u64::from(self.max_tokens) => ProviderError::Truncated(format!(
                "{reason} after {answer} tokens, below the agent's `max_tokens` of {}: the prompt ({prompt} tokens) \
                 and the answer filled the model's context window of {} tokens; the JSON is incomplete; {send_less} \
                 or {advice}",
                self.max_tokens,
                prompt + answer
            )),
            usage => ProviderError::Truncated(format!(
                "{reason} after {} tokens; the JSON is incomplete; raise `max_tokens` on the agent",
                usage.map_or(0, |(_, answer)| answer)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(wrote: bool, usage: Option<(u64, u64)>) -> String {
        let stop = LengthStop { reason: "finish_reason `length`", wrote, usage, max_tokens: 1024, larger_context: "X" };
        stop.error().to_string()
    }

    #[test]
    fn only_a_stop_at_the_budget_asks_for_a_larger_budget() {
        assert_eq!(
            stop(true, Some((300, 1024))),
            "the answer was cut off: finish_reason `length` after 1024 tokens; the JSON is incomplete; raise \
             `max_tokens` on the agent"
        );
        assert_eq!(
            stop(true, Some((1900, 148))),
            "the answer was cut off: finish_reason `length` after 148 tokens, below the agent's `max_tokens` of \
             1024: the prompt (1900 tokens) and the answer filled the model's context window of 2048 tokens; the \
             JSON is incomplete; send less (a smaller change, fewer or shorter upstream outputs) or X"
        );
        assert_eq!(
            stop(false, None),
            "the answer was cut off: finish_reason `length` before the model wrote anything: the prompt filled the \
             model's context window, so raising `max_tokens` will not help; send less (a smaller change, fewer or \
             shorter upstream outputs) or X"
        );
        assert!(stop(true, None).ends_with("raise `max_tokens` on the agent"), "no usage: nothing to say more");
    }
}
