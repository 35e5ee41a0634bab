//! The fixtures of the suite's tasks-extension scenarios (`tasks-*`,
//! SEP-2663; names are the suite's).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use switchboard_server::{
    Context, Elicitation, HandlerError, InputRequired, Outcome, ServerBuilder, TaskContext,
    TaskSupport, ToolResult, ToolSpec,
};

use crate::fixtures::{accepted_string, name_form};

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds (0 finishes at once).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

/// Registers the tasks fixtures.
pub(crate) fn tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        "greet",
        "Greets someone at once (never a task)",
        |a: GreetArgs| async move { format!("Hello, {}!", a.name) },
    )
    .task_tool(
        "slow_compute",
        "Works for `seconds` seconds as a task, reporting its progress, then answers",
        slow_compute,
    )
    .task_tool_spec(
        ToolSpec::new("failing_job")
            .description("A task that always ends with a tool error after about a second")
            .task_support(TaskSupport::Required),
        |_: switchboard_server::NoArgs, _task: TaskContext| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err::<String, _>(HandlerError::msg(
                "the job failed: the input could not be processed",
            ))
        },
    )
    .task_tool(
        "protocol_error_job",
        "A task that ends with a protocol (JSON-RPC) error",
        |_: switchboard_server::NoArgs, _task: TaskContext| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err::<String, _>(HandlerError::internal("the job crashed"))
        },
    )
    .task_tool(
        "confirm_delete",
        "A task that asks the user to confirm before deleting a file",
        confirm_delete,
    )
    .task_tool(
        "multi_input",
        "A task that asks two questions at once",
        multi_input,
    )
    .tool_spec(
        ToolSpec::new("test_tool_with_task")
            .description("Asks for a name (multi round-trip), then greets as a task")
            .task_support(TaskSupport::Required),
        tool_with_task,
    )
}

async fn slow_compute(args: SlowArgs, task: TaskContext) -> Result<String, HandlerError> {
    let label = args.label.unwrap_or_else(|| "job".into());
    let total = Duration::try_from_secs_f64(args.seconds.max(0.0))
        .map_err(|e| HandlerError::invalid_params(format!("seconds: {e}")))?;
    let step = Duration::from_millis(250);
    let mut done = Duration::ZERO;
    while done < total {
        task.set_status(format!(
            "{label}: {}ms of {}ms",
            done.as_millis(),
            total.as_millis()
        ));
        let next = step.min(total - done);
        tokio::time::sleep(next).await;
        done += next;
    }
    Ok(format!("{label} computed after {}s", args.seconds))
}

async fn confirm_delete(args: DeleteArgs, task: TaskContext) -> Result<String, HandlerError> {
    task.set_status(format!(
        "waiting for confirmation to delete {}",
        args.filename
    ));
    let answers = task
        .ask(InputRequired::new().elicit(
            "confirm",
            Elicitation::form(
                format!("Delete {}?", args.filename),
                json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}),
            ),
        ))
        .await?;
    let confirmed = answers
        .elicitation("confirm")?
        .and_then(|r| {
            r.accepted()
                .and_then(|c| c.get("confirm"))
                .and_then(serde_json::Value::as_bool)
        })
        .unwrap_or(false);
    Ok(if confirmed {
        format!("Deleted {}", args.filename)
    } else {
        format!("Kept {}", args.filename)
    })
}

async fn multi_input(
    _: switchboard_server::NoArgs,
    task: TaskContext,
) -> Result<String, HandlerError> {
    let answers = task
        .ask(
            InputRequired::new()
                .elicit("first", name_form("First name?"))
                .elicit("second", name_form("Second name?")),
        )
        .await?;
    let first = answers
        .elicitation("first")?
        .map(|r| accepted_string(&r, "name"));
    let second = answers
        .elicitation("second")?
        .map(|r| accepted_string(&r, "name"));
    Ok(format!(
        "Got {} and {}",
        first.unwrap_or_default(),
        second.unwrap_or_default()
    ))
}

async fn tool_with_task(ctx: Context) -> ToolResult {
    let Some(answer) = ctx.input().elicitation("user_name")? else {
        return Ok(InputRequired::new()
            .elicit("user_name", name_form("What is your name?"))
            .into());
    };
    let name = accepted_string(&answer, "name");
    Ok(Outcome::task(move |task: TaskContext| async move {
        task.set_status("preparing the greeting");
        tokio::time::sleep(Duration::from_millis(300)).await;
        format!("Hello, {name}!")
    }))
}
