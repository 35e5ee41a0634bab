//! Ranking on a fixed catalogue, field weights, and the thesaurus at work.

use super::*;

fn doc(server: &str, name: &str, description: &str, parameters: &str) -> Document {
    Document {
        name: name.into(),
        server: server.into(),
        title: None,
        description: description.into(),
        parameters: parameters.into(),
    }
}

/// A small fixed catalogue with the overlaps real tables have (two
/// `create_issue`s, several readers).
fn catalogue() -> Vec<Document> {
    vec![
        doc("github", "create_issue", "Create a new issue in a GitHub repository", "owner repo title body labels"),
        doc("gitlab", "create_issue", "Create a new issue in a GitLab project", "project_id title description"),
        doc("github", "list_issues", "List issues in a GitHub repository with filtering options", "owner repo state"),
        doc("github", "get_file_contents", "Get the contents of a file or directory from a GitHub repository", "owner repo path branch"),
        doc("filesystem", "read_text_file", "Read the complete contents of a file from the file system as text", "path head tail"),
        doc("filesystem", "write_file", "Create a new file or completely overwrite an existing file with new content", "path content"),
        doc("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path", "path"),
        doc("slack", "slack_post_message", "Post a new message to a Slack channel", "channel_id text"),
        doc("slack", "slack_list_channels", "List public or pre-defined channels in the workspace with pagination", "limit cursor"),
        doc("memory", "delete_entities", "Delete multiple entities and their associated relations from the knowledge graph", "entityNames"),
        doc("time", "get_current_time", "Get current time in a specific timezone", "timezone IANA timezone name"),
        doc("maps", "maps_geocode", "Convert an address into geographic coordinates", "address"),
    ]
}

fn top(index: &SearchIndex, docs: &[Document], query: &str, k: usize) -> Vec<String> {
    index
        .search(query, k)
        .iter()
        .map(|h| format!("{}/{}", docs[h.doc].server, docs[h.doc].name))
        .collect()
}

#[test]
fn ranking_on_a_fixed_catalogue() {
    let docs = catalogue();
    let index = SearchIndex::build(&docs);
    assert_eq!(index.len(), docs.len());
    // Words of the name and description.
    assert_eq!(top(&index, &docs, "create issue github", 1), ["github/create_issue"]);
    assert_eq!(top(&index, &docs, "new gitlab issue", 1), ["gitlab/create_issue"]);
    assert_eq!(top(&index, &docs, "post message to slack channel", 1), ["slack/slack_post_message"]);
    assert_eq!(top(&index, &docs, "current time in Tokyo timezone", 1), ["time/get_current_time"]);
    // An identifier as the query: its words.
    assert_eq!(top(&index, &docs, "list_directory", 1), ["filesystem/list_directory"]);
    // Nothing in common: nothing returned.
    assert!(index.search("zebra quasar", 5).is_empty());
    // The limit holds, best first.
    let hits = index.search("file", 3);
    assert_eq!(hits.len(), 3);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn related_words_find_tools_that_share_no_word_with_the_query() {
    let docs = catalogue();
    let index = SearchIndex::build(&docs);
    // "bug" and "ticket" are related to "issue"; "open" to "create".
    let found = top(&index, &docs, "open a bug ticket", 3);
    assert!(found.iter().any(|f| f.ends_with("/create_issue")), "{found:?}");
    // "remove" is related to "delete", "node" to "entity".
    assert_eq!(top(&index, &docs, "remove nodes", 1), ["memory/delete_entities"]);
    // "folder" is related to "directory".
    assert_eq!(top(&index, &docs, "what is in this folder", 1), ["filesystem/list_directory"]);
}

#[test]
fn a_word_in_the_name_outranks_the_same_word_in_a_description() {
    let docs = vec![
        doc("a", "forecast", "Tells what the sky will do tomorrow", ""),
        doc("b", "report", "A weather forecast for a city, with forecast maps", ""),
    ];
    let index = SearchIndex::build(&docs);
    assert_eq!(index.search("forecast", 1)[0].doc, 0);
    // With the name's weight gone, the description decides.
    let flat = SearchIndex::build_with(
        &docs,
        FieldWeights {
            name: 0.0,
            ..FieldWeights::default()
        },
    );
    assert_eq!(flat.search("forecast", 1)[0].doc, 1);
    // Parameters count least of all.
    let docs = vec![
        doc("a", "lookup", "Finds an order", "city"),
        doc("b", "lookup", "Finds a city", ""),
    ];
    let index = SearchIndex::build(&docs);
    assert_eq!(index.search("city", 1)[0].doc, 1);
}

#[test]
fn search_where_keeps_only_what_the_caller_may_see() {
    let docs = catalogue();
    let index = SearchIndex::build(&docs);
    let hits = index.search_where("create issue", 5, |d| docs[d].server != "github");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| docs[h.doc].server != "github"));
}

#[test]
fn parameters_of_a_schema_name_nested_properties() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where the file is"},
            "options": {"type": "object", "properties": {"encoding": {"description": "utf-8 or latin1"}}},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {}}}}
        }
    });
    let text = Document::parameters_of(schema.as_object().unwrap());
    for word in ["path", "Where the file is", "options", "encoding", "utf-8", "tags", "label"] {
        assert!(text.contains(word), "{word} in {text:?}");
    }
}
