//! Helpers of the `tests/server_*.rs` suites: a strict parser of the OpenMetrics text format
//! (prometheus_client ships an encoder, not a parser), and HTTP clients for plain and TLS.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// One sample: metric name, labels, value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// e.g. `workqueue_adds_total`.
    pub name: String,
    /// Label name → value, unescaped.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// A parsed exposition: families by name (`TYPE`), and every sample in order.
#[derive(Clone, Debug, Default)]
pub struct Exposition {
    /// family name → type (`counter`, `gauge`, `histogram`...).
    pub families: BTreeMap<String, String>,
    /// Every sample.
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The value of `name` whose labels include every pair of `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The family a sample belongs to, given its type's suffixes.
fn family_of<'a>(name: &'a str, families: &BTreeMap<String, String>) -> Option<&'a str> {
    if families.contains_key(name) {
        return Some(name);
    }
    for suffix in ["_total", "_created", "_bucket", "_count", "_sum", "_info"] {
        if let Some(base) = name.strip_suffix(suffix) {
            let allowed = match families.get(base).map(String::as_str) {
                Some("counter") => matches!(suffix, "_total" | "_created"),
                Some("histogram") => matches!(suffix, "_bucket" | "_count" | "_sum" | "_created"),
                Some("info") => suffix == "_info",
                _ => false,
            };
            if allowed {
                return Some(base);
            }
        }
    }
    None
}

/// Parses `{a="x",b="y\"z"}` starting after the `{`; returns labels and the rest after `}`.
fn parse_labels(mut rest: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let name = &rest[..eq];
        if !valid_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut chars = rest[eq + 1..].char_indices();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err("label value not quoted".into());
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in chars {
            match (escaped, c) {
                (true, 'n') => (value.push('\n'), escaped = false).1,
                (true, c @ ('\\' | '"')) => (value.push(c), escaped = false).1,
                (true, c) => return Err(format!("bad escape \\{c}")),
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(eq + 1 + i + 1);
                    break;
                }
                (false, c) => value.push(c),
            }
        }
        let end = end.ok_or("unterminated label value")?;
        if labels.insert(name.to_owned(), value).is_some() {
            return Err(format!("duplicate label {name}"));
        }
        rest = &rest[end..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|_| format!("bad value {text:?}")),
    }
}

/// Parses an OpenMetrics text exposition strictly: every line well-formed, every sample
/// belonging to a declared family, `# EOF` last, histogram buckets cumulative and ending in
/// `+Inf` equal to `_count`.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut exposition = Exposition::default();
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.pop() != Some("") {
        return Err("exposition must end with a newline".into());
    }
    if lines.pop() != Some("# EOF") {
        return Err("exposition must end with # EOF".into());
    }
    for (n, line) in lines.iter().enumerate() {
        let fail = |why: String| format!("line {}: {why}: {line:?}", n + 1);
        if let Some(comment) = line.strip_prefix("# ") {
            let mut parts = comment.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !valid_name(name) {
                return Err(fail("bad metric name".into()));
            }
            match kind {
                "TYPE" => {
                    let type_ = parts.next().unwrap_or("");
                    let known = [
                        "counter",
                        "gauge",
                        "histogram",
                        "summary",
                        "info",
                        "stateset",
                        "unknown",
                        "gaugehistogram",
                    ];
                    if !known.contains(&type_) {
                        return Err(fail(format!("unknown type {type_:?}")));
                    }
                    if exposition
                        .families
                        .insert(name.to_owned(), type_.to_owned())
                        .is_some()
                    {
                        return Err(fail("family declared twice".into()));
                    }
                }
                "HELP" | "UNIT" => {}
                _ => return Err(fail("unknown comment".into())),
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| fail("no value".into()))?;
        let name = &line[..name_end];
        if !valid_name(name) {
            return Err(fail("bad sample name".into()));
        }
        if family_of(name, &exposition.families).is_none() {
            return Err(fail("sample of an undeclared family".into()));
        }
        let (labels, rest) = match line[name_end..].strip_prefix('{') {
            Some(inner) => parse_labels(inner).map_err(fail)?,
            None => (BTreeMap::new(), &line[name_end..]),
        };
        let value_text = rest
            .strip_prefix(' ')
            .ok_or_else(|| fail("no space before value".into()))?;
        let value = parse_value(value_text.split(' ').next().unwrap_or("")).map_err(fail)?;
        exposition.samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    check_histograms(&exposition)?;
    Ok(exposition)
}

fn check_histograms(exposition: &Exposition) -> Result<(), String> {
    for (family, type_) in &exposition.families {
        if type_ != "histogram" {
            continue;
        }
        // Group buckets by their labels other than `le`.
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for sample in exposition
            .samples
            .iter()
            .filter(|s| s.name == format!("{family}_bucket"))
        {
            let mut labels = sample.labels.clone();
            let le = labels
                .remove("le")
                .ok_or(format!("{family}: bucket without le"))?;
            series
                .entry(format!("{labels:?}"))
                .or_default()
                .push((parse_value(&le)?, sample.value));
        }
        for (labels, buckets) in series {
            if buckets
                .windows(2)
                .any(|w| w[0].0 >= w[1].0 || w[0].1 > w[1].1)
            {
                return Err(format!(
                    "{family}{labels}: buckets not increasing/cumulative"
                ));
            }
            let last = buckets.last().ok_or("no buckets")?;
            if last.0 != f64::INFINITY {
                return Err(format!("{family}{labels}: last bucket is not +Inf"));
            }
            let count = exposition
                .samples
                .iter()
                .find(|s| {
                    s.name == format!("{family}_count") && format!("{:?}", s.labels) == labels
                })
                .ok_or(format!("{family}{labels}: no _count"))?;
            if count.value != last.1 {
                return Err(format!("{family}{labels}: +Inf bucket != _count"));
            }
        }
    }
    Ok(())
}

/// A reqwest client trusting exactly `ca_pem` (or nothing, for plain HTTP).
pub fn http_client(ca_pem: Option<&str>) -> reqwest::Client {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()).flatten() {
            roots.add(cert).unwrap();
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .unwrap()
}

/// The parser refuses what it must.
pub fn self_check() {
    let good = "# TYPE a counter\n# HELP a A.\na_total{x=\"1\\\"\"} 3\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3.5\n# EOF\n";
    let parsed = parse(good).unwrap();
    assert_eq!(parsed.value("a_total", &[("x", "1\"")]), Some(3.0));
    for bad in [
        "a_total 1\n# EOF\n",                        // undeclared
        "# TYPE a counter\na_total 1\n",             // no EOF
        "# TYPE a counter\na_total{x=1} 1\n# EOF\n", // unquoted
        "# TYPE a counter\na_total one\n# EOF\n",    // bad value
        "# TYPE a gauge\na_total 1\n# EOF\n",        // gauge with _total
        "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n# EOF\n",
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n# EOF\n",
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}
