//! A server of Agent Skills on stdio (the `io.modelcontextprotocol/skills`
//! extension): the skills in a directory, plus a skill whose content is
//! generated on each read (`reports/daily`, listed as `"dynamic"`).
//!
//! ```text
//! cargo run -p switchboard-server --example skills -- path/to/skills
//! ```
//!
//! Every directory below `path/to/skills` holding a `SKILL.md` is served as
//! a skill. Then paste, one per line:
//!
//! ```text
//! {"jsonrpc":"2.0","id":1,"method":"skills/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! {"jsonrpc":"2.0","id":2,"method":"skills/get","params":{"uri":"skill://reports/daily/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! {"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://reports/daily/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! {"jsonrpc":"2.0","id":4,"method":"resources/directory/read","params":{"uri":"skill://reports/daily","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! ```
//!
//! `SKILLS_PAGE_SIZE` sets how many entries a `skills/list` page carries.
//! Close stdin (Ctrl-D) to stop.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use switchboard_server::{HandlerError, Server, SkillSpec};

/// How many times the daily report was generated.
static GENERATED: AtomicU64 = AtomicU64::new(0);

async fn daily(path: String) -> Result<Option<Vec<u8>>, HandlerError> {
    let n = GENERATED.fetch_add(1, Ordering::Relaxed) + 1;
    Ok(match path.as_str() {
        "SKILL.md" => Some(
            format!(
                "---\nname: daily\ndescription: Assemble today's report\n---\n\nReport number {n}. See data/today.md.\n"
            )
            .into_bytes(),
        ),
        "data/today.md" => Some(format!("Generated {n} times so far.\n").into_bytes()),
        _ => None,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let frontmatter = json!({"name": "daily", "description": "Assemble today's report"});
    let mut builder = Server::builder("skills-example", "1.0.0").skill(SkillSpec::dynamic(
        "reports/daily",
        frontmatter.as_object().cloned().unwrap_or_default(),
        ["data/today.md"],
        daily,
    ));
    if let Some(dir) = std::env::args_os().nth(1) {
        builder = builder.skills_dir(dir);
    }
    if let Some(n) = std::env::var("SKILLS_PAGE_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.page_size(n);
    }
    switchboard_server::stdio::serve(builder.build()?).await?;
    Ok(())
}
