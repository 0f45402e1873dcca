//! Just enough of kustomize to render `deploy/`'s kustomizations in a test, without kubectl:
//! `resources` (files, and directories holding a `kustomization.yaml`, recursively, in order)
//! and `patches` given inline as JSON 6902 operations (`add`, `replace`) on a target named by
//! kind and name. Anything else in a kustomization fails the render, so that the test cannot
//! pass while skipping what the real kustomize would do; so do two objects with the same
//! identity and a patch whose target matches nothing, which kustomize also rejects.
//!
//! `kubectl kustomize deploy/overlays/<name>` prints the same objects in the same order; the
//! renderer is checked against it by hand (docs/operations.md, "Installing").

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The objects a kustomization directory renders to, each with the file it came from
/// (relative to `deploy/`), in kustomize's order.
pub fn render(directory: &Path) -> Vec<(String, Value)> {
    let kustomization_file = directory.join("kustomization.yaml");
    let documents = parse_file(&kustomization_file);
    let [kustomization] = documents.as_slice() else {
        panic!("{}: one document expected", kustomization_file.display());
    };
    let at = kustomization_file.display().to_string();
    for key in kustomization
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        assert!(
            ["apiVersion", "kind", "resources", "patches"].contains(&key.as_str()),
            "{at}: `{key}` is not understood by the test renderer"
        );
    }
    assert_eq!(kustomization["kind"], "Kustomization", "{at}");

    let mut objects = Vec::new();
    for resource in strings(&kustomization["resources"], &at) {
        let path = directory.join(&resource);
        if path.is_dir() {
            objects.extend(render(&path));
        } else {
            let name = relative_to_deploy(&path);
            objects.extend(parse_file(&path).into_iter().map(|d| (name.clone(), d)));
        }
    }
    for patch in kustomization["patches"].as_array().into_iter().flatten() {
        apply_patch(&mut objects, patch, &at);
    }
    assert_unique(&objects, &at);
    objects
}

/// Every document of a YAML file, empty ones left out.
pub fn parse_file(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let parsed: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    parsed.into_iter().filter(|d| !d.is_null()).collect()
}

/// Every `*.yaml` file under `root`, at any depth.
pub fn yaml_files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut directories = vec![root.to_path_buf()];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                directories.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files
}

fn relative_to_deploy(path: &Path) -> String {
    let root = super::deploy_root().canonicalize().unwrap();
    let path = path
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.strip_prefix(&root)
        .unwrap_or_else(|_| panic!("{} is outside deploy/", path.display()))
        .to_string_lossy()
        .into_owned()
}

fn strings(value: &Value, at: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{at}: resources must be a list"))
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("{at}: {v} is not a path"))
                .to_owned()
        })
        .collect()
}

/// One `patches` entry: `target` (kind, name) and `patch`, a YAML list of JSON 6902 operations.
fn apply_patch(objects: &mut [(String, Value)], patch: &Value, at: &str) {
    let target = &patch["target"];
    let operations: Vec<Value> = serde_saphyr::from_str(
        patch["patch"]
            .as_str()
            .unwrap_or_else(|| panic!("{at}: a patch must be inline text")),
    )
    .unwrap_or_else(|e| panic!("{at}: the patch does not parse: {e}"));
    let mut matched = 0;
    for (_, object) in objects.iter_mut() {
        let hit = ["kind", "name"].iter().all(|key| {
            let want = &target[*key];
            let have = if *key == "kind" {
                &object["kind"]
            } else {
                &object["metadata"]["name"]
            };
            want.is_null() || want == have
        });
        if hit {
            matched += 1;
            for operation in &operations {
                apply_operation(object, operation, at);
            }
        }
    }
    assert!(
        matched > 0,
        "{at}: the patch target {target} matches nothing"
    );
}

fn apply_operation(object: &mut Value, operation: &Value, at: &str) {
    let path = operation["path"].as_str().unwrap_or_default();
    let (parent, last) = path
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("{at}: {path} is not a JSON pointer"));
    let value = operation["value"].clone();
    let parent = object
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{at}: {parent} does not exist in the target"));
    match (operation["op"].as_str(), parent) {
        (Some("add"), Value::Array(items)) if last == "-" => items.push(value),
        (Some("add"), Value::Array(items)) => {
            let index: usize = last.parse().unwrap();
            items.insert(index, value);
        }
        (Some("add" | "replace"), Value::Object(fields)) => {
            fields.insert(last.to_owned(), value);
        }
        (Some("replace"), Value::Array(items)) => {
            let index: usize = last.parse().unwrap();
            items[index] = value;
        }
        (op, _) => panic!("{at}: operation {op:?} on {path} is not understood"),
    }
}

/// kustomize refuses two objects with the same kind, namespace and name.
fn assert_unique(objects: &[(String, Value)], at: &str) {
    let mut seen = std::collections::BTreeSet::new();
    for (file, object) in objects {
        let identity = format!(
            "{}/{}/{}",
            object["kind"],
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
            object["metadata"]["name"]
        );
        assert!(
            seen.insert(identity.clone()),
            "{at}: {identity} (from {file}) is defined twice"
        );
    }
}
