//! Secrets never reach a file: header values (`--header NAME=VALUE`) are replaced before a
//! command line is recorded, and a URL flag (`--base-url`, `--otlp-endpoint`) loses any
//! `user:password@` part and its query (where some collectors take a key). The API key is never
//! on the command line (it is read from a named variable).

pub const REDACTED: &str = "<redacted>";

/// Flags whose value is a URL that may carry a credential.
const URL_FLAGS: [&str; 2] = ["--base-url", "--otlp-endpoint"];

/// `args` as they may be recorded: every `--header` value replaced by [`REDACTED`], every URL
/// flag's value without userinfo and query.
pub fn command_line(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut value_next: Option<fn(&str) -> String> = None;
    for arg in args {
        if let Some(clean) = value_next.take() {
            out.push(clean(&arg));
        } else if arg == "--header" {
            out.push(arg);
            value_next = Some(header);
        } else if URL_FLAGS.contains(&arg.as_str()) {
            out.push(arg);
            value_next = Some(url);
        } else if let Some(rest) = arg.strip_prefix("--header=") {
            out.push(format!("--header={}", header(rest)));
        } else if let Some((flag, value)) = arg.split_once('=').filter(|(flag, _)| URL_FLAGS.contains(flag)) {
            out.push(format!("{flag}={}", url(value)));
        } else {
            out.push(arg);
        }
    }
    out
}

/// A URL without `user:password@` and without its query.
pub fn url(value: &str) -> String {
    let bare = records::fingerprint::url_without_userinfo(value);
    match bare.split_once('?') {
        Some((before, _)) => format!("{before}?{REDACTED}"),
        None => bare,
    }
}

fn header(name_value: &str) -> String {
    match name_value.split_once('=') {
        Some((name, _)) => format!("{name}={REDACTED}"),
        None => REDACTED.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_replaced_in_both_spellings() {
        let args = ["pipeline", "--header", "X-Key=s3cret", "--header=Authorization=Bearer abc", "--models", "m"].map(String::from);
        assert_eq!(command_line(args), ["pipeline", "--header", "X-Key=<redacted>", "--header=Authorization=<redacted>", "--models", "m"].map(String::from));
    }

    #[test]
    fn url_flags_lose_their_userinfo_and_query_in_both_spellings() {
        let args = ["pipeline", "--otlp-endpoint", "https://user:s3cret@collector.example:4318?api_key=k3y", "--base-url=http://u:pw@host/v1", "--models", "m"];
        let line = command_line(args.map(String::from)).join(" ");
        assert_eq!(line, "pipeline --otlp-endpoint https://collector.example:4318?<redacted> --base-url=http://host/v1 --models m");
        assert!(!line.contains("s3cret") && !line.contains("k3y") && !line.contains("pw"), "{line}");
    }

    #[test]
    fn a_malformed_header_is_still_hidden() {
        let args = ["pipeline", "--header", "novalue-secret"].map(String::from);
        assert_eq!(command_line(args)[2], REDACTED);
    }
}
