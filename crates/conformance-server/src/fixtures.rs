//! The tools, prompts and resources the official conformance suite calls
//! (names are the suite's), built on switchboard-server like any server.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_server::{
    CallToolResult, CompleteRequest, ContentBlock, Context, Elicitation, HandlerError,
    InputRequired, LoggingLevel, PromptResult, PromptSpec, ResourceContents, ResourceSpec,
    Sampling, Server, ServerBuilder, TemplateMatch, TemplateSpec, ToolResult, ToolSpec,
    blob_contents, text_contents, user,
};

/// The tool `test_trigger_tool_change` adds and removes.
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt `test_trigger_prompt_change` adds and removes.
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Removes [`DYNAMIC_TOOL`], or adds it when absent: a real change of the
/// list (the server framework tells listen streams), so a proxy that
/// re-lists sees one too.
fn toggle_dynamic_tool(server: &Server) -> Result<&'static str, HandlerError> {
    if !server.remove_tool(DYNAMIC_TOOL) {
        let spec = ToolSpec::new(DYNAMIC_TOOL).description("Added by test_trigger_tool_change");
        server
            .add_tool(spec, || async { "dynamic tool" })
            .map_err(|e| HandlerError::msg(e.to_string()))?;
    }
    Ok("tools/list_changed sent")
}

/// [`toggle_dynamic_tool`] for [`DYNAMIC_PROMPT`].
fn toggle_dynamic_prompt(server: &Server) -> Result<&'static str, HandlerError> {
    if !server.remove_prompt(DYNAMIC_PROMPT) {
        let spec =
            PromptSpec::new(DYNAMIC_PROMPT).description("Added by test_trigger_prompt_change");
        server
            .add_prompt(spec, || async {
                vec![user(ContentBlock::text("A prompt added while running."))]
            })
            .map_err(|e| HandlerError::msg(e.to_string()))?;
    }
    Ok("prompts/list_changed sent")
}

/// A 1×1 PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A silent WAV.
pub(crate) const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// Builds the conformance server.
pub(crate) fn server(legacy: bool, skills_dir: Option<&std::path::Path>) -> anyhow::Result<Server> {
    let b = Server::builder("switchboard-conformance-server", env!("CARGO_PKG_VERSION"))
        .instructions("Fixtures for the MCP conformance suite.")
        .logging(true)
        .legacy(legacy);
    let b = tools(b);
    let b = input_tools(b);
    let b = crate::tasks::tools(b);
    let b = prompts(b);
    let b = resources(b);
    let b = crate::skills::skills(b, skills_dir);
    Ok(b.completion(complete).build()?)
}

fn embedded() -> ContentBlock {
    ContentBlock::resource(text_contents(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// Region to run in; mirrored into the Mcp-Param-Region header.
    region: String,
}

fn tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        "test_simple_text",
        "Returns one text item",
        || async { "This is a simple text response for testing." },
    )
    .tool("test_image_content", "Returns one PNG image", || async {
        vec![ContentBlock::image(PNG, "image/png")]
    })
    .tool("test_audio_content", "Returns one WAV clip", || async {
        vec![ContentBlock::audio(WAV, "audio/wav")]
    })
    .tool(
        "test_embedded_resource",
        "Returns an embedded resource",
        || async { vec![embedded()] },
    )
    .tool(
        "test_multiple_content_types",
        "Returns text, an image and an embedded resource",
        || async {
            vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                embedded(),
            ]
        },
    )
    .tool(
        "test_error_handling",
        "Always fails with a tool error",
        || async {
            Err::<String, _>(HandlerError::msg(
                "This tool intentionally returns an error for testing",
            ))
        },
    )
    .tool(
        "test_tool_with_progress",
        "Reports progress 0, 50, 100 of 100",
        |ctx: Context| async move {
            for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.progress(p, Some(100.0), Some("working")).await;
            }
            "Progress test completed"
        },
    )
    .tool(
        "test_missing_capability",
        "Needs the sampling capability",
        missing_capability,
    )
    .tool(
        "test_streaming_elicitation",
        "Asks for the user's name through an input_required result, never a request on the stream",
        streaming_elicitation,
    )
    .tool("test_logging_tool", "Logs three messages at info", log_three)
    .tool("test_tool_with_logging", "Logs three messages at info", log_three)
    .tool(
        "test_trigger_tool_change",
        "Changes the tool list (adds test_dynamic_tool, or removes it when there); listen streams are told",
        |ctx: Context| async move { toggle_dynamic_tool(ctx.server()) },
    )
    .tool(
        "test_trigger_prompt_change",
        "Changes the prompt list (adds test_dynamic_prompt, or removes it when there); listen streams are told",
        |ctx: Context| async move { toggle_dynamic_prompt(ctx.server()) },
    )
    .tool(
        "test_sampling",
        "Asks the client's model to answer a prompt",
        sampling,
    )
    .tool(
        "test_elicitation",
        "Asks the user for a username and an email address",
        elicitation,
    )
    .tool(
        "test_elicitation_sep1034_defaults",
        "Asks for a form whose fields all have defaults",
        |ctx: Context| async move { elicit_once(&ctx, defaults_form()) },
    )
    .tool(
        "test_elicitation_sep1330_enums",
        "Asks for a form with every kind of enum",
        |ctx: Context| async move { elicit_once(&ctx, enums_form()) },
    )
    .tool_spec(
        ToolSpec::new("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })),
        |args: Value| async move { format!("Received: {args}") },
    )
    .tool_spec(
        ToolSpec::new("test_header_param")
            .description("Runs in a region mirrored into the Mcp-Param-Region header")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region", "description": "Region to run in"}
                },
                "required": ["region"]
            })),
        |args: RegionArgs| async move { format!("Running in {}", args.region) },
    )
}

async fn log_three(ctx: Context) -> &'static str {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (i, message) in steps.into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LoggingLevel::Info, Some("conformance"), message)
            .await;
    }
    "Logging test completed"
}

/// A form whose fields all have defaults (SEP-1034).
fn defaults_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    })
}

/// A form with every kind of enum (SEP-1330).
fn enums_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    })
}

fn elicit_once(
    ctx: &Context,
    schema: Value,
) -> Result<switchboard_server::ToolOutcome, HandlerError> {
    let form = Elicitation::form("Please fill in the form", schema);
    ask_once(ctx, "form", form, "Elicitation completed")
}

/// Asks `form` under `key`, then tells what came back after `answered`.
fn ask_once(
    ctx: &Context,
    key: &str,
    form: Elicitation,
    answered: &str,
) -> Result<switchboard_server::ToolOutcome, HandlerError> {
    match ctx.input().elicitation(key)? {
        Some(r) => Ok(CallToolResult::text(format!(
            "{answered}: action={:?}, content={}",
            r.action,
            json!(r.content)
        ))
        .into()),
        None => Ok(InputRequired::new().elicit(key, form).into()),
    }
}

pub(crate) fn name_form(message: &str) -> Elicitation {
    text_form(message, "name", "string")
}

fn text_form(message: &str, field: &str, kind: &str) -> Elicitation {
    Elicitation::form(
        message,
        json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]}),
    )
}

pub(crate) fn accepted_string(r: &switchboard_server::ElicitResult, field: &str) -> String {
    r.accepted()
        .and_then(|c| c.get(field))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_default()
}

fn input_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        "test_input_required_result_elicitation",
        "Asks the user's name (MRTR elicitation)",
        ir_elicitation,
    )
    .tool(
        "test_input_required_result_sampling",
        "Asks the client's model a question (MRTR sampling)",
        ir_sampling,
    )
    .tool(
        "test_input_required_result_list_roots",
        "Asks for the client's roots (MRTR roots)",
        ir_list_roots,
    )
    .tool(
        "test_input_required_result_request_state",
        "Asks for a confirmation and keeps state across the round trip",
        ir_request_state,
    )
    .tool(
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a greeting and the roots at once",
        ir_multiple_inputs,
    )
    .tool(
        "test_input_required_result_multi_round",
        "Asks two questions in two rounds",
        ir_multi_round,
    )
    .tool(
        "test_input_required_result_tampered_state",
        "Keeps integrity-protected state; altered state is refused",
        ir_tampered_state,
    )
    .tool(
        "test_input_required_result_capabilities",
        "Asks only for what the request's capabilities allow",
        ir_capabilities,
    )
}

#[derive(Deserialize, JsonSchema)]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbedArgs {
    /// URI of the resource to embed.
    resource_uri: String,
}

fn prompts(b: ServerBuilder) -> ServerBuilder {
    b.prompt(
        "test_simple_prompt",
        "A prompt with no arguments",
        || async {
            vec![user(ContentBlock::text(
                "This is a simple prompt for testing.",
            ))]
        },
    )
    .prompt(
        "test_prompt_with_arguments",
        "A prompt with two required arguments",
        |a: TwoArgs| async move {
            vec![user(ContentBlock::text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                a.arg1, a.arg2
            )))]
        },
    )
    .prompt(
        "test_prompt_with_embedded_resource",
        "A prompt embedding a resource",
        |a: EmbedArgs| async move {
            vec![
                user(ContentBlock::resource(text_contents(
                    a.resource_uri,
                    "text/plain",
                    "Embedded resource content for testing.",
                ))),
                user(ContentBlock::text(
                    "Please process the embedded resource above.",
                )),
            ]
        },
    )
    .prompt(
        "test_prompt_with_image",
        "A prompt with an image",
        || async {
            vec![
                user(ContentBlock::image(PNG, "image/png")),
                user(ContentBlock::text("Please analyze the image above.")),
            ]
        },
    )
    .prompt_spec(
        PromptSpec::new("test_input_required_result_prompt")
            .description("A prompt that first asks the user for context (MRTR)"),
        ir_prompt,
    )
}

fn resources(b: ServerBuilder) -> ServerBuilder {
    b.resource(
        ResourceSpec::new("test://static-text", "static-text")
            .mime_type("text/plain")
            .description("A fixed text resource"),
        || async {
            text_contents(
                "test://static-text",
                "text/plain",
                "This is the content of the static text resource.",
            )
        },
    )
    .resource(
        ResourceSpec::new("test://static-binary", "static-binary")
            .mime_type("image/png")
            .description("A fixed binary resource"),
        || async {
            let mut c: ResourceContents = blob_contents("test://static-binary", "image/png", &[]);
            c.blob = Some(PNG.to_owned());
            c
        },
    )
    .resource(
        ResourceSpec::new("test://watched-resource", "watched-resource")
            .mime_type("text/plain")
            .description("A resource clients may subscribe to"),
        || async { text_contents("test://watched-resource", "text/plain", "Watched content.") },
    )
    .resource_template(
        TemplateSpec::new("test://template/{id}/data", "template-data")
            .mime_type("application/json")
            .description("Data for an id"),
        |m: TemplateMatch| async move {
            let id = m.get("id").unwrap_or_default().to_owned();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            text_contents(m.uri, "application/json", body.to_string())
        },
    )
}

async fn complete(req: CompleteRequest) -> Vec<String> {
    ["paris", "park", "party", "test", "testing"]
        .iter()
        .filter(|v| v.starts_with(&req.value))
        .map(|v| (*v).to_owned())
        .collect()
}

async fn streaming_elicitation(ctx: Context) -> ToolResult {
    if let Some(answer) = ctx.input().elicitation("user_name")? {
        let name = answer
            .accepted()
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("stranger")
            .to_owned();
        return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
    }
    Ok(InputRequired::new()
        .elicit("user_name", name_form("What is your name?"))
        .into())
}

async fn missing_capability(ctx: Context) -> ToolResult {
    ctx.require_sampling()?;
    Ok(CallToolResult::text("The request declared sampling.").into())
}

async fn sampling(args: SamplingArgs, ctx: Context) -> ToolResult {
    match ctx.input().sampling("answer")? {
        Some(m) => Ok(CallToolResult::text(format!("LLM response: {}", m.text())).into()),
        None => Ok(InputRequired::new()
            .sample("answer", Sampling::prompt(args.prompt, 100))
            .into()),
    }
}

async fn elicitation(args: ElicitationArgs, ctx: Context) -> ToolResult {
    let form = Elicitation::form(
        args.message,
        json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}
            },
            "required": ["username", "email"]
        }),
    );
    ask_once(&ctx, "info", form, "User response")
}

async fn ir_elicitation(ctx: Context) -> ToolResult {
    match ctx.input().elicitation("user_name")? {
        Some(r) => {
            Ok(CallToolResult::text(format!("Hello, {}!", accepted_string(&r, "name"))).into())
        }
        // MRTR-18: a missing answer is asked for again.
        None => Ok(InputRequired::new()
            .elicit("user_name", name_form("What is your name?"))
            .into()),
    }
}

async fn ir_sampling(ctx: Context) -> ToolResult {
    match ctx.input().sampling("capital_question")? {
        Some(m) => Ok(CallToolResult::text(format!("The model answered: {}", m.text())).into()),
        None => Ok(InputRequired::new()
            .sample(
                "capital_question",
                Sampling::prompt("What is the capital of France?", 100),
            )
            .into()),
    }
}

async fn ir_list_roots(ctx: Context) -> ToolResult {
    match ctx.input().roots("client_roots")? {
        Some(roots) => {
            let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
            Ok(CallToolResult::text(format!("Client roots: {}", uris.join(", "))).into())
        }
        None => Ok(InputRequired::new().list_roots("client_roots").into()),
    }
}

async fn ir_request_state(ctx: Context) -> ToolResult {
    let state: Option<Value> = ctx.state()?;
    match (state, ctx.input().elicitation("confirm")?) {
        (Some(s), Some(_)) if s["step"] == "confirm" => {
            Ok(CallToolResult::text("state-ok: the request state came back intact").into())
        }
        _ => Ok(InputRequired::new()
            .elicit("confirm", confirm_form())
            .state(json!({"step": "confirm"}))
            .into()),
    }
}

/// `ask` with the multi-input fixtures' questions added: the user's name,
/// a greeting sampled, the client's roots (each when its flag is set).
fn ask_for(mut ask: InputRequired, name: bool, greeting: bool, roots: bool) -> InputRequired {
    if name {
        ask = ask.elicit("user_name", name_form("What is your name?"));
    }
    if greeting {
        ask = ask.sample("greeting", Sampling::prompt("Generate a greeting", 50));
    }
    if roots {
        ask = ask.list_roots("client_roots");
    }
    ask
}

/// The state fixtures' yes-or-no question.
fn confirm_form() -> Elicitation {
    text_form("Please confirm", "ok", "boolean")
}

async fn ir_multiple_inputs(ctx: Context) -> ToolResult {
    let input = ctx.input();
    let name = input.elicitation("user_name")?;
    let greeting = input.sampling("greeting")?;
    let roots = input.roots("client_roots")?;
    if let (Some(name), Some(greeting), Some(roots)) = (&name, &greeting, &roots) {
        return Ok(CallToolResult::text(format!(
            "{} {} ({} roots)",
            greeting.text(),
            accepted_string(name, "name"),
            roots.len()
        ))
        .into());
    }
    // Ask again for what is missing only.
    let ask = InputRequired::new().state(json!({"multi": true}));
    Ok(ask_for(ask, name.is_none(), greeting.is_none(), roots.is_none()).into())
}

async fn ir_multi_round(ctx: Context) -> ToolResult {
    let state: Option<Value> = ctx.state()?;
    let round = state
        .as_ref()
        .and_then(|s| s["round"].as_u64())
        .unwrap_or(0);
    if round == 1 {
        if let Some(r) = ctx.input().elicitation("step1")? {
            let name = accepted_string(&r, "name");
            return Ok(InputRequired::new()
                .elicit(
                    "step2",
                    text_form("Step 2: What is your favorite color?", "color", "string"),
                )
                .state(json!({"round": 2, "name": name}))
                .into());
        }
    }
    if round == 2 {
        if let (Some(s), Some(r)) = (&state, ctx.input().elicitation("step2")?) {
            return Ok(CallToolResult::text(format!(
                "{} likes {}",
                s["name"].as_str().unwrap_or(""),
                accepted_string(&r, "color")
            ))
            .into());
        }
    }
    Ok(InputRequired::new()
        .elicit("step1", name_form("Step 1: What is your name?"))
        .state(json!({"round": 1}))
        .into())
}

async fn ir_tampered_state(ctx: Context) -> ToolResult {
    let state: Option<Value> = ctx.state()?;
    match (state, ctx.input().elicitation("confirm")?) {
        (Some(_), Some(_)) => Ok(CallToolResult::text("state verified").into()),
        _ => Ok(InputRequired::new()
            .elicit("confirm", confirm_form())
            .state(json!({"secret": "server-side value"}))
            .into()),
    }
}

async fn ir_capabilities(ctx: Context) -> ToolResult {
    let caps = ctx.client_capabilities();
    let input = ctx.input();
    if !input.is_empty() {
        return Ok(CallToolResult::text("Thanks for the input").into());
    }
    let ask = ask_for(
        InputRequired::new(),
        caps.supports_elicitation_form(),
        caps.supports_sampling(),
        caps.supports_roots(),
    );
    if ask.is_empty() {
        return Ok(CallToolResult::text("No input capability declared; nothing to ask").into());
    }
    Ok(ask.into())
}

async fn ir_prompt(ctx: Context) -> PromptResult {
    match ctx.input().elicitation("user_context")? {
        Some(r) => Ok(vec![user(ContentBlock::text(format!(
            "Use this context: {}",
            accepted_string(&r, "context")
        )))]
        .into()),
        None => Ok(InputRequired::new()
            .elicit(
                "user_context",
                text_form("What context should the prompt use?", "context", "string"),
            )
            .into()),
    }
}
