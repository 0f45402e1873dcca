//! The query string of `/debug/explain`: `object=TYPE/NAME`, `namespace=NS` (default
//! `default`), `output=text|json|yaml` (default `text`).
//!
//! Contract: every parameter is known and given once; `object` is required and is `TYPE/NAME`
//! with neither part empty. Anything else is a [`QueryError`] naming what was wrong, in one
//! line, for a 400.

use std::borrow::Cow;

/// How the answer is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// The screen `kube-gc explain` prints.
    #[default]
    Text,
    /// The [`Explanation`](crate::explain::Explanation) as JSON.
    Json,
    /// The same, as YAML.
    Yaml,
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The type as given (`jobs`, `po`, `pipelineruns.tekton.dev`).
    pub type_: String,
    /// The object's name.
    pub name: String,
    /// The namespace (ignored for cluster-scoped types).
    pub namespace: String,
    /// How to print.
    pub output: Output,
}

/// What is wrong with a query.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No `object`.
    #[error("missing object: ask for /debug/explain?object=TYPE/NAME&namespace=NS")]
    MissingObject,
    /// `object` is not `TYPE/NAME`.
    #[error("object {0:?} is not TYPE/NAME (e.g. jobs/nightly-29)")]
    NotTypeName(String),
    /// An `output` other than text, json or yaml.
    #[error("output {0:?} is not text, json or yaml")]
    Output(String),
    /// A parameter it does not know.
    #[error("unknown parameter {0:?} (known: object, namespace, output)")]
    Unknown(String),
    /// A parameter given twice.
    #[error("parameter {0:?} is given twice")]
    Repeated(String),
}

/// Parses `query` (the part after `?`, percent-encoded).
///
/// # Errors
///
/// [`QueryError`] naming the first thing wrong.
pub fn parse(query: &str) -> Result<Query, QueryError> {
    let (mut object, mut namespace, mut output) = (None, None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match key.as_ref() {
            "object" => &mut object,
            "namespace" => &mut namespace,
            "output" => &mut output,
            other => return Err(QueryError::Unknown(other.to_owned())),
        };
        if slot.replace(value).is_some() {
            return Err(QueryError::Repeated(key.into_owned()));
        }
    }
    let object = object.ok_or(QueryError::MissingObject)?;
    let (type_, name) = type_and_name(&object)?;
    Ok(Query {
        type_,
        name,
        namespace: namespace.map_or_else(|| "default".to_owned(), Cow::into_owned),
        output: output.as_deref().map_or(Ok(Output::Text), output_of)?,
    })
}

fn type_and_name(object: &str) -> Result<(String, String), QueryError> {
    match object.split_once('/') {
        Some((type_, name)) if !type_.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((type_.to_owned(), name.to_owned()))
        }
        _ => Err(QueryError::NotTypeName(object.to_owned())),
    }
}

fn output_of(value: &str) -> Result<Output, QueryError> {
    match value {
        "text" => Ok(Output::Text),
        "json" => Ok(Output::Json),
        "yaml" => Ok(Output::Yaml),
        other => Err(QueryError::Output(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_an_object_a_namespace_and_an_output() {
        let query = parse("object=jobs%2Fnightly&namespace=batch&output=json").unwrap();
        assert_eq!(
            query,
            Query {
                type_: "jobs".into(),
                name: "nightly".into(),
                namespace: "batch".into(),
                output: Output::Json,
            }
        );
        let defaults = parse("object=po/web-0").unwrap();
        assert_eq!(
            (defaults.namespace.as_str(), defaults.output),
            ("default", Output::Text)
        );
    }

    #[test]
    fn what_is_wrong_is_named() {
        assert_eq!(parse(""), Err(QueryError::MissingObject));
        assert_eq!(
            parse("object=jobs"),
            Err(QueryError::NotTypeName("jobs".into()))
        );
        assert_eq!(
            parse("object=/x"),
            Err(QueryError::NotTypeName("/x".into()))
        );
        assert_eq!(
            parse("object=a/b&output=xml"),
            Err(QueryError::Output("xml".into()))
        );
        assert_eq!(
            parse("object=a/b&uid=1"),
            Err(QueryError::Unknown("uid".into()))
        );
        assert_eq!(
            parse("object=a/b&object=c/d"),
            Err(QueryError::Repeated("object".into()))
        );
    }
}
