//! Log output for the `kube-gc` binary.
//!
//! Verbosity follows klog's `-v` convention (0–1 info, 2–4 debug, 5+ trace) so operators can
//! reuse their habits. `-v` is about kube-gc's own messages: the HTTP and TLS libraries under
//! the client (hyper, h2, rustls, reqwest) stay at warnings whatever `-v` says, so `-v=5` shows
//! kube-gc's traces instead of HTTP/2 frames. From `-v=6` on, each request is logged as
//! client-go logs it (`GET https://… 200 OK in 3 milliseconds`, with the rate limiter's wait
//! when there was one). `RUST_LOG`, when set, overrides all of it with tracing's filter syntax
//! (e.g. `RUST_LOG=debug,h2=trace`).
//! Lines are klog's text format by default; `--logging-format json` switches to
//! component-base's JSON lines (`ts`, `caller`, `msg`, `v`, `err`). See [`format`].
//! Lines go to standard error through a [`LogSink`], which tells when their reader has gone
//! away (see [`sink`]).

mod format;
mod sink;

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

use format::{ComponentJson, KlogText};
pub use sink::LogSink;

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

/// The libraries whose logs `-v` does not raise: they log per frame and per connection.
const TRANSPORT_CRATES: [&str; 6] = [
    "hyper",
    "hyper_util",
    "h2",
    "rustls",
    "tokio_rustls",
    "reqwest",
];

/// The filter for klog verbosity `verbosity`: kube-gc (and anything else) at its level, the
/// transport libraries at most at `warn`.
fn directives(verbosity: u8, quiet_by_default: bool) -> String {
    let level = match verbosity {
        0 if quiet_by_default => "warn",
        0..=1 => "info",
        2..=4 => "debug",
        _ => "trace",
    };
    let mut directives = level.to_owned();
    if level != "warn" {
        for name in TRANSPORT_CRATES {
            directives.push_str(&format!(",{name}=warn"));
        }
    }
    // client-go logs each request at -v=6; -v=5 is trace without them.
    if verbosity == 5 {
        directives.push_str(&format!(",{}=off", crate::client::REQUEST_LOG_TARGET));
    }
    directives
}

impl LoggingArgs {
    /// The tracing filter for this verbosity, unless `RUST_LOG` provides one.
    fn filter(&self, quiet_by_default: bool) -> EnvFilter {
        EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(directives(self.verbosity, quiet_by_default)))
    }

    /// Installs the subscriber for the whole process, and returns where its lines go. Called
    /// once, by [`crate::cli::main`].
    pub fn install(&self) -> LogSink {
        self.install_subscriber(false)
    }

    /// Like [`install`](Self::install), but at verbosity 0 only warnings and errors are logged:
    /// for subcommands whose own output is the point (the demo's progress line).
    pub fn install_quiet(&self) -> LogSink {
        self.install_subscriber(true)
    }

    fn install_subscriber(&self, quiet_by_default: bool) -> LogSink {
        let sink = LogSink::new();
        // A line that cannot be written is dropped: tracing's own report of it would go to
        // standard error too, and panic there when nobody reads it any more.
        let builder = tracing_subscriber::fmt()
            .with_env_filter(self.filter(quiet_by_default))
            .log_internal_errors(false)
            .with_writer(sink.clone());
        // A second install (only possible in tests) fails harmlessly; the first one stays.
        let _ = match self.logging_format {
            LogFormat::Text => builder.event_format(KlogText).try_init(),
            LogFormat::Json => builder.event_format(ComponentJson).try_init(),
        };
        sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_raises_kube_gc_but_not_the_transport_libraries() {
        assert_eq!(directives(0, true), "warn");
        let info = directives(0, false);
        assert!(
            info.starts_with("info,") && info.contains(",h2=warn"),
            "{info}"
        );
        let trace = directives(5, false);
        assert!(trace.starts_with("trace,"), "{trace}");
        for name in TRANSPORT_CRATES {
            assert!(
                trace.contains(&format!(",{name}=warn")),
                "{name} in {trace}"
            );
        }
        assert!(directives(5, false).ends_with(",kube_gc::requests=off"));
        assert!(!directives(6, false).contains("kube_gc::requests"));
        // Every directive parses as tracing's filter syntax.
        for verbosity in 0..=9 {
            let text = directives(verbosity, false);
            assert!(EnvFilter::try_new(&text).is_ok(), "{text}");
        }
    }
}
