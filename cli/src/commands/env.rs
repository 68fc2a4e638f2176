//! The `ACP_CHAOS_*` variables behind the flags (`env = ...` on each argument): an empty
//! variable is unset; the default command's flags (`acp-chaos` with no command is `run`) read
//! theirs only when no command is named, so a bad `ACP_CHAOS_SEEDS` breaks `run`, not
//! `list`; and an error caused by a variable says which variable it was.

use std::ffi::{OsStr, OsString};

use clap::error::{ContextKind, ContextValue};
use clap::{ArgMatches, Command};

/// Parse `args` against `cmd` (the whole command line, with its subcommands) the way
/// `acp-chaos` reads its environment (see the module doc).
///
/// Errors: clap's, for a bad flag or a bad variable value (see [`blame`] for the note).
pub(super) fn matches(cmd: Command, args: &[OsString]) -> Result<ArgMatches, clap::Error> {
    let cmd = without_empty(cmd);
    // First without the top level's variables: a named command reads only its own.
    if let Ok(m) = cmd
        .clone()
        .mut_args(|a| a.env(None))
        .try_get_matches_from(args)
    {
        if m.subcommand().is_some() {
            return Ok(m);
        }
    }
    cmd.try_get_matches_from(args)
}

/// The note for an error a variable caused: `ACP_CHAOS_SEEDS=abc` (set in the environment)
/// when the argument the error names was not on the command line; `None` otherwise.
pub(super) fn blame(cmd: &Command, e: &clap::Error, args: &[OsString]) -> Option<String> {
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let mut all = vec![cmd];
    let mut i = 0;
    while i < all.len() {
        all.extend(all[i].get_subcommands());
        i += 1;
    }
    // clap names the argument as `--seeds <SEEDS>`.
    let long = bad.split_whitespace().next()?.strip_prefix("--")?;
    let flag = format!("--{long}");
    let name = all
        .iter()
        .flat_map(|c| c.get_arguments())
        .filter(|a| a.get_long() == Some(long))
        .find_map(|a| a.get_env())?;
    let value = std::env::var_os(name).filter(|v| !v.is_empty())?;
    let on_line = args.iter().any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&format!("{flag}="))
    });
    (!on_line).then(|| {
        format!(
            "the value came from the environment: {}={} (unset it, or pass {flag} on the command line)",
            name.to_string_lossy(),
            value.to_string_lossy(),
        )
    })
}

/// `cmd` with every argument whose variable is set but empty reading no variable (an empty
/// variable is unset), in every subcommand.
fn without_empty(cmd: Command) -> Command {
    cmd.mut_args(|a| {
        if a.get_env().is_some_and(is_empty) {
            a.env(None)
        } else {
            a
        }
    })
    .mut_subcommands(without_empty)
}

fn is_empty(name: &OsStr) -> bool {
    std::env::var_os(name).is_some_and(|v| v.to_string_lossy().trim().is_empty())
}
