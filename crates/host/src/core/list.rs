//! What the host shows of its table and servers: the model's view of the
//! tools (least privilege: no denied tools, only approved definitions),
//! the full view for people, and the servers' live status.

use serde::Serialize;
use serde_json::json;
use switchboard_wire::JsonObject;

use super::{Host, ModelTool, ServerStatus, ToolStatus};
use crate::gate::Verdict;
use crate::pins::PinState;
use crate::sanitize;
use crate::table::{TableEntry, model_view_within};

/// The title a tool gets while its definition differs from the approved
/// one, after its name.
pub const CHANGED_TITLE: &str = "(changed since approval — not yet reviewed)";

/// One server's state, for a model or a status page: what
/// [`Host::outage_text`] says, per server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerState {
    /// The alias.
    pub alias: String,
    /// Up, down, tripped, needs login or disabled.
    pub status: ServerStatus,
    /// Why it is not up. What it quotes from the server is inside boundary
    /// markers naming the server, cleaned of invisible characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tools it contributes to the table.
    pub tools: usize,
}

impl Host {
    /// The tools the model sees, in name order, under least privilege:
    /// - a tool the permission rules deny is left out (called by name
    ///   anyway, the gate still refuses it), and so is one its server added
    ///   after its first mount, until accepted (`"newTools": "ask"`; called
    ///   by name anyway, the gate asks);
    /// - a tool whose definition changed since it was pinned is shown with
    ///   its *approved* description, input schema and annotations, and a
    ///   title saying it changed ([`CHANGED_TITLE`]), until `pins accept`;
    ///   when the lockfile keeps only its hash, with a neutral description
    ///   saying it must be reviewed and an open schema. The new text never
    ///   reaches the model.
    ///
    /// [`Host::all_tools`] is the full list, for people. Servers whose
    /// listing's `ttlMs` has passed are refreshed in the background;
    /// [`Host::subscribe`] reports the result.
    pub fn tools(&self) -> Vec<ModelTool> {
        self.tool_list(true)
    }

    /// Every tool of the table, denied ones included, each with the
    /// definition its server serves now (a changed one's description
    /// starts with a notice): for people reviewing the table (`tools
    /// --all`, `eval --against-pins`), never for a model.
    pub fn all_tools(&self) -> Vec<ModelTool> {
        self.tool_list(false)
    }

    /// Each configured server's state, in config order, with a reason fit
    /// for a model (the `switchboard://status` resource of the gateway).
    pub fn status(&self) -> Vec<ServerState> {
        let table = self.table();
        self.upstreams()
            .iter()
            .map(|s| {
                let status = self.status_of(s);
                ServerState {
                    alias: s.alias().to_owned(),
                    status,
                    reason: self.reason(s, status).map(|r| r.for_model(s.alias())),
                    tools: table.of(s.alias()).count(),
                }
            })
            .collect()
    }

    /// [`Host::status`] for a gateway's caller: only the servers
    /// `principal` may reach ([`Host::principal_may_reach`]; every server
    /// for `None`, a caller that did not authenticate), and each reason
    /// only the kind of outage in fixed words ("the process exited",
    /// "needs login", "it refused the gateway's credentials"): what a
    /// server prints on stderr or answers can hold its secrets, and is for
    /// the people running the gateway (`switchboard servers`, the log).
    pub fn status_for(&self, principal: Option<&str>) -> Vec<ServerState> {
        let table = self.table();
        self.upstreams()
            .iter()
            .filter(|s| principal.is_none_or(|p| self.principal_may_reach(p, s.alias())))
            .map(|s| {
                let status = self.status_of(s);
                ServerState {
                    alias: s.alias().to_owned(),
                    status,
                    reason: self.caller_reason(s, status),
                    tools: table.of(s.alias()).count(),
                }
            })
            .collect()
    }

    fn tool_list(&self, for_model: bool) -> Vec<ModelTool> {
        self.wake_stale();
        let table = self.table();
        let config = self.config_read();
        table
            .entries()
            .iter()
            .filter_map(|e| {
                let pin = self.pin_of(e, config.new_tools);
                let gate = self.listed_verdict(&config.rules, e, &pin);
                // Least privilege: neither a denied tool nor a new one not
                // accepted yet (`"newTools": "ask"`) is offered.
                if for_model && (gate == Verdict::Deny || pin == PinState::New) {
                    return None;
                }
                let status = ToolStatus {
                    gate,
                    pin: pin.as_str(),
                    server: self.server_status_of(e),
                };
                Some(match pin {
                    PinState::Changed { .. } if for_model => self.approved_view(e, status),
                    PinState::Changed { .. } => ModelTool {
                        description: format!("{CHANGED_NOTICE} {}", e.description),
                        ..served(e, status)
                    },
                    _ => served(e, status),
                })
            })
            .collect()
    }

    /// A changed tool as the model sees it: the approved definition, or a
    /// neutral one when only the hash was recorded.
    fn approved_view(&self, e: &TableEntry, status: ToolStatus) -> ModelTool {
        let title = Some(format!(
            "{} {CHANGED_TITLE}",
            sanitize::inline_name(&e.tool.name)
        ));
        let (description, input_schema, annotations) = match self
            .inner
            .pins
            .approved(&e.alias, &e.tool.name)
        {
            Some(approved) => {
                let (description, schema) =
                    model_view_within(&e.alias, &approved, e.description_cap);
                (
                    format!("{CHANGED_NOTICE} {description}"),
                    schema,
                    approved.annotations,
                )
            }
            None => (
                format!(
                    "[from {}] This tool's definition changed since the user approved it, and the approved \
                         text is not on record: the user must review it (`switchboard pins accept`) before its \
                         description is shown. Calls ask the user first.",
                    e.alias
                ),
                open_schema(),
                None,
            ),
        };
        ModelTool {
            description,
            input_schema,
            title,
            annotations,
            // Not covered by the pin: not shown until reviewed.
            output_schema: None,
            ..served(e, status)
        }
    }
}

/// What a changed tool's description starts with (then a space).
pub const CHANGED_NOTICE: &str =
    "[changed since the user approved it: the user will be asked before it runs]";

/// A tool as its server serves it now.
fn served(e: &TableEntry, status: ToolStatus) -> ModelTool {
    ModelTool {
        name: e.local_name.clone(),
        description: e.description.clone(),
        input_schema: e.input_schema.clone(),
        output_schema: e.tool.output_schema.clone(),
        server: e.alias.clone(),
        original_name: e.tool.name.clone(),
        title: e.title.clone(),
        annotations: e.tool.annotations.clone(),
        deprecation: e.tool.deprecation(),
        status,
    }
}

/// A schema that accepts any arguments object.
fn open_schema() -> JsonObject {
    match json!({"type": "object"}) {
        serde_json::Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}
