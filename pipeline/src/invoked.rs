//! How the user ran this binary, so every command the CLI suggests can be pasted as printed:
//! `cargo run -p pipeline -- …` runs `target/…/pipeline` (argv[0] is that path), an installed
//! binary runs as `pipeline`, and both differ from a bare `pipeline` a newcomer does not have on
//! PATH.

/// The program as invoked (argv[0]), quoted for a shell; `pipeline` if the OS gave none.
pub fn program() -> String {
    shell_word(&std::env::args().next().filter(|a| !a.is_empty()).unwrap_or_else(|| "pipeline".into()))
}

/// `args` after the program as invoked: a command to suggest, e.g. `command("aggregate --exp-name x")`.
pub fn command(args: &str) -> String {
    format!("{} {args}", program())
}

/// `args` as one line a user could paste into a shell (values needing it are single-quoted).
pub fn shell_words(args: &[String]) -> String {
    args.iter().map(|a| shell_word(a)).collect::<Vec<_>>().join(" ")
}

fn shell_word(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_need_quoting_are_quoted() {
        let args = ["/tmp/target/debug/pipeline", "--exp-name", "my run", "it's", ""].map(String::from);
        assert_eq!(shell_words(&args), r"/tmp/target/debug/pipeline --exp-name 'my run' 'it'\''s' ''");
    }
}
