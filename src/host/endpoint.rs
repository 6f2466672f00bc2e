//! A primitive tool's `system_event_endpoint`, parsed: what the command line's runner
//! ([`super::runner::HostRunner`]) calls and what `tdsl check` judges (`W0902`), from one
//! parser. The feature gating of endpoints lives here: in a build without the feature an
//! endpoint needs, it parses to an error naming the feature (its variant is absent, not
//! stubbed).

#[cfg(feature = "mcp")]
use super::mcp_client::McpEndpoint;

/// The builtins of `builtin:<name>`.
pub(crate) const BUILTINS: &[&str] = &["echo"];

/// An endpoint the command line's runner can call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `exec:<command line>`: the program and its arguments, split like a POSIX shell.
    Exec(Vec<String>),
    /// `builtin:<name>`: one of [`BUILTINS`].
    Builtin(String),
    /// `http://…` or `https://…` (feature `http`).
    #[cfg(feature = "http")]
    Http(String),
    /// `mcp:<command line>#<tool>` or `mcp:<URL>#<tool>` (feature `mcp`; a URL needs
    /// `mcp-http`).
    #[cfg(feature = "mcp")]
    Mcp(McpEndpoint),
}

impl Endpoint {
    /// Parses an endpoint, or says why this build's runner cannot call it.
    pub(crate) fn parse(endpoint: &str) -> Result<Endpoint, String> {
        let endpoint = endpoint.trim();
        if let Some(command) = endpoint.strip_prefix("exec:") {
            match shell_words::split(command) {
                Ok(words) if words.is_empty() => Err("`exec:` names no program".to_string()),
                Ok(words) => Ok(Endpoint::Exec(words)),
                Err(e) => Err(format!("cannot split `{}` into words: {e}", command.trim())),
            }
        } else if let Some(name) = endpoint.strip_prefix("builtin:") {
            let name = name.trim();
            if BUILTINS.contains(&name) {
                Ok(Endpoint::Builtin(name.to_string()))
            } else {
                Err(no_builtin(name))
            }
        } else if let Some(spec) = endpoint.strip_prefix("mcp:") {
            mcp(spec)
        } else if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            http(endpoint)
        } else {
            Err(format!(
                "`{endpoint}` is not an endpoint the command line's runner knows: \
                 `exec:`, `builtin:`, `mcp:`, `http://` or `https://`"
            ))
        }
    }
}

/// Why `builtin:{name}` is not one.
pub(crate) fn no_builtin(name: &str) -> String {
    format!(
        "there is no builtin `{name}` (the builtins are {})",
        BUILTINS.iter().map(|b| format!("`builtin:{b}`")).collect::<Vec<_>>().join(", ")
    )
}

#[cfg(feature = "http")]
fn http(url: &str) -> Result<Endpoint, String> {
    Ok(Endpoint::Http(url.to_string()))
}

#[cfg(not(feature = "http"))]
fn http(_url: &str) -> Result<Endpoint, String> {
    Err(missing_feature("http", "http://"))
}

#[cfg(all(feature = "mcp", feature = "mcp-http"))]
fn mcp(spec: &str) -> Result<Endpoint, String> {
    McpEndpoint::parse(spec).map(Endpoint::Mcp)
}

#[cfg(all(feature = "mcp", not(feature = "mcp-http")))]
fn mcp(spec: &str) -> Result<Endpoint, String> {
    match McpEndpoint::parse(spec)? {
        McpEndpoint { server: super::mcp_client::McpTarget::Url { .. }, .. } => {
            Err(missing_feature("mcp-http", "mcp:http://"))
        }
        endpoint => Ok(Endpoint::Mcp(endpoint)),
    }
}

#[cfg(not(feature = "mcp"))]
fn mcp(_spec: &str) -> Result<Endpoint, String> {
    Err(missing_feature("mcp", "mcp:"))
}

/// Why an endpoint cannot run in a library built without the feature that runs it.
#[cfg(not(all(feature = "http", feature = "mcp", feature = "mcp-http")))]
fn missing_feature(feature: &str, scheme: &str) -> String {
    format!(
        "`{scheme}` endpoints need the `{feature}` feature of the tdsl library, and this build was made without it \
         (the `tdsl` command has it)"
    )
}

/// Refuses to send a bearer token to `url` in clear: an `http://` URL whose host is not a
/// loopback one (`localhost`, `127.0.0.0/8`, `::1`), where anyone on the path reads it
/// (hostile round 12, finding 8), as `serve --listen` refuses a non-loopback address without
/// a token. `Err` says why, after the upstream's name.
#[cfg(feature = "mcp")]
pub(crate) fn refuse_token_in_clear(url: &str) -> Result<(), String> {
    let Some(rest) = url.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &url[7..]) else {
        return Ok(());
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        return Ok(());
    }
    Err(format!(
        "is reached over http:// at {}, not a loopback address: its token would cross the network in clear; \
         reach it over https:// (or drop its --upstream-token)",
        crate::diagnostic::escape_hidden(host, &[])
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_once_for_the_runner_and_the_checker() {
        assert_eq!(
            Endpoint::parse(" exec:./scan.sh 'a b'"),
            Ok(Endpoint::Exec(vec!["./scan.sh".into(), "a b".into()]))
        );
        assert_eq!(Endpoint::parse("builtin: echo"), Ok(Endpoint::Builtin("echo".into())));
        assert_eq!(Endpoint::parse("exec:").unwrap_err(), "`exec:` names no program");
        assert!(Endpoint::parse("exec:'x").unwrap_err().starts_with("cannot split `'x` into words"));
        assert_eq!(
            Endpoint::parse("builtin:ecoh").unwrap_err(),
            "there is no builtin `ecoh` (the builtins are `builtin:echo`)"
        );
        assert!(Endpoint::parse("exce:x").unwrap_err().contains("is not an endpoint the command line's runner knows"));
        #[cfg(feature = "http")]
        assert_eq!(Endpoint::parse("https://a.example/t"), Ok(Endpoint::Http("https://a.example/t".into())));
        #[cfg(feature = "mcp")]
        assert!(matches!(Endpoint::parse("mcp:srv --stdio#t"), Ok(Endpoint::Mcp(e)) if e.tool == "t"));
        #[cfg(feature = "mcp-http")]
        assert!(matches!(Endpoint::parse("mcp:https://a.example/mcp#t"), Ok(Endpoint::Mcp(e)) if e.tool == "t"));
    }
}
