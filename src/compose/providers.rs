//! The providers a composition can name (`PROVIDER:MODEL`): picks the client of one. The
//! clients share the wire plumbing of [`super::client`]; this file is the only one that knows
//! them all.

use super::anthropic::Anthropic;
use super::client::ModelClient;
use super::openai::OpenAi;

/// The client for `PROVIDER:MODEL` (`openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`)
/// with an optional base URL and key. The error says what is wrong with the spec.
pub fn client_for(spec: &str, base_url: Option<&str>, key: Option<String>) -> Result<Box<dyn ModelClient>, String> {
    let (provider, model) = spec
        .split_once(':')
        .filter(|(p, m)| !p.is_empty() && !m.trim().is_empty())
        .ok_or_else(|| format!("`{spec}` is not PROVIDER:MODEL (openai:MODEL or anthropic:MODEL)"))?;
    match provider {
        "openai" => Ok(Box::new(OpenAi::new(model, base_url, key))),
        "anthropic" => Ok(Box::new(Anthropic::new(model, base_url, key))),
        other => Err(format!("unknown provider `{other}` in `{spec}`: the providers are `openai` and `anthropic`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn specs() {
        assert!(client_for("gpt-4o", None, None).is_err());
        assert!(client_for("mistral:x", None, None).err().unwrap().contains("unknown provider"));
        assert_eq!(
            client_for("openai:llama3.2", Some("http://localhost:11434/v1/"), None).unwrap().model(),
            "openai:llama3.2"
        );
    }
}
