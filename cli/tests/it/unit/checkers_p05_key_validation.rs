//! The unit tests of `sim/src/checkers/p05_key_validation.rs` (the key form).

use acp_chaos::checkers::p05_key_validation::{key_form, KeyForm};

fn probe(key: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{"sessionId":"s","prompt":[],"idempotencyKey":{key}}}}}"#
    )
}

#[test]
fn keys_are_classified_by_k1_to_k3_counting_unicode_scalar_values() {
    assert_eq!(key_form(r#"{"params":{}}"#), KeyForm::Omitted);
    assert_eq!(key_form(&probe("null")), KeyForm::Omitted);
    assert_eq!(key_form(&probe(r#""a""#)), KeyForm::Valid);
    assert_eq!(
        key_form(&probe(&format!("\"{}\"", "é".repeat(255)))),
        KeyForm::Valid
    );
    assert_eq!(
        key_form(&probe(&format!("\"{}😀\"", "d".repeat(254)))),
        KeyForm::Valid
    );
    for bad in [
        r#""""#.to_string(),
        format!("\"{}\"", "é".repeat(256)),
        "1".into(),
        "true".into(),
        "{}".into(),
        "[]".into(),
    ] {
        assert!(
            matches!(key_form(&probe(&bad)), KeyForm::Malformed(_)),
            "{bad}"
        );
    }
    assert_eq!(key_form(&probe(r#""\ud800""#)), KeyForm::NotJson);
    // K1: a null key alone is no key; with an empty prompt the -32602 may be about that.
    let full = r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"x"}],"idempotencyKey":null}}"#;
    assert!(acp_chaos::checkers::p05_key_validation::null_key_alone(
        full
    ));
    assert!(!acp_chaos::checkers::p05_key_validation::null_key_alone(
        &probe("null")
    ));
    assert!(!acp_chaos::checkers::p05_key_validation::null_key_alone(
        &full.replace("null", r#""a""#)
    ));
    assert!(!acp_chaos::checkers::p05_key_validation::null_key_alone(
        &full.replace(r#","idempotencyKey":null"#, "")
    ));
    // Anything else that may be wrong: the -32602 may be about it.
    let block = r#"{"type":"text","text":"x"}"#;
    assert!(!acp_chaos::checkers::p05_key_validation::null_key_alone(
        &full.replace(block, "42")
    ));
    assert!(!acp_chaos::checkers::p05_key_validation::null_key_alone(
        &full.replace("null}", r#"null,"messageId":5}"#)
    ));
    assert_eq!(key_form("{\"jsonrpc\":"), KeyForm::NotJson);
}
