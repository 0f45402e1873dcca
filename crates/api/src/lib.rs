//! The Kubernetes API types kube-gc reads and writes, written here with serde (no generated
//! code, no k8s-openapi).
//!
//! Only the fields a garbage collector needs are modelled; everything else in a server's JSON is
//! skipped while decoding. The rules every type in this module follows:
//!
//! - Unknown fields are tolerated, never rejected, so newer servers stay readable.
//! - Optional fields are omitted when unset (`None`, or an empty collection), so a request never
//!   sends a `null` the server would take as "clear this field".
//! - Timestamps are [`Time`] (second precision) or [`MicroTime`] (microsecond precision).
//! - Typed objects implement [`Resource`], which tells the client where they are served.
//!
//! | file | what it holds |
//! |---|---|
//! | `time.rs` | [`Time`], [`MicroTime`] |
//! | `meta.rs` | [`TypeMeta`], [`ObjectMeta`] |
//! | `owner.rs` | [`OwnerReference`] |
//! | `resource.rs` | [`Resource`], [`HasMetadata`] |
//! | `list.rs` | [`ListMeta`], [`List`] |
//! | `watch.rs` | [`WatchEvent`], [`Bookmark`] |
//! | `status.rs` | [`Status`], [`StatusReason`], [`StatusDetails`], [`StatusCause`] |
//! | `delete.rs` | [`DeleteOptions`], [`PropagationPolicy`], [`Preconditions`] |
//! | `selector.rs` | [`LabelSelector`] and how it matches labels |
//! | `metadata_only.rs` | [`PartialObjectMetadata`], [`PartialObjectMetadataList`] |
//! | `job.rs` | batch/v1 [`Job`] (read-only projection) |
//! | `volcano.rs` | Volcano [`VolcanoJob`] (read-only projection) |
//! | `lease.rs` | coordination.k8s.io/v1 [`Lease`] |
//! | `event.rs` | core/v1 [`Event`], [`ObjectReference`] |
//! | `namespace.rs` | core/v1 [`Namespace`], its spec finalizers and conditions |
//! | `key.rs` | [`ObjectKey`]: an object's `namespace/name`, as caches and work queues key it |
//! | `cacheable.rs` | [`Cacheable`]: what a cache reads of an object (key, uid, resourceVersion); here beside [`HasMetadata`] because Rust lets only its owner implement it both for every typed object and for `serde_json::Value` |
//! | `defaults.rs` | serde helpers for `null` and default values ([`null_as_default`], for the controllers' own projections too) |

mod cacheable;
mod defaults;
pub use defaults::null_as_default;
mod delete;
mod event;
mod job;
mod key;
mod lease;
mod list;
mod meta;
mod metadata_only;
mod namespace;
mod owner;
mod resource;
mod review;
mod selector;
mod status;
mod time;
mod volcano;
mod watch;

pub use cacheable::Cacheable;
pub use delete::{DeleteOptions, Preconditions, PropagationPolicy};
pub use event::{Event, EventSource, ObjectReference};
pub use job::{Job, JobCondition, JobSpec, JobStatus};
pub use key::{ObjectKey, ParseKeyError};
pub use lease::{Lease, LeaseSpec};
pub use list::{List, ListMeta};
pub use meta::{ObjectMeta, TypeMeta};
pub use metadata_only::{
    PartialObjectMetadata, PartialObjectMetadataList, ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST, ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON,
};
pub use namespace::{Namespace, NamespaceCondition, NamespaceSpec, NamespaceStatus};
pub use owner::OwnerReference;
pub use resource::{api_version_of, HasMetadata, Resource};
pub use review::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
    TokenReview, TokenReviewSpec, TokenReviewStatus, UserInfo,
};
pub use selector::{LabelSelector, LabelSelectorRequirement, SelectorError};
pub use status::{
    Status, StatusCause, StatusDetails, StatusReason, CAUSE_RESOURCE_VERSION_TOO_LARGE,
};
pub use time::{MicroTime, Time};
pub use volcano::{JobState, VolcanoJob, VolcanoJobSpec, VolcanoJobStatus};
pub use watch::{Bookmark, BookmarkMeta, EventType, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
