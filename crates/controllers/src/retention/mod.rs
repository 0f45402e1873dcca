//! Retention policies: TTL-after-finished, TTL-since-creation and history limits for
//! any kind that finishes, declared once for a namespace (`RetentionPolicy`) or a cluster
//! (`ClusterRetentionPolicy`). `docs/retention.md` explains the fields and presets.
//!
//! Reading order, bottom up — each layer imports only from the layers above it in this list:
//!
//! 1. `need.rs` — [`Need`](need::Need): the tree of fields an object is read for. Knows nothing.
//! 2. `cel.rs`, `path.rs`, `wire.rs` — [`CelExpr`], [`FieldPath`](path::FieldPath), and the
//!    decoder, which builds of an object only what a `Need` names.
//! 3. `finish.rs` (with `finish/time.rs`), `ttl.rs`, `precedence.rs`, `history.rs`,
//!    `preset/` — one [`FinishRule`](finish::FinishRule) (has it finished, how, when; own TTL
//!    fields; grouping), the TTL an object gets, which of several policies wins, which
//!    finished objects a history limit keeps, and the presets built from those rules.
//! 4. `policy/` — the CRDs' wire types (`spec.rs`), a policy checked and compiled into a
//!    [`CompiledPolicy`](policy::CompiledPolicy) (`compile.rs`; `finished.rs` compiles the
//!    `finished` and `groupBy` fields into a `FinishRule`), or the [`FieldError`](policy::FieldError)
//!    at fault.
//! 5. `assessment.rs`, then `verdict.rs` — what an object *is* under the policies of its
//!    resource, and what to *do* with it now (below).
//! 6. `engine/` — the controller: plans, watches, reconciles, reports status. It only moves
//!    data between the decisions above and the server.
//!
//! Four names a reader should not confuse: a [`FinishRule`](finish::FinishRule) is one
//! policy's rule for reading an object; [`ResourcePolicies`](assessment::ResourcePolicies) is
//! every compiled policy naming one resource (plus namespace labels); an
//! [`Assessment`](assessment::Assessment) is what [`assess`](assessment::assess) makes of one
//! object under them; a [`Verdict`](verdict::Verdict) is what [`decide`](verdict::decide)
//! says to do with it at a given time.
//!
//! # When each decision is made
//!
//! **At decode time**, once per object version, while the watch's item decoder
//! (`engine/watch.rs`, [`assessing`](engine::assessing)) turns the server's bytes into what the
//! cache keeps; the object itself is dropped right after:
//!
//! | decision | module |
//! |---|---|
//! | which fields are built at all (the rest skipped unbuilt, `managedFields` never) | `assessment.rs` ([`needed`](assessment::needed)) from `need.rs`, `cel.rs`, `finish.rs`; applied by `wire.rs` |
//! | which policies apply: namespace, selectors, controlled objects, CEL `match` (`now` = decode time) | `assessment.rs` |
//! | which one governs when several apply | `precedence.rs` |
//! | whether, how and when it finished (finish time extracted) | `finish.rs`, `finish/time.rs` |
//! | its TTL and where it came from: annotation, own field, policy | `ttl.rs`, `finish.rs` (own TTL fields) |
//! | its history group | `assessment.rs` |
//! | an object that cannot be read becomes a kept, reported problem | `assessment.rs` |
//! | a deleted object's final state: identity only ([`gone`](assessment::gone)) | `assessment.rs` |
//!
//! **At reconcile time**, against the clock, the policy and the server's current state, from
//! the cached [`Assessment`](assessment::Assessment) (and a fresh GET when the cache is stale):
//!
//! | decision | module |
//! |---|---|
//! | keep, wait until the expiry, or expired — pure, at `now` | `verdict.rs` ([`decide`](verdict::decide)) |
//! | which finished objects of a group exceed a history limit | `history.rs`, applied by `engine/reconcile/history.rs` |
//! | whether the object is still the copy assessed; re-assess a fresh copy on 409 | `engine/reconcile/` |
//! | delete with UID and resourceVersion preconditions, and the policy's propagation | `engine/reconcile/delete.rs` |
//! | which policies are valid and which resources to watch (per policy change) | `policy/compile.rs`, `engine/plan.rs` |
//! | what each policy's status says (counts, conditions) | `engine/status.rs` |

pub mod need;

pub mod cel;
pub mod path;
pub mod wire;

pub mod finish;
pub mod history;
pub mod precedence;
pub mod preset;
pub mod ttl;

pub mod policy;

pub mod assessment;
pub mod verdict;

pub mod engine;

pub use cel::{CelCompileError, CelEvalError, CelExpr};
