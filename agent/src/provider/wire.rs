//! What an endpoint answers, as real providers send it: every field optional that any of them
//! omits (`total_tokens`, `created`, `object`), finish reasons OpenAI does not know (`"eos"`), null
//! usage, content as parts, arguments as an object instead of a string. One odd field never loses
//! the whole answer: what nobody scores is kept raw. Whether an answer is a quota refusal is
//! decided with the rest of the classification, in `failure`.

use records::ProviderExtras;
use serde::Deserialize;
use serde_json::Value;

use crate::record::Usage;

/// A chat completion as real providers send it: everything optional that any of them omits.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatResponse {
    // No `id`: nothing reads it (the body is kept whole for the transcript), and a provider that
    // sent one that is not a string would have lost the whole answer.
    /// Kept raw, like the fields below: an odd type in a field nobody scores must not lose the
    /// whole answer.
    #[serde(default)]
    pub model: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice>,
    /// Kept raw and read field by field: one odd usage field must not lose the whole answer.
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default)]
    pub system_fingerprint: Option<Value>,
    /// llama.cpp's server: prompt and generation counts and milliseconds of this request.
    #[serde(default)]
    pub timings: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub message: Option<AssistantMessage>,
    /// Free text: providers use values OpenAI does not (`"eos"`).
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AssistantMessage {
    /// A string, or (some providers) an array of content parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tool_calls: Vec<WireToolCall>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: WireFunction,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct WireFunction {
    #[serde(default)]
    pub name: String,
    /// A JSON-encoded string per the API; some servers send the object itself.
    #[serde(default)]
    pub arguments: Value,
}

impl WireFunction {
    /// The arguments as the model wrote them.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl ChatResponse {
    /// The first choice's message (the only one we ask for).
    pub fn message(&self) -> AssistantMessage {
        self.choices.first().and_then(|c| c.message.clone()).unwrap_or_default()
    }

    pub fn finish_reason(&self) -> Option<String> {
        self.choices.first().and_then(|c| c.finish_reason.clone())
    }

    /// Usage exactly as sent: a missing, null or non-integer field is `None`.
    pub fn usage(&self) -> Usage {
        let Some(u) = self.usage.as_ref().filter(|u| u.is_object()) else {
            return Usage::default();
        };
        let int = |v: &Value| v.as_u64();
        Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(int),
            completion_tokens: u.get("completion_tokens").and_then(int),
            cached_prompt_tokens: u.pointer("/prompt_tokens_details/cached_tokens").and_then(int),
            reasoning_tokens: u.pointer("/completion_tokens_details/reasoning_tokens").and_then(int),
            total_tokens: u.get("total_tokens").and_then(int),
        }
    }

    /// What the provider reported beyond usage. `requested` is the model id asked for: the served
    /// id is kept only when it differs (most servers echo the request, which says nothing).
    pub fn extras(&self, requested: &str) -> ProviderExtras {
        let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_owned);
        ProviderExtras {
            timings: self.timings.clone().filter(|t| !t.is_null()),
            system_fingerprint: text(&self.system_fingerprint),
            served_model: text(&self.model).filter(|m| m != requested),
        }
    }
}

impl AssistantMessage {
    /// The text content, joining content parts; `None` when there is none.
    pub fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> ChatResponse {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tolerates_what_real_providers_send() {
        let r = parse(json!({
            "choices": [{ "message": { "role": "assistant", "content": "hi" }, "finish_reason": "eos" }],
            "usage": { "prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": { "cached_tokens": null } }
        }));
        assert_eq!(r.finish_reason().as_deref(), Some("eos"));
        assert_eq!(r.message().text().as_deref(), Some("hi"));
        assert_eq!(
            r.usage(),
            Usage { prompt_tokens: Some(12), completion_tokens: Some(3), cached_prompt_tokens: None, reasoning_tokens: None, total_tokens: None }
        );
        let null_usage = parse(json!({ "choices": [{ "message": { "content": null, "tool_calls": null } }], "usage": null }));
        assert_eq!(null_usage.usage(), Usage::default());
        assert!(null_usage.message().tool_calls.is_empty());
    }
}
