//! The `kube-gc` binary: parses the command line and hands over to [`kube_gc::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    kube_gc::cli::main()
}
