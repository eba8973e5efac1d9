use crate::testkit::TestServer;

#[test]
fn eval_basics() {
    TestServer::new().transcript(
        r#"
        > EVAL "return 'hello'" 0
        "hello"
        "#,
    );
}
