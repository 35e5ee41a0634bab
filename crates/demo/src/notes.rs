//! The `notes` demo server (stdio): a handful of read-only notes.
//!
//! The lab's three tools, served two per page so `tools/list` takes two
//! pages: `search` (annotated `readOnlyHint: true`, which must not waive
//! the host's approval question), `read_note` and `list_notes`. The note
//! [`LONG_NOTE_ID`] is longer than the host's 8,000-character budget, so
//! reading it through the host shows the cut.
//!
//! It also serves one Agent Skill (the `io.modelcontextprotocol/skills`
//! extension), [`SKILL_URI`]: `meeting-notes`, whose `SKILL.md` tells the
//! model to read the standup note with `read_note` and fill in the
//! skill's own `templates/minutes.md`, named by its relative path. The
//! files are compiled in (the demo runs with nothing on disk).

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::{BuildError, HandlerError, Server, SkillSpec, ToolAnnotations, ToolSpec};

use crate::DemoError;
use crate::search::{Words, answer};

/// The id of the note longer than the host's budget.
pub const LONG_NOTE_ID: &str = "handbook";

/// The URI of the demo skill's `SKILL.md`.
pub const SKILL_URI: &str = "skill://meeting-notes/SKILL.md";

/// The URI of the template the demo skill's `SKILL.md` refers to.
pub const SKILL_TEMPLATE_URI: &str = "skill://meeting-notes/templates/minutes.md";

/// The demo skill's `SKILL.md`.
pub const SKILL_MD: &str = include_str!("../skills/meeting-notes/SKILL.md");

/// The minutes template of the demo skill.
pub const SKILL_TEMPLATE: &str = include_str!("../skills/meeting-notes/templates/minutes.md");

/// How many tools one `tools/list` page carries.
pub const PAGE_SIZE: usize = 2;

/// One note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Its id (`read_note`'s argument).
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
    /// Its text.
    pub body: String,
}

/// Every note, in listing order.
pub fn notes() -> &'static [Note] {
    static NOTES: OnceLock<Vec<Note>> = OnceLock::new();
    NOTES.get_or_init(|| {
        vec![
            Note {
                id: "welcome",
                title: "Welcome",
                body: "Welcome to the notes demo. Try read_note with id \"handbook\": it is longer \
                       than the host's budget, so the host cuts it and says how much."
                    .into(),
            },
            Note {
                id: "standup",
                title: "Standup, Thursday",
                body: "The printer on floor 3 jams again (see the tickets server: search \"printer\"). \
                       VPN drops are under investigation. Release notes are due Friday."
                    .into(),
            },
            Note {
                id: "release",
                title: "Release checklist",
                body: "1. Run the test suite. 2. Run switchboard selftest. 3. Tag the release. \
                       4. Search tickets for anything still open with priority high."
                    .into(),
            },
            Note {
                id: LONG_NOTE_ID,
                title: "Team handbook (long)",
                body: handbook(),
            },
        ]
    })
}

/// The text of the long note ([`LONG_NOTE_ID`]): a little over 9,000
/// characters, all ASCII.
pub fn long_note() -> &'static str {
    notes()
        .iter()
        .find(|n| n.id == LONG_NOTE_ID)
        .map_or("", |n| n.body.as_str())
}

/// The server, ready for a runner.
///
/// # Errors
/// [`BuildError`] only if a tool definition is invalid (a bug).
pub fn server() -> Result<Server, BuildError> {
    Server::builder("notes-demo", crate::VERSION)
        .title("Switchboard notes demo")
        .instructions("Team notes. Search them, list them, or read one by id.")
        .page_size(PAGE_SIZE)
        .tool_spec(
            ToolSpec::new("search")
                .description("Searches the notes for words (case-insensitive) and lists the notes that contain them.")
                .annotations(ToolAnnotations {
                    read_only_hint: Some(true),
                    ..ToolAnnotations::default()
                }),
            search,
        )
        .tool_spec(
            ToolSpec::new("read_note").description("Returns the full text of one note."),
            read_note,
        )
        .tool_spec(
            ToolSpec::new("list_notes").description("Lists every note: id, title and length."),
            list_notes,
        )
        .skill(SkillSpec::new("meeting-notes", SKILL_MD).file("templates/minutes.md", SKILL_TEMPLATE))
        .build()
}

/// Serves [`server`] on stdin and stdout until stdin ends.
///
/// # Errors
/// [`DemoError`] when stdin cannot be read.
pub async fn serve_stdio() -> Result<(), DemoError> {
    let server = server().map_err(|source| DemoError::Build {
        server: "notes",
        source,
    })?;
    Ok(switchboard_server::stdio::serve(server).await?)
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// Words to look for; a note matches when it contains every word.
    query: String,
}

/// Arguments of `read_note`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReadNoteArgs {
    /// The note's id, as `list_notes` shows it.
    id: String,
}

async fn search(args: SearchArgs) -> Result<String, HandlerError> {
    let words = Words::of(&args.query)?;
    let hits: Vec<String> = notes()
        .iter()
        .filter(|n| words.match_in(n.title, &n.body))
        .map(|n| format!("- {} ({}): {}", n.id, n.title, first_sentence(&n.body)))
        .collect();
    Ok(answer("note", &args.query, &hits))
}

async fn read_note(args: ReadNoteArgs) -> Result<String, HandlerError> {
    match notes().iter().find(|n| n.id == args.id) {
        Some(n) => Ok(n.body.clone()),
        None => Err(unknown_note(&args.id)),
    }
}

fn unknown_note(id: &str) -> HandlerError {
    HandlerError::msg(format!(
        "There is no note {id:?}. Known ids: {}.",
        notes().iter().map(|n| n.id).collect::<Vec<_>>().join(", ")
    ))
}

async fn list_notes() -> String {
    notes()
        .iter()
        .map(|n| {
            format!(
                "- {}: {} ({} characters)",
                n.id,
                n.title,
                n.body.chars().count()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

/// The long note: numbered sections, built the same way every time.
fn handbook() -> String {
    const TOPICS: [(&str, &str); 12] = [
        (
            "Working hours",
            "Core hours are ten to four; outside them, answer when you can and say when you will.",
        ),
        (
            "On call",
            "The on-call engineer carries the pager for one week and hands over on Monday with a written summary.",
        ),
        (
            "Code review",
            "Every change gets one review; reviewers answer within a working day or say who else should look.",
        ),
        (
            "Releases",
            "Releases leave on Fridays only when the test suite and the self-test are green on the release commit.",
        ),
        (
            "Incidents",
            "Open a ticket first, then fix; the ticket is where the timeline, the cause and the follow-ups live.",
        ),
        (
            "Tickets",
            "Priorities are low, normal and high; high means someone is blocked now and gets an answer today.",
        ),
        (
            "Notes",
            "Notes are for decisions and context; anything that needs doing becomes a ticket with an owner.",
        ),
        (
            "Tools",
            "Agents reach our servers through Switchboard, so every tool call is namespaced, approved and audited.",
        ),
        (
            "Security",
            "Never paste tokens into notes or tickets; rotate any secret that was shown on a shared screen.",
        ),
        (
            "Travel",
            "Book through the shared calendar and add the trip to the standup note of the week before.",
        ),
        (
            "Learning",
            "Everyone has four hours a month for reading and courses; share what was worth it in a note.",
        ),
        (
            "Leaving",
            "Hand over tickets, notes and pager duty a week ahead, and write down what only you know.",
        ),
    ];
    let mut out = String::from(
        "Team handbook\n\nThis note is long on purpose: it is over 9,000 characters, more than \
         the 8,000 the host lets one tool result carry to the model.\n",
    );
    let mut round = 0;
    while out.len() < 9_000 {
        round += 1;
        for (i, (title, text)) in TOPICS.iter().enumerate() {
            out.push_str(&format!("\n{round}.{n} {title}. {text}\n", n = i + 1));
        }
    }
    out.push_str("\nEnd of the handbook.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_note_is_longer_than_the_budget() {
        let n = long_note().chars().count();
        assert!((9_000..10_000).contains(&n), "{n}");
        assert!(long_note().is_ascii());
        assert!(long_note().ends_with("End of the handbook.\n"));
    }

    #[test]
    fn three_tools_build() {
        let s = server().unwrap();
        assert_eq!(s.info().name, "notes-demo");
    }

    // SK-CAP-4, SK-MAP-2, SK-READ-3: the demo skill is served, with the
    // resources capability, and its SKILL.md names a file it has.
    #[test]
    fn the_demo_skill_is_served() {
        let s = server().unwrap();
        let caps = s.capabilities();
        assert!(caps.resources.is_some());
        let ext = caps.extensions.as_ref().unwrap();
        assert_eq!(
            ext["io.modelcontextprotocol/skills"],
            serde_json::json!({"directoryRead": true})
        );
        assert!(SKILL_MD.contains("templates/minutes.md"));
        assert!(SKILL_MD.contains("`read_note`"));
        assert!(SKILL_TEMPLATE_URI.starts_with(SKILL_URI.trim_end_matches("SKILL.md")));
    }

    #[tokio::test]
    async fn search_matches_every_word() {
        let text = search(SearchArgs {
            query: "Printer floor".into(),
        })
        .await
        .unwrap();
        assert!(text.contains("standup"), "{text}");
        assert!(!text.contains("welcome"), "{text}");
        assert!(
            search(SearchArgs { query: " ".into() }).await.is_err(),
            "an empty query is a failure"
        );
        assert!(read_note(ReadNoteArgs { id: "nope".into() }).await.is_err());
    }
}
