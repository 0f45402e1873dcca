//! The rules a label key and a label value must follow (apimachinery's `util/validation`:
//! `IsQualifiedName`, `IsValidLabelValue`, `IsDNS1123Subdomain`), reporting problems in
//! upstream's exact words, which end up in the server's 400 messages.

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Upstream's `RegexError`: the message, examples, and the regex.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    // Upstream joins "'a', " entries with " or ", hence the double space.
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, written out.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && b.iter().all(inner)
        }
        _ => false,
    }
}

/// One DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

fn dns1123_subdomain_problems(s: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if s.len() > 253 {
        problems.push(max_len_error(253));
    }
    if !s.split('.').all(is_dns1123_label) {
        problems.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    problems
}

/// Upstream's `IsQualifiedName`, joined with `; ` as the selector parser reports it; `None`
/// when the key is valid.
pub(super) fn qualified_name_problems(key: &str) -> Option<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = key.split('/').collect();
    let mut problems = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else {
                let prefixed = dns1123_subdomain_problems(prefix);
                problems.extend(prefixed.into_iter().map(|p| format!("prefix part {p}")));
            }
            *name
        }
        _ => {
            let text = regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &examples);
            return Some(format!(
                "a qualified name {text} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        problems.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        let text = regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &examples);
        problems.push(format!("name part {text}"));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Upstream's `IsValidLabelValue`, joined with `; `; `None` when the value is valid.
pub(super) fn label_value_problems(value: &str) -> Option<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push(max_len_error(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        let examples = ["MyValue", "my_value", "12345"];
        problems.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &examples));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_upstream_rules() {
        for valid in [
            "a",
            "A-b_c.d",
            "example.com/name",
            "a.b-c/X1",
            &"n".repeat(63),
        ] {
            assert_eq!(qualified_name_problems(valid), None, "{valid}");
        }
        let too_long = "n".repeat(64);
        let problems = qualified_name_problems(&too_long).expect("too long");
        assert!(
            problems.starts_with("name part must be no more than 63 characters"),
            "{problems}"
        );
        let prefix = format!("{}/n", "a".repeat(254));
        let problems = qualified_name_problems(&prefix).expect("prefix too long");
        assert!(
            problems.starts_with("prefix part must be no more than 253 characters"),
            "{problems}"
        );
        for invalid in [
            "", "-a", "a-", "a b", "é", "a/b/c", "/a", "a/", "A.com/x", "a..b/x",
        ] {
            assert!(qualified_name_problems(invalid).is_some(), "{invalid:?}");
        }
    }

    #[test]
    fn label_values_follow_upstream_rules() {
        for valid in ["", "a", "a-b_c.d", "123", &"v".repeat(63)] {
            assert_eq!(label_value_problems(valid), None, "{valid:?}");
        }
        for invalid in ["-a", "a-", "a/b", "a b", &"v".repeat(64)] {
            assert!(label_value_problems(invalid).is_some(), "{invalid:?}");
        }
    }
}
