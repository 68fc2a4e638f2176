//! `acp-chaos`: the thin binary over the `acp_chaos` library. Exit codes: see `acp_chaos::exit`.

fn main() {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`| head`).
    #[cfg(unix)]
    // SAFETY: restoring the default SIGPIPE action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(acp_chaos::cli::main());
}
