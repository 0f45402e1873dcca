//! The CRDs of `deploy/crds/`, compiled into the binary and parsed once into the schema nodes
//! [`super`] walks: only the keywords it checks are kept, `properties` in the CRD's order, and
//! every `x-kubernetes-validations` rule compiled to a CEL program when the CRDs are loaded.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The CRDs whose objects are validated, as `deploy/crds/` ships them.
const CRD_SOURCES: [(&str, &str); 2] = [
    (
        "kube-gc.io_retentionpolicies.yaml",
        include_str!("../../../../../deploy/crds/kube-gc.io_retentionpolicies.yaml"),
    ),
    (
        "kube-gc.io_clusterretentionpolicies.yaml",
        include_str!("../../../../../deploy/crds/kube-gc.io_clusterretentionpolicies.yaml"),
    ),
];

/// Why the embedded CRDs could not be turned into validators. Only a broken edit of
/// `deploy/crds/` causes one; this module's tests load them, so it fails there first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdSchemaError {
    /// The YAML does not parse into a CRD.
    #[error("{file}: {message}")]
    Parse {
        /// The file in `deploy/crds/`.
        file: &'static str,
        /// What the parser said.
        message: String,
    },
    /// An `x-kubernetes-validations` rule is not CEL the interpreter accepts.
    #[error("{file}: rule {rule:?} does not compile: {message}")]
    Rule {
        /// The file in `deploy/crds/`.
        file: &'static str,
        /// The rule's text.
        rule: String,
        /// What the compiler said.
        message: String,
    },
}

#[derive(Deserialize)]
struct CrdFile {
    spec: CrdSpec,
}

#[derive(Deserialize)]
struct CrdSpec {
    group: String,
    names: CrdNames,
    versions: Vec<CrdVersion>,
}

#[derive(Deserialize)]
struct CrdNames {
    plural: String,
}

#[derive(Deserialize)]
struct CrdVersion {
    name: String,
    schema: CrdValidation,
}

#[derive(Deserialize)]
struct CrdValidation {
    #[serde(rename = "openAPIV3Schema")]
    open_api_v3_schema: Schema,
}

/// One node of a structural schema: the keywords this module checks; others are ignored.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Schema {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) properties: Properties,
    pub(super) additional_properties: Option<Box<Schema>>,
    pub(super) items: Option<Box<Schema>>,
    #[serde(rename = "enum")]
    pub(super) allowed: Option<Vec<Value>>,
    pub(super) minimum: Option<f64>,
    pub(super) maximum: Option<f64>,
    pub(super) min_length: Option<usize>,
    pub(super) max_length: Option<usize>,
    pub(super) min_items: Option<usize>,
    pub(super) max_items: Option<usize>,
    pub(super) max_properties: Option<usize>,
    pub(super) required: Vec<String>,
    pub(super) one_of: Vec<Schema>,
    pub(super) not: Option<Box<Schema>>,
    #[serde(rename = "x-kubernetes-validations")]
    pub(super) rules: Vec<Rule>,
}

/// `properties` in the order the CRD lists them (a map would sort them).
#[derive(Default)]
pub(super) struct Properties(pub(super) Vec<(String, Schema)>);

impl<'de> Deserialize<'de> for Properties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Properties;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of property schemas")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Properties, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Schema>()? {
                    entries.push(entry);
                }
                Ok(Properties(entries))
            }
        }
        deserializer.deserialize_map(Ordered)
    }
}

#[derive(Deserialize)]
pub(super) struct Rule {
    pub(super) rule: String,
    pub(super) message: Option<String>,
    /// Compiled when the CRDs are loaded.
    #[serde(skip)]
    pub(super) program: Option<cel::Program>,
}

impl Rule {
    /// What a failure reports: the message, else `failed rule: <rule>` (apiextensions'
    /// `ruleMessageOrDefault`).
    pub(super) fn failure(&self) -> String {
        match &self.message {
            Some(message) if !message.trim().is_empty() => message.trim().to_owned(),
            _ => format!("failed rule: {}", self.rule.trim()),
        }
    }

    /// What an evaluation error names the rule by (apiextensions' `ruleErrorString`).
    pub(super) fn name(&self) -> &str {
        match &self.message {
            Some(message) if !message.trim().is_empty() => message.trim(),
            _ => self.rule.trim(),
        }
    }
}

/// A served version of a CRD and its schema.
pub(super) struct Crd {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) plural: String,
    pub(super) schema: Schema,
}

fn load() -> Result<Vec<Crd>, CrdSchemaError> {
    let mut crds = Vec::new();
    for (file, text) in CRD_SOURCES {
        let parsed: CrdFile = serde_saphyr::from_str(text).map_err(|e| CrdSchemaError::Parse {
            file,
            message: e.to_string(),
        })?;
        for version in parsed.spec.versions {
            let mut schema = version.schema.open_api_v3_schema;
            compile_rules(file, &mut schema)?;
            crds.push(Crd {
                group: parsed.spec.group.clone(),
                version: version.name,
                plural: parsed.spec.names.plural.clone(),
                schema,
            });
        }
    }
    Ok(crds)
}

fn compile_rules(file: &'static str, schema: &mut Schema) -> Result<(), CrdSchemaError> {
    for rule in &mut schema.rules {
        let program = cel::Program::compile(&rule.rule).map_err(|e| CrdSchemaError::Rule {
            file,
            rule: rule.rule.clone(),
            message: e.to_string(),
        })?;
        rule.program = Some(program);
    }
    let children = schema
        .properties
        .0
        .iter_mut()
        .map(|(_, s)| s)
        .chain(schema.additional_properties.as_deref_mut())
        .chain(schema.items.as_deref_mut())
        .chain(schema.one_of.iter_mut())
        .chain(schema.not.as_deref_mut());
    for child in children {
        compile_rules(file, child)?;
    }
    Ok(())
}

/// The CRDs, loaded once.
pub(super) fn crds() -> Result<&'static [Crd], &'static CrdSchemaError> {
    static CRDS: OnceLock<Result<Vec<Crd>, CrdSchemaError>> = OnceLock::new();
    CRDS.get_or_init(load).as_ref().map(Vec::as_slice)
}
