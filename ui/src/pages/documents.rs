//! Documents: the list (by principal, format, metadata; paged), and one document's text
//! with its parents and children drawn over it, in a version of an index.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::{blocking, encode, given, layout, number, pager, params, read_err, PageError};
use crate::read::{doc_chunks, version_docs};
use folio::chunk::{EmbedTexts, SizeUnit, Span};
use folio::document::Document;
use folio::ingest::spec_cut;
use folio::store::{chunk_id, parent_id, DocView, Store, StoredChild, StoredParent, DEFAULT_INDEX};

/// Documents a list page shows.
const PAGE: usize = 50;

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    principal: Option<String>,
    format: Option<String>,
    meta: Option<String>,
    page: Option<String>,
}

pub(crate) async fn list(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let store = state.store()?;
        let page = number("page", &query.page, 1)?.max(1);
        let principal = given(&query.principal);
        let format = given(&query.format);
        let meta = given(&query.meta)
            .map(|m| {
                m.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| PageError::Bad(format!("metadata filter `{m}`: expected KEY=VALUE")))
            })
            .transpose()?;
        let ids = store.document_ids().map_err(read_err)?;
        let filtered = principal.is_some() || format.is_some() || meta.is_some();
        // Unfiltered, only the page's documents are read.
        let (total, docs): (usize, Vec<Document>) = if filtered {
            let mut matching = Vec::new();
            for id in &ids {
                let Some(doc) = store.document(id).map_err(read_err)? else {
                    continue;
                };
                let visible = principal.is_none_or(|p| doc.acl.is_empty() || doc.acl.iter().any(|a| a == p));
                let formatted = format.is_none_or(|f| format_name(&doc) == f);
                let tagged = meta.as_ref().is_none_or(|(k, v)| {
                    doc.metadata.get(k).is_some_and(|value| value.to_string() == *v)
                });
                if visible && formatted && tagged {
                    matching.push(doc);
                }
            }
            let total = matching.len();
            (total, matching.into_iter().skip((page - 1) * PAGE).take(PAGE).collect())
        } else {
            let mut docs = Vec::new();
            for id in ids.iter().skip((page - 1) * PAGE).take(PAGE) {
                docs.extend(store.document(id).map_err(read_err)?);
            }
            (ids.len(), docs)
        };
        let base = format!(
            "/documents?principal={}&format={}&meta={}&",
            encode(principal.unwrap_or("")),
            encode(format.unwrap_or("")),
            encode(given(&query.meta).unwrap_or(""))
        );
        Ok(layout(
            "Documents",
            html! {
                form.bar method="get" action="/documents" {
                    label { "visible to principal " input name="principal" value=(principal.unwrap_or("")) placeholder="anyone"; }
                    label { "format " input name="format" value=(format.unwrap_or("")) placeholder="markdown, html, …" size="10"; }
                    label { "metadata " input name="meta" value=(given(&query.meta).unwrap_or("")) placeholder="key=value"; }
                    button { "Filter" }
                }
                p { (total) " documents" @if filtered { " match" } " in " code { (state.store_path.display()) } }
                table #documents {
                    tr { th { "document" } th { "title" } th { "format" } th { "ACL" } th { "bytes" } th { "updated" } }
                    @for doc in &docs {
                        tr.document data-doc-id=(doc.doc_id) {
                            td { a href=(format!("/document?id={}", encode(&doc.doc_id))) { (doc.doc_id) } }
                            td { (doc.title) }
                            td { (format_name(doc)) }
                            td { @if doc.acl.is_empty() { em { "public" } } @else { (doc.acl.join(", ")) } }
                            td { (doc.text.len()) }
                            td { (doc.updated_at.as_deref().unwrap_or("")) }
                        }
                    }
                }
                (pager(&base, page, total.div_ceil(PAGE)))
            },
        ))
    })
    .await
}

/// What the index's model made of each child of a document.
struct ModelMarks {
    /// Whether each child is a piece of one the ingest split because the model could not
    /// read it whole: inside one of the spec's own children and not equal to it. `None`
    /// when that cannot be told: the index sizes chunks in its embedder's tokens and the
    /// embedder is not registered.
    split: Option<Vec<bool>>,
    /// Each child's embedded text in the model's own tokens, and the most it reads, when
    /// the embedder is registered and has a limit.
    tokens: Option<(Vec<usize>, usize)>,
}

impl ModelMarks {
    fn read(
        store: &Store,
        index: &str,
        revision: &DocView,
        children: &[StoredChild],
    ) -> Result<ModelMarks, PageError> {
        let info = store
            .indexes()
            .list()
            .map_err(read_err)?
            .into_iter()
            .find(|i| i.name == index)
            .ok_or_else(|| PageError::NotFound(format!("no index `{index}`")))?;
        let embedder = store.registered_embedder(&info.embedder.name);
        let spec = &info.spec;
        let split = if embedder.is_none() && spec.token_unit() == Some(SizeUnit::Embedder) {
            None
        } else {
            let own = spec_cut(&revision.text, revision.format, spec, embedder.as_deref())
                .map_err(read_err)?;
            Some(
                children
                    .iter()
                    .map(|c| {
                        own.children.iter().any(|o| {
                            o.span.start <= c.start
                                && c.end <= o.span.end
                                && (o.span.start, o.span.end) != (c.start, c.end)
                        })
                    })
                    .collect(),
            )
        };
        let tokens = embedder
            .filter(|e| e.max_input_tokens() != usize::MAX)
            .and_then(|e| {
                let embed = EmbedTexts::of_document(
                    &revision.doc_id,
                    &revision.text,
                    revision.format,
                    spec,
                );
                let texts: Vec<String> = children
                    .iter()
                    .map(|c| {
                        embed.get(
                            &c.section_path,
                            Span {
                                start: c.start,
                                end: c.end,
                            },
                            spec.heading_depth,
                        )
                    })
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                e.input_tokens(&refs)
                    .map(|counts| (counts, e.max_input_tokens()))
            });
        Ok(ModelMarks { split, tokens })
    }

    fn piece(&self, n: usize) -> bool {
        self.split
            .as_ref()
            .and_then(|s| s.get(n))
            .copied()
            .unwrap_or(false)
    }

    /// What the model made of child `n`.
    fn state(&self, n: usize) -> String {
        if self.piece(n) {
            return "a piece of a child split for the model".into();
        }
        match &self.tokens {
            Some((counts, max)) if counts.get(n).is_some_and(|c| c > max) => {
                format!("truncated: the model reads its first {max} tokens")
            }
            Some(_) => "read whole".into(),
            None if self.split.is_none() => "unknown".into(),
            None => "not split".into(),
        }
    }

    /// Child `n`'s tokens: the model's own when known, else the estimate.
    fn tokens(&self, n: usize, text: &str) -> String {
        match self.tokens.as_ref().and_then(|(counts, _)| counts.get(n)) {
            Some(count) => format!("{count} (model)"),
            None => format!("≈{}", folio::tokens::count(text)),
        }
    }
}

fn format_name(doc: &Document) -> String {
    serde_json::to_value(doc.format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[derive(Deserialize)]
pub(crate) struct OneQuery {
    id: Option<String>,
    target: Option<String>,
}

pub(crate) async fn one(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<OneQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let store = state.store()?;
        let doc_id = given(&query.id).ok_or_else(|| PageError::Bad("which document? (`id`)".into()))?;
        let target = given(&query.target).unwrap_or(DEFAULT_INDEX);
        let snapshot = store.snapshot().map_err(read_err)?;
        let (index, view) = snapshot
            .resolve(target)
            .map_err(|e| PageError::NotFound(format!("`{target}`: {e}")))?;
        let docs = version_docs(&snapshot, &index, &view)?;
        let doc = docs.iter().find(|d| d.doc_id == doc_id).ok_or_else(|| {
            PageError::NotFound(format!(
                "no document `{doc_id}` in {}@{}",
                index.name(),
                view.version()
            ))
        })?;
        let revision = snapshot.doc(doc.rev).map_err(read_err)?;
        let chunks = doc_chunks(&snapshot, &index, doc)?;
        let model = ModelMarks::read(&store, index.name(), &revision, &chunks.children)?;
        let stored = store.document(doc_id).map_err(read_err)?;
        let acl = stored.as_ref().map(|d| d.acl.clone()).unwrap_or_default();
        let text = &revision.text;
        // What a reader sees: HTML without its markup, a dialog rendered; other formats are
        // their source. Spans stay the source's (`data-start`, `data-end`, the table).
        let reader = EmbedTexts::new(text, revision.format);
        let visible = |start: usize, end: usize| reader.body(Span { start, end });
        Ok(layout(
            &format!("Document {doc_id}"),
            html! {
                form.bar method="get" action="/document" {
                    input type="hidden" name="id" value=(doc_id);
                    label { "index, version or alias " input name="target" value=(target) list="targets"; }
                    datalist #targets { @for name in store.index_names() { option value=(name) {} } }
                    button { "Show" }
                }
                table.facts {
                    tr { th { "title" } td { (revision.title) } }
                    tr { th { "source" } td { (revision.source_uri) } }
                    tr { th { "ACL" } td { @if acl.is_empty() { em { "public" } } @else { (acl.join(", ")) } } }
                    tr { th { "shown from" } td #version data-index=(index.name()) data-version=(view.version()) { (index.name()) "@" (view.version()) ", revision " (doc.rev) } }
                    tr { th { "chunks" } td { (chunks.parents.len()) " parents, " (chunks.children.len()) " children; a red outline marks a child longer than the spec's target (a block kept whole), a dashed one a piece of a child split for the model, a red background one the model truncates" } }
                    @if model.split.is_none() { tr { th { "split for the model" } td.note { "unknown: the index counts sizes in its embedder's tokens, and `folio ui` was not given that embedder (--embedder)" } } }
                    @for (key, value) in &revision.metadata { tr { th { (key) } td { (value.to_string()) } } }
                }
                h2 { "Children" }
                table #chunks {
                    tr { th { "chunk" } th { "parent" } th { "bytes" } th { "section" } th { "tokens" } th { "cut" } th { "model" } }
                    @for (n, child) in chunks.children.iter().enumerate() {
                        @let state = model.state(n);
                        tr.chunk data-chunk-id=(chunk_id(doc_id, child.ordinal)) data-start=(child.start) data-end=(child.end) data-model=(state) {
                            td { (chunk_id(doc_id, child.ordinal)) }
                            td { (parent_id(doc_id, child.parent_ordinal)) }
                            td { (child.start) "…" (child.end) }
                            td { (child.section_path.join(" › ")) }
                            td { (model.tokens(n, &visible(child.start, child.end))) }
                            td { @if child.oversized { "longer than the spec's target, kept whole" } }
                            td { @if model.piece(n) || state.starts_with("truncated") { span.split { (state) } } @else { (state) } }
                        }
                    }
                }
                h2 { "Text, with parents and children drawn" }
                @if visible(0, text.len()) != *text { p.note { "Drawn as a reader sees it (the markup left out); spans count bytes of the source." } }
                pre.text #drawn { (draw(doc_id, text.len(), &visible, &chunks.parents, &chunks.children, &model)) }
            },
        ))
    })
    .await
}

/// Pieces of a drawn document: text outside every parent, and parents holding plain text
/// and children.
enum Piece<'t> {
    /// Text in no parent: not indexed.
    Outside(String),
    Plain(String),
    Parent(&'t StoredParent, Vec<Piece<'t>>),
    /// A child, its classes, its text.
    Child(&'t StoredChild, String, String),
}

/// The text with each parent as a block and its children as coloured spans inside it.
/// Children that overlap an earlier one start where the earlier one ends (their real span
/// is in `data-start`/`data-end` and in the table).
fn draw(
    doc_id: &str,
    len: usize,
    visible: &dyn Fn(usize, usize) -> String,
    parents: &[StoredParent],
    children: &[StoredChild],
    model: &ModelMarks,
) -> Markup {
    let mut pieces = Vec::new();
    let mut cursor = 0;
    for parent in parents {
        if cursor < parent.start {
            pieces.push(Piece::Outside(visible(cursor, parent.start)));
        }
        let mut inner = Vec::new();
        let mut at = cursor.max(parent.start);
        let inside = children
            .iter()
            .enumerate()
            .filter(|(_, c)| c.parent_ordinal == parent.ordinal);
        for (n, child) in inside {
            let from = at.max(child.start).min(parent.end);
            let to = child.end.min(parent.end);
            if at < from {
                inner.push(Piece::Plain(visible(at, from)));
            }
            if from < to {
                let class = format!(
                    "child c{}{}{}{}",
                    child.ordinal % 6,
                    if child.oversized { " oversized" } else { "" },
                    if model.piece(n) { " piece" } else { "" },
                    if model.state(n).starts_with("truncated") {
                        " truncated"
                    } else {
                        ""
                    },
                );
                inner.push(Piece::Child(child, class, visible(from, to)));
            }
            at = at.max(to);
        }
        if at < parent.end {
            inner.push(Piece::Plain(visible(at, parent.end)));
        }
        pieces.push(Piece::Parent(parent, inner));
        cursor = cursor.max(parent.end);
    }
    if cursor < len {
        pieces.push(Piece::Outside(visible(cursor, len)));
    }
    render(doc_id, &pieces)
}

fn render(doc_id: &str, pieces: &[Piece<'_>]) -> Markup {
    html! {
        @for piece in pieces {
            @match piece {
                Piece::Outside(text) => span.outside title="in no chunk: not searched" { (text) },
                Piece::Plain(text) => (text),
                Piece::Parent(parent, inner) => {
                    span.parent data-parent-id=(parent_id(doc_id, parent.ordinal)) data-start=(parent.start) data-end=(parent.end) {
                        span.parent-head { (parent_id(doc_id, parent.ordinal)) " · " (parent.section_path.join(" › ")) " · " (parent.start) "…" (parent.end) }
                        (render(doc_id, inner))
                    }
                }
                Piece::Child(child, class, text) => {
                    span class=(class)
                        data-chunk-id=(chunk_id(doc_id, child.ordinal)) data-start=(child.start) data-end=(child.end)
                        title=(format!("{} · {}…{}", chunk_id(doc_id, child.ordinal), child.start, child.end)) {
                        (text)
                    }
                }
            }
        }
    }
}
