//! The request journal: what the simulated API server was asked and what it answered, so tests
//! can assert on the client's behaviour ("exactly one DELETE, with a UID precondition").
//!
//! Contract: [`Journal::record`] appends an entry (the request, the status and the
//! `Content-Type` answered) and gives it the next sequence number (1, 2, ...; numbers are never
//! reused, even after [`Journal::clear`]). The journal keeps at most its capacity of entries,
//! dropping the oldest first and counting what it dropped, so a long soak cannot grow it
//! without bound. It is shared between request handlers (`&self` methods, an
//! internal lock never held across an await) and every read returns copies.
//!
//! Only headers that matter to tests are kept (`accept`, `content-type`, `user-agent`,
//! `impersonate-*`) and `authorization` is reduced to its scheme, so no credential is ever
//! stored: see [`recorded_headers`].

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use http::HeaderMap;
use parking_lot::Mutex;
use serde_json::Value;

use super::faults::Verb;

/// The default number of entries a journal keeps.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// One request and the status it got.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// Position in the journal, assigned by [`Journal::record`].
    pub seq: u64,
    /// When the request arrived.
    pub at: DateTime<Utc>,
    /// What kind of request it was.
    pub verb: Verb,
    /// The HTTP method, e.g. `DELETE`.
    pub method: String,
    /// The path without the query, e.g. `/apis/batch/v1/namespaces/ns/jobs/pi`.
    pub path: String,
    /// The query parameters, decoded, in request order.
    pub query: Vec<(String, String)>,
    /// The headers worth keeping (see [`recorded_headers`]), names in lower case.
    pub headers: Vec<(String, String)>,
    /// The request body, if it was JSON.
    pub body: Option<Value>,
    /// The HTTP status answered.
    pub status: u16,
    /// The answer's `Content-Type` (`application/json`, the protobuf media type, …), if any.
    pub content_type: Option<String>,
}

impl JournalEntry {
    /// The first value of a query parameter.
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of a recorded header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request came from kube-gc's client for `component` (its `User-Agent` ends
    /// in `/component`, see `Client::for_component`).
    pub fn sent_by(&self, component: &str) -> bool {
        self.header("user-agent").is_some_and(|agent| {
            agent
                .strip_suffix(component)
                .is_some_and(|rest| rest.ends_with('/'))
        })
    }
}

/// Decodes a URL query string (`a=1&b=x%20y`) into pairs, in order.
pub fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    let Some(query) = query else {
        return Vec::new();
    };
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The headers a journal keeps: `accept`, `content-type`, `user-agent` and `impersonate-*`
/// as sent, and `authorization` reduced to its scheme (`Bearer`, `Basic`), never the secret.
/// Values that are not visible ASCII are skipped.
pub fn recorded_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str();
            let value = value.to_str().ok()?;
            let kept = match name {
                "accept" | "content-type" | "user-agent" => value.to_owned(),
                "authorization" => value.split_whitespace().next().unwrap_or("").to_owned(),
                _ if name.starts_with("impersonate-") => value.to_owned(),
                _ => return None,
            };
            Some((name.to_owned(), kept))
        })
        .collect()
}

struct Inner {
    entries: VecDeque<JournalEntry>,
    capacity: usize,
    dropped: u64,
    last_seq: u64,
}

/// A bounded, shared log of requests.
pub struct Journal {
    inner: Mutex<Inner>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new(DEFAULT_CAPACITY)
    }
}

impl Journal {
    /// A journal keeping at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Journal {
            inner: Mutex::new(Inner {
                entries: VecDeque::with_capacity(capacity.min(1024)),
                capacity,
                dropped: 0,
                last_seq: 0,
            }),
        }
    }

    /// Appends an entry, overwriting its `seq` with the next sequence number, which it returns.
    pub fn record(&self, mut entry: JournalEntry) -> u64 {
        let mut inner = self.inner.lock();
        inner.last_seq += 1;
        entry.seq = inner.last_seq;
        if inner.entries.len() == inner.capacity {
            inner.entries.pop_front();
            inner.dropped += 1;
        }
        inner.entries.push_back(entry);
        inner.last_seq
    }

    /// How many kept requests came from kube-gc's client for `component`.
    pub fn count_sent_by(&self, component: &str) -> usize {
        self.entries()
            .iter()
            .filter(|e| e.sent_by(component))
            .count()
    }

    /// Every kept entry, oldest first.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.select(|_| true)
    }

    /// Forgets every entry and the dropped count; sequence numbers keep counting up.
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.entries.clear();
        inner.dropped = 0;
    }

    /// The kept DELETE requests, oldest first.
    pub fn deletes(&self) -> Vec<JournalEntry> {
        self.by_verb(Verb::Delete)
    }

    /// The kept requests of one verb, oldest first.
    pub fn by_verb(&self, verb: Verb) -> Vec<JournalEntry> {
        self.select(|e| e.verb == verb)
    }

    /// How many kept requests have this verb.
    pub fn count(&self, verb: Verb) -> usize {
        self.inner
            .lock()
            .entries
            .iter()
            .filter(|e| e.verb == verb)
            .count()
    }

    /// The kept requests whose path starts with `prefix`, oldest first.
    pub fn entries_for_path_prefix(&self, prefix: &str) -> Vec<JournalEntry> {
        self.select(|e| e.path.starts_with(prefix))
    }

    /// The kept requests recorded after sequence number `seq`, oldest first.
    pub fn entries_after(&self, seq: u64) -> Vec<JournalEntry> {
        self.select(|e| e.seq > seq)
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many entries were dropped to stay within capacity since the last clear.
    pub fn dropped(&self) -> u64 {
        self.inner.lock().dropped
    }

    fn select(&self, keep: impl Fn(&JournalEntry) -> bool) -> Vec<JournalEntry> {
        let inner = self.inner.lock();
        inner.entries.iter().filter(|e| keep(e)).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn entry(verb: Verb, path: &str) -> JournalEntry {
        JournalEntry {
            seq: 0,
            at: Utc::now(),
            verb,
            method: format!("{verb:?}").to_uppercase(),
            path: path.to_owned(),
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
            status: 200,
            content_type: None,
        }
    }

    #[test]
    fn records_in_order_and_answers_queries() {
        let journal = Journal::default();
        assert!(journal.is_empty());
        let jobs = "/apis/batch/v1/namespaces/ns/jobs";
        assert_eq!(journal.record(entry(Verb::List, jobs)), 1);
        let mut delete = entry(Verb::Delete, &format!("{jobs}/pi"));
        delete.body = Some(json!({"preconditions": {"uid": "u"}}));
        assert_eq!(journal.record(delete), 2);
        journal.record(entry(Verb::Get, "/api/v1/namespaces/ns/configmaps/c"));

        assert_eq!(journal.len(), 3);
        assert_eq!(journal.count(Verb::Delete), 1);
        assert_eq!(
            journal.deletes()[0].body,
            Some(json!({"preconditions": {"uid": "u"}}))
        );
        assert_eq!(journal.deletes()[0].seq, 2);
        assert_eq!(journal.by_verb(Verb::List).len(), 1);
        assert_eq!(journal.entries_for_path_prefix(jobs).len(), 2);
        let seqs: Vec<u64> = journal.entries_after(1).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![2, 3]);
    }

    #[test]
    fn stays_within_capacity_and_counts_what_it_dropped() {
        let journal = Journal::new(3);
        for i in 0..10 {
            journal.record(entry(Verb::Get, &format!("/p/{i}")));
        }
        let paths: Vec<String> = journal.entries().into_iter().map(|e| e.path).collect();
        assert_eq!(paths, vec!["/p/7", "/p/8", "/p/9"]);
        assert_eq!(journal.dropped(), 7);

        journal.clear();
        assert!(journal.is_empty());
        assert_eq!(journal.dropped(), 0);
        assert_eq!(
            journal.record(entry(Verb::Get, "/p/10")),
            11,
            "seq keeps counting"
        );
        assert_eq!(Journal::new(0).record(entry(Verb::Get, "/")), 1);
    }

    #[test]
    fn keeps_only_useful_headers_and_never_a_secret() {
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_static("application/json"));
        headers.insert("authorization", HeaderValue::from_static("Bearer s3cr3t"));
        headers.insert("impersonate-user", HeaderValue::from_static("alice"));
        headers.insert("user-agent", HeaderValue::from_static("kube-gc/0.1"));
        headers.insert("x-other", HeaderValue::from_static("dropped"));
        let mut kept = recorded_headers(&headers);
        kept.sort();
        assert_eq!(
            kept,
            vec![
                ("accept".to_owned(), "application/json".to_owned()),
                ("authorization".to_owned(), "Bearer".to_owned()),
                ("impersonate-user".to_owned(), "alice".to_owned()),
                ("user-agent".to_owned(), "kube-gc/0.1".to_owned()),
            ]
        );
        let mut e = entry(Verb::Get, "/");
        e.headers = kept;
        assert_eq!(e.header("Authorization"), Some("Bearer"));
    }

    #[test]
    fn parses_queries_in_order() {
        let query = parse_query(Some("watch=1&labelSelector=a%3Db%2Cc&limit=500&limit=2"));
        let mut e = entry(Verb::Watch, "/");
        e.query = query;
        assert_eq!(e.query_value("labelSelector"), Some("a=b,c"));
        assert_eq!(e.query_value("limit"), Some("500"));
        assert_eq!(e.query.len(), 4);
        assert!(parse_query(None).is_empty());
    }
}
