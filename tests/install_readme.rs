//! The README's install path, followed as a user would: the kustomization it tells them to write
//! (an overlay plus their image) is taken from the README itself, next to a checkout of this
//! repository, and rendered.
//!
//! - Always: the README's kustomization parses, names an overlay that exists, and its `images`
//!   entry names the image the base Deployment runs (else the user's image would not replace it);
//!   the README installs the CRDs on their own before it, and its uninstall deletes kube-gc's
//!   objects and its Lease by the name the Deployment gives it, while the CRDs — and with them
//!   every policy — go only with a `delete -k` of `deploy/crds` the README asks for apart.
//! - Where kubectl is installed: `kubectl kustomize` renders it, with the user's image and the
//!   overlay's `--controllers`.
//! - Where `KUBE_GC_TEST_KUBECONFIG` names a cluster's kubeconfig (a real kube-apiserver, e.g.
//!   `../shared/real-apiserver/build_kit.sh`): `kubectl apply --dry-run=server -k` of the README's
//!   kustomization and of every overlay passes on that API server.

mod deploy_support;

use std::path::Path;
use std::process::Command;

use deploy_support::{deploy_root, kustomize};
use serde_json::Value;

/// The README's `# my-kube-gc/kustomization.yaml` block.
fn readme_kustomization() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find("# my-kube-gc/kustomization.yaml\n")
        .expect("the README shows the user's kustomization");
    let block = &readme[start..];
    let end = block.find("```").expect("the block ends");
    block[..end].to_owned()
}

/// The user's directory: `my-kube-gc/kustomization.yaml` from the README beside `kube-gc`, a link
/// to this checkout.
fn users_directory() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_MANIFEST_DIR"), directory.path().join("kube-gc"))
        .unwrap();
    std::fs::create_dir(directory.path().join("my-kube-gc")).unwrap();
    std::fs::write(
        directory.path().join("my-kube-gc/kustomization.yaml"),
        readme_kustomization(),
    )
    .unwrap();
    directory
}

/// The shell commands of the README's code block that follows `marker`, comments dropped.
fn readme_commands_after(marker: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find(marker)
        .unwrap_or_else(|| panic!("the README has {marker:?}"));
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("a shell block follows") + "```sh\n".len();
    let close = block[open..].find("```").expect("the block ends");
    block[open..open + close]
        .lines()
        .map(|line| {
            line.split_once('#')
                .map_or(line, |(command, _)| command)
                .trim()
        })
        .filter(|command| !command.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The README's kustomization rendered, as `kubectl apply -k my-kube-gc` would apply it.
fn readme_objects() -> Vec<Value> {
    let users: Value = serde_saphyr::from_str(&readme_kustomization()).unwrap();
    let overlay = users["resources"][0].as_str().unwrap();
    let overlay = overlay
        .strip_prefix("../kube-gc/deploy/")
        .expect("an overlay of the checkout");
    kustomize::render(&deploy_root().join(overlay))
        .into_iter()
        .map(|(_, o)| o)
        .collect()
}

#[test]
fn the_readme_installs_the_crds_apart_and_its_uninstall_keeps_them_unless_asked() {
    let install = readme_commands_after("**2. Install the retention policy CRDs**");
    assert_eq!(install[0], "kubectl apply -k kube-gc/deploy/crds");
    let uninstall = readme_commands_after("**Uninstalling.**");
    // kube-gc's own objects: what the user's kustomization renders, and none is a CRD.
    assert_eq!(uninstall[0], "kubectl delete -k my-kube-gc");
    let objects = readme_objects();
    assert!(objects
        .iter()
        .all(|o| o["kind"] != "CustomResourceDefinition"));
    // The Lease, by the namespace and name the Deployment gives it.
    let args: Vec<&str> = deployment(&objects)["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("--{name} in {args:?}"))
    };
    assert_eq!(
        uninstall[1],
        format!(
            "kubectl -n {} delete lease {}",
            flag("leader-elect-resource-namespace"),
            flag("leader-elect-resource-name")
        )
    );
    // The CRDs only last, on purpose, and by their own directory.
    let crds: Vec<&String> = uninstall
        .iter()
        .filter(|c| c.contains("deploy/crds"))
        .collect();
    assert_eq!(crds, [uninstall.last().unwrap()]);
    assert_eq!(crds[0], "kubectl delete -k kube-gc/deploy/crds");
}

fn deployment(objects: &[Value]) -> &Value {
    objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("a Deployment")
}

fn kubectl_installed() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_readme_kustomization_names_an_overlay_and_the_image_it_replaces() {
    let users: Value = serde_saphyr::from_str(&readme_kustomization()).unwrap();
    let resources = users["resources"].as_array().expect("resources");
    assert_eq!(resources.len(), 1);
    let overlay = resources[0].as_str().unwrap();
    let overlay = overlay
        .strip_prefix("../kube-gc/deploy/")
        .expect("an overlay of the checkout");
    let objects: Vec<Value> = kustomize::render(&deploy_root().join(overlay))
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    let image = deployment(&objects)["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_owned();
    let name = image.rsplit_once(':').map_or(image.as_str(), |(n, _)| n);
    assert_eq!(users["images"][0]["name"], name);
    assert!(users["images"][0]["newName"].is_string());
    assert!(users["images"][0]["newTag"].is_string());
}

#[test]
fn kubectl_renders_the_readme_kustomization_with_the_users_image() {
    if !kubectl_installed() {
        eprintln!("kubectl is not installed: the README's kustomization was not rendered");
        return;
    }
    let directory = users_directory();
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(directory.path().join("my-kube-gc"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let objects: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8(output.stdout).unwrap()).unwrap();
    let container = &deployment(&objects)["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example.com/kube-gc:0.1.0");
    assert!(container["args"]
        .as_array()
        .unwrap()
        .contains(&Value::from("--controllers=volcano-job-ttl,retention")));
}

#[test]
fn every_overlay_passes_a_server_side_dry_run_where_a_cluster_is_given() {
    let Ok(kubeconfig) = std::env::var("KUBE_GC_TEST_KUBECONFIG") else {
        eprintln!("KUBE_GC_TEST_KUBECONFIG is not set: no server-side dry run");
        return;
    };
    assert!(kubectl_installed(), "KUBE_GC_TEST_KUBECONFIG needs kubectl");
    let directory = users_directory();
    let targets = [
        directory.path().join("my-kube-gc"),
        deploy_root().join("overlays/managed"),
        deploy_root().join("overlays/standalone"),
    ];
    for target in targets {
        let output = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["apply", "--dry-run=server", "-k"])
            .arg(&target)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            target.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let applied = String::from_utf8_lossy(&output.stdout);
        assert!(
            applied.contains("deployment.apps/kube-gc") && applied.contains("(server dry run)"),
            "{}: {applied}",
            target.display()
        );
    }
}
