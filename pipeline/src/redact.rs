//! Secrets never reach a file: header values (`--header NAME=VALUE`) are replaced before a
//! command line is recorded. The API key is never on the command line (it is read from a named
//! variable), so nothing else needs hiding.

pub const REDACTED: &str = "<redacted>";

/// `args` as they may be recorded: every `--header` value replaced by [`REDACTED`].
pub fn command_line(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut value_next = false;
    for arg in args {
        if value_next {
            out.push(header(&arg));
            value_next = false;
        } else if arg == "--header" {
            out.push(arg);
            value_next = true;
        } else if let Some(rest) = arg.strip_prefix("--header=") {
            out.push(format!("--header={}", header(rest)));
        } else {
            out.push(arg);
        }
    }
    out
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
    fn a_malformed_header_is_still_hidden() {
        let args = ["pipeline", "--header", "novalue-secret"].map(String::from);
        assert_eq!(command_line(args)[2], REDACTED);
    }
}
