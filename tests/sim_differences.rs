//! The sim's known differences from a real kube-apiserver are one list
//! (`kube_gc::sim::differences`): the README carries it word for word and `kube-gc sim --help`
//! prints it, so the two cannot drift from the code's.

use kube_gc::sim::differences;

const START: &str = "<!-- sim-differences:start -->\n";
const END: &str = "<!-- sim-differences:end -->";

/// With `KUBE_GC_BLESS=1` the README's copy is rewritten from the code's instead of checked
/// (after an entry is added to `differences.rs`).
#[test]
fn the_readme_carries_the_list() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md is readable");
    let start = readme
        .find(START)
        .expect("the README marks the list's start")
        + START.len();
    let end = readme.find(END).expect("the README marks the list's end");
    if std::env::var_os("KUBE_GC_BLESS").is_some() {
        let blessed = format!(
            "{}{}{}",
            &readme[..start],
            differences::markdown(),
            &readme[end..]
        );
        std::fs::write(path, blessed).expect("README.md is writable");
        return;
    }
    assert_eq!(
        &readme[start..end],
        differences::markdown(),
        "README.md's list of the sim's differences is not crates/sim/src/differences.rs's: \
         run this test with KUBE_GC_BLESS=1 to copy it"
    );
}

#[test]
fn sim_help_prints_the_list() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kube-gc"))
        .args(["sim", "--help"])
        .output()
        .expect("kube-gc runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(
        help.contains("differs from a real kube-apiserver"),
        "{help}"
    );
    for difference in differences::KNOWN {
        assert!(
            help.contains(&format!("[{}]", difference.name)),
            "`kube-gc sim --help` lacks {}",
            difference.name
        );
    }
    let short = std::process::Command::new(env!("CARGO_BIN_EXE_kube-gc"))
        .args(["sim", "-h"])
        .output()
        .expect("kube-gc runs");
    assert!(
        !String::from_utf8_lossy(&short.stdout).contains("[fixed-catalogue]"),
        "-h stays short"
    );
}
