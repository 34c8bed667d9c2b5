//! tantivy on the same chunks: an analyzer close to folio's English one, one segment
//! built by one indexing thread, searched single-threaded for the top 10 by BM25, the ACL
//! as a query clause.

use std::path::Path;
use std::time::{Duration, Instant};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, STRING};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenStream,
};
use tantivy::{doc, Index, IndexReader, IndexWriter, Searcher, Term};

use crate::corpus::Chunk;

/// The analyzer's name in the index.
const ANALYZER: &str = "folio_like_en";
/// The writer's memory budget: large enough that one thread writes one segment.
const WRITER_BUDGET: usize = 2 << 30;

/// Lowercased words of letters and digits, NLTK's English stop words (folio's list),
/// Snowball's English stemmer, terms of at most 255 bytes (folio's limit).
fn analyzer() -> TextAnalyzer {
    let stop_words = stop_words::lookup("en").unwrap_or_default();
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(256))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            stop_words.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

pub struct Peer {
    index: Index,
    reader: IndexReader,
    text: Field,
    acl: Field,
    /// Build time: indexing and commit.
    pub build: Duration,
    /// The index directory's bytes.
    pub bytes: u64,
}

impl Peer {
    /// Indexes `chunks` (document number = position) into `dir`, each with its `acls`.
    pub fn build(
        dir: &Path,
        chunks: &[Chunk],
        acls: &[Vec<&'static str>],
    ) -> tantivy::Result<Peer> {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = schema.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(indexing),
        );
        let acl = schema.add_text_field("acl", STRING);
        let index = Index::create_in_dir(dir, schema.build())?;
        index.tokenizers().register(ANALYZER, analyzer());
        let started = Instant::now();
        let mut writer: IndexWriter = index.writer_with_num_threads(1, WRITER_BUDGET)?;
        for (chunk, principals) in chunks.iter().zip(acls) {
            let mut document = doc!(text => chunk.text.as_str());
            for principal in principals {
                document.add_text(acl, principal);
            }
            writer.add_document(document)?;
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        let build = started.elapsed();
        let reader = index.reader()?;
        let bytes = directory_bytes(dir)?;
        Ok(Peer {
            index,
            reader,
            text,
            acl,
            build,
            bytes,
        })
    }

    /// The text field's analyzer (queries are cut as the documents were).
    pub fn analyzer(&self) -> TextAnalyzer {
        self.index
            .tokenizers()
            .get(ANALYZER)
            .unwrap_or_else(analyzer)
    }

    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    pub fn segments(&self) -> usize {
        self.searcher().segment_readers().len()
    }

    /// The query's distinct terms, OR-ed (folio counts a repeated query term once too),
    /// and when `principal` is given, the ACL as a required clause scoring 0 (so it
    /// filters without moving a score).
    pub fn query(
        &self,
        analyzer: &mut TextAnalyzer,
        query: &str,
        principal: Option<&str>,
    ) -> Box<dyn Query> {
        let mut terms: Vec<Term> = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while stream.advance() {
            let term = Term::from_field_text(self.text, &stream.token().text);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        let words: Box<dyn Query> = Box::new(BooleanQuery::new_multiterms_query(terms));
        match principal {
            None => words,
            Some(principal) => {
                let term = Term::from_field_text(self.acl, principal);
                let acl = TermQuery::new(term, IndexRecordOption::Basic);
                let filter = ConstScoreQuery::new(Box::new(acl), 0.0);
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, words),
                    (Occur::Must, Box::new(filter)),
                ]))
            }
        }
    }

    /// The top 10 document numbers for a prepared query.
    pub fn top10(&self, searcher: &Searcher, query: &dyn Query) -> tantivy::Result<Vec<u32>> {
        let hits = searcher.search(query, &TopDocs::with_limit(10))?;
        Ok(hits.into_iter().map(|(_, at)| at.doc_id).collect())
    }
}

fn directory_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let metadata = entry?.metadata()?;
        if metadata.is_file() {
            total += metadata.len();
        }
    }
    Ok(total)
}
