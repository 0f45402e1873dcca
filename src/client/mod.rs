//! Talking to a Kubernetes API server.

pub mod config;
pub mod discovery;
pub mod error;
pub mod handle;
pub mod options;
pub mod pager;
pub mod params;
pub mod request;
pub mod resource_ref;
pub mod throttle;
pub mod transport;
pub mod watch_stream;

pub use discovery::{DiscoveredResource, Discovery, DiscoveryFailure};
pub use error::{ApiError, ApiErrorKind, Error};
pub use handle::{Api, DeleteResponse, DynamicApi};
pub use options::{BuildError, ClientOptions};
pub use pager::{Page, Pager};
pub use params::{ListParams, Patch, PostParams, VersionMatch, WatchParams};
pub use request::ApiRequest;
pub use resource_ref::ResourceRef;
pub use throttle::Throttle;
pub use transport::Client;
pub use watch_stream::{WatchDecoder, WatchStream};
