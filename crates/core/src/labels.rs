//! Label selectors: `app=web,tier in (a,b),!canary`, parsed like apimachinery's
//! `labels.Parse` (same grammar, same messages) and matched against `metadata.labels` — the one
//! parser and the one matcher of kube-gc: the simulated API server filters lists and watches
//! with them, `kube-gc plan -l` selects objects with them, and a `metav1.LabelSelector`
//! (`matchLabels`, `matchExpressions`) matches through [`Operator::holds`].
//!
//! Contract:
//! - [`Selector::parse`] accepts exactly the strings apimachinery's `labels.Parse` accepts
//!   (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, joined by
//!   commas, blanks allowed between tokens) and rejects the others with the same message
//!   ([`ParseError`]), which a server sends back as a 400 `BadRequest`. Keys must be qualified
//!   names and values label values, validated with the upstream rules and wording (`names.rs`).
//! - The parser never panics, whatever the input.
//! - The lexer and the recursive-descent parser follow upstream's structure token for token so
//!   that every refusal carries upstream's message.

use serde_json::{Map, Value};

use crate::field_errors::{aggregate_causes, Cause};

mod names;

use names::{label_value_problems, qualified_name_problems};

/// Why a label selector string was refused. The `Display` text is the message the real server
/// puts in its 400 `BadRequest`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// How a [`Requirement`] relates a label to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `k=v`: the label is present and equal to the value.
    Equals,
    /// `k==v`: same as `Equals`.
    DoubleEquals,
    /// `k!=v`: the label is absent or different from the value.
    NotEquals,
    /// `k in (a,b)`: the label is present and one of the values.
    In,
    /// `k notin (a,b)`: the label is absent or none of the values.
    NotIn,
    /// `k`: the label is present.
    Exists,
    /// `!k`: the label is absent.
    DoesNotExist,
    /// `k>n`: the label is an integer greater than `n`.
    GreaterThan,
    /// `k<n`: the label is an integer less than `n`.
    LessThan,
}

/// One comma-separated term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// How the label relates to `values`.
    pub operator: Operator,
    /// The values, sorted and without duplicates (upstream keeps them in a set); empty for
    /// `Exists` and `DoesNotExist`.
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether the value of its key (`None`: no such label) satisfies it.
    pub fn matches(&self, value: Option<&str>) -> bool {
        self.operator.holds(&self.values, value)
    }
}

impl Operator {
    /// The operator a `metav1.LabelSelectorRequirement` names (`In`, `NotIn`, `Exists`,
    /// `DoesNotExist`); `None` for any other word.
    pub fn from_set_based(name: &str) -> Option<Operator> {
        match name {
            "In" => Some(Operator::In),
            "NotIn" => Some(Operator::NotIn),
            "Exists" => Some(Operator::Exists),
            "DoesNotExist" => Some(Operator::DoesNotExist),
            _ => None,
        }
    }

    /// Whether a label's value (`None`: no such label) relates to `values` as this operator
    /// says: the one matching rule, for parsed selectors and `metav1.LabelSelector`s alike.
    pub fn holds<S: AsRef<str>>(self, values: &[S], value: Option<&str>) -> bool {
        let listed = |v: &str| values.iter().any(|x| x.as_ref() == v);
        match self {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => compare_integer(self, values, value),
        }
    }
}

/// `k>n` and `k<n`: the label is an integer beyond the one bound.
fn compare_integer<S: AsRef<str>>(operator: Operator, values: &[S], value: Option<&str>) -> bool {
    let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
        return false;
    };
    let [bound] = values else {
        return false;
    };
    let Ok(bound) = bound.as_ref().parse::<i64>() else {
        return false;
    };
    match operator {
        Operator::GreaterThan => actual > bound,
        _ => actual < bound,
    }
}

/// A parsed label selector: all requirements must hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parses the `labelSelector` query parameter.
    pub fn parse(s: &str) -> Result<Selector, ParseError> {
        let tokens = lex(s);
        let mut requirements = Parser {
            tokens,
            position: 0,
        }
        .parse()
        .map_err(ParseError)?;
        // Upstream sorts by key so that equal selectors compare equal.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector { requirements })
    }

    /// Whether an object's `metadata.labels` (absent = no labels) satisfy every requirement.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        // A label whose value is not a string cannot come from a valid object; treat it as absent.
        self.matches_lookup(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Like [`matches`](Self::matches), with each label's value read through `label`, for
    /// labels held in some other map (a client's typed metadata, say).
    pub fn matches_lookup<'v>(&self, label: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.requirements.iter().all(|r| r.matches(label(&r.key)))
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    Identifier,
    OpenPar,
    ClosedPar,
    Comma,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    In,
    NotIn,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens, ending with `EndOfString`. Special characters are ASCII, so
/// every cut falls on a UTF-8 character boundary.
fn lex(s: &str) -> Vec<(Token, String)> {
    // Upstream's lexer reads a NUL byte as the end of the input; whatever follows is ignored.
    let s = s.split('\0').next().unwrap_or_default();
    let bytes = s.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        };
        let start = pos;
        let token = if is_special(first) {
            let (token, len) = special_token(first, bytes.get(pos + 1).copied());
            pos += len;
            token
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            match &s[start..pos] {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier,
            }
        };
        tokens.push((token, s[start..pos].to_owned()));
    }
}

/// The operator token starting with `first`: `==` and `!=` take two characters, every other
/// special character is a token by itself (upstream's longest-match scan gives the same).
fn special_token(first: u8, next: Option<u8>) -> (Token, usize) {
    match (first, next) {
        (b'=', Some(b'=')) => (Token::DoubleEquals, 2),
        (b'!', Some(b'=')) => (Token::NotEquals, 2),
        (b'=', _) => (Token::Equals, 1),
        (b'!', _) => (Token::Not, 1),
        (b'(', _) => (Token::OpenPar, 1),
        (b')', _) => (Token::ClosedPar, 1),
        (b',', _) => (Token::Comma, 1),
        (b'>', _) => (Token::GreaterThan, 1),
        _ => (Token::LessThan, 1),
    }
}

/// Where a token is read: in a value position `in` and `notin` are ordinary identifiers
/// (`x in (in)` is valid).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// A recursive-descent parser over the tokens, following upstream's grammar and messages.
struct Parser {
    tokens: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self
            .tokens
            .get(self.position)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        let token = match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => token,
        };
        (token, literal)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::Not => {
                    let requirement = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::Not {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = inferred {
            return new_requirement(key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values)
    }

    /// Reads `[!] KEY`; returns the operator when the key stands alone (`k` or `!k`).
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::Not;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(problem) = qualified_name_problems(&literal) {
            // Upstream validates the key against a nil field path, which prints as `<nil>`.
            return Err(Cause::invalid("<nil>", Value::from(literal), problem).to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        let stands_alone = matches!(next, Token::EndOfString | Token::Comma);
        let operator = match (negated, stands_alone) {
            (true, _) => Some(Operator::DoesNotExist),
            (false, true) => Some(Operator::Exists),
            (false, false) => None,
        };
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        match token {
            Token::In => Ok(Operator::In),
            Token::NotIn => Ok(Operator::NotIn),
            Token::Equals => Ok(Operator::Equals),
            Token::DoubleEquals => Ok(Operator::DoubleEquals),
            Token::NotEquals => Ok(Operator::NotEquals),
            Token::GreaterThan => Ok(Operator::GreaterThan),
            Token::LessThan => Ok(Operator::LessThan),
            _ => Err(format!(
                "found '{literal}', expected: '=', '!=', '==', 'in', notin'"
            )),
        }
    }

    /// Reads `(a,b,...)`; empty entries (`(a,,b)`, `()`) stand for the empty value.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // A comma next to a parenthesis or another comma encloses an empty value.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<`; nothing before a comma or the
    /// end means the empty value.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// Builds a requirement after validating its values (upstream's `NewRequirement`); several
/// problems are reported together as `[a, b]`.
fn new_requirement(
    key: String,
    operator: Operator,
    mut values: Vec<String>,
) -> Result<Requirement, String> {
    values.sort();
    values.dedup();
    let mut problems = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                let detail = "for 'Gt', 'Lt' operators, the value must be an integer";
                problems.push(Cause::invalid(
                    format!("values[{i}]"),
                    Value::from(value.as_str()),
                    detail,
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        if let Some(problem) = label_value_problems(value) {
            let field = format!("values[{i}][{key}]");
            problems.push(Cause::invalid(field, Value::from(value.as_str()), problem));
        }
    }
    match aggregate_causes(&problems) {
        None => Ok(Requirement {
            key,
            operator,
            values,
        }),
        Some(message) => Err(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn valid_label_selectors_match_as_upstream() {
        let set = labels(json!({"app": "web", "tier": "front", "n": "5", "empty": ""}));
        // (selector, matches `set`, matches no labels at all)
        let table: &[(&str, bool, bool)] = &[
            ("", true, true),
            ("app=web", true, false),
            ("app==web", true, false),
            ("app = web", true, false),
            ("app!=web", false, true),
            ("app!=db", true, true),
            ("app in (web,db)", true, false),
            ("app in (db)", false, false),
            ("app notin (db, cache)", true, true),
            ("app notin (web)", false, true),
            ("app", true, false),
            ("!app", false, true),
            ("!missing", true, true),
            ("app=web,tier=front", true, false),
            ("app=web, tier=back", false, false),
            ("empty=", true, false),
            ("empty in ()", true, false),
            ("x in (a,,b)", false, false),
            ("n>4", true, false),
            ("n<5", false, false),
            ("app in (in,notin,web)", true, false),
            ("example.com/role!=x", true, true),
            ("\tapp\t=\tweb\n", true, false),
            ("app=web\0,garbage(", true, false),
        ];
        for (text, on_set, on_nothing) in table {
            let selector = Selector::parse(text).expect(text);
            assert_eq!(selector.matches(Some(&set)), *on_set, "{text:?} on labels");
            assert_eq!(selector.matches(None), *on_nothing, "{text:?} on no labels");
        }
    }

    #[test]
    fn requirements_are_sorted_with_deduplicated_values() {
        let selector = Selector::parse("b in (y,x,y),a").expect("valid");
        let reqs = selector.requirements();
        assert_eq!(reqs[0].key, "a");
        assert_eq!(reqs[0].operator, Operator::Exists);
        assert_eq!(reqs[1].values, vec!["x".to_owned(), "y".to_owned()]);
        assert!(Selector::parse("").expect("valid").is_empty());
    }

    #[test]
    fn invalid_label_selectors_give_upstream_messages() {
        let key_regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_regex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let table: Vec<(&str, String)> = vec![
            ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
            ("===", "found '==', expected: !, identifier, or 'end of string'".into()),
            ("a=b,", "found '', expected: identifier after ','".into()),
            ("a=b,=", "found '=', expected: identifier after ','".into()),
            ("a b", "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'".into()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
            ("a in b", "unable to parse requirement: found 'b' expected: '('".into()),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
            ("a==(", "unable to parse requirement: found '(', expected: identifier".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("!a=b", "found '=', expected: ',' or 'end of string'".into()),
            ("-a", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {key_regex}")),
            (
                "a/b/c",
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into(),
            ),
            (
                "/a",
                "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".into(),
            ),
            (
                "Example.com/a",
                "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
            ),
            (
                "x.io/",
                format!("unable to parse requirement: <nil>: Invalid value: \"x.io/\": name part must be non-empty; {key_regex}"),
            ),
            ("app=-x", format!("unable to parse requirement: values[0][app]: Invalid value: \"-x\": {value_regex}")),
            (
                "n>z",
                "unable to parse requirement: values[0]: Invalid value: \"z\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
            ),
            ("n<-1", format!("unable to parse requirement: values[0][n]: Invalid value: \"-1\": {value_regex}")),
            (
                "n>a-",
                format!("unable to parse requirement: [values[0]: Invalid value: \"a-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][n]: Invalid value: \"a-\": {value_regex}]"),
            ),
        ];
        for (text, message) in table {
            let err = Selector::parse(text).expect_err(text);
            assert_eq!(err.to_string(), message, "selector {text:?}");
        }
        let long = format!("a={}", "v".repeat(64));
        let err = Selector::parse(&long).expect_err("too long");
        assert!(err.to_string().contains("Invalid value: \"vvvv"), "{err}");
        assert!(
            err.to_string()
                .contains(": must be no more than 63 characters"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn label_parser_never_panics(s in "\\PC{0,40}") {
            let _ = Selector::parse(&s);
        }

        #[test]
        fn label_parser_never_panics_on_selector_alphabet(s in "[a-z!=(), <>\\-/.in]{0,30}") {
            if let Ok(selector) = Selector::parse(&s) {
                let _ = selector.matches(None);
            }
        }
    }
}
