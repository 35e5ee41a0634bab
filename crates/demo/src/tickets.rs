//! The `tickets` demo server (Streamable HTTP): an in-memory ticket queue.
//!
//! Tools: `search` (the same name as the notes server's, so the host's
//! namespacing shows), `get_ticket`, `create_ticket` (state-changing; when
//! the priority is missing and the client can elicit, it asks the user for
//! one with a form) and
//! [`NON_ASCII_TOOL`], whose name needs the `=?base64?…?=` header encoding
//! and the host's name sanitising, and `export_tickets`, a task (the tasks
//! extension) that works a few seconds, reports its status and can be
//! cancelled, and `summarize_ticket`, which asks the client's model for
//! a summary (sampling). `search` sends one
//! `notifications/progress` (when the request carries a progress token)
//! before its result. The framework's HTTP runner checks that the mirrored
//! `Mcp-*` headers agree with the body (400 and -32020 when not).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use switchboard_server::http::HttpOptions;
use switchboard_server::{
    BuildError, CallToolResult, Context, ElicitAction, Elicitation, HandlerError, InputRequired,
    Sampling, Server, TaskContext, ToolAnnotations, ToolResult, ToolSpec,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::DemoError;
use crate::search::{Words, answer};

/// The port the demo uses when it is free.
pub const DEFAULT_PORT: u16 = 3115;

/// The tool whose name is not ASCII.
pub const NON_ASCII_TOOL: &str = "résumé";

/// How long `search` works between its progress notification and its
/// result, so a progress bar has something to show.
pub const SEARCH_PAUSE: Duration = Duration::from_millis(300);

/// How long `export_tickets` works on each ticket.
pub const EXPORT_STEP: Duration = Duration::from_millis(700);

/// A ticket's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Whenever someone gets to it.
    Low,
    /// This week.
    Normal,
    /// Someone is blocked now.
    High,
}

impl Priority {
    fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
        }
    }
}

/// One ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// `T-1`, `T-2`, …
    pub id: String,
    /// One line.
    pub title: String,
    /// Low, normal or high.
    pub priority: Priority,
    /// Whether it is still open.
    pub open: bool,
    /// More words.
    pub description: String,
}

impl Ticket {
    fn line(&self) -> String {
        format!(
            "{} [{}{}] {}",
            self.id,
            self.priority.as_str(),
            if self.open { "" } else { ", closed" },
            self.title
        )
    }
}

/// The tickets every server starts with.
pub fn seed() -> Vec<Ticket> {
    let t = |id: &str, title: &str, priority, open, description: &str| Ticket {
        id: id.into(),
        title: title.into(),
        priority,
        open,
        description: description.into(),
    };
    vec![
        t(
            "T-1",
            "Printer on floor 3 jams",
            Priority::High,
            true,
            "Jams on every duplex job since Monday.",
        ),
        t(
            "T-2",
            "VPN drops every hour",
            Priority::Normal,
            true,
            "Reconnecting works; happens on the office network only.",
        ),
        t(
            "T-3",
            "Coffee machine needs descaling",
            Priority::Low,
            false,
            "Done by facilities.",
        ),
    ]
}

/// The server, with the [`seed`] tickets in memory.
///
/// # Errors
/// [`BuildError`] only if a tool definition is invalid (a bug).
pub fn server() -> Result<Server, BuildError> {
    let db: Db = Arc::new(Mutex::new(seed()));
    let (d1, d2, d3, d4, d5, d6) = (
        db.clone(),
        db.clone(),
        db.clone(),
        db.clone(),
        db.clone(),
        db,
    );
    Server::builder("tickets-demo", crate::VERSION)
        .title("Switchboard tickets demo")
        .instructions("A ticket queue. Search tickets, read one, or open a new one.")
        .tool_spec(
            ToolSpec::new("search").description(
                "Searches tickets (title and description, case-insensitive). Reports progress.",
            ),
            move |args: SearchArgs, ctx: Context| {
                let db = d1.clone();
                async move { search(&db, args, ctx).await }
            },
        )
        .tool_spec(
            ToolSpec::new("get_ticket").description("Returns one ticket by id, e.g. T-1."),
            move |args: GetArgs| {
                let db = d2.clone();
                async move { get_ticket(&db, &args.id) }
            },
        )
        .tool_spec(
            ToolSpec::new("create_ticket")
                .description(
                    "Opens a new ticket and returns its id. Without a priority, the user is asked for one \
                     (when the client can ask), else it is normal.",
                )
                .annotations(ToolAnnotations {
                    read_only_hint: Some(false),
                    destructive_hint: Some(false),
                    idempotent_hint: Some(false),
                    ..ToolAnnotations::default()
                }),
            move |args: CreateArgs, ctx: Context| {
                let db = d3.clone();
                async move { create_asking(&db, args, &ctx) }
            },
        )
        .tool_spec(
            ToolSpec::new(NON_ASCII_TOOL)
                .description("A one-paragraph summary (résumé) of the open tickets."),
            move || {
                let db = d4.clone();
                async move { summary(&db) }
            },
        )
        .tool_spec(
            ToolSpec::new("summarize_ticket")
                .description(
                    "Summarizes one ticket in a sentence or two, written by the client's model (sampling).",
                )
                .annotations(ToolAnnotations {
                    read_only_hint: Some(true),
                    ..ToolAnnotations::default()
                }),
            move |args: GetArgs, ctx: Context| {
                let db = d6.clone();
                async move { summarize_ticket(&db, &args.id, &ctx) }
            },
        )
        .task_tool_spec(
            ToolSpec::new("export_tickets").description(
                "Exports every ticket as CSV. Runs as a task of a few seconds that reports its progress and can be cancelled.",
            ),
            move |_: switchboard_server::NoArgs, task: TaskContext| {
                let db = d5.clone();
                async move { export(&db, &task).await }
            },
        )
        .task_options(Duration::from_secs(600), Duration::from_millis(200))
        .build()
}

/// A tickets server running in this process.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its MCP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops it and waits until it has stopped (open connections get a
    /// short grace period). Dropping the handle stops it without waiting.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `addr` and serves the tickets demo on it (endpoint `/mcp`) in a
/// background task until the returned handle is stopped or dropped.
///
/// # Errors
/// [`DemoError::Serve`] when the address cannot be bound (e.g. the port is
/// taken).
pub async fn start(addr: SocketAddr) -> Result<Running, DemoError> {
    let listener =
        TcpListener::bind(addr)
            .await
            .map_err(|source| switchboard_server::ServeError::Bind {
                addr: addr.to_string(),
                source,
            })?;
    start_on(listener)
}

/// Serves the tickets demo on an already bound listener.
///
/// # Errors
/// [`DemoError`] when the listener's address cannot be read.
pub fn start_on(listener: TcpListener) -> Result<Running, DemoError> {
    let addr = listener
        .local_addr()
        .map_err(|source| switchboard_server::ServeError::Io {
            context: "cannot read the tickets listener's address",
            source,
        })?;
    let server = server().map_err(|source| DemoError::Build {
        server: "tickets",
        source,
    })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let options = HttpOptions::new().shutdown_grace(Duration::from_secs(2));
    let task = tokio::spawn(async move {
        let shutdown = async {
            // A dropped sender stops the server too.
            let _ = stopped.await;
        };
        if let Err(e) = switchboard_server::http::serve(server, listener, options, shutdown).await {
            tracing::warn!(error = %e, "the tickets demo server stopped");
        }
    });
    Ok(Running {
        addr,
        stop: Some(stop),
        task: Some(task),
    })
}

type Db = Arc<Mutex<Vec<Ticket>>>;

fn lock(db: &Db) -> std::sync::MutexGuard<'_, Vec<Ticket>> {
    db.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// Words to look for; a ticket matches when it contains every word.
    query: String,
}

/// Arguments of `get_ticket`.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetArgs {
    /// The ticket's id, e.g. `T-1`.
    id: String,
}

/// Arguments of `create_ticket`.
#[derive(Debug, Deserialize, JsonSchema)]
struct CreateArgs {
    /// One line saying what is wrong.
    title: String,
    /// How urgent it is (default `normal`).
    #[serde(default)]
    priority: Option<Priority>,
    /// More detail.
    #[serde(default)]
    description: Option<String>,
}

async fn search(db: &Db, args: SearchArgs, ctx: Context) -> Result<String, HandlerError> {
    let words = Words::of(&args.query)?;
    let total = lock(db).len();
    ctx.progress(1.0, Some(2.0), Some(&format!("searching {total} tickets")))
        .await;
    tokio::select! {
        () = tokio::time::sleep(SEARCH_PAUSE) => {}
        () = ctx.cancelled() => return Err(HandlerError::msg("The search was cancelled.")),
    }
    let hits: Vec<String> = lock(db)
        .iter()
        .filter(|t| words.match_in(&t.title, &t.description))
        .map(Ticket::line)
        .collect();
    Ok(answer("ticket", &args.query, &hits))
}

fn get_ticket(db: &Db, id: &str) -> Result<String, HandlerError> {
    let tickets = lock(db);
    match tickets.iter().find(|t| t.id.eq_ignore_ascii_case(id)) {
        Some(t) => Ok(format!("{}\n{}", t.line(), t.description)),
        None => Err(HandlerError::msg(format!(
            "There is no ticket {id:?}. Known tickets: {}.",
            tickets
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The sampling key of the summary.
const SUMMARY_KEY: &str = "summary";

/// `summarize_ticket`: asks the client's model for a summary (sampling),
/// then returns it; a client that cannot sample gets an error saying what
/// to do instead.
fn summarize_ticket(db: &Db, id: &str, ctx: &Context) -> ToolResult {
    let ticket = get_ticket(db, id)?;
    if !ctx.client_capabilities().supports_sampling() {
        return Err(HandlerError::msg(
            "summarize_ticket needs a client that can sample (ask its model); this one cannot. \
             Use get_ticket and summarize the text yourself.",
        ));
    }
    match ctx.input().sampling(SUMMARY_KEY)? {
        Some(m) => Ok(CallToolResult::text(format!(
            "Summary of {}, written by the client's model {}:\n{}",
            id.to_uppercase(),
            m.model,
            m.text()
        ))
        .into()),
        None => Ok(InputRequired::new()
            .sample(
                SUMMARY_KEY,
                Sampling::prompt(
                    format!("Summarize this ticket in one or two sentences.\n\n{ticket}"),
                    200,
                )
                .system_prompt("You write short, factual summaries."),
            )
            .into()),
    }
}

/// The elicitation key of the priority question.
const PRIORITY_KEY: &str = "priority";

/// `create_ticket`: a missing priority is asked for by elicitation when the
/// client declared form elicitation (a decline or cancel creates nothing),
/// and is `normal` otherwise.
fn create_asking(db: &Db, mut args: CreateArgs, ctx: &Context) -> ToolResult {
    if args.title.trim().is_empty() {
        return Err(HandlerError::msg(
            "The title is empty. Say in one line what is wrong.",
        ));
    }
    if args.priority.is_none() && ctx.client_capabilities().supports_elicitation_form() {
        let Some(answer) = ctx.input().elicitation(PRIORITY_KEY)? else {
            return Ok(InputRequired::new()
                .elicit(PRIORITY_KEY, priority_form(args.title.trim()))
                .into());
        };
        match answer.action {
            ElicitAction::Accept => {
                let chosen: Option<PriorityAnswer> =
                    answer.content_as().map_err(HandlerError::invalid_params)?;
                args.priority = chosen.map(|c| c.priority);
            }
            ElicitAction::Decline => {
                return Err(HandlerError::msg(
                    "No ticket was created: the user declined to give a priority.",
                ));
            }
            ElicitAction::Cancel => {
                return Err(HandlerError::msg(
                    "No ticket was created: the user cancelled the priority question.",
                ));
            }
        }
    }
    create_ticket(db, args).map(|text| CallToolResult::text(text).into())
}

/// The form asking for a ticket's priority.
fn priority_form(title: &str) -> Elicitation {
    Elicitation::form(
        format!("Which priority should the new ticket {title:?} have?"),
        json!({
            "type": "object",
            "properties": {
                "priority": {
                    "type": "string",
                    "title": "Priority",
                    "description": "How urgent it is",
                    "enum": ["low", "normal", "high"],
                    "default": "normal"
                }
            },
            "required": ["priority"]
        }),
    )
}

/// The answer to [`priority_form`].
#[derive(Debug, Deserialize)]
struct PriorityAnswer {
    priority: Priority,
}

fn create_ticket(db: &Db, args: CreateArgs) -> Result<String, HandlerError> {
    let title = args.title.trim();
    if title.is_empty() {
        return Err(HandlerError::msg(
            "The title is empty. Say in one line what is wrong.",
        ));
    }
    let mut tickets = lock(db);
    let ticket = Ticket {
        id: format!("T-{}", tickets.len() + 1),
        title: title.to_owned(),
        priority: args.priority.unwrap_or(Priority::Normal),
        open: true,
        description: args.description.unwrap_or_default(),
    };
    let line = ticket.line();
    tickets.push(ticket);
    Ok(format!("Created {line}"))
}

async fn export(db: &Db, task: &TaskContext) -> String {
    let tickets: Vec<Ticket> = lock(db).clone();
    let mut csv = String::from("id,priority,open,title\n");
    for (i, t) in tickets.iter().enumerate() {
        task.set_status(format!("exporting ticket {} of {}", i + 1, tickets.len()));
        tokio::time::sleep(EXPORT_STEP).await;
        csv.push_str(&format!(
            "{},{},{},\"{}\"\n",
            t.id,
            t.priority.as_str(),
            t.open,
            t.title.replace('"', "\"\"")
        ));
    }
    task.set_status("done");
    csv
}

fn summary(db: &Db) -> String {
    let tickets = lock(db);
    let open: Vec<String> = tickets
        .iter()
        .filter(|t| t.open)
        .map(Ticket::line)
        .collect();
    format!(
        "{NON_ASCII_TOOL}: {} open ticket(s) of {}: {}",
        open.len(),
        tickets.len(),
        open.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_build_and_create() {
        server().unwrap();
        let db: Db = Arc::new(Mutex::new(seed()));
        let text = create_ticket(
            &db,
            CreateArgs {
                title: "Door squeaks".into(),
                priority: Some(Priority::Low),
                description: None,
            },
        )
        .unwrap();
        assert_eq!(text, "Created T-4 [low] Door squeaks");
        assert!(get_ticket(&db, "t-4").unwrap().contains("Door squeaks"));
        assert!(get_ticket(&db, "T-99").is_err());
        assert!(
            create_ticket(
                &db,
                CreateArgs {
                    title: " ".into(),
                    priority: None,
                    description: None
                }
            )
            .is_err()
        );
        assert!(summary(&db).starts_with("résumé: 3 open ticket(s) of 4"));
    }
}
