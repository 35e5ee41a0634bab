//! Method names of 2026-07-28 (client requests, notifications, input
//! requests).

/// Discovery of versions and capabilities.
pub const DISCOVER: &str = "server/discover";
/// List tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// List resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// List resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Read a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// List prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Get a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Argument completion.
pub const COMPLETE: &str = "completion/complete";
/// Open a notification stream.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Progress about a request.
pub const PROGRESS: &str = "notifications/progress";
/// A log message (deprecated feature).
pub const MESSAGE: &str = "notifications/message";
/// Cancellation (stdio client → server; listen teardown server → client).
pub const CANCELLED: &str = "notifications/cancelled";
/// First message of a listen stream.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// The tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// The resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// A subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Input request: ask the user.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// Input request: ask the client's model.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Input request: ask for the client's roots.
pub const ROOTS_LIST: &str = "roots/list";
/// Legacy (2025-11-25) handshake.
pub const INITIALIZE: &str = "initialize";
/// Legacy (2025-11-25) handshake completion notification.
pub const INITIALIZED: &str = "notifications/initialized";
/// Legacy (2025-11-25) liveness check.
pub const PING: &str = "ping";
/// Legacy (2025-11-25) log level setting.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Legacy (2025-11-25) resource subscription.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Legacy (2025-11-25) resource unsubscription.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

/// Methods 2026-07-28 removed; a modern server answers them 404/-32601.
pub const REMOVED: &[&str] = &[
    INITIALIZE,
    PING,
    LOGGING_SET_LEVEL,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
];

/// Whether results of `method` may be `input_required` (MRTR-02).
pub fn allows_input_required(method: &str) -> bool {
    matches!(
        method,
        TOOLS_CALL | RESOURCES_READ | PROMPTS_GET | "tasks/result"
    )
}
