//! `acp-chaos`: the thin binary over `acp_chaos_cli::commands`. Exit codes: see `acp_chaos::exit`.

// A run allocates and frees many small frames, ops and JSON values; mimalloc does this
// about 1.2x faster than the system allocator (docs/internals/performance.md). No
// behaviour depends on addresses, so histories are the same under either.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`| head`).
    #[cfg(unix)]
    // SAFETY: restoring the default SIGPIPE action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Past a file size limit (`ulimit -f`) a write fails with EFBIG, which the report's writer
    // names and survives (the verdict is still printed), instead of SIGXFSZ ending us.
    #[cfg(unix)]
    // SAFETY: setting a signal disposition before any thread starts; no handler code runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    std::process::exit(acp_chaos_cli::commands::main());
}
