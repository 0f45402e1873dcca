//! The architecture, checked: the crates depend on each other only as `docs/architecture.md`
//! draws them, and no crate has an import circle between its files.
//!
//! An import circle is a cycle in the graph whose nodes are a crate's source files and whose
//! edges are the modules a file names things through (`use crate::…`, `super::…`, `self::…`, a
//! child module's path): each path as written, to the deepest module of it that is a file. A
//! name a module's face re-exports ties the reader to that face, not to the file behind it — so
//! two modules that import each other, one through the other's face, are a circle even when no
//! two files define what the other takes; a `pub use` line is an edge of the module that writes
//! it. A module and its own submodules are one unit (a parent declares its children and they see
//! its items, as Rust intends), so edges between a file and its ancestors or descendants are left
//! out; every other edge counts, test code included. The reading is textual (comments and
//! strings stripped, use trees parsed), which is what a reader of the files sees too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// Source text without comments, string and character literals (their insides could look like
/// paths).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let (mut out, mut i) = (String::with_capacity(b.len()), 0);
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            out.push(' ');
            i = j;
        } else if (b[i] == b'r' || (b[i] == b'b' && b.get(i + 1) == Some(&b'r')))
            && (i == 0 || !ident(b[i - 1]))
            && raw_string_hashes(&b[i..]).is_some()
        {
            let (skip, hashes) = raw_string_hashes(&b[i..]).unwrap_or_default();
            let end = format!("\"{}", "#".repeat(hashes));
            let from = i + skip;
            let close = text[from..]
                .find(&end)
                .map_or(b.len(), |k| from + k + end.len());
            out.push_str("\"\"");
            i = close;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if b[i] == b'\'' && char_literal_len(&b[i..]).is_some() {
            out.push_str("' '");
            i += char_literal_len(&b[i..]).unwrap_or(1);
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r#"`, `br"`: how many bytes open the literal and how many `#` close it.
fn raw_string_hashes(b: &[u8]) -> Option<(usize, usize)> {
    let start = if b.first() == Some(&b'b') { 2 } else { 1 };
    let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
    (b.get(start + hashes) == Some(&b'"')).then_some((start + hashes + 1, hashes))
}

/// The length of a character literal at the start of `b` (`'a'`, `'\n'`, `'\u{2028}'`), or
/// `None` for a lifetime.
fn char_literal_len(b: &[u8]) -> Option<usize> {
    let end = if b.get(1) == Some(&b'\\') {
        b.iter().skip(2).position(|&c| c == b'\'').map(|k| k + 2)?
    } else {
        let width = std::str::from_utf8(&b[1..b.len().min(5)])
            .ok()
            .or_else(|| std::str::from_utf8(&b[1..2]).ok())?
            .chars()
            .next()?
            .len_utf8();
        1 + width
    };
    (b.get(end) == Some(&b'\'') && end <= 12).then_some(end + 1)
}

/// One source file: what it declares and imports.
struct File {
    text: String,
    children: BTreeSet<String>,
    /// `(path, name it is known by here)`; `*` for a glob.
    uses: Vec<(Vec<String>, String)>,
    /// Byte ranges of the `use` declarations, whose paths are not read again as inline paths.
    use_spans: Vec<(usize, usize)>,
}

/// Parses one use tree at `i`, pushing `(path, name)` pairs; returns the index after it.
fn use_tree(
    s: &[u8],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String)>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if s.get(i) == Some(&b'{') {
            i += 1;
            loop {
                while i < s.len() && (s[i].is_ascii_whitespace() || s[i] == b',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == b'}' {
                    return i + 1;
                }
                i = use_tree(s, i, &path, out);
            }
        }
        if s[i..].starts_with(b"::") {
            i += 2;
            continue;
        }
        let start = i;
        while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_' || s[i] == b'*') {
            i += 1;
        }
        let segment = String::from_utf8_lossy(&s[start..i]).into_owned();
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if s[i..].starts_with(b"::") {
            path.push(segment);
            i += 2;
            continue;
        }
        let mut name = segment.clone();
        if s[i..].starts_with(b"as") && s.get(i + 2).is_some_and(u8::is_ascii_whitespace) {
            i += 2;
            while s[i].is_ascii_whitespace() {
                i += 1;
            }
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            name = String::from_utf8_lossy(&s[start..i]).into_owned();
        }
        if segment == "self" {
            let last = path.last().cloned().unwrap_or_default();
            out.push((path, if name == "self" { last } else { name }));
        } else if !segment.is_empty() {
            path.push(segment);
            out.push((path, name));
        }
        return i;
    }
}

fn parse(text: String) -> File {
    let bytes = text.as_bytes();
    let (mut uses, mut use_spans) = (Vec::new(), Vec::new());
    let mut at = 0;
    while let Some(found) = text[at..].find("use ") {
        let i = at + found;
        at = i + 4;
        let before = bytes.get(i.wrapping_sub(1)).copied().unwrap_or(b' ');
        if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
            continue;
        }
        let end = text[i..].find(';').map_or(text.len(), |k| i + k);
        use_tree(&bytes[..end], i + 4, &[], &mut uses);
        use_spans.push((i, end));
    }
    let children = mod_declarations(&text);
    File {
        text,
        children,
        uses,
        use_spans,
    }
}

/// The `mod x;` declarations (children in files of their own).
fn mod_declarations(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("mod ") {
        let before = text
            .as_bytes()
            .get(i.wrapping_sub(1))
            .copied()
            .unwrap_or(b' ');
        if before.is_ascii_alphanumeric() || before == b'_' {
            continue;
        }
        let rest = &text[i + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if rest[name.len()..].trim_start().starts_with(';') && !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

/// A crate's files by module path, read from `src`.
fn read_crate(src: &Path) -> BTreeMap<ModPath, File> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("a source directory")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path
                    .strip_prefix(src)
                    .expect("under src")
                    .with_extension("");
                let mut module: ModPath = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    module.pop();
                }
                let text = std::fs::read_to_string(&path).expect("readable source");
                files.insert(module, parse(strip(&text)));
            }
        }
    }
    files
}

struct Crate {
    files: BTreeMap<ModPath, File>,
}

impl Crate {
    /// A path as written in `module`, made absolute; `None` for another crate's.
    fn absolute(&self, module: &ModPath, path: &[String]) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            child
                if self
                    .files
                    .get(module)
                    .is_some_and(|f| f.children.contains(child)) =>
            {
                let mut base = module.clone();
                base.push(child.to_owned());
                base
            }
            _ => return None,
        };
        let mut rest = rest;
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module `path` names a thing through: the deepest module of it that is a file of the
    /// crate.
    fn through(&self, path: &[String]) -> ModPath {
        let mut module: ModPath = Vec::new();
        for segment in path {
            module.push(segment.clone());
            if !self.files.contains_key(&module) {
                module.pop();
                break;
            }
        }
        module
    }

    /// Each file's edges to the modules it names things through, family left out.
    fn edges(&self) -> BTreeMap<&ModPath, BTreeSet<ModPath>> {
        let mut edges = BTreeMap::new();
        for (module, file) in &self.files {
            let mut named: Vec<ModPath> = Vec::new();
            for (path, alias) in &file.uses {
                let path = if alias == "*" {
                    &path[..path.len() - 1]
                } else {
                    &path[..]
                };
                named.extend(self.absolute(module, path));
            }
            for path in inline_paths(file) {
                named.extend(self.absolute(module, &path));
            }
            let targets = edges.entry(module).or_insert_with(BTreeSet::new);
            for path in named {
                let target = self.through(&path);
                let family = target.starts_with(module) || module.starts_with(&target);
                if !family && self.files.contains_key(&target) {
                    targets.insert(target);
                }
            }
        }
        edges
    }
}

/// The paths written in code, outside `use` declarations: `crate::a::b`, `super::x`,
/// `child::f`.
fn inline_paths(file: &File) -> Vec<Vec<String>> {
    let text = &file.text;
    let bytes = text.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = bytes[i].is_ascii_alphabetic() || bytes[i] == b'_';
        let after_word = i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if !starts_word || after_word || file.use_spans.iter().any(|&(a, b)| a <= i && i <= b) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            segments.push(text[start..j].to_owned());
            let rest = text[j..].trim_start();
            if rest.starts_with("::")
                && rest[2..]
                    .trim_start()
                    .starts_with(|c: char| c.is_alphabetic() || c == '_')
            {
                let skipped = text.len() - rest.len() + 2;
                j = skipped + (text[skipped..].len() - text[skipped..].trim_start().len());
            } else {
                break;
            }
        }
        let head = segments[0].as_str();
        if segments.len() > 1
            && (matches!(head, "crate" | "super" | "self") || file.children.contains(head))
        {
            paths.push(segments);
        }
        i = j.max(i + 1);
    }
    paths
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn cycles(edges: &BTreeMap<&ModPath, BTreeSet<ModPath>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<&'a ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, (usize, usize)>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit(state: &mut State<'_>, node: &ModPath) {
        state.index.insert(node.clone(), (state.next, state.next));
        state.next += 1;
        state.stack.push(node.clone());
        state.on_stack.insert(node.clone());
        let edges = state.edges;
        for next in edges.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.index[next].1;
                let entry = state.index.get_mut(node).expect("visited");
                entry.1 = entry.1.min(low);
            } else if state.on_stack.contains(next) {
                let low = state.index[next].0;
                let entry = state.index.get_mut(node).expect("visited");
                entry.1 = entry.1.min(low);
            }
        }
        let (index, low) = state.index[node];
        if index == low {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(&member);
                let done = member == *node;
                component.push(member.join("/"));
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(*node) {
            visit(&mut state, node);
        }
    }
    state.found
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every crate's `src`, the root package's first.
fn crate_sources() -> Vec<PathBuf> {
    let mut sources = vec![workspace().join("src")];
    let mut members: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    members.sort();
    sources.extend(members);
    sources
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for src in crate_sources() {
        let krate = Crate {
            files: read_crate(&src),
        };
        assert!(!krate.files.is_empty(), "{} has files", src.display());
        let name = src
            .strip_prefix(workspace())
            .unwrap_or(&src)
            .display()
            .to_string();
        for cycle in cycles(&krate.edges()) {
            found.push(format!("{name}: {}", cycle.join(" ↔ ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_a_circle_and_a_family_is_not_one() {
    let files = [
        (vec!["a"], "use crate::b::Thing; pub struct Other;"),
        (
            vec!["b"],
            "pub struct Thing; fn f() { let _ = crate::a::Other; }",
        ),
        (vec!["c"], "mod d; pub struct Shared; pub use d::Child;"),
        (vec!["c", "d"], "use super::Shared; pub struct Child;"),
        (vec!["e"], "pub use crate::b::Thing; // crate::a::Other"),
        // A circle through a face: `f` takes `Inner` through `g`'s face, which `g/h` defines;
        // `g` takes `F` from `f`. No file defines what the other takes, yet `f` and `g` import
        // each other.
        (vec!["f"], "use crate::g::Inner; pub struct F;"),
        (vec!["g"], "mod h; pub use h::Inner; use crate::f::F;"),
        (vec!["g", "h"], "pub struct Inner;"),
    ];
    let krate = Crate {
        files: files
            .into_iter()
            .map(|(path, text)| {
                (
                    path.into_iter().map(str::to_owned).collect(),
                    parse(strip(text)),
                )
            })
            .collect(),
    };
    assert_eq!(
        cycles(&krate.edges()),
        [
            vec!["a".to_owned(), "b".to_owned()],
            vec!["f".to_owned(), "g".to_owned()]
        ]
    );
}

/// The workspace crates a manifest names in the sections `section` accepts (`[dependencies]`
/// alone, or every kind of dependency).
fn workspace_dependencies(manifest: &Path, section: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).expect("a manifest");
    let mut current = String::new();
    let mut found = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            current = line.to_owned();
        } else if section(&current) && line.starts_with("kube-gc-") {
            found.insert(
                line.split(['.', ' ', '='])
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
    }
    found
}

/// A member's own dependencies, not its dev-dependencies.
fn normal(section: &str) -> bool {
    section == "[dependencies]"
}

/// Dependencies of every kind: normal, dev, build, target-specific.
fn any_kind(section: &str) -> bool {
    section.contains("dependencies")
}

#[test]
fn the_crates_depend_on_each_other_as_the_layers_say() {
    let expected: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("workqueue", &[][..]),
        ("core", &[]),
        ("fixtures", &[]),
        ("protobuf", &[]),
        ("api", &["kube-gc-core"]),
        (
            "client",
            &[
                "kube-gc-api",
                "kube-gc-core",
                "kube-gc-protobuf",
                "kube-gc-workqueue",
            ],
        ),
        (
            "runtime",
            &[
                "kube-gc-api",
                "kube-gc-client",
                "kube-gc-core",
                "kube-gc-workqueue",
            ],
        ),
        (
            "controllers",
            &[
                "kube-gc-api",
                "kube-gc-client",
                "kube-gc-core",
                "kube-gc-runtime",
            ],
        ),
        (
            "manager",
            &[
                "kube-gc-api",
                "kube-gc-client",
                "kube-gc-controllers",
                "kube-gc-core",
                "kube-gc-runtime",
            ],
        ),
        ("sim", &["kube-gc-core", "kube-gc-protobuf"]),
    ]);
    let mut members = BTreeSet::new();
    for entry in std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let found = workspace_dependencies(&entry.path().join("Cargo.toml"), normal);
        let wanted: BTreeSet<String> = expected
            .get(name.as_str())
            .unwrap_or_else(|| panic!("crates/{name} is not in this test's table"))
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(found, wanted, "crates/{name}/Cargo.toml [dependencies]");
        // Not even a member's own unit tests take the simulated server: tests that drive a
        // controller against it live in the workspace's `tests/`.
        if name != "sim" {
            let all = workspace_dependencies(&entry.path().join("Cargo.toml"), any_kind);
            assert!(
                !all.contains("kube-gc-sim"),
                "crates/{name}/Cargo.toml names kube-gc-sim"
            );
        }
        members.insert(name);
    }
    assert_eq!(
        members.len(),
        expected.len(),
        "a crate of the table is missing"
    );
    // Only the commands above every layer may take the simulated server.
    let root = workspace_dependencies(&workspace().join("Cargo.toml"), normal);
    assert!(
        root.contains("kube-gc-sim") && root.contains("kube-gc-manager"),
        "{root:?}"
    );
}
