//! `kube-gc explain`'s path for tests: gather from the API, then decide at an instant.
#![allow(dead_code)] // Each test crate uses a different subset.

use chrono::{DateTime, Utc};
use kube_gc::client::Discovery;
use kube_gc::explain::{decide_assuming, gather, ExplainTarget, Explanation, GatherError};
use kube_gc::manager::ControllerSelection;

use crate::ttl_support::World;

/// Explains `type_/name` in `namespace` as `kube-gc explain` does, at `now`.
pub async fn explain_at(
    world: &World,
    type_: &str,
    namespace: &str,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Explanation, GatherError> {
    let everything = ControllerSelection::default();
    explain_assuming(world, type_, namespace, name, &everything, now).await
}

/// Explains as `kube-gc explain --controllers …` does: assuming `running` is what runs.
pub async fn explain_assuming(
    world: &World,
    type_: &str,
    namespace: &str,
    name: &str,
    running: &ControllerSelection,
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
    Ok(decide_assuming(&gathered, running, now))
}
