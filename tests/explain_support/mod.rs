//! `kube-gc explain`'s path for tests: gather from the API, then decide at an instant.

use chrono::{DateTime, Utc};
use kube_gc::client::Discovery;
use kube_gc::explain::{decide, gather, ExplainTarget, Explanation, GatherError};

use crate::ttl_support::World;

/// Explains `type_/name` in `namespace` as `kube-gc explain` does, at `now`.
pub async fn explain_at(
    world: &World,
    type_: &str,
    namespace: &str,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Explanation, GatherError> {
    let client = &world.harness.client;
    let discovery = Discovery::run(client).await.expect("discovery");
    let target = ExplainTarget {
        type_: type_.into(),
        name: name.into(),
        namespace: namespace.into(),
    };
    let gathered = gather(client, &discovery, &target).await?;
    Ok(decide(&gathered, now))
}
