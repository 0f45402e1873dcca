//! [`Parked`]: the rules for one controller's keys that wait for the API server — which key
//! parks, which comes back when, and what the controller says about the outage. Synchronous and
//! pure: every call takes the time, and the count of the server's returns, from its caller.
//!
//! The rules:
//! - **Park.** A key whose reconcile failed because the server was unavailable parks, if the
//!   server is still unavailable; its back-off is left as it was. It remembers how many times
//!   the server had come back when it parked
//!   ([`Availability::returns`](kube_gc_client::Availability::returns)). If the server already
//!   answers again (another request got through since), the key is retried at once instead.
//! - **Release on a return.** When the server answers again, every key that parked before that
//!   return goes back to the queue at once. A key that parked after it stays: its own failure
//!   came later, so the return does not speak for it.
//! - **Probe.** While keys wait, one of them (the longest waiting) is sent now and then as a
//!   probe: its request is what finds the server back, even when nothing else in the process
//!   sends any. One probe at a time: a probe that fails again parks at the back of the line.
//! - **Strikes.** A key that fails for unavailability while the server answers others — it
//!   answers now, or has come back since the key last parked — earns a strike: perhaps the
//!   server fails this key alone (an aggregated API that is down, a proxy that drops its
//!   requests). After [`MAX_STRIKES`] it backs off like any failing key, so no key retries in
//!   a loop at the pace of returns.
//! - **Settle.** A key that succeeded, or failed for a reason of its own, is forgotten here.
//! - **One line per outage.** The first park opens an outage; the first probe after it reports it
//!   (once, with how many keys wait then); the release that empties the line closes it with how
//!   many keys resumed and after how long.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// How many times a key may fail for unavailability while the server answers others before it
/// backs off like any failing key.
pub const MAX_STRIKES: u32 = 3;

/// How often a waiting key is sent as a probe: as often as the process asks `/readyz`.
pub use kube_gc_client::outage::PROBE_INTERVAL;

/// How long a probe may stay unsettled before another key is sent instead (a request that
/// never ends must not stop the probing).
pub const PROBE_PATIENCE: Duration = Duration::from_secs(60);

/// What became of a key that failed because the server was unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Park {
    /// It waits for the server; its back-off is untouched.
    Parked,
    /// The server answers again already: retry it now; its back-off is untouched.
    RetryNow,
    /// It failed too often while the server answered others: back off instead.
    BackOff,
}

/// What a key tracked here knows.
#[derive(Clone, Copy, Debug)]
struct Record {
    /// The server's return count when the key last parked.
    parked_at: u64,
    /// Failures for unavailability although the server had come back since it parked.
    strikes: u32,
    /// Whether it waits now (else it was released and has not settled yet).
    waiting: bool,
}

/// An outage as this controller sees it: from the first key that parked.
#[derive(Clone, Debug)]
struct Outage {
    since: Instant,
    /// Why the first key parked.
    first_error: String,
    /// Whether the Warning was logged.
    reported: bool,
    /// Keys that parked over the outage.
    keys: usize,
}

/// The Warning to log when an outage is first reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutageBegan {
    /// Keys waiting for the server now.
    pub waiting: usize,
    /// How long since the first key parked.
    pub for_how_long: Duration,
    /// Why the first key parked.
    pub error: String,
}

/// The Info to log when no key waits any longer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutageEnded {
    /// Keys that waited over the outage.
    pub resumed: usize,
    /// From the first park to the last key's release.
    pub after: Duration,
}

/// The keys of one controller that wait for the server.
#[derive(Debug)]
pub struct Parked<K> {
    records: HashMap<K, Record>,
    /// Waiting keys in the order they parked; may hold keys that no longer wait (skipped).
    line: VecDeque<K>,
    waiting: usize,
    /// The key out as a probe, and when it was sent.
    probe: Option<(K, Instant)>,
    /// When the next probe may be sent, while keys wait.
    probe_due: Option<Instant>,
    outage: Option<Outage>,
}

impl<K> Default for Parked<K> {
    fn default() -> Self {
        Parked {
            records: HashMap::new(),
            line: VecDeque::new(),
            waiting: 0,
            probe: None,
            probe_due: None,
            outage: None,
        }
    }
}

impl<K: Clone + Eq + Hash> Parked<K> {
    /// Keys waiting now.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Probes out now: 0 or 1.
    pub fn probes_out(&self) -> usize {
        usize::from(self.probe.is_some())
    }

    /// Whether any key is tracked (waiting, or released and not settled yet).
    pub fn is_tracking(&self) -> bool {
        !self.records.is_empty()
    }

    /// `key` failed because the server was unavailable, at `now`, when the server had come back
    /// `returns` times and `answering` says whether it answers now; `error` says how.
    pub fn park(
        &mut self,
        key: K,
        returns: u64,
        answering: bool,
        error: &str,
        now: Instant,
    ) -> Park {
        if self.probe.as_ref().is_some_and(|(probe, _)| *probe == key) {
            self.probe = None;
        }
        let (record, new) = match self.records.entry(key.clone()) {
            Entry::Occupied(entry) => {
                let record = entry.into_mut();
                if record.parked_at < returns {
                    record.strikes += 1;
                }
                (record, false)
            }
            Entry::Vacant(entry) => {
                let record = entry.insert(Record {
                    parked_at: returns,
                    strikes: 0,
                    waiting: false,
                });
                (record, true)
            }
        };
        if answering {
            record.strikes += 1;
        }
        record.parked_at = returns;
        if record.strikes >= MAX_STRIKES {
            if record.waiting {
                self.waiting -= 1;
            }
            self.records.remove(&key);
            return Park::BackOff;
        }
        if answering {
            // Already back: the return this key waited for came before it could park.
            if record.waiting {
                record.waiting = false;
                self.waiting -= 1;
            }
            return Park::RetryNow;
        }
        if !record.waiting {
            record.waiting = true;
            self.waiting += 1;
            self.line.push_back(key);
        }
        let outage = self.outage.get_or_insert_with(|| Outage {
            since: now,
            first_error: error.to_owned(),
            reported: false,
            keys: 0,
        });
        outage.keys += usize::from(new);
        self.probe_due.get_or_insert(now + PROBE_INTERVAL);
        Park::Parked
    }

    /// `key` succeeded, or failed for a reason of its own, at `now`: it is no longer tracked.
    /// The end of the outage, when it was the last key waiting or out as a probe.
    pub fn settle(&mut self, key: &K, now: Instant) -> Option<OutageEnded> {
        if self.probe.as_ref().is_some_and(|(probe, _)| probe == key) {
            self.probe = None;
        }
        let record = self.records.remove(key)?;
        if record.waiting {
            self.waiting -= 1;
        }
        self.close_outage(now)
    }

    /// The server came back (its `returns`-th return), at `now`: the keys to queue again, and
    /// the end of the outage when no key waits any longer.
    pub fn release(&mut self, returns: u64, now: Instant) -> (Vec<K>, Option<OutageEnded>) {
        let mut released = Vec::new();
        let mut still_waiting = VecDeque::new();
        for key in std::mem::take(&mut self.line) {
            let Some(record) = self.records.get_mut(&key).filter(|r| r.waiting) else {
                continue;
            };
            if record.parked_at < returns {
                record.waiting = false;
                released.push(key);
            } else {
                still_waiting.push_back(key);
            }
        }
        self.line = still_waiting;
        self.waiting -= released.len();
        let ended = self.close_outage(now);
        (released, ended)
    }

    /// When [`probe`](Self::probe) next has a key to send; `None` while no key waits.
    pub fn next_probe(&self) -> Option<Instant> {
        if self.waiting == 0 {
            return None;
        }
        match &self.probe {
            Some((_, sent)) => Some(*sent + PROBE_PATIENCE),
            None => self.probe_due,
        }
    }

    /// The key to send as a probe at `now`, if one is due: the longest waiting, at most one per
    /// [`PROBE_INTERVAL`], and only when no other probe is out (or the one out has been out
    /// longer than [`PROBE_PATIENCE`]).
    pub fn probe(&mut self, now: Instant) -> Option<K> {
        if let Some((_, sent)) = &self.probe {
            if now.saturating_duration_since(*sent) < PROBE_PATIENCE {
                return None;
            }
        }
        if self.probe_due.is_some_and(|due| now < due) {
            return None;
        }
        while let Some(key) = self.line.pop_front() {
            let Some(record) = self.records.get_mut(&key).filter(|r| r.waiting) else {
                continue;
            };
            record.waiting = false;
            self.waiting -= 1;
            self.probe = Some((key.clone(), now));
            self.probe_due = Some(now + PROBE_INTERVAL);
            return Some(key);
        }
        self.probe_due = None;
        None
    }

    /// The outage to report at `now`, once: when one is open and has not been reported yet.
    pub fn report(&mut self, now: Instant) -> Option<OutageBegan> {
        let waiting = self.waiting + self.probes_out();
        let outage = self.outage.as_mut().filter(|o| !o.reported)?;
        outage.reported = true;
        Some(OutageBegan {
            waiting,
            for_how_long: now.saturating_duration_since(outage.since),
            error: outage.first_error.clone(),
        })
    }

    /// Ends the outage at `now` if no key waits or is out as a probe any longer.
    fn close_outage(&mut self, now: Instant) -> Option<OutageEnded> {
        if self.waiting > 0 || self.probe.is_some() {
            return None;
        }
        self.probe_due = None;
        let outage = self.outage.take()?;
        Some(OutageEnded {
            resumed: outage.keys,
            after: now.saturating_duration_since(outage.since),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> String {
        format!("default/job-{n}")
    }

    fn at(seconds: u64) -> Instant {
        // Instants are opaque; tests only compare them, so any base serves.
        BASE.with(|base| *base + Duration::from_secs(seconds))
    }

    thread_local! {
        static BASE: Instant = Instant::now();
    }

    #[test]
    fn keys_parked_in_an_outage_all_come_back_at_its_return_and_its_end_is_said_once() {
        let mut parked = Parked::default();
        for n in 0..3 {
            assert_eq!(
                parked.park(key(n), 0, false, "connection refused", at(n.into())),
                Park::Parked
            );
        }
        assert_eq!(parked.waiting(), 3);
        let began = parked.report(at(4)).expect("the outage is reported");
        assert_eq!(began.waiting, 3);
        assert_eq!(began.for_how_long, Duration::from_secs(4));
        assert_eq!(began.error, "connection refused");
        assert_eq!(parked.report(at(5)), None, "once");

        let (released, ended) = parked.release(1, at(30));
        assert_eq!(released, vec![key(0), key(1), key(2)], "oldest first");
        assert_eq!(parked.waiting(), 0);
        let ended = ended.expect("nothing waits: the outage ended");
        assert_eq!(ended.resumed, 3);
        assert_eq!(ended.after, Duration::from_secs(30));
        assert!(
            parked.is_tracking(),
            "released keys are tracked until they settle"
        );
        for n in 0..3 {
            assert_eq!(parked.settle(&key(n), at(31)), None, "already ended");
        }
        assert!(!parked.is_tracking());
    }

    #[test]
    fn a_key_that_parked_after_the_return_is_not_released_by_it() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(1), 1, false, "refused", at(1));
        let (released, ended) = parked.release(1, at(2));
        assert_eq!(released, vec![key(0)]);
        assert_eq!(ended, None, "a key still waits");
        assert_eq!(parked.waiting(), 1);
        let (released, ended) = parked.release(2, at(3));
        assert_eq!(released, vec![key(1)]);
        assert_eq!(ended.map(|e| e.resumed), Some(2));
    }

    #[test]
    fn one_probe_at_a_time_longest_waiting_first_and_a_failed_probe_goes_to_the_back() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(1), 0, false, "refused", at(0));
        assert_eq!(parked.probe(at(1)), Some(key(0)));
        assert_eq!(parked.probe(at(2)), None, "the first probe is still out");
        assert_eq!(parked.waiting(), 1);
        // It failed the same way: no return came in between, so no strike.
        assert_eq!(
            parked.park(key(0), 0, false, "refused", at(2)),
            Park::Parked
        );
        assert_eq!(parked.probe(at(3)), Some(key(1)));
        parked.park(key(1), 0, false, "refused", at(3));
        assert_eq!(parked.probe(at(4)), Some(key(0)), "round and round");
        assert_eq!(
            parked.probe(at(4 + PROBE_PATIENCE.as_secs())),
            Some(key(1)),
            "a hung probe is replaced"
        );
    }

    #[test]
    fn probes_are_due_one_interval_after_the_first_park_and_after_each_probe() {
        let mut parked = Parked::default();
        assert_eq!(parked.next_probe(), None, "nothing waits");
        parked.park(key(0), 0, false, "refused", at(10));
        parked.park(key(1), 0, false, "refused", at(10));
        assert_eq!(parked.next_probe(), Some(at(10) + PROBE_INTERVAL));
        assert_eq!(parked.probe(at(10)), None, "not yet due");
        let sent = at(10) + PROBE_INTERVAL;
        assert_eq!(parked.probe(sent), Some(key(0)));
        assert_eq!(
            parked.next_probe(),
            Some(sent + PROBE_PATIENCE),
            "while it is out"
        );
        parked.park(key(0), 0, false, "refused", sent);
        assert_eq!(
            parked.next_probe(),
            Some(sent + PROBE_INTERVAL),
            "once it failed"
        );
        assert_eq!(parked.probe(sent), None, "one per interval");
        parked.settle(&key(0), sent);
        parked.settle(&key(1), sent);
        assert_eq!(parked.next_probe(), None);
    }

    #[test]
    fn a_probe_that_succeeds_settles_and_the_return_releases_the_rest() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(1), 0, false, "refused", at(0));
        let probe = parked.probe(at(1)).expect("a probe");
        assert_eq!(parked.settle(&probe, at(1)), None, "key 1 still waits");
        let (released, ended) = parked.release(1, at(1));
        assert_eq!(released, vec![key(1)]);
        assert_eq!(ended.map(|e| e.resumed), Some(2));
    }

    #[test]
    fn a_probe_that_settles_after_the_release_ends_the_outage() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(1), 0, false, "refused", at(0));
        let probe = parked.probe(at(1)).expect("a probe");
        // The probe's answer is the return; the release runs before its worker settles it.
        let (released, ended) = parked.release(1, at(2));
        assert_eq!(released, vec![key(1)]);
        assert_eq!(ended, None, "the probe is still out");
        let ended = parked.settle(&probe, at(3)).expect("the last key settled");
        assert_eq!(ended.resumed, 2);
        assert_eq!(ended.after, Duration::from_secs(3));
    }

    #[test]
    fn a_key_the_server_keeps_failing_while_it_answers_others_backs_off_after_its_strikes() {
        let mut parked = Parked::default();
        let mut returns = 0;
        for strike in 0..MAX_STRIKES {
            assert_eq!(
                parked.park(key(0), returns, false, "503", at(0)),
                Park::Parked,
                "strike {strike}"
            );
            returns += 1;
            let (released, _) = parked.release(returns, at(0));
            assert_eq!(released, vec![key(0)]);
        }
        assert_eq!(
            parked.park(key(0), returns, false, "503", at(0)),
            Park::BackOff
        );
        assert!(
            !parked.is_tracking(),
            "a key that backs off is forgotten here"
        );
        assert_eq!(parked.waiting(), 0);
    }

    #[test]
    fn a_key_that_fails_when_the_server_already_answers_again_is_retried_at_once_with_a_strike() {
        let mut parked = Parked::default();
        assert_eq!(parked.park(key(0), 4, true, "503", at(0)), Park::RetryNow);
        assert_eq!(parked.waiting(), 0);
        assert_eq!(parked.report(at(1)), None, "no outage");
        assert_eq!(parked.park(key(0), 4, true, "503", at(0)), Park::RetryNow);
        assert_eq!(
            parked.park(key(0), 4, true, "503", at(0)),
            Park::BackOff,
            "third strike"
        );
        assert!(!parked.is_tracking());
    }

    #[test]
    fn success_clears_the_strikes() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "503", at(0));
        parked.release(1, at(0));
        parked.park(key(0), 1, false, "503", at(0)); // strike 1
        parked.release(2, at(0));
        parked.settle(&key(0), at(0));
        for returns in 2..2 + u64::from(MAX_STRIKES) {
            assert_eq!(
                parked.park(key(0), returns, false, "503", at(0)),
                Park::Parked
            );
            parked.release(returns + 1, at(0));
        }
    }

    #[test]
    fn a_key_settled_while_it_waits_is_skipped() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(1), 0, false, "refused", at(0));
        // An event queued key 0 again and it succeeded meanwhile.
        assert_eq!(parked.settle(&key(0), at(0)), None);
        assert_eq!(parked.waiting(), 1);
        assert_eq!(parked.probe(at(1)), Some(key(1)));
        let (released, _) = parked.release(1, at(2));
        assert!(released.is_empty());
    }

    #[test]
    fn a_key_parked_twice_waits_once() {
        let mut parked = Parked::default();
        parked.park(key(0), 0, false, "refused", at(0));
        parked.park(key(0), 0, false, "refused", at(1));
        assert_eq!(parked.waiting(), 1);
        let (released, _) = parked.release(1, at(2));
        assert_eq!(released, vec![key(0)]);
    }
}
