//! The two line formats Kubernetes components write, for tracing events.
//!
//! Contract: [`KlogText`] writes klog's text header and structured tail,
//! `I1122 09:40:01.123456   12345 reconcile.rs:88] "deleted Job" namespace="demo" name="a"`,
//! and [`ComponentJson`] writes component-base's JSON line,
//! `{"ts":1795340401.123,"caller":"reconcile.rs:88","msg":"deleted Job","v":0,"namespace":"demo"}`.
//! Operators' log pipelines parse these two shapes already; a controller that logs like
//! kube-controller-manager needs no new parsing rules.
//!
//! Mapping from tracing: ERROR → `E` (JSON: no `v`, the `error` field becomes `err`), WARN → `W`
//! (JSON: `v` 0), INFO → `I`/`v` 0, DEBUG → `I`/`v` 2, TRACE → `I`/`v` 5, which is how the `-v`
//! flag maps verbosity onto tracing levels. A JSON line carries no severity letter, so a warning
//! or an error also says so in `level` (`"warning"`, `"error"`): an alert on a JSON pipeline
//! must not have to guess it from `v` and `err`.

use std::fmt;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// klog's text format.
#[derive(Debug, Default, Clone, Copy)]
pub struct KlogText;

/// component-base's JSON format.
#[derive(Debug, Default, Clone, Copy)]
pub struct ComponentJson;

/// An event's message and its other fields, in the order they were recorded.
#[derive(Default)]
struct Fields {
    message: String,
    others: Vec<(&'static str, Value)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // The causes too: a log line is where an operator looks for why.
        self.put(field, Value::from(crate::error_chain::chain(value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

impl Fields {
    fn of(event: &Event<'_>) -> Fields {
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields
    }

    fn put(&mut self, field: &Field, value: Value) {
        match (field.name(), value) {
            ("message", Value::String(text)) => self.message = text,
            ("message", other) => self.message = other.to_string(),
            (name, value) => self.others.push((name, value)),
        }
    }
}

/// klog's severity letter.
fn severity(level: &Level) -> char {
    match *level {
        Level::ERROR => 'E',
        Level::WARN => 'W',
        _ => 'I',
    }
}

/// The `-v` level an event of this tracing level is logged at; `None` for errors, which
/// component-base logs without one.
fn verbosity(level: &Level) -> Option<u8> {
    match *level {
        Level::ERROR => None,
        Level::WARN | Level::INFO => Some(0),
        Level::DEBUG => Some(2),
        Level::TRACE => Some(5),
    }
}

/// The `level` of a JSON line: only warnings and errors say one.
fn json_level(level: &Level) -> Option<&'static str> {
    match *level {
        Level::ERROR => Some("error"),
        Level::WARN => Some("warning"),
        _ => None,
    }
}

/// `file.rs:line`, the file without its directories, as klog prints the caller.
fn caller(event: &Event<'_>) -> String {
    let metadata = event.metadata();
    let file = metadata.file().unwrap_or("?");
    let file = file.rsplit('/').next().unwrap_or(file);
    format!("{file}:{}", metadata.line().unwrap_or(0))
}

impl KlogText {
    /// One line, without the trailing newline, for `event` logged at `now`.
    fn line(now: DateTime<Utc>, pid: u32, event: &Event<'_>) -> String {
        let fields = Fields::of(event);
        let mut line = format!(
            "{}{} {:>7} {}] {}",
            severity(event.metadata().level()),
            now.format("%m%d %H:%M:%S%.6f"),
            pid,
            caller(event),
            Value::from(fields.message),
        );
        for (name, value) in fields.others {
            line.push(' ');
            line.push_str(if name == "error" { "err" } else { name });
            line.push('=');
            line.push_str(&value.to_string());
        }
        line
    }
}

impl ComponentJson {
    /// One JSON object, without the trailing newline, for `event` logged at `now`. Written by
    /// hand rather than through a map so the keys keep component-base's order (`ts` first).
    fn line(now: DateTime<Utc>, event: &Event<'_>) -> String {
        let level = event.metadata().level();
        let fields = Fields::of(event);
        let seconds = now.timestamp_millis() as f64 / 1000.0;
        let mut line = format!(
            "{{\"ts\":{},\"caller\":{},\"msg\":{}",
            Value::from(seconds),
            Value::from(caller(event)),
            Value::from(fields.message),
        );
        let mut written = vec!["ts", "caller", "msg"];
        if let Some(said) = json_level(level) {
            line.push_str(&format!(",\"level\":\"{said}\""));
            written.push("level");
        }
        if let Some(v) = verbosity(level) {
            line.push_str(&format!(",\"v\":{v}"));
            written.push("v");
        }
        for (name, value) in fields.others {
            let key = if name == "error" { "err" } else { name };
            if written.contains(&key) {
                continue;
            }
            written.push(key);
            line.push_str(&format!(",{}:{value}", Value::from(key)));
        }
        line.push('}');
        line
    }
}

impl<S, N> FormatEvent<S, N> for KlogText
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        writeln!(
            writer,
            "{}",
            KlogText::line(Utc::now(), std::process::id(), event)
        )
    }
}

impl<S, N> FormatEvent<S, N> for ComponentJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        writeln!(writer, "{}", ComponentJson::line(Utc::now(), event))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::TimeZone;
    use parking_lot::Mutex;
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    use super::*;

    /// Captures the lines both formats make of each event, at a fixed time and pid.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<(String, String)>>>);

    impl<S: Subscriber> Layer<S> for Capture {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            let now = Utc.with_ymd_and_hms(2026, 11, 22, 9, 40, 1).unwrap()
                + chrono::Duration::microseconds(123_456);
            self.0.lock().push((
                KlogText::line(now, 4242, event),
                ComponentJson::line(now, event),
            ));
        }
    }

    fn capture(log: impl FnOnce()) -> Vec<(String, String)> {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        tracing::subscriber::with_default(subscriber, log);
        let lines = capture.0.lock().clone();
        lines
    }

    #[test]
    fn info_lines_look_like_klog_and_component_base() {
        let mut line = 0;
        let lines = capture(|| {
            line = line!() + 1;
            tracing::info!(namespace = "demo", name = "a", retries = 3, "deleted Job");
        });
        let (text, json) = &lines[0];
        assert_eq!(
            text,
            &format!(
                "I1122 09:40:01.123456    4242 format.rs:{line}] \"deleted Job\" namespace=\"demo\" name=\"a\" retries=3"
            )
        );
        assert!(
            json.starts_with("{\"ts\":1795340401.123,\"caller\":"),
            "{json}"
        );
        let json: Value = serde_json::from_str(json).unwrap();
        assert_eq!(json["ts"], 1_795_340_401.123);
        assert_eq!(json["caller"], format!("format.rs:{line}"));
        assert_eq!(json["msg"], "deleted Job");
        assert_eq!(json["v"], 0);
        assert!(json.get("level").is_none(), "info says no level");
        assert_eq!(json["namespace"], "demo");
        assert_eq!(json["retries"], 3);
    }

    #[test]
    fn errors_carry_err_and_no_verbosity_and_debug_is_v2() {
        let lines = capture(|| {
            let error = std::io::Error::other("connection refused");
            tracing::error!(error = &error as &dyn std::error::Error, "list failed");
            tracing::warn!("slow");
            tracing::debug!("detail");
        });
        let (text, json) = &lines[0];
        assert!(text.starts_with("E1122 "), "{text}");
        assert!(
            text.ends_with("] \"list failed\" err=\"connection refused\""),
            "{text}"
        );
        let json: Value = serde_json::from_str(json).unwrap();
        assert_eq!(json["err"], "connection refused");
        assert!(json.get("v").is_none());
        assert_eq!(json["level"], "error");
        assert!(lines[1].0.starts_with("W1122 "));
        let warning: Value = serde_json::from_str(&lines[1].1).unwrap();
        assert_eq!(
            (&warning["level"], &warning["v"]),
            (&Value::from("warning"), &Value::from(0))
        );
        let debug: Value = serde_json::from_str(&lines[2].1).unwrap();
        assert_eq!(debug["v"], 2);
    }
}
