//! Unit tests of the label selector.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> Vec<(Box<str>, Box<str>)> {
    let mut labels: Vec<(Box<str>, Box<str>)> = pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    labels.sort();
    labels
}

fn matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
    Selector::parse(selector)
        .unwrap_or_else(|e| panic!("{e}"))
        .matches(&labels(pairs)[..])
}

#[test]
fn equality_and_inequality() {
    assert!(matches("app=web", &[("app", "web")]));
    assert!(matches("app == web", &[("app", "web"), ("x", "y")]));
    assert!(!matches("app=web", &[("app", "api")]));
    assert!(!matches("app=web", &[]));
    assert!(matches("app!=web", &[("app", "api")]));
    assert!(matches("app!=web", &[]), "!= matches an absent label");
    assert!(!matches("app!=web", &[("app", "web")]));
    assert!(matches("app=", &[("app", "")]), "the empty value");
    assert!(!matches("app=", &[]));
}

#[test]
fn set_based_and_existence() {
    assert!(matches("env in (prod, staging)", &[("env", "staging")]));
    assert!(!matches("env in (prod,staging)", &[("env", "dev")]));
    assert!(!matches("env in (prod)", &[]));
    assert!(matches("env notin (prod)", &[("env", "dev")]));
    assert!(
        matches("env notin (prod)", &[]),
        "notin matches an absent label"
    );
    assert!(!matches("env notin (prod,dev)", &[("env", "dev")]));
    assert!(matches("env", &[("env", "")]));
    assert!(!matches("env", &[("other", "x")]));
    assert!(matches("!env", &[("other", "x")]));
    assert!(!matches("! env", &[("env", "x")]));
    assert!(
        matches("env in (,a)", &[("env", "")]),
        "an empty value in a set"
    );
}

#[test]
fn requirements_all_hold_and_ordering_operators_compare_integers() {
    let pairs = [("app", "web"), ("tier", "front"), ("replicas", "3")];
    assert!(matches("app=web,tier in (front),!canary", &pairs));
    assert!(!matches("app=web,tier notin (front)", &pairs));
    assert!(matches("replicas>2,replicas<4", &pairs));
    assert!(!matches("replicas>3", &pairs));
    assert!(!matches("app>1", &pairs), "not an integer: no match");
    assert!(matches("", &[]), "the empty selector matches everything");
    assert!(matches("  ", &[("a", "b")]));
    assert!(Selector::parse("").unwrap().is_empty());
}

#[test]
fn prefixed_keys_and_keywords_as_values() {
    assert!(matches(
        "app.kubernetes.io/part-of=shop",
        &[("app.kubernetes.io/part-of", "shop")]
    ));
    assert!(matches("mode=in", &[("mode", "in")]));
    assert!(matches("mode in (notin)", &[("mode", "notin")]));
    assert!(
        matches("inx=1", &[("inx", "1")]),
        "'in' is a keyword only as a word"
    );
}

#[test]
fn bad_selectors_say_what_is_wrong() {
    let error = |s: &str| Selector::parse(s).unwrap_err().to_string();
    for (selector, expected) in [
        ("app=web,", "trailing ','"),
        (",app", "expected a label key, found ','"),
        ("env in prod", "expected '(' after \"env\" in"),
        ("env in ()", "is empty"),
        ("env in (a", "not closed"),
        ("env in (a b)", "expected ',' or ')'"),
        ("app=web=x", "expected ',' or the end"),
        ("-app=x", "key \"-app\""),
        ("Bad_Prefix/app=x", "prefix must be a DNS subdomain"),
        ("app=-x", "value \"-x\" of \"app\""),
        ("app=(", "expected a value for \"app\", found '('"),
        ("replicas>x", "must be an integer"),
        ("app ( x", "expected an operator"),
        ("!", "found the end"),
    ] {
        let message = error(selector);
        assert!(
            message.contains(expected),
            "{selector:?}: {message:?} lacks {expected:?}"
        );
        assert!(message.starts_with("invalid label selector"), "{message}");
    }
    let long = format!("app={}", "v".repeat(64));
    assert!(error(&long).contains("1-63 characters"));
}

#[test]
fn parts_name_each_requirement_in_order() {
    let parts = |text: &str| {
        Selector::parse(text)
            .unwrap()
            .parts()
            .into_iter()
            .map(|p| (p.key.to_owned(), p.operator.as_str(), p.values))
            .collect::<Vec<_>>()
    };
    let owned = |values: &[&str]| values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        parts("app in (web, api),!tier,env=prod,zone!=a,n>2,m<7,team,x notin (b,c)"),
        vec![
            ("app".to_owned(), "in", owned(&["web", "api"])),
            ("tier".to_owned(), "!", owned(&[])),
            ("env".to_owned(), "in", owned(&["prod"])),
            ("zone".to_owned(), "notin", owned(&["a"])),
            ("n".to_owned(), ">", owned(&["2"])),
            ("m".to_owned(), "<", owned(&["7"])),
            ("team".to_owned(), "exists", owned(&[])),
            ("x".to_owned(), "notin", owned(&["b", "c"])),
        ]
    );
    assert!(parts("").is_empty());
}

#[test]
fn a_selector_text_is_parsed_once_and_errors_are_not_kept() {
    let first = Selector::parse_shared("tier in (web, api), !canary").unwrap();
    let again = Selector::parse_shared("tier in (web, api), !canary").unwrap();
    assert!(Arc::ptr_eq(&first, &again), "the same text, the same parse");
    assert_eq!(
        *first,
        Selector::parse("tier in (web, api), !canary").unwrap()
    );
    let other = Selector::parse_shared("tier=web").unwrap();
    assert!(!Arc::ptr_eq(&first, &other));
    assert!(Selector::parse_shared("tier in (").is_err());
    assert!(
        Selector::parse_shared("tier in (").is_err(),
        "an error every time"
    );
    // Past the bound the kept ones are dropped: a later call parses again, alike.
    for i in 0..PARSED_KEPT {
        Selector::parse_shared(&format!("k{i}=v")).unwrap();
    }
    let later = Selector::parse_shared("tier in (web, api), !canary").unwrap();
    assert!(
        !Arc::ptr_eq(&later, &first),
        "parsed anew: the kept ones were dropped"
    );
    assert_eq!(*later, *first);
}
