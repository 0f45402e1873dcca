//! Seeded, reproducible fault injection for the simulated API server.
//!
//! Contract: a [`FaultPlan`] says how often each kind of request fails (and with which HTTP
//! statuses), how often the server throttles with a 429, how much latency to add, when to cut
//! watch streams, and how often the API server restarts. A [`FaultInjector`] turns the plan into
//! a [`FaultDecision`] per request. Decisions come from one `StdRng` seeded with the plan's seed
//! and every decision consumes the same number of draws, so the same seed and the same sequence
//! of [`FaultInjector::decide`] calls give the same decisions, run after run (restarts draw from
//! a second generator of their own, so turning them on shifts no other decision). The default
//! plan injects nothing.
//!
//! The injector only decides; the server carries the decision out (sleeps, answers with the
//! status, ends the watch) and builds the bodies with [`super::status`].

use std::collections::BTreeMap;
use std::time::Duration;

use http::{Method, StatusCode};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The kind of request, as far as faults (and the request journal) are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// GET of one named object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=1` (or `true`).
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE, of one object or a collection.
    Delete,
    /// GET of `/api`, `/apis`, `/version` and the group-version documents.
    Discovery,
}

impl Verb {
    /// Every verb, in declaration order.
    pub const ALL: [Verb; 8] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::Discovery,
    ];

    /// Classifies a request. Methods with no verb of their own (HEAD, OPTIONS...) count as reads.
    pub fn classify(
        method: &Method,
        query_has_watch: bool,
        is_discovery_path: bool,
        has_name: bool,
    ) -> Verb {
        match *method {
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE => Verb::Delete,
            _ if is_discovery_path => Verb::Discovery,
            _ if query_has_watch => Verb::Watch,
            _ if has_name => Verb::Get,
            _ => Verb::List,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How one verb fails: with probability `error_rate`, answer with one of `statuses` (chosen
/// uniformly; 500 when the list is empty).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultRule {
    /// Probability in `[0, 1]` that a request of this verb fails.
    pub error_rate: f64,
    /// The HTTP statuses to fail with.
    pub statuses: Vec<u16>,
}

/// What to inject. Build it with the methods below; `Default` injects nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultPlan {
    /// Seed of the random decisions.
    pub seed: u64,
    /// Failure rule per verb, indexed like [`Verb::ALL`].
    pub rules: [FaultRule; 8],
    /// Probability in `[0, 1]` that any request is throttled with a 429 (drawn before errors).
    pub throttle_rate: f64,
    /// The `Retry-After` seconds a 429 carries.
    pub retry_after_seconds: u64,
    /// Latency added to every request, uniform between the two bounds.
    pub latency: Option<(Duration, Duration)>,
    /// End each watch stream after this many events.
    pub watch_cut_after_events: Option<u64>,
    /// End each watch stream after this long.
    pub watch_cut_after: Option<Duration>,
    /// Probability in `[0, 1]` that a request finds the API server restarting: every watch and
    /// connection ends (this request's too) and the watch caches are rebuilt.
    pub restart_rate: f64,
}

/// A probability clamped to `[0, 1]`; NaN counts as 0.
fn probability(rate: f64) -> f64 {
    if rate.is_nan() {
        0.0
    } else {
        rate.clamp(0.0, 1.0)
    }
}

impl FaultPlan {
    /// A plan with no faults yet, drawing its decisions from `seed`.
    pub fn new(seed: u64) -> Self {
        FaultPlan {
            seed,
            ..FaultPlan::default()
        }
    }

    /// Requests of `verb` fail with probability `rate`, with one of `statuses`.
    pub fn fail(mut self, verb: Verb, rate: f64, statuses: &[u16]) -> Self {
        self.rules[verb.index()] = FaultRule {
            error_rate: probability(rate),
            statuses: statuses.to_vec(),
        };
        self
    }

    /// Requests of every verb fail with probability `rate`, with one of `statuses`.
    pub fn fail_all(self, rate: f64, statuses: &[u16]) -> Self {
        Verb::ALL
            .iter()
            .fold(self, |plan, verb| plan.fail(*verb, rate, statuses))
    }

    /// Any request is answered 429 with probability `rate`, asking to retry after
    /// `retry_after_seconds`.
    pub fn throttle(mut self, rate: f64, retry_after_seconds: u64) -> Self {
        self.throttle_rate = probability(rate);
        self.retry_after_seconds = retry_after_seconds;
        self
    }

    /// Every request is delayed by a uniform random duration in `[min, max]` (bounds in either
    /// order).
    pub fn latency(mut self, min: Duration, max: Duration) -> Self {
        self.latency = Some((min.min(max), min.max(max)));
        self
    }

    /// With probability `rate` per request, the API server restarts as the request arrives.
    pub fn restart(mut self, rate: f64) -> Self {
        self.restart_rate = probability(rate);
        self
    }

    /// Watch streams end after `events` events.
    pub fn cut_watches_after_events(mut self, events: u64) -> Self {
        self.watch_cut_after_events = Some(events);
        self
    }

    /// Watch streams end after `duration`.
    pub fn cut_watches_after(mut self, duration: Duration) -> Self {
        self.watch_cut_after = Some(duration);
        self
    }

    /// The rule for one verb.
    pub fn rule(&self, verb: Verb) -> &FaultRule {
        &self.rules[verb.index()]
    }
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultDecision {
    /// Wait this long before handling (or failing) the request.
    pub delay: Option<Duration>,
    /// Answer with this status instead of handling the request; the second member is the
    /// `Retry-After` seconds for a 429.
    pub respond: Option<(StatusCode, Option<u64>)>,
    /// The API server restarts before the request is handled (it never is).
    pub restart: bool,
}

/// How long a watch stream may live before the server ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WatchBudget {
    /// End the stream after this many events.
    pub max_events: Option<u64>,
    /// End the stream after this long.
    pub max_duration: Option<Duration>,
}

/// What an injector has injected so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultCounts {
    /// Requests given a delay.
    pub delayed: u64,
    /// Requests answered 429.
    pub throttled: u64,
    /// Requests answered with an injected error (429s not included).
    pub errors: u64,
    /// Injected errors per verb.
    pub errors_by_verb: BTreeMap<Verb, u64>,
    /// Injected responses (errors and 429s) per HTTP status.
    pub by_status: BTreeMap<u16, u64>,
    /// Injected API server restarts.
    pub restarts: u64,
}

struct State {
    plan: FaultPlan,
    rng: StdRng,
    /// Draws the restarts only.
    restart_rng: StdRng,
    counts: FaultCounts,
}

/// The restart generator's seed, apart from the main one's.
fn restart_seed(seed: u64) -> u64 {
    seed ^ 0x5245_5354_4152_5421
}

/// Turns a [`FaultPlan`] into per-request decisions; shared by all request handlers.
pub struct FaultInjector {
    state: Mutex<State>,
}

impl FaultInjector {
    /// An injector following `plan`.
    pub fn new(plan: FaultPlan) -> Self {
        let rng = StdRng::seed_from_u64(plan.seed);
        let restart_rng = StdRng::seed_from_u64(restart_seed(plan.seed));
        FaultInjector {
            state: Mutex::new(State {
                plan,
                rng,
                restart_rng,
                counts: FaultCounts::default(),
            }),
        }
    }

    /// Switches to another plan (e.g. faults off, then on again) and reseeds from its seed, so
    /// what follows is reproducible on its own. Counts are kept.
    pub fn set_plan(&self, plan: FaultPlan) {
        let mut state = self.state.lock();
        state.rng = StdRng::seed_from_u64(plan.seed);
        state.restart_rng = StdRng::seed_from_u64(restart_seed(plan.seed));
        state.plan = plan;
    }

    /// The plan in force.
    pub fn plan(&self) -> FaultPlan {
        self.state.lock().plan.clone()
    }

    /// Decides the fate of one request of `verb`.
    pub fn decide(&self, verb: Verb) -> FaultDecision {
        let mut guard = self.state.lock();
        let State {
            plan,
            rng,
            restart_rng,
            counts,
        } = &mut *guard;
        let restart = plan.restart_rate > 0.0 && restart_rng.random::<f64>() < plan.restart_rate;
        if restart {
            counts.restarts += 1;
        }
        // Always four draws, whatever the plan says, so one verb's settings never shift the
        // random sequence another verb sees.
        let latency_draw: f64 = rng.random();
        let throttle_draw: f64 = rng.random();
        let error_draw: f64 = rng.random();
        let status_draw: f64 = rng.random();

        let delay = plan
            .latency
            .map(|(min, max)| min.saturating_add((max - min).mul_f64(latency_draw)));
        if delay.is_some() {
            counts.delayed += 1;
        }
        let rule = &plan.rules[verb.index()];
        let respond = if throttle_draw < plan.throttle_rate {
            counts.throttled += 1;
            *counts.by_status.entry(429).or_default() += 1;
            Some((
                StatusCode::TOO_MANY_REQUESTS,
                Some(plan.retry_after_seconds),
            ))
        } else if error_draw < rule.error_rate {
            let status = pick_status(&rule.statuses, status_draw);
            counts.errors += 1;
            *counts.errors_by_verb.entry(verb).or_default() += 1;
            *counts.by_status.entry(status.as_u16()).or_default() += 1;
            Some((status, None))
        } else {
            None
        };
        FaultDecision {
            delay,
            respond,
            restart,
        }
    }

    /// How long each new watch stream may run.
    pub fn watch_budget(&self) -> WatchBudget {
        let state = self.state.lock();
        WatchBudget {
            max_events: state.plan.watch_cut_after_events,
            max_duration: state.plan.watch_cut_after,
        }
    }

    /// What was injected so far.
    pub fn injected(&self) -> FaultCounts {
        self.state.lock().counts.clone()
    }
}

/// One of `statuses` chosen by `draw` in `[0, 1)`; 500 if the list is empty or the chosen
/// number is not an HTTP status.
fn pick_status(statuses: &[u16], draw: f64) -> StatusCode {
    // `draw < 1`, so the index is below the length; `min` guards against rounding anyway.
    let index = ((draw * statuses.len() as f64) as usize).min(statuses.len().saturating_sub(1));
    statuses
        .get(index)
        .and_then(|s| StatusCode::from_u16(*s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_maps_methods_and_paths_to_verbs() {
        let cases = [
            (Method::GET, false, false, true, Verb::Get),
            (Method::GET, false, false, false, Verb::List),
            (Method::GET, true, false, false, Verb::Watch),
            (Method::GET, false, true, false, Verb::Discovery),
            (Method::POST, false, false, false, Verb::Create),
            (Method::PUT, false, false, true, Verb::Update),
            (Method::PATCH, false, false, true, Verb::Patch),
            (Method::DELETE, false, false, true, Verb::Delete),
            (Method::DELETE, false, false, false, Verb::Delete),
            (Method::HEAD, false, false, true, Verb::Get),
        ];
        for (method, watch, discovery, named, expected) in cases {
            assert_eq!(
                Verb::classify(&method, watch, discovery, named),
                expected,
                "{method}"
            );
        }
    }

    #[test]
    fn default_plan_injects_nothing() {
        let injector = FaultInjector::new(FaultPlan::default());
        for verb in Verb::ALL {
            for _ in 0..100 {
                assert_eq!(injector.decide(verb), FaultDecision::default());
            }
        }
        assert_eq!(injector.injected(), FaultCounts::default());
        assert_eq!(injector.watch_budget(), WatchBudget::default());
    }

    fn busy_plan(seed: u64) -> FaultPlan {
        FaultPlan::new(seed)
            .fail_all(0.2, &[500, 503])
            .throttle(0.1, 2)
            .latency(Duration::from_millis(1), Duration::from_millis(20))
    }

    #[test]
    fn same_seed_gives_same_decisions() {
        let a = FaultInjector::new(busy_plan(42));
        let b = FaultInjector::new(busy_plan(42));
        let c = FaultInjector::new(busy_plan(43));
        let mut differs = false;
        for i in 0..2_000 {
            let verb = Verb::ALL[i % Verb::ALL.len()];
            let (da, db, dc) = (a.decide(verb), b.decide(verb), c.decide(verb));
            assert_eq!(da, db, "decision {i}");
            differs |= da != dc;
        }
        assert!(differs, "another seed should give other decisions");
        assert_eq!(a.injected(), b.injected());
    }

    #[test]
    fn rates_hold_within_tolerance() {
        let draws = 20_000;
        let injector = FaultInjector::new(
            FaultPlan::new(7)
                .fail(Verb::Delete, 0.3, &[500, 503, 504])
                .throttle(0.1, 1),
        );
        for _ in 0..draws {
            injector.decide(Verb::Delete);
            injector.decide(Verb::Get);
        }
        let counts = injector.injected();
        let throttled = counts.throttled as f64 / (2 * draws) as f64;
        assert!((throttled - 0.1).abs() < 0.01, "throttle rate {throttled}");
        // Errors are drawn only when the request was not throttled: 0.9 * 0.3.
        let errors = counts.errors as f64 / draws as f64;
        assert!((errors - 0.27).abs() < 0.015, "error rate {errors}");
        assert_eq!(counts.errors_by_verb.get(&Verb::Get), None);
        for status in [500, 503, 504] {
            let share = counts.by_status[&status] as f64 / counts.errors as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.03, "{status}: {share}");
        }
    }

    #[test]
    fn latency_stays_within_bounds() {
        let (min, max) = (Duration::from_millis(5), Duration::from_millis(9));
        let injector = FaultInjector::new(FaultPlan::new(1).latency(max, min));
        for _ in 0..1_000 {
            let delay = injector.decide(Verb::List).delay.expect("latency set");
            assert!(delay >= min && delay <= max, "{delay:?}");
        }
        assert_eq!(injector.injected().delayed, 1_000);
    }

    #[test]
    fn throttling_carries_retry_after() {
        let injector = FaultInjector::new(FaultPlan::new(3).throttle(1.0, 5));
        let decision = injector.decide(Verb::Watch);
        assert_eq!(
            decision.respond,
            Some((StatusCode::TOO_MANY_REQUESTS, Some(5)))
        );
    }

    #[test]
    fn set_plan_turns_faults_off_and_on_reproducibly() {
        let injector = FaultInjector::new(FaultPlan::new(9).fail_all(1.0, &[]));
        assert_eq!(
            injector.decide(Verb::Create).respond,
            Some((StatusCode::INTERNAL_SERVER_ERROR, None))
        );
        injector.set_plan(FaultPlan::default());
        assert_eq!(injector.decide(Verb::Create), FaultDecision::default());

        let plan = busy_plan(11);
        injector.set_plan(plan.clone());
        let fresh = FaultInjector::new(plan);
        for verb in Verb::ALL {
            assert_eq!(injector.decide(verb), fresh.decide(verb));
        }
        assert_eq!(injector.injected().errors_by_verb[&Verb::Create], 1);
    }

    #[test]
    fn watch_budget_and_sanitised_plans() {
        let plan = FaultPlan::new(0)
            .cut_watches_after_events(3)
            .cut_watches_after(Duration::from_secs(2))
            .fail(Verb::Get, f64::NAN, &[42])
            .fail(Verb::List, 7.0, &[42]);
        assert_eq!(plan.rule(Verb::Get).error_rate, 0.0);
        assert_eq!(plan.rule(Verb::List).error_rate, 1.0);
        let injector = FaultInjector::new(plan);
        assert_eq!(
            injector.watch_budget(),
            WatchBudget {
                max_events: Some(3),
                max_duration: Some(Duration::from_secs(2))
            }
        );
        // 42 is not an HTTP status: the injector falls back to 500 rather than panicking.
        assert_eq!(
            injector.decide(Verb::List).respond,
            Some((StatusCode::INTERNAL_SERVER_ERROR, None))
        );
    }

    #[test]
    fn restarts_are_drawn_apart_and_shift_no_other_decision() {
        let base = FaultPlan::new(9)
            .fail_all(0.3, &[500, 503])
            .throttle(0.1, 1);
        let plain = FaultInjector::new(base.clone());
        let restarting = FaultInjector::new(base.restart(0.25));
        let mut restarts = 0;
        for verb in Verb::ALL.iter().cycle().take(400) {
            let (a, b) = (plain.decide(*verb), restarting.decide(*verb));
            assert_eq!((a.delay, a.respond), (b.delay, b.respond));
            assert!(!a.restart);
            restarts += u64::from(b.restart);
        }
        assert!((60..140).contains(&restarts), "{restarts} of 400 at 25 %");
        assert_eq!(restarting.injected().restarts, restarts);
    }
}
