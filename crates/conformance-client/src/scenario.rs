//! What the client does in each scenario (see the suite's client contract):
//! list, call, read and get through the [`Client`], nothing hand-rolled.

use anyhow::Context;
use serde_json::{Map, Value};
use switchboard_client::Client;
use switchboard_wire::Tool;

use crate::input::placeholder;
use crate::say;

/// Runs the flow of `scenario`.
///
/// # Errors
/// The first failed step.
pub(crate) async fn run(scenario: &str, client: &Client, context: &Value) -> anyhow::Result<()> {
    match scenario {
        // Only the handshake and one request are looked at.
        "initialize" | "json-schema-ref-no-deref" => {
            list_tools(client).await?;
        }
        "tools_call" => {
            list_tools(client).await?;
            let args = object(serde_json::json!({"a": 2, "b": 3}));
            call(client, "add_numbers", Some(args)).await?;
        }
        "sep-2322-client-request-state" => {
            list_tools(client).await?;
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_no_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_result_type",
            ] {
                call(client, name, None).await?;
            }
        }
        "http-custom-headers" => {
            list_tools(client).await?;
            let calls = context
                .get("toolCalls")
                .and_then(Value::as_array)
                .context("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
            for entry in calls {
                let name = entry
                    .get("name")
                    .and_then(Value::as_str)
                    .context("a toolCalls entry has no name")?;
                let arguments = entry.get("arguments").and_then(Value::as_object).cloned();
                call(client, name, arguments).await?;
            }
        }
        "elicitation-sep1034-client-defaults" => {
            list_tools(client).await?;
            call(client, "test_client_elicitation_defaults", None).await?;
        }
        "sse-retry" => {
            list_tools(client).await?;
            call(client, "test_reconnection", None).await?;
        }
        // The focal tool's inputSchema goes back to the echo tool as it
        // was received: the suite checks no keyword was lost on the way.
        "json-schema-2020-12-preservation" => {
            let tools = list_tools(client).await?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .context("the server lists no json_schema_2020_12_tool")?;
            let mut args = Map::new();
            args.insert("schema".into(), Value::Object(focal.input_schema.clone()));
            call(client, "json_schema_echo", Some(args)).await?;
        }
        // Skills (io.modelcontextprotocol/skills), as a host would: list
        // the entries and read nothing more (SK-VER-6) ...
        "sep-2640-client-no-prefetch" => {
            crate::skills::list(client).await?;
        }
        // ... or list, then load the first skill: its SKILL.md is fetched
        // and verified, and only a verified skill's files are read.
        s if s.starts_with("sep-2640-client-") => {
            let skills = crate::skills::list(client).await?;
            if let Some(skill) = skills.first() {
                crate::skills::load(client, skill).await?;
            }
        }
        // Behind OAuth (the authorization ran on the first request): list
        // and call the tools, so at least two authorized requests follow it
        // (auth/authorization-server-migration switches servers in between;
        // the scope scenarios refuse the call until the scope is right).
        s if s.starts_with("auth/") => call_every_tool(client).await?,
        // http-standard-headers, http-invalid-tool-headers, request-metadata
        // and anything else: use every tool, resource and prompt the server
        // offers (the invalid tools never reach the list).
        _ => exercise_everything(client).await?,
    }
    say("done");
    Ok(())
}

async fn list_tools(client: &Client) -> anyhow::Result<Vec<Tool>> {
    let tools = client.list_all_tools().await.context("tools/list")?.items;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    say(&format!("tools/list: {names:?}"));
    Ok(tools)
}

async fn call(
    client: &Client,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> anyhow::Result<()> {
    let result = client
        .call_tool(name, arguments)
        .await
        .with_context(|| format!("tools/call {name}"))?;
    say(&format!(
        "tools/call {name}: {}{}",
        result.joined_text(),
        if result.is_error() {
            " (tool error)"
        } else {
            ""
        }
    ));
    Ok(())
}

/// Lists and uses everything the server offers.
async fn exercise_everything(client: &Client) -> anyhow::Result<()> {
    let capabilities = client.server().map(|s| s.capabilities);
    let has = |pick: fn(&switchboard_wire::ServerCapabilities) -> bool| {
        capabilities.as_ref().is_none_or(pick)
    };
    if has(|c| c.tools.is_some()) {
        call_every_tool(client).await?;
    }
    if has(|c| c.resources.is_some()) {
        let resources = client
            .list_all_resources()
            .await
            .context("resources/list")?
            .items;
        for resource in resources {
            let read = client
                .read_resource(&resource.uri)
                .await
                .with_context(|| format!("resources/read {}", resource.uri))?;
            say(&format!(
                "resources/read {}: {} content item(s)",
                resource.uri,
                read.contents.len()
            ));
        }
    }
    if has(|c| c.prompts.is_some()) {
        let prompts = client
            .list_all_prompts()
            .await
            .context("prompts/list")?
            .items;
        for prompt in prompts {
            let got = client
                .get_prompt(&prompt.name, None)
                .await
                .with_context(|| format!("prompts/get {}", prompt.name))?;
            say(&format!(
                "prompts/get {}: {} message(s)",
                prompt.name,
                got.messages.len()
            ));
        }
    }
    Ok(())
}

/// Lists the tools and calls each with arguments its schema accepts.
async fn call_every_tool(client: &Client) -> anyhow::Result<()> {
    for tool in list_tools(client).await? {
        call(client, &tool.name, Some(arguments_for(&tool))).await?;
    }
    Ok(())
}

/// Arguments satisfying a tool's schema: a typed value for every required
/// property.
fn arguments_for(tool: &Tool) -> Map<String, Value> {
    let schema = &tool.input_schema;
    let mut arguments = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return arguments;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        if required.contains(&name.as_str()) {
            arguments.insert(name.clone(), placeholder(property));
        }
    }
    arguments
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
