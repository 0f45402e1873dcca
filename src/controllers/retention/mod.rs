//! Retention policies (issue 17): TTL-after-finished, TTL-since-creation and history limits for
//! any kind that finishes, declared once for a namespace (`RetentionPolicy`) or a cluster
//! (`ClusterRetentionPolicy`). `docs/retention.md` explains the fields and presets.
//!
//! The decisions are pure functions, each in a file of its own with its tests; the engine
//! around them only moves data:
//!
//! | file | what it holds |
//! |---|---|
//! | `policy/spec.rs` | the CRDs' wire types |
//! | `policy/compile.rs` | a policy checked and compiled, or the field at fault |
//! | `cel.rs` | [`CelExpr`]: compiled CEL, evaluated per object |
//! | `path.rs` | [`FieldPath`](path::FieldPath): dotted (and bracketed) paths into an object's JSON |
//! | `need.rs` | [`Need`](need::Need): which fields of an object are read; the bottom layer |
//! | `rule.rs` | finish rules: has it finished, how, and when; own TTLs (`policy/finish.rs`: from a policy) |
//! | `preset/` | the presets, a file per family: Pods and Jobs, Volcano, Argo, Tekton, Kubeflow, Spark, Ray |
//! | `wire.rs` | an object decoded for judging, without `metadata.managedFields` |
//! | `judgement.rs` | [`Judgement`](judgement::Judgement): what is cached per object, judged as it is decoded |
//! | `engine/` | the controller: plans, watches, reconciles, reports status |
//! | `ttl.rs` | the TTL an object gets: policy, own field or annotation; Go durations |
//! | `judge.rs` | keep, wait or expired for one object — pure |
//! | `history.rs` | history limits: which finished objects of a group are kept |
//! | `precedence.rs` | which policy governs an object when several apply |

pub mod cel;
pub mod engine;
pub mod history;
pub mod judge;
pub mod judgement;
pub mod need;
pub mod path;
pub mod policy;
pub mod precedence;
pub mod preset;
pub mod rule;
pub mod ttl;
pub mod wire;

pub use cel::{CelCompileError, CelEvalError, CelExpr};
