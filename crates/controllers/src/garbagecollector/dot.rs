//! The graph as Graphviz DOT, in upstream's format (`/debug/controllers/garbage-collector-controller/graph`).
//!
//! Contract: `strict digraph full {`, one node per graph node named by its UID with upstream's
//! attributes, one edge `"dependent" -> "owner"` per owner reference. An owner referenced but
//! not in the graph is drawn as a node with `missing="true"`. With UIDs given, only those nodes
//! and their transitive owners and dependents are drawn.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::fmt::Write;

use super::graph::{Graph, Node, Presence};

/// Renders `graph`, all of it when `uids` is empty.
pub fn render(graph: &Graph, uids: &[String]) -> String {
    let selected: BTreeSet<&str> = if uids.is_empty() {
        graph.nodes().map(|n| &*n.identity.uid).collect()
    } else {
        reachable(graph, uids)
    };
    let mut out = String::from("strict digraph full {\n  // Node definitions.\n");
    let mut missing = BTreeSet::new();
    for uid in &selected {
        match graph.node(uid) {
            Some(node) => write_node(&mut out, node),
            None => {
                missing.insert(*uid);
            }
        }
    }
    let mut edges = Vec::new();
    for uid in &selected {
        if let Some(node) = graph.node(uid) {
            for owner in node.owners.iter() {
                if graph.node(&owner.uid).is_none() && !missing.contains(&*owner.uid) {
                    write_missing(&mut out, owner.gvk.kind.as_ref(), &owner.uid);
                }
                edges.push((&*node.identity.uid, &*owner.uid));
            }
        }
    }
    for uid in missing {
        write_missing(&mut out, "", uid);
    }
    out.push_str("\n  // Edge definitions.\n");
    edges.sort();
    for (dependent, owner) in edges {
        let _ = writeln!(out, "  {} -> {};", quote(dependent), quote(owner));
    }
    out.push_str("}\n");
    out
}

/// The given nodes with their transitive owners and dependents.
fn reachable<'g>(graph: &'g Graph, uids: &[String]) -> BTreeSet<&'g str> {
    let mut found = BTreeSet::new();
    for start in uids {
        let Some(node) = graph.node(start) else {
            continue;
        };
        for upward in [true, false] {
            let mut seen: HashSet<&str> = HashSet::new();
            let mut queue = VecDeque::from([node]);
            while let Some(n) = queue.pop_front() {
                if !seen.insert(&n.identity.uid) {
                    continue;
                }
                found.insert(&*n.identity.uid);
                let next: Vec<&str> = if upward {
                    n.owners.iter().map(|o| &*o.uid).collect()
                } else {
                    n.dependents.iter().map(|d| &**d).collect()
                };
                queue.extend(next.into_iter().filter_map(|u| graph.node(u)));
            }
        }
    }
    found
}

fn write_node(out: &mut String, node: &Node) {
    let id = &node.identity;
    let (group, version) = (id.gvk.group(), id.gvk.version());
    let namespace = id.namespace.as_deref().unwrap_or("");
    let qualified = if group.is_empty() {
        format!("{}.{version}", id.gvk.kind)
    } else {
        format!("{}.{version}.{group}", id.gvk.kind)
    };
    let label = format!(
        "uid={}\nnamespace={namespace}\n{qualified}/{}\n",
        id.uid, id.name
    );
    let attributes = [
        ("label", label.as_str()),
        ("group", group),
        ("version", version),
        ("kind", &id.gvk.kind),
        ("namespace", namespace),
        ("name", &id.name),
        ("uid", &id.uid),
        (
            "missing",
            if node.presence == Presence::Gone {
                "true"
            } else {
                "false"
            },
        ),
        ("beingDeleted", flag(node.being_deleted)),
        ("deletingDependents", flag(node.deleting_dependents)),
        ("virtual", flag(node.presence == Presence::Virtual)),
    ];
    write_attributes(out, &id.uid, &attributes);
}

fn write_missing(out: &mut String, kind: &str, uid: &str) {
    let label = format!("uid={uid}\nnamespace=\n{kind}/\n");
    let attributes = [
        ("label", label.as_str()),
        ("kind", kind),
        ("uid", uid),
        ("missing", "true"),
        ("beingDeleted", "false"),
        ("deletingDependents", "false"),
        ("virtual", "false"),
    ];
    write_attributes(out, uid, &attributes);
}

fn write_attributes(out: &mut String, uid: &str, attributes: &[(&str, &str)]) {
    let _ = writeln!(out, "  {} [", quote(uid));
    for (name, value) in attributes {
        let _ = writeln!(out, "    {name}={}", quote(value));
    }
    out.push_str("  ];\n");
}

fn flag(value: bool) -> &'static str {
    if value {
        "true"
    } else {
        "false"
    }
}

/// A DOT quoted string: `"` and `\` escaped, newlines as `\n`.
fn quote(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::garbagecollector::builder::{apply, Effects, GraphEvent};
    use crate::garbagecollector::identity::Gvk;
    use kube_gc_api::{ObjectMeta, OwnerReference, PartialObjectMetadata};

    fn add(graph: &mut Graph, api_version: &str, kind: &str, uid: &str, owner: Option<&str>) {
        let object = PartialObjectMetadata {
            metadata: ObjectMeta {
                name: Some(format!("n-{uid}")),
                namespace: Some("default".into()),
                uid: Some(uid.into()),
                owner_references: owner
                    .map(|o| OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: format!("n-{o}"),
                        uid: o.into(),
                        ..Default::default()
                    })
                    .into_iter()
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        };
        let gvk = Arc::new(Gvk {
            api_version: api_version.into(),
            kind: kind.into(),
        });
        apply(
            graph,
            GraphEvent::Upserted { gvk, object },
            &mut Effects::default(),
        );
    }

    #[test]
    fn renders_nodes_and_edges_in_upstream_format() {
        let mut graph = Graph::new();
        add(&mut graph, "apps/v1", "ReplicaSet", "rs", None);
        add(&mut graph, "v1", "Pod", "pod", Some("rs"));
        let dot = render(&graph, &[]);
        assert!(dot.starts_with("strict digraph full {\n"));
        assert!(dot.contains("label=\"uid=rs\\nnamespace=default\\nReplicaSet.v1.apps/n-rs\\n\""));
        assert!(dot.contains("label=\"uid=pod\\nnamespace=default\\nPod.v1/n-pod\\n\""));
        assert!(dot.contains("  \"pod\" -> \"rs\";\n"));
        assert!(dot.contains("virtual=\"false\""));
        assert!(dot.ends_with("}\n"));
    }

    #[test]
    fn a_uid_selects_its_owners_and_dependents_only() {
        let mut graph = Graph::new();
        add(&mut graph, "apps/v1", "ReplicaSet", "rs", None);
        add(&mut graph, "v1", "Pod", "pod", Some("rs"));
        add(&mut graph, "apps/v1", "ReplicaSet", "other", None);
        let dot = render(&graph, &["pod".to_string()]);
        assert!(dot.contains("\"rs\" ["));
        assert!(!dot.contains("\"other\" ["));
        // A virtual owner is drawn as such.
        add(&mut graph, "v1", "Pod", "orphan", Some("ghost"));
        let dot = render(&graph, &["ghost".to_string()]);
        assert!(dot.contains("virtual=\"true\""));
        assert!(dot.contains("\"orphan\" -> \"ghost\";"));
    }
}
