use agent_client_protocol_schema::v2::*;
fn main() {
    let p = |s: &str, v: serde_json::Value| println!("{s}: {}", v);
    p(
        "permresp",
        serde_json::to_value(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new("allow")),
        ))
        .unwrap(),
    );
    p(
        "permcancel",
        serde_json::to_value(RequestPermissionResponse::new(
            RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new()),
        ))
        .unwrap(),
    );
    p(
        "perm",
        serde_json::to_value(RequestPermissionRequest::new(
            "s1",
            "run tool",
            vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
        ))
        .unwrap(),
    );
    p(
        "status",
        serde_json::to_value(
            SessionStatusResponse::new(SessionStatus::Open)
                .state(StateUpdate::Idle(IdleStateUpdate::new())),
        )
        .unwrap(),
    );
    p(
        "cfg",
        serde_json::to_value(SetSessionConfigOptionResponse::new(vec![
            SessionConfigOption::boolean("autosave", "Autosave", true),
        ]))
        .unwrap(),
    );
    p(
        "tool",
        serde_json::to_value(SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new("t1")
                .title("write file")
                .status(ToolCallStatus::Completed),
        ))
        .unwrap(),
    );
    let r = ClientRequest::from_method_and_params(
        "session/set_config_option",
        &serde_json::json!({"sessionId":"s","configId":"autosave","value":true}),
    );
    println!("{:?}", r.map(|_| ()).map_err(|e| e.to_string()));
    let r = ClientRequest::from_method_and_params(
        "session/set_config_option",
        &serde_json::json!({"sessionId":"s","configId":"autosave","value":{"type":"boolean","value":true}}),
    );
    println!("{:?}", r.map(|_| ()).map_err(|e| e.to_string()));
}
