//! Text to search terms: words split at every non-alphanumeric character
//! and at case changes (`get_file_contents`, `getFileContents`,
//! `HTTPRequest` all give their words), lowercased, stop words dropped,
//! and each word cut to a stem so that `created`, `creates`, `creation`
//! and `create` meet. The same function reads tool text and queries, so
//! both sides always agree.
//!
//! The stemmer is deliberately light (plural, `-ing`, `-ed`, `-ion`, a
//! final `e`): tool text is short and technical, and what matters is that
//! the forms of one word meet, not that the stem is a word.

/// The search terms of `text`, in order (repeats kept: they count).
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in words(text) {
        if word.chars().count() > MAX_WORD || STOP_WORDS.binary_search(&word.as_str()).is_ok() {
            continue;
        }
        out.push(stem(&word));
    }
    out
}

/// Longest word kept, in characters: longer ones are identifiers or data
/// that no query repeats.
const MAX_WORD: usize = 40;

/// Words of `text`, lowercased: split at anything that is not a letter or
/// digit, and inside identifiers at lower→upper case changes, at the end
/// of an upper-case run followed by a lower-case letter (`HTTPRequest`),
/// and between letters and digits.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next_lower)
                || (p.is_alphabetic() && c.is_numeric())
                || (p.is_numeric() && c.is_alphabetic());
            if boundary {
                flush(&mut word, &mut out);
            }
        }
        word.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut word, &mut out);
    out
}

fn flush(word: &mut String, out: &mut Vec<String>) {
    if !word.is_empty() {
        out.push(std::mem::take(word));
    }
}

/// The stem of a lowercased word: the forms of one word meet
/// (`directories`/`directory`, `created`/`creation`/`create`,
/// `listing`/`lists`/`list`). Short words and words with non-ASCII
/// letters are kept as they are.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    // Plurals and third persons.
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = format!("{base}y");
    } else if let Some(base) = w.strip_suffix("sses") {
        w = format!("{base}ss");
    } else if w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
        && w.len() > 3
    {
        w.pop();
    }
    // Verb endings and nominalisations.
    if let Some(base) = w
        .strip_suffix("ing")
        .filter(|b| b.len() >= 3 && has_vowel(b))
    {
        w = undouble(base);
    } else if let Some(base) = w
        .strip_suffix("ed")
        .filter(|b| b.len() >= 3 && has_vowel(b))
    {
        w = undouble(base);
    } else if let Some(base) = w
        .strip_suffix("ion")
        .filter(|b| b.len() >= 4 && (b.ends_with('t') || b.ends_with('s')))
    {
        w = base.to_owned();
    }
    // A final e (`create` → `creat`, meeting `created`, `creation`).
    if w.len() > 4 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    w
}

fn has_vowel(s: &str) -> bool {
    s.bytes().any(|b| b"aeiouy".contains(&b))
}

/// `runn` → `run`, `stopp` → `stop` (but `add`, `pass`, `fill` keep theirs).
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    let n = b.len();
    if n >= 4
        && b[n - 1] == b[n - 2]
        && !b"lsz".contains(&b[n - 1])
        && !b"aeiou".contains(&b[n - 1])
    {
        return base[..n - 1].to_owned();
    }
    base.to_owned()
}

/// Words too common to tell tools apart (sorted, for a binary search).
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "do", "does", "for", "from", "has", "have", "how", "i", "if", "in", "into",
    "is", "it", "its", "mcp", "me", "my", "of", "on", "one", "or", "our", "please", "should", "so",
    "some", "that", "the", "their", "them", "then", "there", "these", "this", "those", "to", "us",
    "use", "used", "uses", "using", "via", "want", "was", "we", "what", "when", "where", "which",
    "while", "who", "will", "with", "would", "you", "your",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("get_file_contents"), ["get", "file", "contents"]);
        assert_eq!(words("getFileContents"), ["get", "file", "contents"]);
        assert_eq!(words("HTTPRequest v2"), ["http", "request", "v", "2"]);
        assert_eq!(
            words("mcp__github__create_issue"),
            ["mcp", "github", "create", "issue"]
        );
        assert_eq!(words("browser-navigate"), ["browser", "navigate"]);
    }

    #[test]
    fn forms_of_a_word_meet() {
        for group in [
            &["create", "created", "creates", "creating", "creation"][..],
            &["directory", "directories"],
            &["list", "lists", "listing", "listed"],
            &["delete", "deleted", "deletes", "deletion"],
            &["file", "files"],
            &["issue", "issues"],
            &["search", "searches", "searching"],
            &["run", "running"],
            &["add", "added", "adding"],
            &["commit", "commits", "committed"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{group:?} → {stems:?}"
            );
        }
        // Short and non-ASCII words are left alone.
        assert_eq!(stem("git"), "git");
        assert_eq!(stem("données"), "données");
    }

    #[test]
    fn stop_words_are_sorted_and_dropped() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
        assert_eq!(
            terms("Get the contents of a file"),
            ["get", "content", "file"]
        );
    }
}
