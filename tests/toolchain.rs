//! The Rust toolchain the project declares is one that can build it: `rust-version` in
//! `Cargo.toml` and the compiler image the `Dockerfile` builds with are at least every locked
//! dependency's own `rust-version` (read from `cargo metadata`, offline). A dependency update
//! that needs a newer compiler fails here, not in an image build.

use std::process::Command;

use serde_json::Value;

/// `1.89`, `1.89.0` → `(1, 89, 0)`.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim().split('.').map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// The Rust version of the `FROM rust:<version>` image of the Dockerfile's build stage.
fn dockerfile_rust() -> (u64, u64, u64) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile");
    let text = std::fs::read_to_string(path).expect("Dockerfile");
    let image = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("FROM rust:"))
        .next()
        .expect("a FROM rust:<version> stage");
    let tag = image.split_whitespace().next().unwrap_or_default();
    let number = tag.split('-').next().unwrap_or_default();
    version(number).unwrap_or_else(|| panic!("no version in the image tag {tag:?}"))
}

#[test]
fn the_declared_toolchain_and_the_image_build_every_locked_dependency() {
    let metadata = metadata();
    let packages = metadata["packages"].as_array().expect("packages");
    let ours = packages
        .iter()
        .find(|p| p["name"] == "kube-gc")
        .expect("the kube-gc package");
    let declared = ours["rust_version"]
        .as_str()
        .and_then(version)
        .expect("Cargo.toml declares rust-version");
    let image = dockerfile_rust();
    let mut needs: Vec<((u64, u64, u64), String)> = packages
        .iter()
        .filter_map(|p| {
            let wanted = version(p["rust_version"].as_str()?)?;
            Some((wanted, format!("{} {}", p["name"], p["version"])))
        })
        .collect();
    needs.sort();
    let (highest, by) = needs
        .last()
        .cloned()
        .expect("dependencies declare rust-version");
    assert!(
        declared >= highest,
        "Cargo.toml declares rust-version {declared:?}, but {by} needs {highest:?}"
    );
    assert!(
        image >= highest,
        "the Dockerfile builds with rust {image:?}, but {by} needs {highest:?}"
    );
}
