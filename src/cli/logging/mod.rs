//! Log output for the `kube-gc` binary.
//!
//! Verbosity follows klog's `-v` convention (0–1 info, 2–4 debug, 5+ trace) so operators can
//! reuse their habits; `RUST_LOG`, when set, overrides it with tracing's filter syntax.
//! Lines are klog's text format by default; `--logging-format json` switches to
//! component-base's JSON lines (`ts`, `caller`, `msg`, `v`, `err`). See [`format`].

mod format;

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

use format::{ComponentJson, KlogText};

/// The two log formats component-base offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// klog's text lines (`I1122 09:40:01.123456  4242 file.rs:88] "msg" key="value"`).
    Text,
    /// component-base's JSON lines (`ts`, `caller`, `msg`, `v`, `err`).
    Json,
}

/// Logging flags shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct LoggingArgs {
    /// Log verbosity, as klog's -v: 0-1 info, 2-4 debug, 5 and above trace. RUST_LOG overrides it.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        default_value_t = 0,
        value_name = "LEVEL"
    )]
    pub verbosity: u8,

    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub logging_format: LogFormat,
}

impl LoggingArgs {
    /// The tracing filter for this verbosity, unless `RUST_LOG` provides one.
    fn filter(&self, quiet_by_default: bool) -> EnvFilter {
        let level = match self.verbosity {
            0 if quiet_by_default => "warn",
            0..=1 => "info",
            2..=4 => "debug",
            _ => "trace",
        };
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level))
    }

    /// Installs the subscriber for the whole process. Called once, by [`crate::cli::main`].
    pub fn install(&self) {
        self.install_subscriber(false);
    }

    /// Like [`install`](Self::install), but at verbosity 0 only warnings and errors are logged:
    /// for subcommands whose own output is the point (the demo's progress line).
    pub fn install_quiet(&self) {
        self.install_subscriber(true);
    }

    fn install_subscriber(&self, quiet_by_default: bool) {
        let builder = tracing_subscriber::fmt()
            .with_env_filter(self.filter(quiet_by_default))
            .with_writer(std::io::stderr);
        // A second install (only possible in tests) fails harmlessly; the first one stays.
        let _ = match self.logging_format {
            LogFormat::Text => builder.event_format(KlogText).try_init(),
            LogFormat::Json => builder.event_format(ComponentJson).try_init(),
        };
    }
}
