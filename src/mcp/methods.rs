//! Every MCP method name rootfence routes on, across all supported revisions.

/// Lifecycle (2024-11-05 to 2025-11-25).
pub const INITIALIZE: &str = "initialize";
/// Lifecycle notification (2024-11-05 to 2025-11-25).
pub const INITIALIZED: &str = "notifications/initialized";
/// Stateless discovery (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// Liveness check (removed in 2026-07-28).
pub const PING: &str = "ping";

/// Cancellation of an in-flight request, either direction.
pub const CANCELLED: &str = "notifications/cancelled";
/// Progress of an in-flight request, either direction.
pub const PROGRESS: &str = "notifications/progress";

/// Server → host: the host's roots (deprecated in 2026-07-28, where it only appears inside
/// `inputRequests`).
pub const ROOTS_LIST: &str = "roots/list";
/// Host → server: the roots changed (removed in 2026-07-28).
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// Resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// Resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Read one resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Subscribe to one resource (up to 2025-11-25).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Unsubscribe from one resource (up to 2025-11-25).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Server → host: a subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Server → host: the resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// Server → host: the tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Server → host: the prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Host → server: the level of `notifications/message` (removed in 2026-07-28).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Subscriptions in 2026-07-28 (replaces subscribe/unsubscribe).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// Tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// Prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Get a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Argument completion.
pub const COMPLETION_COMPLETE: &str = "completion/complete";

/// Server → host: sampling (deprecated in 2026-07-28).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server → host: elicitation.
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// Tasks (2025-11-25): the deferred result of a task-augmented request.
pub const TASKS_RESULT: &str = "tasks/result";
