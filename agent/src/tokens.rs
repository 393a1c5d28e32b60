//! Token counts of what a model is sent: tool definitions, the task, the calls' arguments and
//! results. Where the tokenizer is known the count is exact and labelled with the tokenizer;
//! where it is not, the bytes / 4 estimate stays, labelled as an estimate — never the other way
//! round.
//!
//! * OpenAI's encodings (`o200k_base`: GPT-4o, GPT-4.1, GPT-5, o-series; `cl100k_base`: GPT-4,
//!   GPT-3.5) through `tiktoken-rs`, whose BPE files are compiled into the binary: counting needs
//!   no network.
//! * A llama.cpp server's own tokenizer through its `POST /tokenize` (`{"content": …}` →
//!   `{"tokens": […]}`), with `add_special` and `with_pieces` off: the text's tokens, no BOS.
//!
//! What is counted is the text as the request carries it (a definition: its JSON, as in the
//! request's `tools` array). A provider's bill for the same request can differ: OpenAI renders
//! tool definitions into a format of its own before its model reads them, and a chat template
//! adds tokens of its own around every message. These are exact counts of the bytes sent,
//! under the model's encoding — not the bill.

use std::time::Duration;

use serde_json::Value;

/// How a tokenizer is named on the command line (`--tokens`), for errors and help.
pub const ACCEPTED: &str = "o200k_base, cl100k_base, or llama:URL (a llama.cpp server's root, e.g. llama:http://127.0.0.1:8080)";

/// The label of the bytes / 4 estimate wherever a figure made with it is shown.
pub const ESTIMATE_LABEL: &str = "estimate: bytes / 4";

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("unknown tokenizer {given:?}: use {ACCEPTED}")]
    Unknown { given: String },
    #[error("tokenizer {given:?}: {problem}; give the llama.cpp server's root, e.g. llama:http://127.0.0.1:8080")]
    BadUrl { given: String, problem: String },
    #[error("the llama.cpp server at {url} could not be reached for /tokenize: {detail}; is llama-server running there?")]
    Unreachable { url: String, detail: String },
    #[error("the llama.cpp server at {url} answered /tokenize with HTTP {status}: {body}")]
    Refused { url: String, status: u16, body: String },
    #[error("the server at {url} answered /tokenize without a `tokens` array of ids ({body}): is it a llama.cpp server?")]
    NotLlamaCpp { url: String, body: String },
}

/// One of OpenAI's encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The encoding an OpenAI model name implies (`gpt-4o`, `gpt-4.1-mini`, `gpt-5`, `o3`,
    /// `o4-mini` → o200k_base; `gpt-4`, `gpt-3.5-turbo` → cl100k_base), as tiktoken's own table
    /// maps them; `openai/` (a gateway's prefix) is dropped. None for every other name.
    pub fn of_model(id: &str) -> Option<Self> {
        let id = id.strip_prefix("openai/").unwrap_or(id);
        match tiktoken_rs::tokenizer::get_tokenizer(id)? {
            tiktoken_rs::tokenizer::Tokenizer::O200kBase => Some(Self::O200kBase),
            tiktoken_rs::tokenizer::Tokenizer::Cl100kBase => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The tokens of `text` as ordinary text: a special token's spelling in it is counted as the
    /// text it is, as an API counts a message's content.
    pub fn count(self, text: &str) -> u64 {
        let bpe = match self {
            Self::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Self::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        bpe.encode_ordinary(text).len() as u64
    }
}

/// A llama.cpp server, asked for its model's tokens.
#[derive(Debug, Clone)]
pub struct LlamaCpp {
    /// The server's root, without a trailing `/` or `/v1`.
    root: String,
    http: reqwest::Client,
}

impl LlamaCpp {
    fn new(root: String) -> Self {
        servers::tls::install_crypto_provider();
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("a plain HTTP client builds");
        Self { root, http }
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    async fn count(&self, text: &str) -> Result<u64, TokenizerError> {
        let url = format!("{}/tokenize", self.root);
        let body = serde_json::json!({ "content": text, "add_special": false, "with_pieces": false });
        let response =
            self.http.post(&url).json(&body).send().await.map_err(|e| TokenizerError::Unreachable { url: self.root.clone(), detail: e.to_string() })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| TokenizerError::Unreachable { url: self.root.clone(), detail: e.to_string() })?;
        let short = |t: &str| t.chars().take(200).collect::<String>();
        if !status.is_success() {
            return Err(TokenizerError::Refused { url: self.root.clone(), status: status.as_u16(), body: short(&text) });
        }
        let parsed: Value = serde_json::from_str(&text).map_err(|_| TokenizerError::NotLlamaCpp { url: self.root.clone(), body: short(&text) })?;
        match parsed.get("tokens").and_then(Value::as_array) {
            Some(ids) if ids.iter().all(Value::is_u64) => Ok(ids.len() as u64),
            _ => Err(TokenizerError::NotLlamaCpp { url: self.root.clone(), body: short(&text) }),
        }
    }
}

/// What token figures are made with.
#[derive(Debug, Clone)]
pub enum Tokenizer {
    /// No tokenizer is known: bytes / 4, an estimate ([`ESTIMATE_LABEL`]).
    BytesEstimate,
    /// One of OpenAI's encodings, counted offline.
    OpenAi(Encoding),
    /// A llama.cpp server's `/tokenize`.
    LlamaCpp(LlamaCpp),
}

impl Tokenizer {
    /// A tokenizer as `--tokens` names it: `o200k_base`, `cl100k_base` or `llama:URL` (the
    /// server's root; a trailing `/v1`, as in a run's `--base-url`, is dropped).
    pub fn parse(given: &str) -> Result<Self, TokenizerError> {
        let given = given.trim();
        match given {
            "o200k_base" => return Ok(Self::OpenAi(Encoding::O200kBase)),
            "cl100k_base" => return Ok(Self::OpenAi(Encoding::Cl100kBase)),
            _ => {}
        }
        let Some(url) = given.strip_prefix("llama:") else { return Err(TokenizerError::Unknown { given: given.to_owned() }) };
        let bad = |problem: &str| TokenizerError::BadUrl { given: given.to_owned(), problem: problem.to_owned() };
        let rest = url.strip_prefix("http://").ok_or_else(|| bad("the URL must start with http:// (llama-server speaks plain HTTP)"))?;
        if rest.trim_end_matches('/').is_empty() {
            return Err(bad("the URL has no host"));
        }
        let root = url.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root).to_owned();
        Ok(Self::LlamaCpp(LlamaCpp::new(root)))
    }

    /// The tokenizer a model's name implies: one of OpenAI's encodings, else the estimate.
    pub fn for_model(id: &str) -> Self {
        Encoding::of_model(id).map_or(Self::BytesEstimate, Self::OpenAi)
    }

    /// What figures made with it are labelled: `o200k_base`, `cl100k_base`, `llama:URL`, or
    /// [`ESTIMATE_LABEL`].
    pub fn label(&self) -> String {
        match self {
            Self::BytesEstimate => ESTIMATE_LABEL.to_owned(),
            Self::OpenAi(e) => e.name().to_owned(),
            Self::LlamaCpp(l) => format!("llama:{}", l.root),
        }
    }

    /// Whether its figures are counts (a known tokenizer) rather than the estimate.
    pub fn counts(&self) -> bool {
        !matches!(self, Self::BytesEstimate)
    }

    /// The tokens of `text` (the estimate: its bytes / 4, rounded down).
    pub async fn count(&self, text: &str) -> Result<u64, TokenizerError> {
        match self {
            Self::BytesEstimate => Ok((text.len() / 4) as u64),
            Self::OpenAi(e) => Ok(e.count(text)),
            Self::LlamaCpp(l) => l.count(text).await,
        }
    }

    /// What the function definitions cost: each definition's JSON as the request's `tools`
    /// array carries it, counted and summed (the estimate: their bytes summed, / 4).
    pub async fn count_definitions(&self, definitions: &[Value]) -> Result<u64, TokenizerError> {
        if let Self::BytesEstimate = self {
            return Ok((definitions_bytes(definitions) / 4) as u64);
        }
        let mut total = 0;
        for d in definitions {
            total += self.count(&d.to_string()).await?;
        }
        Ok(total)
    }
}

/// Bytes of the function definitions as sent, each definition's JSON summed: the figure every
/// record's `definitions_bytes` and `schema_bytes` hold.
pub fn definitions_bytes(definitions: &[Value]) -> usize {
    definitions.iter().map(|d| d.to_string().len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Token ids published by OpenAI: tiktoken's own tests (`tests/test_encoding.py`) and the
    /// cookbook's "How to count tokens with tiktoken" (its `compare_encodings` outputs).
    /// Matching the counts of these strings shows the right encoding is compiled in.
    const REFERENCE: &[(&str, Encoding, usize)] = &[
        ("hello world", Encoding::Cl100kBase, 2),                  // [15339, 1917]
        ("tiktoken is great!", Encoding::Cl100kBase, 6),           // [83, 1609, 5963, 374, 2294, 0]
        ("antidisestablishmentarianism", Encoding::Cl100kBase, 6), // [519, 85342, 34500, 479, 8997, 2191]
        ("2 + 2 = 4", Encoding::Cl100kBase, 7),                    // [17, 489, 220, 17, 284, 220, 19]
        ("お誕生日おめでとう", Encoding::Cl100kBase, 9),
        ("today\n ", Encoding::Cl100kBase, 3),                    // [31213, 198, 220]
        ("tiktoken is great!", Encoding::O200kBase, 6),           // [83, 8251, 2488, 382, 2212, 0]
        ("antidisestablishmentarianism", Encoding::O200kBase, 6), // [493, 129901, 376, 160388, 21203, 2367]
        ("2 + 2 = 4", Encoding::O200kBase, 7),                    // [17, 659, 220, 17, 314, 220, 19]
        ("お誕生日おめでとう", Encoding::O200kBase, 8),           // [8930, 9697, 243, 128225, 8930, 17693, 4344, 48669]
    ];

    #[test]
    fn openai_encodings_count_the_published_examples() {
        for (text, encoding, tokens) in REFERENCE {
            assert_eq!(encoding.count(text), *tokens as u64, "{text:?} in {}", encoding.name());
        }
    }

    #[test]
    fn openai_encodings_give_the_published_ids() {
        // Counts alone could agree by chance; the ids cannot.
        assert_eq!(tiktoken_rs::cl100k_base_singleton().encode_ordinary("hello world"), vec![15339, 1917]);
        assert_eq!(tiktoken_rs::o200k_base_singleton().encode_ordinary("tiktoken is great!"), vec![83, 8251, 2488, 382, 2212, 0]);
        assert_eq!(tiktoken_rs::cl100k_base_singleton().encode_ordinary("tiktoken is great!"), vec![83, 1609, 5963, 374, 2294, 0]);
    }

    #[test]
    fn model_names_map_to_their_encodings() {
        for id in ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini", "o3", "o4-mini", "openai/gpt-4o"] {
            assert_eq!(Encoding::of_model(id), Some(Encoding::O200kBase), "{id}");
        }
        for id in ["gpt-4", "gpt-4-0613", "gpt-3.5-turbo", "gpt-35-turbo"] {
            assert_eq!(Encoding::of_model(id), Some(Encoding::Cl100kBase), "{id}");
        }
        // A local model, Anthropic's, an open-weights GPT with an encoding of its own: no count.
        for id in ["qwen2.5-coder-1.5b", "claude-sonnet-4-5", "gpt-oss-20b", "llama3"] {
            assert_eq!(Encoding::of_model(id), None, "{id}");
            assert!(!Tokenizer::for_model(id).counts());
            assert_eq!(Tokenizer::for_model(id).label(), ESTIMATE_LABEL);
        }
    }

    #[test]
    fn names_parse_and_bad_ones_say_what_is_accepted() {
        assert_eq!(Tokenizer::parse("o200k_base").unwrap().label(), "o200k_base");
        assert_eq!(Tokenizer::parse("cl100k_base").unwrap().label(), "cl100k_base");
        assert_eq!(Tokenizer::parse("llama:http://127.0.0.1:18081/v1/").unwrap().label(), "llama:http://127.0.0.1:18081");
        let e = Tokenizer::parse("o200k").unwrap_err().to_string();
        assert_eq!(e, format!("unknown tokenizer \"o200k\": use {ACCEPTED}"));
        assert!(Tokenizer::parse("llama:https://host").unwrap_err().to_string().contains("http://"));
        assert!(Tokenizer::parse("llama:http://").unwrap_err().to_string().contains("no host"));
    }

    #[tokio::test]
    async fn the_estimate_is_bytes_over_four_and_says_so() {
        let t = Tokenizer::BytesEstimate;
        assert_eq!(t.count("123456789").await.unwrap(), 2);
        let defs = [serde_json::json!({"a": "bcdefgh"}), serde_json::json!({"i": 1})];
        // 15 + 7 bytes: one division of the sum, not a sum of rounded-down parts.
        assert_eq!(t.count_definitions(&defs).await.unwrap(), 22 / 4);
        assert!(!t.counts());
    }
}
