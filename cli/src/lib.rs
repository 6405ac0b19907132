//! Command lines as the tutorial writes them: `xcd -port 7227` as well as `xcd --port 7227`.
//!
//! Owns the one rewrite that turns a one-dash long flag into clap's two-dash form, for every
//! binary whose flags the tutorial writes with one dash (xcd, xcmon). It must not know any
//! binary's flags: it reads them from the binary's own clap command.

use std::ffi::OsString;

use clap::{CommandFactory, Parser};

/// Parses the process's arguments into `P`, taking its long flags with one dash or two.
pub fn parse<P: Parser>() -> P {
    P::parse_from(long_flags_with_one_dash::<P>(std::env::args_os()))
}

/// Turns `-port` (and `-port=7227`) into `--port` for every long flag `P` has, and `-help`,
/// `-version`; leaves everything else alone, short flags and values that start with a dash
/// among them. The first argument is the program's name.
pub fn long_flags_with_one_dash<P: CommandFactory>(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let command = P::command();
    let longs: Vec<String> = command.get_arguments().filter_map(|a| a.get_long().map(str::to_owned)).collect();
    args.into_iter()
        .enumerate()
        .map(|(i, arg)| {
            let Some(text) = arg.to_str() else { return arg };
            let name = text
                .strip_prefix('-')
                .filter(|rest| !rest.starts_with('-'))
                .map(|rest| rest.split('=').next().unwrap_or(rest));
            match name {
                Some(name)
                    if i > 0
                        && name.len() > 1
                        && (longs.iter().any(|l| l == name) || name == "help" || name == "version") =>
                {
                    OsString::from(format!("-{text}"))
                }
                _ => arg,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary with a long flag, a short one and a value that may start with a dash.
    #[derive(Parser, Debug, PartialEq)]
    struct Cli {
        #[arg(long, default_value_t = 7227)]
        port: u16,
        #[arg(short = 'v')]
        verbose: bool,
        #[arg(long, allow_hyphen_values = true)]
        offset: Option<i32>,
    }

    fn rewrite(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from);
        long_flags_with_one_dash::<Cli>(args).into_iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn one_dash_long_flags_become_two_and_nothing_else_changes() {
        assert_eq!(rewrite(&["-port", "-port", "80"]), ["-port", "--port", "80"], "the program's name stays");
        assert_eq!(rewrite(&["xcd", "-port=80", "--port", "81"]), ["xcd", "--port=80", "--port", "81"]);
        assert_eq!(rewrite(&["xcd", "-v", "-help", "-version"]), ["xcd", "-v", "--help", "--version"]);
        assert_eq!(rewrite(&["xcd", "--offset", "-5", "-nope"]), ["xcd", "--offset", "-5", "-nope"]);
        let cli = Cli::parse_from(long_flags_with_one_dash::<Cli>(
            ["xcd", "-port", "80", "-offset", "-5"].map(OsString::from),
        ));
        assert_eq!(cli, Cli { port: 80, verbose: false, offset: Some(-5) });
    }
}
