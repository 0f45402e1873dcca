//! Where the simulated server still differs from a real kube-apiserver v1.28: one list, the only
//! one. `kube-gc sim --help` prints it ([`help_text`]), the README carries it ([`markdown`],
//! kept equal by a test), and the tests that compare the sim with captures of the real server
//! name the entry that explains each difference they allow (the kcm replay,
//! `tests/sim_kcm_replay.rs`) — so nobody learns of one by surprise, and none passes unnamed.
//!
//! Contract: an entry is a [`Difference`] with a stable `name` (kebab-case, what tests cite),
//! the `area` it concerns, and one or two sentences saying what the sim does instead and what
//! a client sees. Entries are appended, one per difference; none is removed until the sim
//! behaves as the real server does, with a test pinned to a capture saying so.

/// One way the simulated server differs from a real one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    /// A stable name, cited by the tests that allow this difference.
    pub name: &'static str,
    /// What it concerns: `objects`, `encoding`, `requests`, `lifecycle`, `watch`, `discovery`,
    /// `catalogue`, `auth`.
    pub area: &'static str,
    /// What the sim does instead, and what a client sees.
    pub text: &'static str,
}

/// Every known difference, grouped by area.
pub static KNOWN: &[Difference] = &[
    Difference {
        name: "no-managed-fields-or-defaulting",
        area: "objects",
        text: "No managedFields and no defaulting of spec fields (a Job's selector and pod template defaults, a Node's status.nodeInfo, a claim's volumeMode, ...) but a Pod's terminationGracePeriodSeconds, which its deletion reads; a new Pod's status is {phase: Pending} without the qosClass a real server computes.",
    },
    Difference {
        name: "little-validation",
        area: "objects",
        text: "No schema validation beyond names, ownerReferences, finalizers and kube-gc's own retention policies (checked against their CRDs). Of the admission plugins only TaintNodesByCondition, StorageObjectInUseProtection and NamespaceLifecycle are modelled.",
    },
    Difference {
        name: "no-server-side-apply",
        area: "requests",
        text: "No server-side apply: a PATCH with application/apply-patch+yaml is answered 415.",
    },
    Difference {
        name: "no-yaml",
        area: "encoding",
        text: "No YAML: a body is read as JSON (or protobuf), and application/yaml alone is answered in JSON.",
    },
    Difference {
        name: "tables-for-some-resources",
        area: "encoding",
        text: "as=Table is answered with the real columns for Jobs, Pods, Events, CustomResourceDefinitions, namespaces and custom resources with printer columns (kube-gc's policies); other built-in kinds (Nodes, Secrets, Deployments, Leases, ...) answer the JSON the client offers as a fallback, which kubectl prints as NAME and AGE. The descriptions of the built-in kinds' columns are kube-gc's own words; names, types, formats, priorities and cells are the real ones.",
    },
    Difference {
        name: "openapi-empty",
        area: "discovery",
        text: "/openapi/v2 is an empty document (enough for kubectl create/apply -f, which then skips its client-side validation). /openapi/v3 lists group versions only (not api, apis, apis/<group> or .well-known/openid-configuration); its documents carry get operations only and no Last-Modified, so kubectl's probe for server-side field validation falls back to the empty v2 (the sim ignores fieldValidation). Built-in kinds' fields in them are those kube-gc's protobuf tables describe (Job, Pod, Namespace, ConfigMap and what they reach), with no descriptions; other built-in kinds show apiVersion, kind, metadata, spec and status only. Custom resources' schemas are complete (their CRDs).",
    },
    Difference {
        name: "protobuf-only-for-tabled-kinds",
        area: "encoding",
        text: "Protobuf is written only for the kinds kube-gc's descriptor tables describe (Job, Pod, Namespace, ConfigMap, Event, Status, PartialObjectMetadata and their lists): another built-in kind asked for in protobuf (a Secret, a Deployment, a Lease, ...) is answered in JSON when JSON is acceptable, 406 when not, where a real server writes protobuf; only the members the tables describe are written.",
    },
    Difference {
        name: "protobuf-writes-only-for-tabled-kinds",
        area: "requests",
        text: "A protobuf request body (client-go's typed clients send them) is decoded for the same kinds, and for DeleteOptions under any group version; a protobuf create or update of another built-in kind is answered 415 (application/json, application/yaml accepted), where a real server decodes it. Members a partial table does not describe (a pod spec's affinity, DNS config, topology spread, ...) are dropped from the stored object.",
    },
    Difference {
        name: "custom-resource-protobuf-create-refused",
        area: "requests",
        text: "A protobuf create or update of a custom resource is answered 415 naming the JSON media types; a real v1.28.7 server panics on it and closes the connection without an answer (exchange 270). A protobuf DeleteOptions for a custom resource is accepted, as on the real server (269).",
    },
    Difference {
        name: "protobuf-error-wording",
        area: "requests",
        text: "For a malformed protobuf body the sim gives the real server's code, reason and message for a missing prefix, an empty body, a cut-short body (unexpected EOF) and a wrong kind (exchanges 256-262); other malformations are described in kube-gc's own words where gogo-protobuf would say e.g. 'proto: illegal wireType'.",
    },
    Difference {
        name: "graceful-pods-never-finish",
        area: "lifecycle",
        text: "Pods are deleted gracefully as on a real server (a bound, running Pod is kept marked for its grace period), but no kubelet ever finishes that deletion: a Pod stays marked until someone deletes it with gracePeriodSeconds: 0, as on an API server whose nodes are gone.",
    },
    Difference {
        name: "two-event-stores",
        area: "lifecycle",
        text: "core/v1 and events.k8s.io/v1 Events are two separate stores, where the real server stores one Event and serves it under both: an Event written through one API is listed only under it, and a deletecollection of one leaves the other's.",
    },
    Difference {
        name: "namespaces-not-emptied",
        area: "lifecycle",
        text: "Namespaces follow the real lifecycle (a DELETE marks them Terminating, /finalize and the last finalizer remove them, creates in them are refused), but nothing in the sim deletes their content or finalizes them: as on a server without kube-controller-manager, that is kube-gc's namespace controller's job.",
    },
    Difference {
        name: "deletecollection-unpaged",
        area: "requests",
        text: "deletecollection ignores limit and continue and honours preconditions per object.",
    },
    Difference {
        name: "history-bounded-by-count",
        area: "watch",
        text: "Watches are served from a watch cache per resource sized by the real rule, and exact reads and continue tokens from a history compacted every 5 minutes by default, as on a real server; that history is also bounded by a count, for memory.",
    },
    Difference {
        name: "regular-bookmarks",
        area: "watch",
        text: "BOOKMARKs come every bookmark interval on watches that allow them; a real v1.28 server is less regular.",
    },
    Difference {
        name: "no-aggregated-api-servers",
        area: "discovery",
        text: "Aggregated discovery is served (apidiscovery.k8s.io/v2beta1 as v1.28, or v2, or both, or neither), but no group is ever Stale unless a test makes it so: there are no aggregated API servers.",
    },
    Difference {
        name: "fixed-catalogue",
        area: "catalogue",
        text: "The resources served are a catalogue fixed at start (kube-gc sim --workload-crds adds the workloads' custom resources): a LIST of a built-in resource outside it (NetworkPolicies, RBAC, storage classes, ...) is a 404; creating the definition of a custom resource the catalogue declares serves it, one it does not declare is refused (422), and a changed definition is stored without changing how its resource is served or validated.",
    },
    Difference {
        name: "simple-authorization",
        area: "auth",
        text: "Authentication is the server's bearer token, a known user's token or any client certificate signed by the server's CA; authorization only refuses the verbs a test denies a user on a resource, with the real server's 403.",
    },
    Difference {
        name: "job-selector-not-defaulted",
        area: "objects",
        text: "A new Job gets no batch.kubernetes.io/controller-uid selector and labels: kubectl get jobs shows its Selector as <none> unless the Job names one.",
    },
    Difference {
        name: "pod-ips-not-filled",
        area: "objects",
        text: "status.podIPs is not filled from status.podIP on write; the Pods' Table falls back to podIP when podIPs is empty.",
    },
    Difference {
        name: "access-reviews-without-rbac",
        area: "auth",
        text: "The sim has no RBAC objects: an allowed access review carries no reason naming a binding, a user may do what it is not explicitly denied (so kubectl auth can-i --list of a restricted user shows each served resource with the verbs left, not its Role), review answers carry no managedFields, and a SelfSubjectAccessReview with neither resource nor non-resource attributes is answered allowed: false where the real server refuses it as invalid.",
    },
    Difference {
        name: "no-self-subject-review",
        area: "auth",
        text: "No SelfSubjectReview (authentication.k8s.io/v1, GA in v1.28): kubectl auth whoami is told the API is not enabled.",
    },
];

/// The entry named `name`.
pub fn named(name: &str) -> Option<&'static Difference> {
    KNOWN.iter().find(|d| d.name == name)
}

/// The list as plain text for `kube-gc sim --help`: one paragraph per entry, wrapped at
/// `width` columns and indented under a `- `.
pub fn help_text(width: usize) -> String {
    let mut out =
        String::from("Where the simulated server differs from a real kube-apiserver v1.28:\n");
    for difference in KNOWN {
        out.push('\n');
        out.push_str(&wrap(
            &format!("[{}] {}", difference.name, difference.text),
            width,
            "  - ",
            "    ",
        ));
    }
    out
}

/// The list as Markdown, for the README: one bullet per entry, unwrapped.
pub fn markdown() -> String {
    KNOWN
        .iter()
        .map(|d| format!("- **{}** ({}): {}\n", d.name, d.area, d.text))
        .collect()
}

fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_texts_are_sentences() {
        for (i, d) in KNOWN.iter().enumerate() {
            assert!(
                d.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                d.name
            );
            assert!(
                KNOWN[i + 1..].iter().all(|o| o.name != d.name),
                "{}",
                d.name
            );
            assert!(d.text.ends_with('.') || d.text.ends_with(')'), "{}", d.name);
            assert!(!d.area.is_empty());
        }
        assert!(named("fixed-catalogue").is_some());
    }

    #[test]
    fn the_help_text_is_wrapped_and_names_every_entry() {
        let text = help_text(80);
        for d in KNOWN {
            assert!(text.contains(&format!("[{}]", d.name)), "{}", d.name);
        }
        assert!(text.lines().all(|l| l.len() <= 80 || !l.contains(' ')));
        assert_eq!(markdown().lines().count(), KNOWN.len());
    }
}
