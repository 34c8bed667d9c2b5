//! Dialogs and ticket threads: JSON Lines of turns, `{"speaker", "time", "text", "topic"}`
//! (`time` and `topic` optional; `author`/`from` and `timestamp`/`date` are accepted too).
//! A turn is never cut while it fits; a change of topic opens a section named after it, so
//! chunks are whole turns of one topic. Each chunk is whole JSON lines, so it keeps every
//! turn's speaker and time; the embedder sees `speaker (time): text` lines. A line that is
//! not a turn is kept as a paragraph.

use serde::Deserialize;

use crate::chunk::layout::trim;
use crate::chunk::tree::{Block, BlockKind, Prose, Tree};
use crate::chunk::Span;

/// One turn as written in the source.
#[derive(Deserialize)]
struct RawTurn {
    #[serde(alias = "author", alias = "from")]
    speaker: String,
    #[serde(default, alias = "timestamp", alias = "date")]
    time: Option<serde_json::Value>,
    #[serde(alias = "body", alias = "message")]
    text: String,
    #[serde(default)]
    topic: Option<String>,
}

/// A turn read from one line.
pub(crate) struct Turn {
    pub speaker: String,
    pub time: Option<String>,
    pub text: String,
    pub topic: Option<String>,
}

/// Parses one line as a turn.
pub(crate) fn turn(line: &str) -> Option<Turn> {
    let raw: RawTurn = serde_json::from_str(line).ok()?;
    let time = raw.time.and_then(|t| match t {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    });
    Some(Turn {
        speaker: raw.speaker,
        time,
        text: raw.text,
        topic: raw.topic.filter(|t| !t.trim().is_empty()),
    })
}

/// The block tree of a dialog.
pub fn read(text: &str) -> Tree {
    let mut tree = Tree::new(Prose::Plain);
    let mut topic: Option<String> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let Some(span) = trim(text, start, at) else {
            continue;
        };
        let Some(turn) = turn(&text[span.start..span.end]) else {
            tree.blocks
                .push(Block::leaf(BlockKind::Paragraph, span.start, span.end));
            continue;
        };
        if turn.topic.is_some() && turn.topic != topic {
            topic.clone_from(&turn.topic);
            let title = turn.topic.clone().unwrap_or_default();
            let heading = BlockKind::Heading { level: 1, title };
            tree.blocks
                .push(Block::leaf(heading, span.start, span.start));
        }
        let kind = BlockKind::Turn {
            speaker: turn.speaker,
            time: turn.time,
            topic: turn.topic,
        };
        tree.blocks.push(Block::leaf(kind, span.start, span.end));
    }
    tree
}

/// The embedded text of the lines in `span`: `speaker (time): text` for each turn, other
/// lines as they are.
pub(crate) fn render(text: &str, span: Span) -> String {
    text[span.start..span.end]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match turn(l.trim()) {
            Some(t) => match t.time {
                Some(time) => format!("{} ({time}): {}", t.speaker, t.text),
                None => format!("{}: {}", t.speaker, t.text),
            },
            None => l.trim().to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_and_topics() {
        let text = concat!(
            "{\"speaker\": \"ana\", \"time\": \"2024-05-01T09:00Z\", \"text\": \"Printer down\", \"topic\": \"printer\"}\n",
            "not json\n",
            "{\"author\": \"bo\", \"timestamp\": 1714554000, \"text\": \"Rebooted it\"}\n",
        );
        let tree = read(text);
        let kinds: Vec<&BlockKind> = tree.blocks.iter().map(|b| &b.kind).collect();
        assert!(matches!(kinds[0], BlockKind::Heading { title, .. } if title == "printer"));
        assert!(matches!(kinds[1], BlockKind::Turn { speaker, .. } if speaker == "ana"));
        assert_eq!(kinds[2], &BlockKind::Paragraph);
        assert!(matches!(kinds[3], BlockKind::Turn { time: Some(t), .. } if t == "1714554000"));
        let all = Span {
            start: 0,
            end: text.len(),
        };
        assert_eq!(
            render(text, all),
            "ana (2024-05-01T09:00Z): Printer down\nnot json\nbo (1714554000): Rebooted it"
        );
    }
}
