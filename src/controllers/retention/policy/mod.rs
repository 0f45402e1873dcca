//! Retention policies as users write them ([`spec`]) and as the engine applies them.

pub mod compile;
pub mod spec;

pub use compile::{compile, CompiledPolicy, Origin, PolicyId, Target};

pub use spec::{
    CelFinishedSpec, Condition, ConditionSpec, FieldSpec, FinishTimeSpec, FinishedSpec,
    GroupBySpec, ResourceSpec, RetentionPolicyObject, RetentionPolicySpec, RetentionPolicyStatus,
};
