//! Finding kubeconfig files and merging them, with kubectl's rules.
//!
//! Which files: the `--kubeconfig` file alone if given (it must exist); else every path in
//! `KUBECONFIG` (split on `:`, `;` on Windows, empty items and duplicates dropped, missing files
//! skipped); else `~/.kube/config` if it exists.
//!
//! How they merge: for each map key (a cluster, user or context name) the first file that
//! defines it wins, whole entry, no field-by-field mixing; `current-context` comes from the first
//! file that sets one. A name defined twice within one file is an error, as in client-go. Before merging, relative paths in a file (CA, client certificate and key,
//! token file, an exec command containing a path separator) are resolved against that file's
//! own directory, and every entry remembers the file it came from, so errors can name it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::environment::Environment;
use super::error::{ConfigError, FileList};
use super::kubeconfig::{self, AuthInfo, Cluster, Context, Kubeconfig};

/// A value together with the kubeconfig file that defined it.
#[derive(Debug, Clone)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// The file it was read from.
    pub file: PathBuf,
}

impl<T> Sourced<T> {
    fn new(value: T, file: &Path) -> Self {
        Sourced {
            value,
            file: file.to_path_buf(),
        }
    }
}

/// Several kubeconfig files merged into one view.
#[derive(Debug, Clone, Default)]
pub struct MergedKubeconfig {
    /// The files that were read, in order.
    pub files: Vec<PathBuf>,
    /// The first `current-context` set.
    pub current_context: Option<Sourced<String>>,
    /// Clusters by name.
    pub clusters: BTreeMap<String, Sourced<Cluster>>,
    /// Users by name.
    pub users: BTreeMap<String, Sourced<AuthInfo>>,
    /// Contexts by name.
    pub contexts: BTreeMap<String, Sourced<Context>>,
}

impl MergedKubeconfig {
    /// True when no file defined anything (client-go then tries in-cluster configuration).
    pub fn is_empty(&self) -> bool {
        self.current_context.is_none()
            && self.clusters.is_empty()
            && self.users.is_empty()
            && self.contexts.is_empty()
    }

    /// The files read, for error messages.
    pub fn file_list(&self) -> FileList {
        FileList(self.files.clone())
    }

    /// Adds one file's content; entries already present (from earlier files) win.
    fn merge(&mut self, file: &Path, config: Kubeconfig) -> Result<(), ConfigError> {
        self.files.push(file.to_path_buf());
        if self.current_context.is_none() {
            self.current_context = config
                .current_context
                .filter(|name| !name.is_empty())
                .map(|name| Sourced::new(name, file));
        }
        let clusters = config.clusters.unwrap_or_default().into_iter();
        let clusters = clusters.map(|entry| (entry.name, entry.cluster.unwrap_or_default()));
        merge_named(&mut self.clusters, file, "cluster", clusters)?;
        let users = config.users.unwrap_or_default().into_iter();
        let users = users.map(|entry| (entry.name, entry.user.unwrap_or_default()));
        merge_named(&mut self.users, file, "user", users)?;
        let contexts = config.contexts.unwrap_or_default().into_iter();
        let contexts = contexts.map(|entry| (entry.name, entry.context.unwrap_or_default()));
        merge_named(&mut self.contexts, file, "context", contexts)
    }
}

/// Adds one file's named entries to `merged`, keeping entries an earlier file defined. A name
/// used twice within one file is an error, as in client-go.
fn merge_named<T>(
    merged: &mut BTreeMap<String, Sourced<T>>,
    file: &Path,
    kind: &'static str,
    entries: impl Iterator<Item = (String, T)>,
) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (name, value) in entries {
        if !seen.insert(name.clone()) {
            return Err(ConfigError::DuplicateName {
                path: file.to_path_buf(),
                kind,
                name,
            });
        }
        merged
            .entry(name)
            .or_insert_with(|| Sourced::new(value, file));
    }
    Ok(())
}

/// The kubeconfig files to read, and whether they must exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// Candidate files in priority order.
    pub paths: Vec<PathBuf>,
    /// True for `--kubeconfig`: a missing file is an error rather than skipped.
    pub must_exist: bool,
}

impl Search {
    /// The files kubectl would look at, given `--kubeconfig` and the environment.
    pub fn new(explicit: Option<&Path>, env: &Environment) -> Search {
        if let Some(path) = explicit {
            return Search {
                paths: vec![path.to_path_buf()],
                must_exist: true,
            };
        }
        if let Some(list) = env.var("KUBECONFIG") {
            let mut paths: Vec<PathBuf> = Vec::new();
            for item in list
                .split(PATH_LIST_SEPARATOR)
                .filter(|item| !item.is_empty())
            {
                let path = PathBuf::from(item);
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            return Search {
                paths,
                must_exist: false,
            };
        }
        Search {
            paths: env
                .home()
                .map(|home| home.join(".kube").join("config"))
                .into_iter()
                .collect(),
            must_exist: false,
        }
    }

    /// The candidate paths, for the "nothing found" error.
    pub fn describe(&self) -> String {
        if self.paths.is_empty() {
            "(no KUBECONFIG and no home directory)".to_string()
        } else {
            FileList(self.paths.clone()).to_string()
        }
    }

    /// Reads and merges every file that exists. Blocking file I/O: call at start-up.
    pub fn load(&self) -> Result<MergedKubeconfig, ConfigError> {
        let mut merged = MergedKubeconfig::default();
        for path in &self.paths {
            let bytes = match std::fs::read(path) {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound && !self.must_exist => {
                    continue
                }
                Err(source) => {
                    return Err(ConfigError::ReadKubeconfig {
                        path: path.clone(),
                        source,
                    })
                }
            };
            let mut config =
                kubeconfig::parse(&bytes).map_err(|source| ConfigError::ParseKubeconfig {
                    path: path.clone(),
                    source,
                })?;
            resolve_relative_paths(&mut config, path.parent().unwrap_or(Path::new("")));
            merged.merge(path, config)?;
        }
        Ok(merged)
    }
}

#[cfg(windows)]
const PATH_LIST_SEPARATOR: char = ';';
#[cfg(not(windows))]
const PATH_LIST_SEPARATOR: char = ':';

/// Makes every relative file reference in `config` relative to `dir` instead of the process's
/// working directory, as client-go's `ResolveLocalPaths` does.
fn resolve_relative_paths(config: &mut Kubeconfig, dir: &Path) {
    for cluster in config.clusters.iter_mut().flatten() {
        if let Some(cluster) = cluster.cluster.as_mut() {
            resolve(&mut cluster.certificate_authority, dir);
        }
    }
    for user in config.users.iter_mut().flatten() {
        let Some(user) = user.user.as_mut() else {
            continue;
        };
        resolve(&mut user.client_certificate, dir);
        resolve(&mut user.client_key, dir);
        resolve(&mut user.token_file, dir);
        if let Some(exec) = user.exec.as_mut() {
            // A bare program name is looked up on PATH; only "./bin/x" or "bin/x" is a path.
            let is_path = exec
                .command
                .as_deref()
                .is_some_and(|command| command.contains(std::path::MAIN_SEPARATOR));
            if is_path {
                resolve(&mut exec.command, dir);
            }
        }
    }
}

fn resolve(field: &mut Option<String>, dir: &Path) {
    if let Some(value) = field.as_mut() {
        let path = Path::new(value.as_str());
        if !value.is_empty() && path.is_relative() {
            // Collecting the components drops "." segments: "dir/./x" reads better as "dir/x".
            let joined: PathBuf = dir.join(path).components().collect();
            *value = joined.to_string_lossy().into_owned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_flag_wins_and_must_exist() {
        let env = Environment::empty()
            .with_var("KUBECONFIG", "/a")
            .with_home("/home/u");
        let search = Search::new(Some(Path::new("/flag")), &env);
        assert_eq!(search.paths, [PathBuf::from("/flag")]);
        assert!(search.must_exist);
    }

    #[test]
    fn kubeconfig_variable_is_split_and_deduplicated() {
        let env = Environment::empty()
            .with_var("KUBECONFIG", "/a::/b:/a:")
            .with_home("/home/u");
        let search = Search::new(None, &env);
        assert_eq!(search.paths, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(!search.must_exist);
    }

    #[test]
    fn home_config_is_the_fallback() {
        let env = Environment::empty().with_home("/home/u");
        let search = Search::new(None, &env);
        assert_eq!(search.paths, [PathBuf::from("/home/u/.kube/config")]);
        assert!(Search::new(None, &Environment::empty()).paths.is_empty());
    }

    #[test]
    fn relative_paths_follow_the_file() {
        let yaml = "clusters:\n- name: c\n  cluster: {certificate-authority: ca.pem}\nusers:\n- name: u\n  user:\n    client-key: /abs/key.pem\n    tokenFile: sub/token\n    exec: {command: aws}\n- name: v\n  user:\n    exec: {command: ./bin/plugin}\n";
        let mut config = kubeconfig::parse(yaml.as_bytes()).unwrap();
        resolve_relative_paths(&mut config, Path::new("/cfg"));
        let clusters = config.clusters.unwrap();
        let ca = clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .certificate_authority
            .as_deref();
        assert_eq!(ca, Some("/cfg/ca.pem"));
        let users = config.users.unwrap();
        let u = users[0].user.as_ref().unwrap();
        assert_eq!(u.client_key.as_deref(), Some("/abs/key.pem"));
        assert_eq!(u.token_file.as_deref(), Some("/cfg/sub/token"));
        assert_eq!(u.exec.as_ref().unwrap().command.as_deref(), Some("aws"));
        let v = users[1].user.as_ref().unwrap();
        let command = v.exec.as_ref().unwrap().command.as_deref();
        assert_eq!(command, Some("/cfg/bin/plugin"));
    }

    #[test]
    fn first_file_wins_per_key() {
        let mut merged = MergedKubeconfig::default();
        let first = kubeconfig::parse(
            b"current-context: a\nclusters:\n- name: shared\n  cluster: {server: https://first}\n",
        )
        .unwrap();
        let second = kubeconfig::parse(
            b"current-context: b\nclusters:\n- name: shared\n  cluster: {server: https://second}\n- name: other\n  cluster: {server: https://other}\n",
        )
        .unwrap();
        merged.merge(Path::new("/1"), first).unwrap();
        merged.merge(Path::new("/2"), second).unwrap();
        let current = merged.current_context.as_ref().unwrap();
        assert_eq!(
            (current.value.as_str(), current.file.as_path()),
            ("a", Path::new("/1"))
        );
        let shared = &merged.clusters["shared"];
        assert_eq!(shared.value.server.as_deref(), Some("https://first"));
        assert_eq!(merged.clusters["other"].file, Path::new("/2"));
    }
}
