//! `acp-chaos`: the thin binary over the `acp_chaos` library. Exit codes: see `campaign::exit`.

fn main() {
    std::process::exit(acp_chaos::cli::main());
}
