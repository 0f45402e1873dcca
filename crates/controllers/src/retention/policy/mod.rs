//! Retention policies as users write them ([`spec`]) and as the engine applies them.

pub mod compile;
pub mod finished;
pub mod reporting;
pub mod spec;

pub use compile::{compile, CompiledPolicy, Origin, PolicyId, Target};
pub use reporting::{Mode, WebhookSecret};

pub use spec::{
    CelFinishedSpec, Condition, ConditionSpec, FieldSpec, FinishTimeSpec, FinishedSpec,
    GroupBySpec, NextDeletion, NotificationSpec, ResourceSpec, RetentionPolicyObject,
    RetentionPolicySpec, RetentionPolicyStatus, SecretKeyRef,
};

/// A policy field that cannot be applied, named by its path in the object
/// (`spec.finished.field.path`): what `Ready=False` and the Warning Event say.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's path, from the object's root.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// `field`: `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}
