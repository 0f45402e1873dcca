//! Replays `fixtures/retention/presets/<preset>/*.json` against the presets: each fixture is
//! an object shaped as its assess's API object and what the preset must make of it (whether,
//! how and when it finished; its own TTL). Every preset must have fixtures, and every fixture
//! directory must name a preset.

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use kube_gc::api::Time;
use kube_gc::controllers::retention::finish::{own_ttl, Finished, Outcome};
use kube_gc::controllers::retention::preset::{named, NAMES};

#[derive(Deserialize)]
struct Fixture {
    object: Value,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expect {
    finished: Option<ExpectFinished>,
    own_ttl_seconds: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFinished {
    outcome: String,
    at: Option<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/retention/presets")
}

/// Later than every fixture's times: only CEL reads `now`, and no preset's CEL does.
fn now() -> DateTime<Utc> {
    Time::parse("2026-12-01T00:00:00Z").unwrap().0
}

fn expected(expect: &ExpectFinished) -> Finished {
    Finished {
        outcome: Outcome::parse(&expect.outcome).expect("outcome is Succeeded or Failed"),
        at: expect.at.as_deref().map(|t| Time::parse(t).unwrap().0),
    }
}

fn fixtures(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_is_judged_as_expected() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in NAMES {
        let preset = named(name).unwrap();
        for file in fixtures(&root().join(name)) {
            let text = fs::read_to_string(&file).unwrap();
            let fixture: Fixture =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let finished = preset.finish.evaluate(&fixture.object, now());
            let want = fixture.expect.finished.as_ref().map(expected);
            if finished != Ok(want) {
                failures.push(format!(
                    "{}: finished {finished:?}, want {want:?}",
                    file.display()
                ));
            }
            let outcome = want.map(|f| f.outcome);
            let ttl = own_ttl(&preset.own_ttl, &fixture.object, outcome);
            if ttl != Ok(fixture.expect.own_ttl_seconds) {
                failures.push(format!(
                    "{}: own TTL {ttl:?}, want {:?}",
                    file.display(),
                    fixture.expect.own_ttl_seconds
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 4 * NAMES.len(), "only {checked} fixtures");
}

#[test]
fn every_preset_has_at_least_four_fixtures_covering_running_and_both_outcomes() {
    for name in NAMES {
        let dir = root().join(name);
        let files = fixtures(&dir);
        assert!(files.len() >= 4, "{name}: {} fixtures", files.len());
        let outcomes: Vec<Option<String>> = files
            .iter()
            .map(|f| {
                let fixture: Fixture =
                    serde_json::from_str(&fs::read_to_string(f).unwrap()).unwrap();
                fixture.expect.finished.map(|e| e.outcome)
            })
            .collect();
        for want in [
            None,
            Some("Succeeded".to_owned()),
            Some("Failed".to_owned()),
        ] {
            assert!(outcomes.contains(&want), "{name}: no fixture with {want:?}");
        }
    }
}

#[test]
fn every_fixture_directory_names_a_preset() {
    for entry in fs::read_dir(root()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(NAMES.contains(&name.as_str()), "{name} is not a preset");
        }
    }
}

/// The engine decodes only what a policy's rules read (`retention::wire`): every fixture must
/// be judged the same from that pruned object as from the whole one — with the preset alone,
/// and with a CEL `match` reading labels and a custom finish time read by CEL.
#[test]
fn the_pruned_object_is_judged_as_the_whole_one() {
    use std::sync::Arc;

    use kube_gc::controllers::retention::assessment::{assess, needed, ResourcePolicies};
    use kube_gc::controllers::retention::policy::{compile, RetentionPolicyObject};
    use kube_gc::controllers::retention::wire::decode_needed;

    let mut judged_in_protobuf = 0;
    for name in NAMES {
        for spec in [
            format!("{{preset: {name}}}"),
            format!("{{preset: {name}, ttlSecondsAfterFinished: 60, successfulHistoryLimit: 1, includeControlled: true, match: \"!has(object.metadata.labels) || size(object.metadata.labels) >= 0\"}}"),
        ] {
            let yaml = format!("metadata: {{name: p}}\nspec: {spec}");
            let policy: RetentionPolicyObject = serde_saphyr::from_str(&yaml).unwrap();
            let compiled = Arc::new(compile(&policy, true).unwrap_or_else(|e| panic!("{yaml}: {e:?}")));
            let need = needed(std::slice::from_ref(&compiled));
            let rules = ResourcePolicies { policies: vec![compiled], namespaces: Default::default() };
            for file in fixtures(&root().join(name)) {
                let fixture: Fixture = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
                let bytes = serde_json::to_vec(&fixture.object).unwrap();
                let pruned = decode_needed(&bytes, &need).unwrap();
                assert!(serde_json::to_vec(&pruned).unwrap().len() <= bytes.len());
                let whole = assess(&fixture.object, &rules, now());
                let from_pruned = assess(&pruned, &rules, now());
                assert_eq!(whole, from_pruned, "{} under {spec}", file.display());
                if let Some(from_protobuf) = judged_from_protobuf(&fixture.object, &need) {
                    let from_protobuf = assess(&from_protobuf, &rules, now());
                    assert_eq!(whole, from_protobuf, "{} in protobuf under {spec}", file.display());
                    judged_in_protobuf += 1;
                }
            }
        }
    }
    // Jobs and Pods have protobuf tables; the other presets read custom resources (JSON).
    assert_eq!(
        judged_in_protobuf, 22,
        "the batch-jobs and pods fixtures, under both specs"
    );
}

/// `object` as the engine would read it from a protobuf answer — encoded as the server does,
/// transcoded keeping what `need` names, decoded as the JSON path decodes — when the client
/// would ask for protobuf for it (its kind has tables that cover what `need` reads).
fn judged_from_protobuf(
    object: &serde_json::Value,
    need: &kube_gc::controllers::retention::need::Need,
) -> Option<serde_json::Value> {
    use kube_gc::client::negotiate::covers;
    use kube_gc::client::protobuf::{encode, schema, transcode};

    let api_version = object["apiVersion"].as_str()?;
    let table = schema::for_kind(api_version, object["kind"].as_str()?)?;
    let selection = need.selection();
    if !covers(table, &selection) {
        return None;
    }
    let body = encode::object(object).expect("the fixture encodes");
    let text = transcode::body_to_json(&body, &selection).expect("it transcodes");
    Some(kube_gc::controllers::retention::wire::decode_needed(&text, need).expect("it decodes"))
}
