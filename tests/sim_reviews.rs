//! TokenReview and SubjectAccessReview on the simulated API server against the real server's
//! answers (exchanges 86–92): the same statuses for the same questions.

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

#[tokio::test]
async fn reviews_answer_as_the_real_server_does() {
    let scraper = "system:serviceaccount:capture-authn:scraper";
    let server = start(
        SimConfig::default()
            .with_token("admin-token")
            .allowing(scraper, &["/metrics"]),
    )
    .await;
    let post = |path: &str, body: Value| {
        client()
            .post(url(&server, path))
            .bearer_auth("admin-token")
            .json(&body)
    };

    // Exchange 86: the server's own (static) token is admin's, of system:masters.
    let mut review = exchange("86-")["request"]["body"].clone();
    review["spec"]["token"] = json!("admin-token");
    let (code, answer) = send(post(TOKEN_REVIEWS, review)).await;
    assert_eq!(code, 201);
    assert_eq!(answer["status"], captured_body("86-")["status"]);
    // Exchange 88: a token nobody has.
    let (code, answer) = send(post(
        TOKEN_REVIEWS,
        exchange("88-")["request"]["body"].clone(),
    ))
    .await;
    assert_eq!(code, 201);
    assert_eq!(answer["status"], captured_body("88-")["status"]);
    assert_eq!(answer["spec"], captured_body("88-")["spec"]);

    // Exchanges 90-92: the same questions, the same answers (RBAC's reason text aside).
    for prefix in ["90-", "91-", "92-"] {
        let (code, answer) = send(post(
            ACCESS_REVIEWS,
            exchange(prefix)["request"]["body"].clone(),
        ))
        .await;
        assert_eq!(code, 201, "{prefix}");
        assert_eq!(
            answer["status"]["allowed"],
            captured_body(prefix)["status"]["allowed"],
            "{prefix}"
        );
    }
    // Exchange 89 was asked before the role was bound: the unbound service account.
    let mut unbound = exchange("89-")["request"]["body"].clone();
    unbound["spec"]["user"] = json!("system:serviceaccount:capture-authn:other");
    let (_, answer) = send(post(ACCESS_REVIEWS, unbound)).await;
    assert_eq!(answer["status"], captured_body("89-")["status"]);
}
