//! Log lines keep a constant message and put what varies in keys (`err=`, `missing=`), as
//! Kubernetes' structured logging asks: a message with `{…}` interpolated into it cannot be
//! grouped or alerted on. This reads every logging call in `src/` and `crates/*/src/` and checks
//! its message.

use std::fs;
use std::path::Path;

/// The logging macros, called as `tracing::warn!(` or, imported, `warn!(`.
const MACROS: &[&str] = &[
    "error!(",
    "warn!(",
    "info!(",
    "debug!(",
    "trace!(",
    "warn_unless_unavailable!(",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The macro's arguments: from after its `(` to the matching `)`, string literals skipped.
fn arguments(text: &str) -> &str {
    let (mut depth, mut in_string, mut escaped) = (1, false, false);
    for (i, c) in text.char_indices() {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_string = false,
            (false, '"') => in_string = true,
            (false, '(') => depth += 1,
            (false, ')') => {
                depth -= 1;
                if depth == 0 {
                    return &text[..i];
                }
            }
            _ => {}
        }
    }
    text
}

/// The last string literal among the arguments: the message.
fn message(arguments: &str) -> Option<String> {
    let end = arguments.rfind('"')?;
    let mut start = end;
    let bytes = arguments.as_bytes();
    loop {
        start = arguments[..start].rfind('"')?;
        if start == 0 || bytes[start - 1] != b'\\' {
            break;
        }
    }
    Some(arguments[start + 1..end].to_owned())
}

#[test]
fn log_messages_are_constant() {
    // The binary's own sources and every workspace crate's.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for member in fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
    {
        let src = member.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut checked = 0;
    let mut interpolated = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("readable");
        for name in MACROS {
            for (at, _) in text.match_indices(name) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue; // another macro whose name ends the same way
                }
                let Some(message) = message(arguments(&text[at + name.len()..])) else {
                    continue;
                };
                checked += 1;
                let braces = message.replace("{{", "").replace("}}", "");
                // `{WAITING}` names a constant; the per-request trace keeps client-go's own
                // unstructured round-tripper line ("GET URL 200 OK in 3 milliseconds").
                let braces = braces.replace("{WAITING}", "");
                let client_go_format = message.ends_with(" milliseconds");
                if !client_go_format && braces.contains('{') {
                    let line = text[..at].lines().count() + 1;
                    interpolated.push(format!("{}:{line}: {message:?}", file.display()));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} logging calls found");
    assert!(
        interpolated.is_empty(),
        "messages with values interpolated (put them in keys):\n{}",
        interpolated.join("\n")
    );
}

#[test]
fn the_message_is_the_last_string_of_the_call() {
    let call = r#"policy = %id, err = %e, "could not write: {e}"); next(")")"#;
    assert_eq!(
        message(arguments(call)).as_deref(),
        Some("could not write: {e}")
    );
    let escaped = r#"x = "a\"b", "done \"now\""); rest"#;
    assert_eq!(
        message(arguments(escaped)).as_deref(),
        Some(r#"done \"now\""#)
    );
}
