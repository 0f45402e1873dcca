//! The README's "Trying the simulated API server on its own", typed as a user would: its
//! `cargo run --release -- sim …` line (run as the built binary, with the same arguments), then
//! every `kubectl` line of the block as written, then `kube-gc plan` from the README's other
//! section against the same server. The kubectl lines are skipped, with a printed reason, where
//! kubectl is not installed; the rest always runs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The commands of the README's block under `heading`, comments and blank lines dropped.
fn readme_block(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = &readme[readme.find(heading).expect("the section")..];
    let start = section.find("```sh\n").expect("a shell block") + "```sh\n".len();
    let block = &section[start..];
    block[..block.find("```").expect("the block ends")]
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// Splits a README command into words (its commands quote with `'…'` only).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut quoted = false;
    let mut word = String::new();
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Kills the simulated server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl_installed() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_readme_quick_start_works_as_typed() {
    let block = readme_block("## Trying the simulated API server on its own");
    let sim = words(&block[0]);
    assert_eq!(sim[..4], ["cargo", "run", "--release", "--"], "{block:?}");
    let out = tempfile::tempdir().unwrap();
    // The README writes /tmp/kube-gc-sim.kubeconfig; the test writes its own, so that two runs
    // at once do not share one.
    let kubeconfig: PathBuf = out.path().join("kube-gc-sim.kubeconfig");
    let args: Vec<String> = sim[4..]
        .iter()
        .map(|a| match a.as_str() {
            "/tmp/kube-gc-sim.kubeconfig" => kubeconfig.display().to_string(),
            other => other.to_owned(),
        })
        .collect();
    let server = Server(
        Command::new(env!("CARGO_BIN_EXE_kube-gc"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kube-gc sim starts"),
    );
    let started = Instant::now();
    while !kubeconfig.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no kubeconfig written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200)); // written whole, and the server listening

    if kubectl_installed() {
        for line in &block[1..] {
            let mut command = words(line);
            assert_eq!(command[0], "kubectl", "{line}");
            for word in &mut command {
                if word == "/tmp/kube-gc-sim.kubeconfig" {
                    *word = kubeconfig.display().to_string();
                }
            }
            let output = Command::new(&command[0])
                .args(&command[1..])
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{line}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    } else {
        println!("skipping the kubectl lines: kubectl is not installed");
    }

    let plan = Command::new(env!("CARGO_BIN_EXE_kube-gc"))
        .args(["plan", "--within", "24h", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    // The simulated server starts with a few sample Jobs, some with a TTL.
    let printed = String::from_utf8_lossy(&plan.stdout);
    assert!(printed.starts_with("Assuming kube-gc runs: "), "{printed}");
    assert!(printed.contains("\n\nKIND "), "{printed}");
    assert!(printed.contains(" deletions within 24h\n"), "{printed}");
    drop(server);
}
