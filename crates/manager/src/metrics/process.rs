//! [`ProcessCollector`]: the `process_*` metrics every Prometheus client library publishes
//! (client_golang's process collector, which kube-controller-manager serves): CPU time,
//! resident and virtual memory, start time, open and maximum file descriptors.
//!
//! Contract: read from `/proc/self` at scrape time, nothing kept between scrapes. Where `/proc`
//! cannot be read (not Linux, or a sandbox without it) the metrics it would give are left out
//! rather than reported as zero: a missing series is not a false one.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// The clock ticks `/proc/<pid>/stat` counts times in: `USER_HZ`, fixed at 100 by the Linux
/// ABI whatever the kernel's own tick rate (`sysconf(_SC_CLK_TCK)` answers it).
const USER_HZ: f64 = 100.0;

/// Publishes `process_*` at every scrape.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessCollector;

/// One scrape's reading of the process.
#[derive(Debug, Default, PartialEq)]
struct Reading {
    cpu_seconds: Option<f64>,
    start_time_seconds: Option<f64>,
    resident_bytes: Option<f64>,
    virtual_bytes: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

impl Reading {
    fn now() -> Reading {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let stat = read("/proc/self/stat");
        let times = stat.as_deref().and_then(stat_times);
        let boot = read("/proc/stat").as_deref().and_then(boot_time);
        let status = read("/proc/self/status");
        let kib = |field| status.as_deref().and_then(|s| status_kib(s, field));
        Reading {
            cpu_seconds: times.map(|(cpu, _)| cpu),
            start_time_seconds: times.zip(boot).map(|((_, start), boot)| boot + start),
            resident_bytes: kib("VmRSS:").map(|k| k * 1024.0),
            virtual_bytes: kib("VmSize:").map(|k| k * 1024.0),
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|entries| entries.count() as f64),
            max_fds: read("/proc/self/limits")
                .as_deref()
                .and_then(max_open_files),
        }
    }
}

/// CPU seconds (user + system) and seconds from boot to start, from `/proc/self/stat`.
fn stat_times(stat: &str) -> Option<(f64, f64)> {
    // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |field: usize| fields.get(field - 3)?.parse::<f64>().ok();
    let cpu = (ticks(14)? + ticks(15)?) / USER_HZ;
    let start = ticks(22)? / USER_HZ;
    Some((cpu, start))
}

/// The boot time, seconds since the epoch (`btime` of `/proc/stat`).
fn boot_time(stat: &str) -> Option<f64> {
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(status: &str, field: &str) -> Option<f64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// The soft limit of open files, from `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<f64> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let reading = Reading::now();
        if let Some(seconds) = reading.cpu_seconds {
            let counter = ConstCounter::new(seconds);
            let metric = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                MetricType::Counter,
            )?;
            counter.encode(metric)?;
        }
        let gauges = [
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                reading.start_time_seconds,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                reading.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                reading.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                reading.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                reading.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
                ConstGauge::new(value).encode(metric)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_field_by_field() {
        // A command name with a space and a parenthesis, as /proc allows.
        let stat = "1234 (kube gc) (x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 \
                    12 0 12345 1000000 2000 18446744073709551615";
        assert_eq!(stat_times(stat), Some((3.0, 123.45)));
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1795340000\nprocesses 9\n"),
            Some(1795340000.0)
        );
        let status = "Name:\tkube-gc\nVmSize:\t  123456 kB\nVmRSS:\t   65536 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(65536.0));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        assert_eq!(max_open_files(limits), Some(1048576.0));
        assert_eq!(stat_times("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_on_linux() {
        let reading = Reading::now();
        assert!(reading.resident_bytes.is_some_and(|bytes| bytes > 0.0));
        assert!(reading.open_fds.is_some_and(|fds| fds >= 1.0));
        assert!(reading.start_time_seconds.is_some_and(|t| t > 1.0e9));
    }
}
